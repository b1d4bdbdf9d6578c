"""The target registry (envkit.plan.registry) is the one list of output names: each target renders only
under the names its line declares, and the project copy leaves all of them out."""

from __future__ import annotations

from pathlib import Path

import pytest

from envkit.generation import render_owned
from envkit.planner import build_plan
from envkit.plan.registry import REGISTRY, output_names
from envkit.profile import load_profile
from tests.conftest import call_envkit, copy_example, example_profiles


@pytest.mark.parametrize("example", [p.name for p in example_profiles()])
def test_each_target_renders_only_under_the_names_its_registry_line_declares(example, tmp_path):
    files, owners = render_owned(build_plan(load_profile(copy_example(example, tmp_path)), tmp_path / "out"))
    for f in files:
        top = f.path.split("/", 1)[0]
        assert top in REGISTRY[owners[f.path]].outputs, f"{owners[f.path]} renders {f.path}, not in its registry line"


def _envkit_files_in_project_copy(project: Path) -> list[str]:
    copied = project / ".envkit" / "project"
    names = output_names()
    return sorted(p.relative_to(copied).as_posix() for p in copied.rglob("*")
                  if p.relative_to(copied).parts[0] in names) if copied.is_dir() else []


def test_two_generates_into_the_profiles_folder_copy_no_envkit_output_into_the_project(tmp_path):
    profile = copy_example("cluster-2node.yaml", tmp_path)
    text = profile.read_text()
    if "copy_project" not in text:
        text = text.replace("image:\n", "image:\n  copy_project: true\n", 1)
        profile.write_text(text)
    (tmp_path / "train.py").write_text("print(1)\n")
    for _ in range(2):
        res = call_envkit("generate", "-o", ".", str(profile.name), cwd=tmp_path)
        assert res.returncode == 0, res.stderr
    assert (tmp_path / "k8s.yaml").is_file() and (tmp_path / "slurm.sbatch").is_file()
    assert (tmp_path / ".envkit" / "project" / "train.py").is_file()
    assert _envkit_files_in_project_copy(tmp_path) == []
