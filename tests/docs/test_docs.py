"""The README and docs/: every profile key documented, the two commands CI relies on, and every
example output real (the ``golden`` fixture: ``ENVKIT_UPDATE_GOLDEN=1`` rewrites the examples from the real
output, failing each page it rewrites until it is run again)."""

from __future__ import annotations

import contextlib
import io
import itertools
import re
from pathlib import Path

import pytest

from envkit.profile.load import _model_in
from envkit.profile.model import Profile
from tests.conftest import ROOT, TIERS

DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [ROOT / "README.md", *DOCS]
FILE_BLOCK = re.compile(r"(<!-- readme:(\S+) -->\n```\w*\n)(.*?)(```\n)", re.S)
SESSION_BLOCK = re.compile(r"(<!-- envkit:session -->\n```\w*\n)(.*?)(```\n)", re.S)


def _paths(model, prefix=""):
    for name, field in model.model_fields.items():
        path = prefix + name
        yield path
        sub = _model_in(field.annotation)
        if sub is not None and name != "ulimits":
            yield from _paths(sub, path + ".")


def test_every_profile_key_is_documented():
    reference = (ROOT / "docs" / "profile.md").read_text()
    missing = [p for p in _paths(Profile) if f"`{p}`" not in reference]
    assert not missing, f"docs/profile.md lacks: {missing}"


def test_ci_runs_exactly_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```bash\n(.*?)\n```", readme.split("## The two commands", 1)[1], re.S)
    test_cmd = blocks[1].strip()
    assert "ruff check" in test_cmd and "mypy" in test_cmd and "pytest" in test_cmd
    # CI runs every tier (a tier without its flag is skipped) and the fuzz tier's full 2 000 examples.
    pytest_args = test_cmd.rsplit("pytest", 1)[1].split()
    missing = [flag for flag, _ in TIERS.values() if flag not in pytest_args]
    assert not missing, f"the README's test command lacks the tier flags {missing}"
    assert "--fuzz-examples=2000" in pytest_args
    ci = (ROOT / ".ci" / "run").read_text()
    assert "ENVKIT_REQUIRE_DOCKER=1" in ci
    assert test_cmd in ci.splitlines()


def test_readme_is_a_front_door():
    """At most 10 KB; for users first (what you need, the install, a quick start from `envkit init` to
    `./run.sh python train.py`), the maintainers' two commands under "Develop"; every local link resolves."""
    readme = (ROOT / "README.md").read_text()
    assert len(readme.encode()) <= 10 * 1024, f"README is {len(readme.encode())} bytes"
    sections = [line for line in readme.splitlines() if line.startswith("## ")]
    assert sections[:3] == ["## What you need", "## Install", "## Quick start"], sections
    develop = readme.index("\n## Develop\n")
    assert readme.index("## Install") < develop < readme.index("<!-- envkit:commands -->")
    for need in ("Docker", "NVIDIA Container Toolkit", "WSL2"):
        assert need in readme[:readme.index("## Install")], need
    quick = re.search(r"## Quick start\n.*?```bash\n(.*?)```", readme, re.S).group(1).splitlines()
    assert len(quick) <= 6 and quick[0].startswith("envkit init") and quick[-1].startswith("./out/run.sh python train.py")
    assert any(line.startswith("envkit validate") for line in quick)
    for page in PAGES:
        for target in re.findall(r"\]\(([^)#]+\.md|[^)#]+/)(?:#[^)]*)?\)", page.read_text()):
            if not target.startswith("http"):
                assert (page.parent / target).exists(), f"{page.name}: broken link {target}"


def _rendered_files(tmp_path: Path, monkeypatch) -> dict[str, str]:
    from envkit.generation import render_all
    from envkit.profile import default_profile_text, load_profile

    monkeypatch.chdir(tmp_path)
    files = {"out/" + f.path: f.content.decode() for f in render_all(load_profile(None), tmp_path / "out")
             if f.source is None and f.path.endswith((".sh", ".yaml"))}
    files["default.yaml"] = default_profile_text()
    return files


def _run_session(text: str, cwd: Path) -> str:
    """Replay a ``$ cat FILE`` / ``$ envkit ARGS`` transcript in ``cwd``; return the real transcript."""
    from envkit.cli import main

    out: list[str] = []
    chunks = re.split(r"^(\$ .*)\n", text, flags=re.M)[1:]
    for command, shown in zip(chunks[::2], chunks[1::2], strict=True):
        out.append(command + "\n")
        words = command[2:].split()
        if words[0] == "cat":
            (cwd / words[1]).write_text(shown)  # the file the transcript shows is the input
            out.append(shown)
            continue
        assert words[0] == "envkit", f"only `cat` and `envkit` run in a session: {command}"
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
            main(words[1:])
        out.append(buf.getvalue())
    return "".join(out)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_examples_are_real_output(page, tmp_path, monkeypatch, golden):
    """Blocks marked <!-- readme:PATH --> hold exactly what `envkit generate -o out` writes (or the default
    profile); blocks marked <!-- envkit:session --> are transcripts that, replayed, print the same. The
    ``golden`` fixture checks the page with the real output put in its blocks."""
    text = page.read_bytes().decode()
    files = _rendered_files(tmp_path, monkeypatch)

    def file_block(m: re.Match) -> str:
        name = m.group(2)
        assert name in files, f"{page.name}: no generated file {name}"
        return m.group(1) + files[name] + m.group(4)

    def session_block(m: re.Match) -> str:
        cwd = Path(tmp_path / f"session{next(sessions)}")
        cwd.mkdir()
        monkeypatch.chdir(cwd)
        return m.group(1) + _run_session(m.group(2), cwd) + m.group(3)

    sessions = itertools.count()
    golden.check(page, SESSION_BLOCK.sub(session_block, FILE_BLOCK.sub(file_block, text)).encode())


def test_the_examples_cover_the_outputs():
    marked = {m.group(2) for page in PAGES for m in FILE_BLOCK.finditer(page.read_text())}
    assert {"default.yaml", "out/run.sh", "out/compose.yaml"} <= marked
    assert any(SESSION_BLOCK.search(page.read_text()) for page in PAGES)


def _abridged_lines_match(shown: list[str], real: list[str]) -> list[str]:
    """The lines of ``shown`` that are not, in order, lines of ``real``: ``...`` alone (or indented) skips real
    lines; a line with ``...`` inside is a real line with its middle left out (its parts in order).

    >>> _abridged_lines_match(["FROM x", "...", 'RUN a ... c'], ["FROM x", "ARG y", "RUN a b c"])
    []
    >>> _abridged_lines_match(["RUN b", "FROM x"], ["FROM x", "RUN b"])
    ['FROM x']
    >>> _abridged_lines_match(["RUN a ... c"], ["# RUN a b c", "RUN a b c d"])  # the ends are the line's ends
    ['RUN a ... c']
    """
    def fits(line: str, candidate: str) -> bool:
        parts = line.split("...")
        if len(parts) == 1:
            return line == candidate
        if not (candidate.startswith(parts[0]) and candidate.endswith(parts[-1])
                and len(candidate) >= len(parts[0]) + len(parts[-1])):
            return False
        at = len(parts[0])  # the middle parts in order between the two ends
        for part in parts[1:-1]:
            at = candidate.find(part, at, len(candidate) - len(parts[-1]))
            if at < 0:
                return False
            at += len(part)
        return True

    missing, i = [], 0
    for line in shown:
        if line.strip() == "...":
            continue
        j = next((k for k in range(i, len(real)) if fits(line, real[k])), None)
        if j is None:
            missing.append(line)
        else:
            i = j + 1
    return missing


def test_the_abridged_default_dockerfile_is_real_output(tmp_path, monkeypatch):
    """docs/outputs.md shows the default profile's Dockerfile abridged: every line it shows is a line of the real
    one, in the real order (a Dockerfile change that the page does not follow fails here)."""
    from envkit.generation import render_all
    from envkit.profile import load_profile

    monkeypatch.chdir(tmp_path)
    real = next(f.content.decode() for f in render_all(load_profile(None), tmp_path / "out", ("dockerfile",))
                if f.path == "Dockerfile")
    block = re.search(r"```dockerfile\n(.*?)```\n", (ROOT / "docs" / "outputs.md").read_text(), re.S)
    assert block, "docs/outputs.md has no Dockerfile block"
    assert _abridged_lines_match(block.group(1).splitlines(), real.splitlines()) == []


def test_the_harness_page_states_the_built_in_workload_the_harness_runs():
    # docs/harness.md said "2 workers, batch 32, [3,64,64]" long after the harness ran the profile's defaults.
    from envkit.harness.rules.defaults import LOADER

    row = next(line for line in (ROOT / "docs" / "harness.md").read_text().splitlines() if line.startswith("| `--expect"))
    shape = ", ".join(map(str, LOADER.sample_shape))
    for fact in (f"`num_workers: {LOADER.num_workers}`", f"batch {LOADER.batch_size}", f"`[{shape}]` {LOADER.dtype}",
                 f"prefetch {LOADER.prefetch_factor}", "pin_memory on" if LOADER.pin_memory else "pin_memory off"):
        assert fact in row, fact
    assert not re.search(r"\b64,\s*64\b", row)
