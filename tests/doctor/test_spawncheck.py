"""spawncheck: the AST check for spawn-safe training scripts."""

from __future__ import annotations

import pytest

from envkit.doctor.spawncheck import check_source

HEAD = "import torch\nfrom torch.utils.data import DataLoader, Dataset\n"


def _kinds(src: str) -> list[tuple[int, str]]:
    return [(f.line, f.kind) for f in check_source(src)]


def test_unguarded_module_level_loader():
    assert _kinds(HEAD + "dl = DataLoader(ds, batch_size=8, num_workers=4)\n") == [(3, "unguarded")]


def test_guarded_script_passes():
    src = HEAD + (
        "class DS(Dataset):\n    pass\n"
        "def collate(b):\n    return b\n"
        "def main():\n    dl = DataLoader(DS(), num_workers=4, collate_fn=collate)\n"
        "if __name__ == '__main__':\n    main()\n")
    assert check_source(src) == []


def test_function_called_from_unguarded_code_is_followed():
    src = HEAD + "def build():\n    return DataLoader(ds, num_workers=2)\ndef main():\n    build()\nmain()\n"
    (f,) = check_source(src)
    assert f.line == 4 and f.kind == "unguarded" and "main() called at line 7" in f.message


def test_non_literal_num_workers_counts_as_workers():
    assert _kinds(HEAD + "n = 4\nDataLoader(ds, num_workers=n)\n") == [(4, "unguarded")]
    assert _kinds(HEAD + "DataLoader(ds, **kw)\n") == [(3, "unguarded")]
    assert _kinds(HEAD + "torch.utils.data.DataLoader(ds, 8, True, None, None, 3)\n") == [(3, "unguarded")]


@pytest.mark.parametrize("src", [
    HEAD + "dl = DataLoader(ds, num_workers=0, collate_fn=lambda b: b)\n",
    HEAD + "dl = DataLoader(ds)\n",
    HEAD + "def main():\n    class DS(Dataset):\n        pass\n    DataLoader(DS(), num_workers=0)\nmain()\n",
])
def test_zero_workers_pass(src):
    assert check_source(src) == []


def test_lambda_collate_is_flagged_even_when_guarded():
    src = HEAD + "def main():\n    DataLoader(ds, num_workers=2, collate_fn=lambda b: b)\nif __name__ == '__main__':\n    main()\n"
    (f,) = check_source(src)
    assert (f.line, f.kind) == (4, "unpicklable") and "collate_fn is a lambda" in f.message


def test_module_level_lambda_name_is_flagged():
    src = HEAD + "collate = lambda b: b\nif __name__ == '__main__':\n    DataLoader(ds, num_workers=2, collate_fn=collate)\n"
    assert _kinds(src) == [(5, "unpicklable")]


def test_nested_dataset_class_and_worker_init_fn():
    src = HEAD + (
        "def main():\n"
        "    class Local(Dataset):\n        pass\n"
        "    def init(i):\n        pass\n"
        "    ds = Local()\n"
        "    DataLoader(ds, num_workers=2, worker_init_fn=init)\n"
        "if __name__ == '__main__':\n    main()\n")
    kinds = _kinds(src)
    assert (4, "unpicklable") in kinds  # the nested Dataset subclass definition
    msgs = " ".join(f.message for f in check_source(src))
    assert "worker_init_fn is 'init', a function defined inside a function at line 6" in msgs
    assert "an instance of 'Local', a class defined inside a function at line 4" in msgs
    fixes = [f.fix for f in check_source(src)]
    assert "worker_init_fn=init, a function defined inside a function at line 6: move def init to module level " \
           "and pass its name" in fixes
    assert any(f.startswith("dataset=Local(...), class Local at line 4: move the class Local") for f in fixes)
    assert any(f.startswith("class Local at line 4: move it to module level") for f in fixes)


def test_inline_lambda_finding_names_the_object_once():
    # before: "line 8: DataLoader collate_fn is a lambda (line 8); ..." and the fix "define it at module level"
    src = HEAD + "import sys\n" * 3 + "def main():\n    DataLoader(ds, num_workers=2, collate_fn=lambda b: b)\n" \
        "if __name__ == '__main__':\n    main()\n"
    (f,) = check_source(src)
    assert f.line == 7 and f.describe().count("line 7") == 1 and "(line" not in f.describe()
    assert f.describe().startswith("line 7: DataLoader collate_fn is a lambda;")
    assert f.fix == "collate_fn=lambda at line 7: define a function at module level and pass its name"


def test_named_lambda_fix_names_it_and_its_line():
    src = HEAD + "collate = lambda b: b\nif __name__ == '__main__':\n    DataLoader(ds, num_workers=2, collate_fn=collate)\n"
    (f,) = check_source(src)
    assert f.describe().startswith("line 5: DataLoader collate_fn is 'collate', a lambda defined at line 3;")
    assert f.fix == "collate_fn=collate, a lambda at line 3: define collate with def at module level and pass its name"


def test_syntax_error_is_reported_with_line():
    (f,) = check_source("x = 1\ndef broken(:\n")
    assert (f.line, f.kind) == (2, "syntax")


def test_else_branch_of_main_guard_is_unguarded():
    src = HEAD + "if __name__ == '__main__':\n    pass\nelse:\n    DataLoader(ds, num_workers=1)\n"
    assert _kinds(src) == [(6, "unguarded")]


@pytest.mark.parametrize("src, line", [
    # the review's case: an aliased name at module level used to pass
    ("from torch.utils.data import DataLoader as DL\nDL(ds, num_workers=4)\n", 2),
    ("import torch.utils.data as tud\ntud.DataLoader(ds, num_workers=4)\n", 2),
    ("import torch.utils.data\ntorch.utils.data.DataLoader(ds, num_workers=4)\n", 2),
    ("import torch as T\nT.utils.data.DataLoader(ds, num_workers=4)\n", 2),
    ("from torch.utils import data as D\nD.DataLoader(ds, num_workers=4)\n", 2),
    ("from torch.utils.data.dataloader import DataLoader as Loader\nLoader(ds, num_workers=4)\n", 2),
    ("from torch.utils.data import DataLoader as DL\nMakeLoader = DL\nMakeLoader(ds, num_workers=4)\n", 3),
    ("from torch.utils.data import DataLoader as DL\ndef build():\n    return DL(ds, num_workers=2)\nbuild()\n", 3),
])
def test_aliased_dataloader_at_import_time_is_flagged(src, line):
    assert _kinds(src) == [(line, "unguarded")]


@pytest.mark.parametrize("src", [
    "from torch.utils.data import DataLoader as DL\nif __name__ == '__main__':\n    DL(ds, num_workers=4)\n",
    "import torch.utils.data as tud\ntud.DataLoader(ds, num_workers=0)\n",
    "from torch.utils.data import DataLoader as DL\ndef main():\n    DL(ds, num_workers=4)\n",
])
def test_aliased_dataloader_guarded_or_without_workers_passes(src):
    assert _kinds(src) == []


def test_aliased_loader_with_lambda_collate_and_aliased_nested_dataset():
    src = ("from torch.utils.data import DataLoader as DL, Dataset as DS\n"
           "def main():\n"
           "    class Local(DS):\n        pass\n"
           "    DL(Local(), num_workers=2, collate_fn=lambda b: b)\n"
           "if __name__ == '__main__':\n    main()\n")
    kinds = _kinds(src)
    assert (3, "unpicklable") in kinds  # nested Dataset subclass, through the alias DS
    assert (5, "unpicklable") in kinds  # lambda collate_fn on the aliased loader
    assert sum(1 for _, k in kinds if k == "unpicklable") == 3  # the class instance, the lambda, the class


def test_non_loader_names_are_not_flagged():
    assert _kinds("from mylib import Loader as DL\nDL(ds, num_workers=4)\n") == []
