"""envkit doctor's gpu_arch, gpu_driver and nvml_risk on hosts built from recorded facts
(tests/gpu_recordings.py names each source), and `envkit doctor --json` / `envkit harness --json` for real."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from envkit.commands import doctor as doctor_cmd
from envkit.doctor import diagnose
from envkit.doctor.host import FIXTURE_DIR, Host
from envkit.harness.gpufacts import docker_facts
from envkit.profile import load_profile_bytes
from tests import gpu_recordings as R

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SRC = Path(__file__).resolve().parents[2] / "src"


def profile_text(variant: str = "cu124", version: str = "2.5.1", gpus: str = "all") -> str:
    return (f"envkit: 1\nname: g\nimage: {{base: 'debian:bookworm', torch: {{version: '{version}', variant: {variant}}}}}\n"
            f"run: {{gpus: {gpus}}}\nloader: {{num_workers: 2, batch_size: 8}}\n")


def _profile(text: str):
    return load_profile_bytes(text.encode(), "p.yaml", Path.cwd())


def _host(tmp_path: Path, smi: str | None = None, docker_info: str | None = None, nodes=(), links=(),
          machine: str | None = None, env=None) -> Host:
    root = tmp_path / "host"
    shutil.copytree(FIXTURES / "linux", root)
    fx = root / FIXTURE_DIR
    if smi is not None:
        (fx / "which.json").write_text(json.dumps({"nvidia-smi": "/usr/bin/nvidia-smi"}))
        (fx / "nvidia-smi.csv").write_text(smi)
    else:
        (fx / "which.json").write_text("{}")
    if docker_info is not None:
        (fx / "docker.json").write_text(json.dumps({"reachable": True, "error": None, **docker_facts(docker_info)}))
    if machine:
        (fx / "host.json").write_text(json.dumps({"platform": "linux", "machine": machine}))
    (root / "dev" / "char").mkdir(parents=True, exist_ok=True)
    for n in nodes:
        (root / "dev" / n).write_text("")
    for i, n in enumerate(links):
        os.symlink(f"../{n}", root / "dev" / "char" / f"195:{i}")
    return Host(root, environ=env or {}, cwd="/home/me")


def _checks(host: Host, text: str) -> dict:
    return {c["name"]: c for c in diagnose(host, _profile(text), [], [])["checks"]}


def test_sm120_with_a_cu124_profile_fails_naming_cu128(tmp_path):
    c = _checks(_host(tmp_path, R.SMI_RTX5090), profile_text("cu124"))["gpu_arch"]
    assert c["status"] == "fail" and "sm_120" in c["message"] and "torch 2.5.1+cu124" in c["message"]
    assert "torch.variant: cu128" in c["remedy"]
    assert "pytorch/builder@1ab922dd5b9a59fcf9859dffb1158eb35dfb3c6c manywheel/build_cuda.sh" in c["expected"]["source"]


def test_sm120_with_a_cu128_profile_passes(tmp_path):
    c = _checks(_host(tmp_path, R.SMI_RTX5090), profile_text("cu128", "2.7.0"))["gpu_arch"]
    assert c["status"] == "pass"


def test_driver_below_the_wheels_minimum_fails_naming_it(tmp_path):
    c = _checks(_host(tmp_path, R.SMI_P100_R515), profile_text("cu124"))["gpu_driver"]
    assert c["status"] == "fail" and "515.65.01" in c["message"]
    assert ">= 550.54.14" in c["remedy"] and "525.60.13" in c["remedy"] and "update" in c["remedy"]


def test_no_gpu_skips_both_with_the_reason(tmp_path):
    checks = _checks(_host(tmp_path, None), profile_text("cu124"))
    for name in ("gpu_arch", "gpu_driver"):
        assert checks[name]["status"] == "skip" and "nvidia-smi is not on PATH" in checks[name]["message"]


def test_gh200_on_the_aarch64_wheel_passes(tmp_path):
    c = _checks(_host(tmp_path, R.SMI_GH200, machine="aarch64"), profile_text("cu126", "2.7.0"))
    assert c["gpu_arch"]["status"] == "pass" and c["gpu_arch"]["measured"]["machine"] == "aarch64"
    assert c["gpu_driver"]["status"] == "pass"


def test_wsl2_compares_the_windows_driver(tmp_path):
    host = _host(tmp_path, R.SMI_WSL_RTX4090, env={"WSL_DISTRO_NAME": "Ubuntu"})
    c = _checks(host, profile_text("cu124"))["gpu_driver"]
    assert c["status"] == "warn" and "Windows driver 546.33" in c["message"] and "on Windows" in c["remedy"]


def test_nvml_loss_host_warns_naming_the_toolkit_command(tmp_path):
    host = _host(tmp_path, R.SMI_RTX5090, R.DOCKER_INFO_SYSTEMD, nodes=("nvidia0", "nvidiactl", "nvidia-uvm"))
    c = _checks(host, profile_text("cu128", "2.7.0"))["nvml_risk"]
    assert c["status"] == "warn" and "systemd cgroup driver" in c["message"]
    assert "/dev/nvidia0" in c["message"] and "nvidia-container-toolkit#48" in c["message"]
    assert "sudo nvidia-ctk system create-dev-char-symlinks --create-all" in c["remedy"]


def test_nvml_risk_passes_with_links_or_cgroupfs(tmp_path):
    nodes = ("nvidia0", "nvidiactl")
    linked = _host(tmp_path / "a", R.SMI_RTX5090, R.DOCKER_INFO_SYSTEMD, nodes=nodes, links=nodes)
    assert _checks(linked, profile_text("cu128", "2.7.0"))["nvml_risk"]["status"] == "pass"
    cgroupfs = _host(tmp_path / "b", R.SMI_RTX5090, R.DOCKER_INFO_CGROUPFS, nodes=nodes)
    c = _checks(cgroupfs, profile_text("cu128", "2.7.0"))["nvml_risk"]
    assert c["status"] == "pass" and "cgroupfs" in c["message"]


def _fake_smi(tmp_path: Path, text: str) -> dict:
    """A PATH whose nvidia-smi prints a recording, as the real one would."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "recording.csv").write_text(text)
    smi = bin_dir / "nvidia-smi"
    smi.write_text(f"#!/bin/sh\ncat '{bin_dir / 'recording.csv'}'\n")
    smi.chmod(0o755)
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}


def test_envkit_doctor_json_reports_gpu_arch_and_gpu_driver(tmp_path, monkeypatch):
    # the real host seam (root "/"), with an nvidia-smi on PATH that prints the RTX 5090 recording
    env = _fake_smi(tmp_path, R.SMI_RTX5090)
    monkeypatch.setenv("PATH", env["PATH"])
    prof = tmp_path / "envkit.yaml"
    prof.write_text(profile_text("cu124"))
    out = io.StringIO()
    doctor_cmd.run(prof, [], [], True, out, io.StringIO(), host=Host(docker_probe=lambda: None))
    checks = {c["name"]: c for c in json.loads(out.getvalue())["checks"]}
    assert checks["gpu_arch"]["status"] == "fail" and "cu128" in checks["gpu_arch"]["remedy"]
    assert checks["gpu_driver"]["status"] == "pass" and "570.153.02" in checks["gpu_driver"]["message"]


def test_envkit_doctor_cli_json_names_cu128(tmp_path):
    env = {**os.environ, **_fake_smi(tmp_path, R.SMI_RTX5090),
           "PYTHONPATH": os.pathsep.join([str(SRC), str(SRC.parent)])}
    prof = tmp_path / "envkit.yaml"
    prof.write_text(profile_text("cu124"))
    p = subprocess.run([sys.executable, "-m", "envkit", "doctor", str(prof), "--json"], cwd=tmp_path,
                       env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 1, p.stderr  # gpu_arch fails
    checks = {c["name"]: c for c in json.loads(p.stdout)["checks"]}
    assert "gpu_arch" in checks and "gpu_driver" in checks
    assert checks["gpu_arch"]["status"] == "fail" and "torch.variant: cu128" in checks["gpu_arch"]["remedy"]


def test_envkit_harness_json_on_this_cpu_host_skips_gpu_arch(capsys):
    from envkit.cli import main
    rc = main(["harness", "--json", "--quick", "--num-workers", "0", "--batch-size", "4"])
    report = json.loads(capsys.readouterr().out)
    checks = {c["name"]: c for c in report["checks"]}
    assert rc == 0
    assert checks["gpu_arch"]["status"] == "skip"
    assert "CPU-only build (torch.version.cuda is None)" in checks["gpu_arch"]["message"]
    assert checks["gpu_driver"]["status"] == "skip" and checks["gpu_driver"]["message"].startswith("not checked")


def test_the_engine_probe_carries_the_cgroup_driver_to_nvml_risk(tmp_path):
    # the real-host path: Engine.ping() reports docker info's CgroupDriver; the probe and check_docker keep it
    from envkit.doctor.checks import check_docker
    from envkit.doctor.host import probe_engine

    facts = docker_facts(R.DOCKER_INFO_SYSTEMD)
    probed = probe_engine(lambda: {"runtimes": facts["runtimes"], "cgroup_driver": facts["cgroup_driver"],
                                   "server_version": "24.0.1"})
    assert probed["cgroup_driver"] == "systemd"
    host = _host(tmp_path, R.SMI_RTX5090, nodes=("nvidia0",))
    host = Host(host.root, environ={}, cwd="/home/me", docker_probe=lambda: probed)
    docker = check_docker(host, _profile(profile_text("cu128", "2.7.0")).profile)
    assert docker[0]["measured"]["cgroup_driver"] == "systemd"
