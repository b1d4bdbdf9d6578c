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


COPY = "envkit: 1\nname: ctx\nimage:\n  base: debian:bookworm\n  copy_project: true\n"


def _gen(proj: Path):
    return run_envkit("generate", "envkit.yaml", "-o", "out", "--target", "dockerfile", cwd=proj, timeout=60)


def _shipped(out: Path) -> set[str]:
    """What the build context sends, as the Docker client reads the generated .dockerignore."""
    from docker.utils.build import exclude_paths

    patterns = [line for line in (out / ".dockerignore").read_text().splitlines() if line and line[0] != "#"]
    return {p for p in exclude_paths(str(out), patterns) if (out / p).is_file()}


def test_nothing_is_pruned_from_a_folder_envkit_has_no_manifest_for(tmp_path):
    (tmp_path / "envkit.yaml").write_text(COPY)
    (tmp_path / "train.py").write_text("print(1)\n")
    mine = {".envkit/notes.txt": b"my notes\n", ".envkit/datasets/cached.bin": b"\0" * 64,
            ".envkit/project/old.py": b"x = 1\n"}
    for rel, data in mine.items():
        (tmp_path / "out" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "out" / rel).write_bytes(data)
    res = _gen(tmp_path)
    assert res.returncode == 0, res.stderr
    out = tmp_path / "out"
    assert {rel: (out / rel).read_bytes() for rel in mine} == mine, "the user's files are all there"
    assert "removed" not in res.stdout
    for rel in mine:
        assert f"kept {Path('out', rel)}: envkit did not write it" in res.stderr
    assert (out / ".envkit/project/train.py").is_file()
    shipped = _shipped(out)
    assert ".envkit/project/train.py" in shipped and not set(mine) & shipped, shipped
    # A second run: still the user's, still kept, and envkit's own copies are unchanged.
    res = _gen(tmp_path)
    assert res.returncode == 0 and "removed" not in res.stdout, res.stderr
    assert {rel: (out / rel).read_bytes() for rel in mine} == mine


def test_a_file_put_by_hand_into_the_project_copy_never_ships(tmp_path):
    (tmp_path / "envkit.yaml").write_text(COPY)
    (tmp_path / "train.py").write_text("print(1)\n")
    assert _gen(tmp_path).returncode == 0
    out = tmp_path / "out"
    names = [".envkit/project/token.txt", ".envkit/project/a*b[1].txt", ".envkit/project/back\\slash",
             ".envkit/project/ends in space "]
    for rel in names:
        (out / rel).write_text("mine\n")
    res = _gen(tmp_path)
    assert res.returncode == 0, res.stderr
    assert all((out / rel).read_text() == "mine\n" for rel in names)
    shipped = _shipped(out)
    assert ".envkit/project/train.py" in shipped and not set(names) & shipped, shipped
    # Once the user removes them, the .dockerignore no longer names them.
    for rel in names:
        (out / rel).unlink()
    assert _gen(tmp_path).returncode == 0
    assert "token.txt" not in (out / ".dockerignore").read_text()


def test_a_project_file_name_never_reaches_the_terminal_raw(tmp_path):
    (tmp_path / "envkit.yaml").write_text(COPY)
    name = "evil\x1b]0;pwned\x07\nwrote forged.txt"
    (tmp_path / name).write_text("x\n")
    res = _gen(tmp_path)
    assert res.returncode == 0, res.stderr
    assert "\x1b" not in res.stdout + res.stderr and "\x07" not in res.stdout
    assert "forged.txt" in res.stdout
    assert not [line for line in res.stdout.splitlines() if line.startswith("wrote forged")], res.stdout


def test_wsl_apply_escapes_the_file_names_it_prints(tmp_path):
    from tests.conftest import run_envkit as run

    cfg = tmp_path / "c\x1b[2Jfg"
    cfg.mkdir()
    prof = tmp_path / "w.yaml"
    prof.write_text("envkit: 1\nname: w\nimage: {base: 'python:3.11-slim'}\nwsl: {memory: 8GB}\n")
    res = run("wsl", "apply", str(prof), "--wslconfig", str(cfg / ".wslconfig"))
    assert res.returncode == 0, res.stderr
    assert "\x1b" not in res.stdout and "\\x1b[2Jfg" in res.stdout
