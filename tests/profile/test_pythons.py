"""A Python that fits torch: the wheel table, the base's Python, the refusal at generate, the check in the image."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from envkit.commands import build
from envkit.engine import RunResult
from envkit.errors import CheckFailed, ProfileError
from envkit.profile import load_profile_bytes
from envkit.pythons import base_python, nearest_torch, table, torch_pythons
from envkit.plan.runsettings import RunSettings
from tests.conftest import call_envkit
from tests.fakes import FakeEngine

ROOT = Path(__file__).resolve().parents[2]


def profile(image: str) -> str:
    return f"envkit: 1\nname: demo\nimage:\n{image}"


def test_the_table_is_dated_and_covers_the_releases_envkit_uses():
    data = table()
    assert data["read_on"] >= "2026-01-01" and "pypi.org" in data["source"]
    used = {"2.5.1", "2.13.0"}  # examples/*.yaml and the e2e wheelhouse
    assert used <= set(torch_pythons())
    # Spot checks against PyPI's file names: 2.5 added 3.13 and dropped 3.8; 2.9 added 3.14 and dropped 3.9.
    assert torch_pythons()["2.4.1"][-1] == "3.12" and torch_pythons()["2.5.1"][0] == "3.9"
    assert "3.14" in torch_pythons()["2.9.0"] and "3.9" not in torch_pythons()["2.9.0"]


@pytest.mark.parametrize("base, python", [
    ("python:3.12-slim-bookworm", "3.12"), ("python:3.9", "3.9"), ("docker.io/library/python:3.13-slim", "3.13"),
    ("debian:bookworm", "3.11"), ("debian:12-slim", "3.11"), ("envkit/bookworm-python:local", "3.11"),
    ("ubuntu:24.04", "3.12"), ("ubuntu:22.04", "3.10"), ("nvidia/cuda:12.4.1-cudnn-devel-ubuntu22.04", "3.10"),
    ("team/python-tools:1", None), ("alpine:3.20", None),
])
def test_the_base_name_implies_its_python(base, python):
    assert base_python(base) == python


def test_a_torch_without_a_wheel_for_the_python_is_refused_with_the_nearest_pairings(tmp_path):
    (tmp_path / "envkit.yaml").write_text(profile(
        "  base: python:3.13-slim-bookworm\n  torch: {version: '2.4.1', variant: cpu}\n"))
    res = call_envkit("generate", "envkit.yaml", "-o", "out", cwd=tmp_path)
    assert res.returncode == 2, res.stderr
    assert not (tmp_path / "out").exists(), "nothing may be written"
    assert "Traceback" not in res.stderr
    assert ("envkit.yaml:5:11: image.torch.version: torch 2.4.1 has no wheel for Python 3.13 (implied by "
            "image.base 'python:3.13-slim-bookworm')") in res.stderr
    assert "Python 3.12 with torch 2.4.1" in res.stderr and "torch 2.5.0 with Python 3.13" in res.stderr
    assert f"read {table()['read_on']}" in res.stderr


def test_image_python_is_located_when_it_is_the_wrong_one():
    with pytest.raises(ProfileError) as e:
        load_profile_bytes(profile("  base: debian:bookworm\n  python: '3.8'\n  torch: {version: '2.9.0'}\n").encode(),
                           "p.yaml", Path("."))
    assert str(e.value).startswith("p.yaml:5:3: image.python: torch 2.9.0 has no wheel for Python 3.8 (image.python)")
    assert "Python 3.10 with torch 2.9.0" in e.value.hint and "torch 2.4.1 with Python 3.8" in e.value.hint


def test_pairings_that_have_wheels_load():
    for image in ("  base: python:3.12-slim\n  torch: {version: '2.5.1', variant: cu124}\n",
                  "  base: ubuntu:24.04\n  python: '3.12'\n  torch: {version: '2.13'}\n",
                  "  base: team/custom:1\n  torch: {version: '2.1.0'}\n"):  # unknown Python: checked at build
        load_profile_bytes(profile(image).encode(), "p.yaml", Path("."))


def test_the_examples_pair_torch_with_a_python_it_has():
    for path in sorted((ROOT / "examples").glob("*.yaml")):
        load_profile_bytes(path.read_bytes(), str(path), path.parent)


def test_a_wheelhouse_is_its_own_truth(tmp_path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    (wheels / "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl").write_bytes(b"")
    ok = profile("  base: debian:bookworm\n  torch: {version: '2.13.0', find_links: [wheels]}\n")
    load_profile_bytes(ok.encode(), "p.yaml", tmp_path)
    bad = profile("  base: python:3.12-slim\n  torch: {version: '2.13.0', find_links: [wheels]}\n")
    with pytest.raises(ProfileError) as e:
        load_profile_bytes(bad.encode(), "p.yaml", tmp_path)
    assert "its wheels are for Python 3.11" in str(e.value) and "the wheelhouse's file names" in e.value.hint


def test_a_release_missing_from_the_table_is_a_warning_not_a_refusal(tmp_path):
    (tmp_path / "envkit.yaml").write_text(profile("  base: debian:bookworm\n  torch: {version: '9.9.9'}\n"))
    res = call_envkit("generate", "envkit.yaml", "-o", "out", "--target", "dockerfile", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "image.torch.version: torch 9.9.9 is not in envkit's wheel table" in res.stderr


def test_nearest_torch_prefers_the_closest_release():
    assert nearest_torch("2.15.0", "3.10") == "2.14.1"
    assert nearest_torch("2.1.0", "3.13") == "2.5.0"


def _build(text: str, python_out: str, tmp_path: Path):
    p = tmp_path / "envkit.yaml"
    p.write_text(text)
    eng = FakeEngine(run_results=[RunResult(0, python_out, "", False)])
    err = io.StringIO()
    rc = build.run(p, tag=None, no_cache=False, out=io.StringIO(), err=err, engine=eng)
    return rc, err.getvalue(), eng


def test_build_reads_the_images_python_and_refuses_another(tmp_path):
    text = profile("  base: team/custom:1\n  python: '3.12'\n")
    with pytest.raises(CheckFailed) as e:
        _build(text, "3.11\n", tmp_path)
    assert "the image's Python is 3.11, but the profile expects 3.12 (image.python); set image.python: '3.11'" in str(e.value)
    rc, err, eng = _build(text, "3.12\n", tmp_path)
    assert rc == 0 and "the image's Python is 3.12" in err
    run = [c for c in eng.calls if c[0] == "run"][0][1]
    assert run["command"][0] == "python3" and run["run"] == RunSettings.engine_defaults()


def test_build_checks_what_the_base_name_implied(tmp_path):
    with pytest.raises(CheckFailed) as e:
        _build(profile("  base: debian:bookworm\n"), "3.9\n", tmp_path)
    assert "expects 3.11 (implied by image.base 'debian:bookworm')" in str(e.value)


def test_the_table_file_is_valid_json_one_release_a_line():
    text = (ROOT / "src/envkit/data/torch_pythons.json").read_text()
    assert json.loads(text)["releases"] == torch_pythons()
    assert '  "2.5.1": ["3.9", "3.10", "3.11", "3.12", "3.13"],' in text
