"""The harness's shape, read from the source: short functions, one shm check, one CPU fact.

(The rooms' import order is an import-linter contract in pyproject.toml, run by tests/test_layout.py.)"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import envkit.harness
from envkit.harness.rules.sizing import cpu_fact

SRC = Path(envkit.harness.__file__).resolve().parents[1]  # src/envkit
HARNESS = SRC / "harness"
MAX_LINES = 60


def _functions(tree: ast.AST):
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def long_functions(root: Path, limit: int = MAX_LINES) -> list[str]:
    """``path:line name (N lines)`` of every function under ``root`` longer than ``limit`` lines, from its
    ``def`` (or first decorator) to its last line, docstring included."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for fn in _functions(ast.parse(path.read_text(), str(path))):
            first = min([fn.lineno, *(d.lineno for d in fn.decorator_list)])
            lines = (fn.end_lineno or fn.lineno) - first + 1
            if lines > limit:
                found.append(f"{path.relative_to(root)}:{fn.lineno} {fn.name} ({lines} lines)")
    return found


def test_no_harness_function_is_longer_than_60_lines():
    assert long_functions(HARNESS) == []


def test_the_length_rule_finds_a_long_function(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(60))
    (tmp_path / "m.py").write_text(f"@staticmethod\ndef short():\n    return 1\n\n\ndef long():\n{body}\n")
    assert long_functions(tmp_path) == ["m.py:6 long (61 lines)"]


def test_the_cpu_rule_is_applied_in_one_module_and_the_shm_check_exists_once():
    calls, defined = set(), []
    for path in SRC.rglob("*.py"):
        where = str(path.relative_to(SRC))
        for node in ast.walk(ast.parse(path.read_text())):
            fn = node.func if isinstance(node, ast.Call) else None
            if (fn.id if isinstance(fn, ast.Name) else fn.attr if isinstance(fn, ast.Attribute) else None) == "cpu_limit":
                calls.add(where)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "check_shm":
                defined.append(where)
    # Every command's CPU fact is cpu_fact's: cpu_limit (a quota rounded up) is called beside it only.
    assert calls == {"harness/rules/sizing.py"}
    assert defined == ["harness/checks/shm.py"]


@pytest.mark.parametrize("facts, expected", [
    ((("count", 16, "affinity"), ("quota", 4.5, "quota")), (5, "quota")),        # a quota counts rounded up
    ((("count", 4, "cpuset"), ("quota", 4.0, "quota")), (4, "cpuset")),            # a tie: the first named wins
    ((("count", 0, "cpuset"), ("count", None, "vm"), ("quota", None, "")), (None, "not known")),
])
def test_the_cpu_fact_is_the_smallest_known_count(facts, expected):
    assert cpu_fact(*facts) == expected
