"""``--json`` on generate, flags, build, lock and clean: real output validates against the documented
schemas (build and lock with the engine and uv faked at their seams)."""

from __future__ import annotations

import io
import json
import shlex
import sys
from pathlib import Path

import jsonschema
import pytest
from pydantic import ValidationError

from envkit.commands import build, clean, lock
from envkit.engine import RunResult
from envkit.harness.rules.sizing import SIZED, size_node
from envkit.harness.rules.sizing import LoaderJson
from envkit.jsonout import DOCUMENTS, SCHEMAS, FlagsDoc, LoaderDoc, WarningRecord, emit, loader_schema
from tests.conftest import call_envkit
from tests.fakes import FakeEngine


def _valid(name: str, text: str) -> dict:
    doc = json.loads(text)  # exactly one document: json.loads refuses trailing text
    jsonschema.Draft202012Validator.check_schema(SCHEMAS[name])
    jsonschema.Draft202012Validator(SCHEMAS[name]).validate(doc)
    return doc


PROFILE = ("envkit: 1\nname: j\nimage: {base: 'debian:bookworm'}\n"
           "run:\n  shm_size: 1g\n  ulimits:\n    nofile: 4096\n"
           "cluster:\n  nodes: 2\n  gpus_per_node: 1\n  image: reg.example/j:1\n  entrypoint: [train.py]\n")


def test_generate_json_lists_the_files_and_each_warning_at_its_line(tmp_path):
    p = tmp_path / "envkit.yaml"
    p.write_text(PROFILE)
    res = call_envkit("generate", "--json", "-o", "out", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    doc = _valid("generate", res.stdout)
    assert doc["profile"] == "envkit.yaml" and doc["output"] == "out"
    assert {f["status"] for f in doc["files"]} == {"written"} and {"path": "out/run.sh", "status": "written"} in doc["files"]
    assert "wrote out/run.sh" in res.stderr  # the human lines go to stderr
    nofile = [w for w in doc["warnings"] if w["path"] == "run.ulimits.nofile"]
    assert nofile and all((w["line"], w["column"]) == (7, 5) for w in nofile), doc["warnings"]
    assert all(not w["text"].startswith("run.") for w in nofile)
    again = _valid("generate", call_envkit("generate", "--json", "-o", "out", cwd=tmp_path).stdout)
    assert {f["status"] for f in again["files"]} == {"unchanged"}
    p.write_text(PROFILE.split("cluster:")[0])  # the cluster targets leave: their files are removed
    gone = _valid("generate", call_envkit("generate", "--json", "-o", "out", cwd=tmp_path).stdout)
    assert {"path": "out/k8s.yaml", "status": "removed"} in gone["files"]


def test_flags_json_is_the_argv_the_line_quotes(tmp_path):
    (tmp_path / "envkit.yaml").write_text(PROFILE.split("cluster:")[0] + "  volumes: ['./my data:/data']\n")
    doc = _valid("flags", call_envkit("flags", "--json", cwd=tmp_path).stdout)
    assert doc["argv"] == shlex.split(call_envkit("flags", cwd=tmp_path).stdout)
    assert f"--volume={tmp_path}/my data:/data" in doc["argv"]
    default = _valid("flags", call_envkit("flags", "--json", cwd=tmp_path / "..").stdout)
    assert default["argv"][0].startswith("--shm-size=")


def test_build_json_has_the_tag_image_id_and_python(tmp_path):
    p = tmp_path / "envkit.yaml"
    p.write_text("envkit: 1\nname: j\nimage: {base: 'python:3.11-slim', tag: 'team/j:1'}\n")
    out = io.StringIO()
    engine = FakeEngine(run_results=[RunResult(0, "3.11\n", "", False)])
    assert build.run(p, tag=None, no_cache=False, out=out, err=io.StringIO(), engine=engine, as_json=True) == 0
    doc = _valid("build", out.getvalue())
    assert doc["tag"] == "team/j:1" and doc["image_id"] == engine.image_id and doc["python"] == "3.11"


FAKE_UV = """import sys
args = sys.argv[1:]
dest = args[args.index("-o") + 1]
open(dest, "w").write("numpy==2.1.0 \\\\\\n    --hash=sha256:aa\\n    # via -r x\\npillow==11.0.0 \\\\\\n    --hash=sha256:bb\\n")
"""


def test_lock_json_has_the_path_and_package_count(tmp_path, monkeypatch):
    uv = tmp_path / "fake_uv.py"
    uv.write_text(FAKE_UV)
    monkeypatch.setattr(lock, "uv_command", lambda: [sys.executable, str(uv)])
    p = tmp_path / "envkit.yaml"
    p.write_text("envkit: 1\nname: j\nimage:\n  base: 'python:3.11-slim'\n  pip_packages: [numpy, pillow]\n")
    out, err = io.StringIO(), io.StringIO()
    assert lock.run(p, force=False, out=out, err=err, as_json=True) == 0
    doc = _valid("lock", out.getvalue())
    assert doc == {"envkit_lock": 1, "profile": str(p), "path": str(tmp_path / "envkit.lock.txt"), "packages": 2,
                   "python": "3.11", "platform": lock.PLATFORM, "backup": None}
    assert "wrote " in err.getvalue()


def test_clean_json_lists_what_was_removed(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    out, err = io.StringIO(), io.StringIO()
    assert clean.run(out=out, err=err, engine=FakeEngine(), as_json=True) == 0
    doc = _valid("clean", out.getvalue())
    assert doc == {"envkit_clean": 1, "build_folders": [], "containers": [], "images": []}
    assert "nothing to clean" in err.getvalue()


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_docs_show_each_schema_as_it_is(name):
    text = (Path(__file__).parents[2] / "docs" / "cli.md").read_text()
    marker = f"<!-- envkit:json-schema {name} -->\n```json\n"
    assert marker in text, f"docs/cli.md lacks the {name} schema"
    shown = text.split(marker, 1)[1].split("```", 1)[0]
    assert json.loads(shown) == SCHEMAS[name], f"docs/cli.md's {name} schema is stale"


def test_docs_show_the_loader_schema_as_it_is():
    text = (Path(__file__).parents[2] / "docs" / "cli.md").read_text()
    shown = text.split("<!-- envkit:json-schema loader -->\n```json\n", 1)[1].split("```", 1)[0]
    assert json.loads(shown) == loader_schema()


def test_the_loader_model_holds_every_field_nodeloader_prints_and_no_other():
    node = size_node(num_workers="auto", batch_size=8, sample_shape=(3, 32, 32), dtype="float32", prefetch_factor=2,
                     ranks=(2, "cluster.procs_per_node"), cpus=(4, "run.cpus"), shm=(SIZED, "sized"), nccl=False)
    assert list(LoaderDoc.model_fields) == list(node.as_json()) == list(LoaderJson.__annotations__)
    assert LoaderDoc.model_validate(node.as_json()).model_dump() == node.as_json()
    assert list(loader_schema()["properties"]) == list(node.as_json()) == loader_schema()["required"]


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_each_schema_is_draft_2020_12_with_its_version_key_first(name):
    schema = SCHEMAS[name]
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema" and schema["title"] == f"envkit {name} --json"
    assert schema["additionalProperties"] is False and schema["required"] == list(schema["properties"])
    # a model's version key is a default; a report's (a TypedDict the harness builds) is only required
    version = {"const": 1, "default": 1, "type": "integer"} if name in DOCUMENTS else {"const": 1, "type": "integer"}
    assert next(iter(schema["properties"].items())) == (f"envkit_{name}", version)


def test_the_reports_schemas_refuse_what_the_harness_does_not_write():
    check = {"name": "shm", "status": "pass", "measured": {}, "expected": {}, "message": "ok", "remedy": None}
    loader = {"ranks_per_node": 1, "workers_per_rank": 0, "shm_need_bytes": 0, "shm_bytes": None, "cpus": None,
              "facts": {}}
    doc = {"envkit_doctor": 1, "verdict": "pass", "host": {"platform": "linux", "wsl": None, "osrelease": None,
           "distro": None, "cwd": "/", "cpus": 2, "memory_bytes": None}, "loader": loader, "checks": [check]}
    validator = jsonschema.Draft202012Validator(SCHEMAS["doctor"])
    validator.validate(doc)
    for bad in ({**doc, "extra": 1}, {**doc, "checks": [{**check, "status": "ok"}]},
                {**doc, "checks": [{k: v for k, v in check.items() if k != "remedy"}]},
                {**doc, "loader": {**loader, "cpus": 0}}, {**doc, "verdict": "skip"}):
        assert not validator.is_valid(bad), bad


LOADER_DICT = {"ranks_per_node": 1, "workers_per_rank": 1, "shm_need_bytes": 5, "shm_bytes": None, "cpus": 2,
               "facts": {"cpus": "run.cpus 2"}}


def test_emit_prints_what_json_dumps_indent_2_of_the_same_dict_printed():
    doc = {"envkit_flags": 1, "profile": "p\u00e9.yaml", "argv": ["--init"],
           "warnings": [{"path": "run.shm_size", "line": 5, "column": 3, "text": "small \u2014 raise it"}],
           "notes": [{"path": None, "line": None, "column": None, "text": "n"}], "loader": LOADER_DICT}
    out = io.StringIO()
    emit(FlagsDoc.model_validate_json(json.dumps(doc)), out)  # a reader's way back: the printed text
    assert out.getvalue() == json.dumps(doc, indent=2) + "\n"


@pytest.mark.parametrize("bad", [{"argv": "--init"}, {"argv": [1]}, {"extra": 1}, {"envkit_flags": 2},
                                 {"loader": {**LOADER_DICT, "cpus": "2"}}, {"loader": {**LOADER_DICT, "cpus": 0}},
                                 {"warnings": [{"path": "x", "line": 1, "column": 1}]}])
def test_a_wrong_key_or_type_fails_where_the_document_is_built(bad):
    good = {"profile": "p", "argv": ("--init",), "warnings": (), "notes": (), "loader": LOADER_DICT}
    with pytest.raises(ValidationError):
        FlagsDoc(**{**good, **bad})


def test_a_warning_record_is_built_from_a_mapping_or_an_object_with_its_four_values():
    from types import SimpleNamespace

    values = {"path": "run.shm_size", "line": 5, "column": 3, "text": "small"}
    assert WarningRecord.model_validate(SimpleNamespace(**values)) == WarningRecord.model_validate(values)
