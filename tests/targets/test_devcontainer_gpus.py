"""devcontainer.json asks for the profile's GPUs by exactly one mechanism.

The Dev Containers CLI appends ``--gpus all`` after ``runArgs`` when ``hostRequirements.gpu`` is set
(devcontainers/cli singleContainer.ts ``extraRunArgs``; tests/clients checks the real CLI's behaviour),
so a subset or a count in runArgs together with hostRequirements.gpu would get every GPU.
"""

from __future__ import annotations

import json

import pytest

from envkit.generation import render_all
from envkit.profile import load_profile


def _devc(tmp_path, gpus: str) -> dict:
    p = tmp_path / "p.yaml"
    p.write_text(f"envkit: 1\nname: g\nimage: {{base: 'debian:bookworm'}}\nrun: {{gpus: {gpus}}}\n")
    files = {f.path: f.content.decode() for f in render_all(load_profile(p), tmp_path / "out", ("devcontainer",))}
    return json.loads(files[".devcontainer/devcontainer.json"].split("\n", 1)[1])


@pytest.mark.parametrize("gpus, flag", [("[0, 1]", '--gpus="device=0,1"'), ("2", "--gpus=2")])
def test_a_subset_or_count_is_a_runarg_without_host_requirements(tmp_path, gpus, flag):
    doc = _devc(tmp_path, gpus)
    assert [a for a in doc["runArgs"] if a.startswith("--gpus")] == [flag]
    assert "gpu" not in (doc.get("hostRequirements") or {})


def test_all_is_host_requirements_without_a_runarg(tmp_path):
    doc = _devc(tmp_path, "all")
    assert doc["hostRequirements"] == {"gpu": True}
    assert not [a for a in doc["runArgs"] if a.startswith("--gpus")]


def test_no_gpus_asks_for_none(tmp_path):
    doc = _devc(tmp_path, "none")
    assert "hostRequirements" not in doc and not [a for a in doc["runArgs"] if a.startswith("--gpus")]
