"""loader_kwargs: real DataLoaders iterate with what it returns; each bound (CPU, quota, shm, platform) bites."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch.utils.data as tud

from envkit.harness.rules.budget import shm_need
from envkit.harness.rules.sizing import cpu_limit, plan_workers
from envkit.runtime import loader_kwargs
from tests.harness.runtime_datasets import Tensors
from tests.docs.runtime_blocks import check_block

MIB = 2**20


def _iterate(ds, kw) -> int:
    return sum(len(b[1]) for b in tud.DataLoader(ds, **kw))


def test_live_environment_loads_a_real_dataset():
    ds = Tensors(n=40)
    kw = loader_kwargs(ds, batch_size=8, expect=False)
    assert kw["num_workers"] == plan_workers("auto", cpu_limit(affinity=kw.budget["affinity"], quota=kw.budget["quota_cpus"]))
    assert kw.budget["batch_bytes"] == 8 * (3 * 32 * 32 * 4 + 8)
    assert _iterate(ds, kw) == 40
    text = kw.explain()
    for key in ("batch_size", "num_workers", "prefetch_factor", "persistent_workers", "pin_memory",
                "multiprocessing_context"):
        assert f"\n{key}=" in "\n" + text, text


def test_quota_lowers_workers_and_an_explicit_count_is_capped():
    kw = loader_kwargs(batch_size=4, sample_bytes=16, expect=False, affinity=16, quota_cpus=2.5, shm_free=None)
    assert kw["num_workers"] == 2 and "cgroup CPU quota 2.5" in kw.reasons["num_workers"]
    kw = loader_kwargs(batch_size=4, sample_bytes=16, expect=False, num_workers=12, affinity=16, quota_cpus=4.0,
                       shm_free=None)
    assert kw["num_workers"] == 4 and "lowered" in kw.reasons["num_workers"]


def test_small_shm_lowers_prefetch_then_workers_by_the_harness_formula():
    batch = 8 * MIB
    free = shm_need(batch, 3, 1)  # exactly 3 workers x prefetch 1
    kw = loader_kwargs(batch_size=1, sample_bytes=batch, num_workers=4, prefetch_factor=2, expect=False,
                       affinity=8, quota_cpus=None, shm_free=free, cuda=False)
    assert (kw["num_workers"], kw["prefetch_factor"]) == (3, 1)
    assert shm_need(batch, 3, 1) <= free < shm_need(batch, 4, 1)
    assert "--shm-size" in kw.reasons["num_workers"] and "lowered from 2" in kw.reasons["prefetch_factor"]
    tiny = loader_kwargs(batch_size=1, sample_bytes=batch, expect=False, affinity=8, quota_cpus=None,
                         shm_free=4 * MIB)
    assert tiny["num_workers"] == 0 and "prefetch_factor" not in tiny and "persistent_workers" not in tiny
    assert _iterate(Tensors(n=6), dict(tiny, batch_size=2)) == 6  # DataLoader accepts the 0-worker set


@pytest.mark.parametrize("system,python,method", [("Windows", (3, 12), "spawn"), ("Darwin", (3, 12), "spawn"),
                                                  ("Linux", (3, 14), "forkserver"), ("Linux", (3, 12), None)])
def test_start_method_by_platform(system, python, method):
    kw = loader_kwargs(batch_size=2, sample_bytes=8, expect=False, system=system, python=python, affinity=4,
                       quota_cpus=None, shm_free=None)
    assert kw.get("multiprocessing_context") == method
    if method:
        assert '__name__ == "__main__"' in kw.reasons["multiprocessing_context"]


def test_windows_explain_is_documented(golden):
    kw = loader_kwargs(batch_size=64, sample_bytes=3 * 224 * 224, num_workers=12, expect=False, system="Windows",
                       python=(3, 12), affinity=16, quota_cpus=None, cuda=True)
    assert kw["num_workers"] == 12 and kw["multiprocessing_context"] == "spawn"
    check_block(golden, "explain-windows", f">>> dict(kw)\n{dict(kw)}\n>>> print(kw.explain())\n{kw.explain()}")


@pytest.mark.slow  # real processes for seconds: CI's slow tier keeps the unit tier under 90 s
def test_windows_settings_run_under_spawn_here():
    """What Windows gets (spawn, bounded workers) works with a real DataLoader (spawn exists on Linux too)."""
    ds = Tensors(n=12, shape=(4,))
    kw = loader_kwargs(ds, batch_size=4, expect=False, system="Windows", python=(3, 12), affinity=2,
                       quota_cpus=None, shm_free=None)
    assert kw["num_workers"] == 1 and kw["multiprocessing_context"] == "spawn"
    assert "re-imports the script" in kw.reasons["num_workers"]
    assert _iterate(ds, kw) == 12


def test_profile_expectation_gives_the_profile_settings(tmp_path, monkeypatch):
    exp = tmp_path / "envkit_expect.json"
    exp.write_text('{"envkit_expect": 1, "loader": {"num_workers": 2, "batch_size": 16, "sample_shape": [3, 8, 8],'
                   ' "dtype": "uint8", "prefetch_factor": 3, "pin_memory": true, "persistent_workers": false}}')
    monkeypatch.setenv("ENVKIT_EXPECT", str(exp))
    kw = loader_kwargs(affinity=4, quota_cpus=None, shm_free=64 * MIB, cuda=False)
    assert dict(kw) == {"batch_size": 16, "num_workers": 2, "prefetch_factor": 3, "persistent_workers": False,
                        "pin_memory": False}
    assert str(exp) in kw.reasons["batch_size"] and kw.budget["batch_bytes"] == 16 * 3 * 64


def test_cuda_turns_pinning_on():
    kw = loader_kwargs(batch_size=2, sample_bytes=8, expect=False, cuda=True, shm_free=None)
    assert kw["pin_memory"] is True


def test_host_and_image_import_names_are_the_same_code(tmp_path):
    from envkit.harness.zipapp import build_zipapp
    build_zipapp(tmp_path)
    code = ("import envkit_runtime, envkit_harness.runtime as r; "
            "assert envkit_runtime.loader_kwargs is r.loader_kwargs; print(envkit_runtime.__all__)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                         env={"PYTHONPATH": str(tmp_path / "envkit_harness.pyz"), "PATH": "/usr/bin:/bin"})
    assert res.returncode == 0, res.stderr
    assert "loader_kwargs" in res.stdout


def test_the_quota_is_rounded_up_as_generate_plans_it():
    # --cpus=4.5 runs 5 processes at once: generate's plan, the harness and the companion agree on 5 CPUs
    # (the companion once floored the quota and lowered an explicit 5 workers to 4).
    from tests.conftest import loader_plan_of
    from envkit.profile import load_profile_bytes

    text = b"envkit: 1\nname: p\nimage: {base: \"debian:12\"}\nrun:\n  cpuset: '0-15'\n  cpus: 4.5\n"
    profile = load_profile_bytes(text, "<test>", Path(".")).profile
    common = dict(batch_size=2, sample_bytes=8, expect=False, cuda=False, affinity=16, quota_cpus=4.5, shm_free=None)
    auto = loader_kwargs(**common)
    assert auto.budget["effective_cpus"] == loader_plan_of(profile).cpus == 5
    assert auto["num_workers"] == loader_plan_of(profile).workers == 4
    assert loader_kwargs(num_workers=5, **common)["num_workers"] == 5
    assert loader_kwargs(num_workers=6, **common)["num_workers"] == 5


def test_ranks_share_the_cpus_and_the_free_shm(monkeypatch):
    """torchrun's LOCAL_WORLD_SIZE ranks each run a loader: each gets its share of the CPUs and of /dev/shm."""
    from envkit.harness.runtime import loader_kwargs

    common = dict(batch_size=8, sample_bytes=64 << 10, expect=False, cuda=False, affinity=16, quota_cpus=None,
                  shm_free=256 << 20, system="Linux", python=(3, 12), pin_budget=None)
    alone = loader_kwargs(**common)
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "8")
    shared = loader_kwargs(**common)
    assert alone["num_workers"] == 8 and shared["num_workers"] == 1
    assert shared.budget["ranks"] == 8 and shared.budget["shm_free_bytes"] == 32 << 20
    assert "8 training processes share them" in shared.reasons["num_workers"]
    # The profile's explicit 4 workers are held to the rank's share of 2 CPUs.
    assert loader_kwargs(**common, num_workers=4)["num_workers"] <= 2
