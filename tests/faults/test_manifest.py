"""envkit removes only what it wrote, and only inside the output folder.

``.envkit-manifest.json`` sits in the user's folder, where a pull request or an unpacked archive can
edit it: an entry that is not a relative path inside the folder (``..``, an absolute path, a symbolic
link on the way out) is refused with exit 2 naming the manifest and the entry, before anything is
written or removed.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from tests.conftest import run_envkit

# Slow tier (--run-slow; the README's command runs it): real generate runs over a planted manifest.
pytestmark = pytest.mark.slow

MANIFEST = ".envkit-manifest.json"


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _plant(tmp_path: Path, entries: dict[str, Path]) -> Path:
    """A generated ``out/`` whose manifest also lists ``entries`` (path -> the file it names), each with
    its right sha256 and a target the run renders as owner: all an unguarded prune needs."""
    out = tmp_path / "out"
    assert run_envkit("generate", "-o", str(out), cwd=tmp_path, timeout=60).returncode == 0
    doc = json.loads((out / MANIFEST).read_text())
    for rel, victim in entries.items():
        doc["files"][rel] = hashlib.sha256(victim.read_bytes()).hexdigest()
        doc["owners"][rel] = "compose"
    (out / MANIFEST).write_text(json.dumps(doc, indent=2))
    return out


@pytest.mark.parametrize("case", ["dot-dot", "absolute", "link out"])
def test_a_hostile_manifest_entry_is_exit_2_and_deletes_nothing(tmp_path, case):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    victim = outside / "victim.txt"
    victim.write_text("the user's own file\n")
    out = tmp_path / "out"
    out.mkdir()
    rel = {"dot-dot": "../elsewhere/victim.txt", "absolute": str(victim), "link out": "shared/victim.txt"}[case]
    if case == "link out":
        (out / "shared").symlink_to(outside)
    out = _plant(tmp_path, {rel: victim})
    before = _tree(out)
    res = run_envkit("generate", "-o", str(out), cwd=tmp_path, timeout=60)
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr)
    assert victim.read_text() == "the user's own file\n"
    assert _tree(out) == before, "nothing written, nothing removed"
    assert "Traceback" not in res.stderr and res.stdout == ""
    assert f"{out / MANIFEST}:" in res.stderr and json.dumps(rel) in res.stderr
    assert {"dot-dot": "'..'", "absolute": "absolute path", "link out": "symbolic link"}[case] in res.stderr
    line = res.stderr.split(f"{out / MANIFEST}:")[1].split(":")[0]
    assert line.isdigit() and json.dumps(rel) in (out / MANIFEST).read_text().splitlines()[int(line) - 1]


@pytest.mark.parametrize("text, words", [
    ("{not json", "is not JSON"),
    ('{"envkit_manifest": 1, "files": {"Dockerfile": "nope"}}', 'files["Dockerfile"]: expected'),
    ('{"envkit_manifest": 1, "files": ["../x"]}', "files: expected an object"),
    ('{"envkit_manifest": 1, "copies": {"x": [1, 2, "3", 4, 5]}}', 'copies["x"]: expected an object mapping'),
])
def test_a_manifest_not_in_envkits_form_is_exit_2_before_anything_is_written(tmp_path, text, words):
    out = tmp_path / "out"
    out.mkdir()
    (out / MANIFEST).write_text(text)
    res = run_envkit("generate", "-o", str(out), cwd=tmp_path, timeout=60)
    assert res.returncode == 2, (res.returncode, res.stderr)
    assert words in res.stderr, res.stderr
    assert "Traceback" not in res.stderr and str(out / MANIFEST) in res.stderr
    assert sorted(p.name for p in out.iterdir()) == [MANIFEST]
