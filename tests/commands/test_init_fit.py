"""`envkit init` writes a profile this machine can run: sized from its CPUs, memory and GPUs (on Windows, the
PC's, for the WSL VM), or from a preset, and says on stderr what it chose."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from envkit.commands import init
from envkit.doctor.host import Host
from envkit.generation import render_all
from envkit.fitted_profile import PRESETS, fitted_profile, this_machine
from envkit.planner import build_plan
from envkit.profile import load_profile, load_profile_bytes
from tests.conftest import run_envkit

GIB = 1 << 30


def _host(tmp_path: Path, *, cpus: int, memory_gib: int, platform: str = "linux", gpu: bool = False) -> Host:
    root = tmp_path / "host"
    (root / ".envkit-fixture").mkdir(parents=True)
    (root / ".envkit-fixture" / "host.json").write_text(
        json.dumps({"platform": platform, "cpus": cpus, "memory_bytes": memory_gib * GIB}))
    (root / ".envkit-fixture" / "which.json").write_text(json.dumps({"nvidia-smi": "/usr/bin/nvidia-smi"} if gpu else {}))
    if gpu:  # what nvidia-smi lists (tests/gpu_recordings.py: GH200, vortex-data/vortex#7579)
        (root / ".envkit-fixture" / "nvidia-smi.csv").write_text("NVIDIA GH200 480GB, 9.0, 570.148.08, 97871 MiB\n")
    return Host(root, environ={}, cwd=str(tmp_path), docker_probe=lambda: None)


def _init(tmp_path: Path, **kw) -> tuple[dict, str]:
    err = io.StringIO()
    target = tmp_path / "envkit.yaml"
    assert init.run(target, force=True, out=io.StringIO(), err=err, **kw) == 0
    return load_profile(target).profile.model_dump(), err.getvalue()


def _warnings(text: str) -> list[str]:
    plan = build_plan(load_profile_bytes(text.encode(), "envkit.yaml", Path.cwd()))
    return list(plan.warnings)


@pytest.mark.slow  # real processes for seconds: CI's slow tier keeps the unit tier under 90 s
def test_init_on_this_machine_then_doctor_passes_cpus_and_memory(tmp_path):
    res = run_envkit("init", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "envkit init: sized for this" in res.stderr and "run.cpuset" in res.stderr
    doctor = run_envkit("doctor", "--json", cwd=tmp_path)
    checks = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}
    assert checks["cpus"]["status"] == "pass", checks["cpus"]
    assert checks["memory"]["status"] == "pass", checks["memory"]


def test_a_small_linux_host_gets_a_profile_it_can_start(tmp_path):
    p, said = _init(tmp_path, host=_host(tmp_path, cpus=2, memory_gib=24))
    assert p["run"]["cpuset"] == "0-1" and p["run"]["memory"] == 22 * GIB and p["loader"]["num_workers"] == 1
    assert p["run"]["gpus"] == "none" and p["image"]["torch"]["variant"] == "cpu" and p["wsl"] is None
    assert "memlock" not in p["run"]["ulimits"]
    assert said.startswith("envkit init: sized for this host (2 CPUs, 24.0 GiB, no NVIDIA GPU): run.cpuset 0-1, "
                           "run.memory 22g")


def test_a_gpu_host_keeps_the_gpus_and_the_cuda_wheels(tmp_path):
    p, said = _init(tmp_path, host=_host(tmp_path, cpus=16, memory_gib=128, gpu=True))
    assert p["run"]["gpus"] == "all" and p["image"]["torch"]["variant"] == "cu124"
    assert p["run"]["cpuset"] == "0-15" and p["run"]["memory"] == 32 * GIB and p["loader"]["num_workers"] == 6
    assert "run.gpus all" in said


def test_on_windows_the_vm_is_sized_from_the_pc(tmp_path):
    """A 16 GB, 4-core laptop: the VM gets 12 GB and 4 processors, the container 10g inside it."""
    p, said = _init(tmp_path, host=_host(tmp_path, cpus=4, memory_gib=16, platform="win32"))
    assert p["wsl"]["memory"] == 12 * GIB and p["wsl"]["processors"] == 4
    assert p["run"]["memory"] == 10 * GIB and p["run"]["cpuset"] == "0-3"
    assert "sized for this PC (4 CPUs, 16.0 GiB" in said and "wsl.memory 12GB, wsl.processors 4" in said


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_every_preset_loads_and_says_so(tmp_path, preset):
    p, said = _init(tmp_path, preset=preset)
    assert said.startswith(f"envkit init: sized for the {preset} preset")
    if preset == "cluster":
        assert p["cluster"]["nodes"] == 2 and p["run"]["cpus"] == 32 and p["wsl"] is None


@pytest.mark.parametrize("preset", ["laptop", "workstation"])
def test_the_desktop_presets_generate_without_warnings(preset):
    text, _ = fitted_profile(PRESETS[preset])
    assert _warnings(text) == []


def test_this_machines_profile_generates_without_warnings(tmp_path):
    text, _ = fitted_profile(this_machine(_host(tmp_path, cpus=2, memory_gib=24)))
    assert _warnings(text) == []
    assert [f.path for f in render_all(load_profile_bytes(text.encode(), "envkit.yaml", tmp_path), tmp_path / "o")]
