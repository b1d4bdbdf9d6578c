"""gpu_arch, gpu_driver, the WSL2 pin budget and the coherent-memory rule, fed recorded facts of real
machines through envkit.harness.probes.gpufacts (tests/gpu_recordings.py names each source)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from envkit.harness.rules import cudatable as T
from envkit.harness.checks import transfer
from envkit.harness.expectation import resolve_loader
from envkit.harness.checks.gpu import check_gpu_arch, check_gpu_driver
from envkit.harness.probes.gpufacts import largest_pinned, torch_pin_probe
from envkit.harness.rules.budget import MB, fit_pinned, pinned_block, pinned_need
from envkit.harness.probes.gpufacts import docker_facts, parse_smi_csv, query_smi, torch_facts
from envkit.harness.runtime import loader_kwargs
from envkit.harness.probes.toolrun import ToolResult
from tests import gpu_recordings as R


def _smi(text: str) -> dict:
    return {"path": "/usr/bin/nvidia-smi", "ok": True, "gpus": parse_smi_csv(text), "error": None}


def test_smi_csv_parses_the_recordings():
    [gpu] = parse_smi_csv(R.SMI_RTX5090)
    assert gpu == {"name": "NVIDIA GeForce RTX 5090", "capability": (12, 0), "driver": "570.153.02", "memory_mib": 32607}
    assert [g["capability"] for g in parse_smi_csv(R.SMI_P100_R515)] == [(6, 0)] * 4
    assert parse_smi_csv("name, compute_cap, driver_version, memory.total [MiB]\n" + R.SMI_GH200)[0]["name"] == \
        "NVIDIA GH200 480GB"


def test_smi_without_compute_cap_is_asked_again_without_it():
    calls = []

    def run(cmd, **kw):
        calls.append(cmd)
        if "compute_cap" in cmd[1]:
            return ToolResult(tuple(cmd), 2, "", R.SMI_R470_NO_CAP_ERROR, R.SMI_R470_NO_CAP_ERROR.splitlines()[0])
        return ToolResult(tuple(cmd), 0, "Tesla T4, 470.182.03, 15109 MiB\n", "", None)
    out = query_smi("/usr/bin/nvidia-smi", run=run)
    assert out["ok"] and len(calls) == 2
    assert out["gpus"] == [{"name": "Tesla T4", "capability": None, "driver": "470.182.03", "memory_mib": 15109}]


def test_docker_info_text_and_json_read_alike():
    text = docker_facts(R.DOCKER_INFO_SYSTEMD)
    assert text == {"cgroup_driver": "systemd", "cgroup_version": "2", "runtimes": ["io.containerd.runc.v2", "nvidia", "runc"]}
    api = docker_facts({"CgroupDriver": "systemd", "CgroupVersion": "2",
                        "Runtimes": {"io.containerd.runc.v2": {}, "nvidia": {}, "runc": {}}})
    assert api == text


def test_sm120_on_a_cu126_wheel_fails_naming_cu128():
    c = check_gpu_arch(R.TORCH_RTX5090D_CU126, machine="x86_64")
    assert c["status"] == "fail"
    assert "sm_120" in c["message"] and "sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90" in c["message"]
    # torch 2.6.0+cu126 (the recording's build): the smallest step is 2.7.1, the first release with cu128.
    assert 'image.torch: {version: "2.7.1", variant: cu128}' in c["remedy"]


def test_the_arch_lists_are_the_releases_own():
    # The 2.4 and 2.5 cu124 wheels carry no compute_90 PTX (pytorch/builder fa48aaf5 reverted it on release/2.5).
    assert "compute_90" not in T.arch_list("cu124", release="2.5")
    assert not T.runs_on(T.arch_list("cu124", release="2.5"), (12, 0))
    assert T.variants_for((12, 0), release="2.7") == ["cu128"] and T.variants_for((12, 0), release="2.5") == []
    assert "sm_70" not in T.arch_list("cu128", release="2.7") and "sm_70" in T.arch_list("cu128", release="2.8")
    assert T.runs_on(T.arch_list("cu124", release="2.5"), (8, 9))  # Ada runs sm_86 cubins
    assert T.runs_on(T.arch_list("cu126", "aarch64", "2.9"), (9, 0))  # GH200 on the aarch64 wheel
    # cu128 starts at torch 2.7: no earlier release has it.
    assert min((r for r, ws in T.RELEASES.items() if "cu128" in ws), key=lambda r: tuple(map(int, r.split(".")))) == "2.7"


def test_each_releases_newest_patch_is_a_real_release():
    import json
    from pathlib import Path

    import envkit

    known = json.loads((Path(envkit.__file__).parent / "data" / "torch_pythons.json").read_text())["releases"]
    for release, patch in T.LATEST_PATCH.items():
        assert patch in known and T.release_of(patch) == release
        newer = [v for v in known if T.release_of(v) == release and tuple(map(int, v.split("."))) > tuple(map(int, patch.split(".")))]
        assert not newer, (release, newer)
    assert set(T.LATEST_PATCH) == set(T.RELEASES)


def test_cpu_torch_here_skips_gpu_arch_with_the_reason():
    facts = torch_facts()  # the real torch of this (CPU) machine
    c = check_gpu_arch(facts)
    assert c["status"] == "skip" and "CPU-only build (torch.version.cuda is None)" in c["message"]
    assert check_gpu_driver(facts, smi=query_smi(None))["status"] == "skip"  # no nvidia-smi here


def test_no_visible_device_skips_with_the_reason():
    facts = {**R.TORCH_RTX5090D_CU126, "available": False, "devices": []}
    c = check_gpu_arch(facts)
    assert c["status"] == "skip" and "no CUDA device visible" in c["message"]


def test_old_driver_fails_naming_the_minimum():
    c = check_gpu_driver({"torch": "2.5.1+cu124", "cuda": "12.4"}, smi=_smi(R.SMI_P100_R515))
    assert c["status"] == "fail"
    assert "515.65.01" in c["message"] and "525.60.13" in c["message"] and ">= 550.54.14" in c["remedy"]
    assert "torch variant cu118" in c["remedy"]  # CUDA 11.x runs on R515 through minor-version compatibility


def test_driver_in_minor_version_range_warns_and_current_passes():
    warn = check_gpu_driver({"torch": "2.7.0+cu128", "cuda": "12.8"}, smi=_smi("NVIDIA A100, 8.0, 535.129.03, 81920 MiB\n"))
    assert warn["status"] == "warn" and "minor-version compatibility" in warn["message"] and ">= 570.26" in warn["remedy"]
    ok = check_gpu_driver({"torch": "2.7.0+cu128", "cuda": "12.8"}, smi=_smi(R.SMI_RTX5090))
    assert ok["status"] == "pass"


def test_wsl_reads_the_windows_driver_column():
    c = check_gpu_driver({"torch": "2.5.1+cu124", "cuda": "12.4"}, smi=_smi(R.SMI_WSL_RTX4090), wsl=2)
    assert c["status"] == "warn" and "Windows driver 546.33" in c["message"] and ">= 551.61" in c["remedy"]
    assert c["expected"]["platform"] == "Windows"


# ---------------------------------------------------------------- WSL2 pin budget
def _capped(cap: int):
    tried = []

    def try_pin(n: int) -> bool:
        tried.append(n)
        return n <= cap
    return try_pin, tried


def test_pin_budget_is_the_largest_allocation_that_succeeds_in_few_steps():
    try_pin, tried = _capped(R.WSL_PIN_CAP_BYTES)
    out = largest_pinned(1200 * MB, try_pin)
    assert out["capped"] and len(tried) <= 6
    assert 0.9 * R.WSL_PIN_CAP_BYTES <= out["budget_bytes"] <= R.WSL_PIN_CAP_BYTES
    free, tried = _capped(10**12)
    assert largest_pinned(300 * MB, free) == {"need_bytes": 300 * MB, "budget_bytes": 300 * MB, "capped": False,
                                               "trials": [[300 * MB, True]]} and len(tried) == 1


def test_pinned_transfer_on_wsl_measures_the_budget_and_sizes_copies_to_it(monkeypatch):
    seen = {}

    def fake_h2d(**kw):
        seen.update(kw)
        return {"size_bytes": kw["size_bytes"], "loops": kw["loops"], "trials": kw["trials"], "device": "NVIDIA GeForce RTX 4090",
                "methods": dict(transfer.METHODS), "affinity": {"cpus": None, "reason": "x"}, "integrated": False,
                "pinned_gbps": 12.0, "pageable_gbps": 6.0}
    monkeypatch.setattr(transfer, "measure_h2d", fake_h2d)
    monkeypatch.setattr(transfer, "run_loader_child", lambda *a, **k: {})  # the loader runs the check uses
    monkeypatch.setattr(transfer, "evaluate", lambda child, i: ({"samples_per_s": 100.0}, {}))
    settings = resolve_loader({"envkit_expect": 1, "loader": {"batch_size": 64, "sample_shape": [3, 224, 224],
                                                               "num_workers": 4, "prefetch_factor": 2}}, usable=8)
    try_pin, _ = _capped(R.WSL_PIN_CAP_BYTES)
    c = transfer.check_pinned_transfer(settings, cuda_available=True, wsl=2, try_pin=try_pin)
    budget = c["measured"]["pin_budget"]
    assert budget["capped"] and budget["budget_bytes"] <= R.WSL_PIN_CAP_BYTES
    assert seen["size_bytes"] <= R.WSL_PIN_CAP_BYTES  # the 512 MiB default would not pin here
    assert c["status"] == "warn" and "WSL2" in c["message"] and "prefetch_factor lowered from 2 to 1" in c["message"]
    assert "microsoft/WSL#14078" in c["remedy"]


def test_loader_kwargs_keeps_pinning_with_a_prefetch_that_fits_or_turns_it_off():
    common = dict(expect=False, cuda=True, affinity=5, quota_cpus=None, shm_free=64 << 30, system="Linux",
                  python=(3, 12), sample_bytes=3 * 224 * 224 * 4)
    kw = loader_kwargs(batch_size=64, pin_budget=R.WSL_PIN_CAP_BYTES, **common)
    assert kw["pin_memory"] is True and kw["prefetch_factor"] == 1
    assert "pinned-memory budget" in kw.reasons["prefetch_factor"] and "microsoft/WSL#14078" in kw.reasons["pin_memory"]
    off = loader_kwargs(batch_size=512, pin_budget=R.WSL_PIN_CAP_BYTES, **common)
    assert off["pin_memory"] is False and "pin_memory off" in off.reasons["pin_memory"]
    roomy = loader_kwargs(batch_size=16, pin_budget=R.WSL_PIN_CAP_BYTES, **common)
    assert roomy["pin_memory"] is True and roomy["prefetch_factor"] == 2


def test_fit_pinned_counts_every_prefetched_batch_plus_the_one_in_use():
    assert pinned_need(10, 4, 2) == 9 * 16  # each batch pinned as a 16-byte block
    assert fit_pinned(144, 10, 4, 2)["prefetch_factor"] == 2
    assert fit_pinned(143, 10, 4, 2)["prefetch_factor"] == 1


# Batches of recorded workloads (bytes): 64x3x224x224 float32 (the docs' tour) and 256x3x224x224 uint8
# (examples/cluster-2node.yaml) are the same size; 128x3x224x224 float32; 32x3x64x64 float32 (bench_worker_rss.py).
RECORDED_BATCHES = {38_535_168: 2**26, 77_070_336: 2**27, 1_572_864: 2**21}


def test_the_pinned_need_is_torchs_rounding_of_each_batch():
    for size, block in RECORDED_BATCHES.items():
        assert pinned_block(size) == block and block // 2 < size <= block
    # The rule is torch's own: its caching host allocator rounds each request with PowerOf2Ceil.
    import torch

    header = Path(torch.__file__).parent / "include" / "ATen" / "core" / "CachingHostAllocator.h"
    if header.exists():
        assert "c10::llvm::PowerOf2Ceil(size)" in header.read_text()
    # A 64-image float32 batch with 4 workers x prefetch 2: 9 blocks of 64 MiB = 576 MiB pinned, not the 347 MB
    # the unrounded total said; under WSL2's 500 MB it no longer fits, and prefetch 1 (5 blocks, 320 MiB) does.
    assert pinned_need(38_535_168, 4, 2) == 9 * 2**26 > 500 * MB > 9 * 38_535_168
    assert fit_pinned(500 * MB, 38_535_168, 4, 2)["prefetch_factor"] == 1


def test_the_pin_probe_holds_the_loaders_blocks_together():
    allocated = []

    class FakeTorch:
        uint8 = "u8"

        class _C:
            @staticmethod
            def _host_emptyCache():
                allocated.append("emptied")

        @staticmethod
        def empty(n, dtype, pin_memory):
            allocated.append(n)
            return object()

    try_pin = torch_pin_probe(FakeTorch, block=2**26)
    assert try_pin(5 * 2**26) and allocated == [2**26] * 5 + ["emptied"]


# ---------------------------------------------------------------- coherent memory (GH200)
@pytest.mark.parametrize("device, integrated, status", [
    ("NVIDIA GH200 480GB", False, "pass"),     # coherent: pinned need not beat pageable
    ("NVIDIA H100 80GB HBM3", False, "warn"),  # PCIe: pinned at pageable's speed is a finding
])
def test_pinned_not_faster_than_pageable_is_expected_on_coherent_memory(monkeypatch, device, integrated, status):
    gib = 2**30 / 1e9
    # A run where pinned falls to pageable's level: GH200's own figures are this close (vortex-data/vortex#7815).
    pageable = round(R.GH200_H2D_GIBPS["pageable"] * gib, 2)
    monkeypatch.setattr(transfer, "measure_h2d", lambda **kw: {
        "size_bytes": kw["size_bytes"], "loops": kw["loops"], "trials": kw["trials"], "device": device,
        "methods": dict(transfer.METHODS), "affinity": {"cpus": None, "reason": "x"}, "integrated": integrated,
        "pinned_gbps": pageable, "pageable_gbps": pageable})
    monkeypatch.setattr(transfer, "run_loader_child", lambda *a, **k: {})  # the loader runs the check uses
    monkeypatch.setattr(transfer, "evaluate", lambda child, i: ({"samples_per_s": 100.0}, {}))
    c = transfer.check_pinned_transfer(resolve_loader(None, usable=2), cuda_available=True, quick=True, wsl=None)
    assert c["status"] == status
    if status == "pass":
        assert "coherent memory" in c["message"] and "vortex-data/vortex#7815" in c["message"]


# ---------------------------------------------------------------- the prepared GPU-host script
@pytest.mark.slow  # real DataLoader workers (or a whole script) run: the slow tier, which CI runs
def test_gpu_check_script_runs_here_and_skips_the_gpu_parts(tmp_path):
    import json
    import os
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    script = root / "benchmarks" / "gpu_check.sh"
    env = {**os.environ, "OUT": str(tmp_path), "PYTHON": sys.executable}
    p = subprocess.run(["bash", str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=280)
    assert p.returncode == 0, p.stderr
    assert "gpu_check: no CUDA device (torch.cuda.is_available() is False): skipping the GPU parts" in p.stdout
    assert "gpu_check: ratio skipped" in p.stdout
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["checks"]["gpu_arch"]["status"] == "skip" and "ratio" not in summary
    shellcheck = Path(sys.executable).parent / "shellcheck"
    if shellcheck.exists():
        lint = subprocess.run([str(shellcheck), "--severity=style", str(script)], capture_output=True, text=True)
        assert lint.returncode == 0, lint.stdout


def test_arch_table_agrees_with_torchs_own_where_both_record_a_variant():
    # torch/cuda/__init__.py keeps PYTORCH_RELEASES_CODE_CC in sync with .ci/manywheel/build_cuda.sh
    import torch.cuda
    theirs = getattr(torch.cuda, "PYTORCH_RELEASES_CODE_CC", None)
    if not theirs:
        pytest.skip("this torch has no PYTORCH_RELEASES_CODE_CC")
    release = T.release_of(torch.__version__)
    assert release in T.RELEASES, f"torch {torch.__version__}'s table is not recorded in cudatable.RELEASES"
    for variant, wheel in T.RELEASES[release].items():
        for machine in ("x86_64", "aarch64"):
            archs = T.arch_list(variant, machine, release)
            if archs is None:  # a wheel this release does not build for that machine (2.13's cu129 is aarch64 only)
                continue
            ours = {T.arch_cc(a) for a in archs if a.startswith("sm_")}
            assert ours == set(theirs[wheel.cuda][machine]), (variant, machine)
    assert {T.variant_cuda(v) for v in T.RELEASES[release]} == set(theirs)
