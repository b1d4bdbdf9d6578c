"""Golden files: every target over every example profile.

Regenerate with ``ENVKIT_UPDATE_GOLDEN=1 pytest tests/targets/test_golden.py`` (the ``golden`` fixture,
tests/goldenfiles.py): each rewritten file fails its test; review ``git diff tests/golden`` as a user
would read the output, then run again.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from envkit.generation import render_all
from envkit.profile import load_profile
from tests.conftest import ROOT, call_envkit, copy_example, example_profiles

GOLDEN = ROOT / "tests" / "golden"
# Binary or copied artifacts have their own tests (determinism, content); goldens are for reading.
NOT_GOLDEN = {"envkit_harness.pyz"}


def _rendered(name: str, tmp_path: Path) -> dict[str, bytes]:
    profile = copy_example(name, tmp_path)
    files = render_all(load_profile(profile), tmp_path / "out")
    return {f.path: (f.content if f.source is None else f.source.read_bytes()) for f in files
            if f.path not in NOT_GOLDEN}


@pytest.mark.parametrize("example", [p.name for p in example_profiles()])
def test_golden(example, tmp_path, golden):
    golden.check_folder(GOLDEN / Path(example).stem, _rendered(example, tmp_path))


def _golden(example: str) -> dict[str, bytes]:
    folder = GOLDEN / Path(example).stem
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize("example", [p.name for p in example_profiles()])
def test_golden_into_the_profiles_own_folder_twice(example, tmp_path):
    """``generate -o .`` twice: the second run renders the golden set of files, none of the first run's
    outputs in the project copy, and the same build context (the files that name no host folder)."""
    profile = copy_example(example, tmp_path)
    for _ in range(2):
        res = call_envkit("generate", "-o", ".", profile.name, cwd=tmp_path)
        assert res.returncode == 0, res.stderr
    rendered = {f.path: (f.content if f.source is None else f.source.read_bytes())
                for f in render_all(load_profile(profile), tmp_path) if f.path not in NOT_GOLDEN}
    expected = _golden(example)
    assert sorted(rendered) == sorted(expected)
    for path in rendered:
        if path in ("Dockerfile", ".dockerignore") or path.startswith(".envkit/"):
            assert rendered[path] == expected[path], f"{example}: {path} differs from its golden file"


def test_default_profile_renders_every_target(tmp_path):
    paths = {f.path for f in render_all(load_profile(None), tmp_path)}
    assert {"Dockerfile", ".dockerignore", "run.sh", "compose.yaml", ".devcontainer/devcontainer.json",
            ".wslconfig", "wsl.conf", "setup-wsl.ps1", "envkit_harness.pyz", "envkit_expect.json"} <= paths


@pytest.mark.parametrize("example", [p.name for p in example_profiles()])
def test_dockerfile_has_no_placebo_lines(example, tmp_path):
    """shm, sysctls and ulimits are run-time settings: a Dockerfile line about them does nothing."""
    dockerfile = _rendered(example, tmp_path)["Dockerfile"].decode()
    instructions = [line for line in dockerfile.splitlines() if not line.lstrip().startswith("#")]
    text = "\n".join(instructions)
    for placebo in ("sysctl", "/dev/shm", "ulimit", "swappiness", "limits.conf"):
        assert placebo not in text, f"{example}: placebo setting {placebo!r} in the Dockerfile"
    # Layer order for caching: system packages and the user, then venv and torch, then the harness; with a
    # wheelhouse (staged layout) the venv is copied from the build stage before the harness goes in.
    markers = ("apt-get install", "useradd", "python3 -m venv", "torch==",
               *(("COPY --from=build",) if "COPY --from=build" in text else ()), "COPY envkit_harness.pyz")
    order = [text.find(marker) for marker in markers]
    if order[0] == -1:  # a python: base with no system packages has nothing to apt-get
        assert re.search(r"^FROM python:", dockerfile, re.M)
        order = order[1:]
    assert order == sorted(order) and -1 not in order


def _tour_profile() -> str:
    """The profile the README's short tour writes with ``$ cat envkit.yaml``."""
    tour = (ROOT / "README.md").read_text().split("## A short tour", 1)[1]
    return re.search(r"^\$ cat envkit\.yaml\n(.*?)^\$ ", tour, re.S | re.M).group(1)


@pytest.mark.parametrize("example", ["cluster-2node.yaml", "README tour"])
def test_generate_into_the_project_folder_twice_copies_no_output(example, tmp_path):
    """``generate -o .`` twice in a copy of the project: the image's project copy (.envkit/project/) holds the
    project's own files and nothing a target writes, and the second run finds every file unchanged."""
    import json

    from envkit.plan.registry import output_names

    project = tmp_path / "project"
    project.mkdir()
    if example == "README tour":  # without a cluster section it copies the project when asked
        (project / "envkit.yaml").write_text(_tour_profile().replace("\nimage:\n", "\nimage:\n  copy_project: true\n", 1))
        profile = project / "envkit.yaml"
    else:
        profile = copy_example(example, project)
    (project / "train.py").write_text("print('train')\n")
    runs = []
    for _ in range(2):
        res = call_envkit("generate", "-o", ".", profile.name, "--json", cwd=project)
        assert res.returncode == 0, res.stderr
        runs.append({f["path"]: f["status"] for f in json.loads(res.stdout)["files"]})
    copied = {str(p.relative_to(project / ".envkit" / "project")) for p in (project / ".envkit" / "project").rglob("*")
              if p.is_file()}
    assert {profile.name, "train.py"} <= copied
    assert not {path for path in copied if path.split("/")[0] in output_names()}, "an envkit output is in the project copy"
    assert not copied & set(runs[0]), "a file the first run wrote is in the project copy"
    assert runs[1] == dict.fromkeys(runs[0], "unchanged")
