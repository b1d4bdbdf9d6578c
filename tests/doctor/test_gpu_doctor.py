"""envkit doctor's gpu_arch, gpu_driver and nvml_risk on hosts built from recorded facts
(tests/gpu_recordings.py names each source), and `envkit doctor --json` / `envkit harness --json` for real (each
document valid against the schema docs/cli.md shows)."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from envkit.commands import doctor as doctor_cmd
from envkit.doctor import diagnose
from envkit.doctor.host import FIXTURE_DIR, Host
from envkit.harness.probes.gpufacts import docker_facts, parse_smi_csv
from envkit.jsonout import SCHEMAS
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
    # The remedy names a version and a variant that exist together: cu128 starts at torch 2.7. Before, it named
    # "torch.variant: cu128" alone, which on torch 2.5.1 makes a Dockerfile that cannot install.
    assert 'image.torch: {version: "2.7.1", variant: cu128}' in c["remedy"]
    assert "pytorch/builder@aec5fb5d (branch release/2.5) manywheel/build_cuda.sh" in c["expected"]["source"]


def test_a_compute_capability_10_device_on_2_5_1_cu124_fails(tmp_path):
    smi = "NVIDIA B200, 10.0, 570.133.20, 183359 MiB\n"
    c = _checks(_host(tmp_path, smi), profile_text("cu124"))["gpu_arch"]
    assert c["status"] == "fail" and "sm_100" in c["message"]
    assert 'version: "2.7.1", variant: cu128' in c["remedy"]


def test_the_remedy_keeps_every_gpu_the_container_gets(tmp_path):
    # An RTX 5090 beside a V100: 2.7's cu128 drops sm_70, so the remedy is 2.8's cu128, which runs on both.
    smi = R.SMI_RTX5090 + "Tesla V100-SXM2-32GB, 7.0, 570.153.02, 32768 MiB\n"
    c = _checks(_host(tmp_path, smi), profile_text("cu124"))["gpu_arch"]
    assert c["status"] == "fail" and 'version: "2.8.0", variant: cu128' in c["remedy"]
    assert "sm_120, sm_70" in c["remedy"]


def test_gpu_arch_judges_only_the_gpus_the_profile_gives(tmp_path):
    # Two GPUs, the second an RTX 5090 no cu124 wheel runs on; run.gpus gives the container the first (a V100).
    smi = "Tesla V100-SXM2-32GB, 7.0, 570.153.02, 32768 MiB\n" + R.SMI_RTX5090
    text = profile_text("cu124").replace("gpus: all", "gpus: [0]")
    assert "gpus: [0]" in text
    c = _checks(_host(tmp_path / "one", smi), text)["gpu_arch"]
    assert c["status"] == "pass", c["message"]
    assert [g["name"] for g in c["measured"]["gpus"]] == ["Tesla V100-SXM2-32GB"]
    everything = _checks(_host(tmp_path / "all", smi), profile_text("cu124"))["gpu_arch"]
    assert everything["status"] == "fail"


def test_a_variant_the_release_does_not_ship_fails(tmp_path):
    c = _checks(_host(tmp_path, R.SMI_RTX5090), profile_text("cu128"))["gpu_arch"]  # torch 2.5.1 has no cu128
    assert c["status"] == "fail" and "torch 2.5.1 has no cu128 wheels (torch 2.5 ships cu118, cu121, cu124)" in c["message"]


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
    c = _checks(_host(tmp_path, R.SMI_GH200, machine="aarch64"), profile_text("cu126", "2.9.0"))
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


def test_nvml_risk_under_cgroupfs_or_with_links_still_warns_of_docker_update(tmp_path):
    # Before: cgroupfs (or systemd with /dev/char links) passed, yet a `docker update` drops --gpus devices
    # with any cgroup driver before Container Toolkit 1.18.
    nodes = ("nvidia0", "nvidiactl")
    linked = _host(tmp_path / "a", R.SMI_RTX5090, R.DOCKER_INFO_SYSTEMD, nodes=nodes, links=nodes)
    c = _checks(linked, profile_text("cu128", "2.7.0"))["nvml_risk"]
    assert c["status"] == "warn" and "docker update" in c["message"] and "daemon-reload leaves" in c["message"]
    cgroupfs = _host(tmp_path / "b", R.SMI_RTX5090, R.DOCKER_INFO_CGROUPFS, nodes=nodes)
    c = _checks(cgroupfs, profile_text("cu128", "2.7.0"))["nvml_risk"]
    assert c["status"] == "warn" and "cgroupfs" in c["message"] and ">= 1.18" in c["remedy"]
    assert c["measured"]["toolkit"] == "unknown (nvidia-ctk is not on PATH)"


def test_a_toolkit_with_cdi_by_default_passes_nvml_risk(tmp_path):
    nodes = ("nvidia0", "nvidiactl")
    host = _host(tmp_path, R.SMI_RTX5090, R.DOCKER_INFO_SYSTEMD, nodes=nodes)
    fx = host.root / FIXTURE_DIR
    (fx / "which.json").write_text(json.dumps({"nvidia-smi": "/usr/bin/nvidia-smi", "nvidia-ctk": "/usr/bin/nvidia-ctk"}))
    (fx / "nvidia-ctk.txt").write_text("NVIDIA Container Toolkit CLI version 1.18.0\ncommit: 2e7ed9a\n")
    # 1.18 alone is not enough: Docker before 29.2 injects --gpus through the old hook whatever the toolkit.
    c = _checks(host, profile_text("cu128", "2.7.0"))["nvml_risk"]
    assert c["status"] == "warn" and "1.18.0" in c["message"] and "Docker >= 29.2" in c["remedy"]
    docker = json.loads((fx / "docker.json").read_text())
    (fx / "docker.json").write_text(json.dumps({**docker, "server_version": "29.2.1"}))
    c = _checks(host, profile_text("cu128", "2.7.0"))["nvml_risk"]
    assert c["status"] == "pass" and "1.18.0" in c["message"] and "Docker 29.2.1 asks CDI first" in c["message"]
    (fx / "docker.json").write_text(json.dumps({**docker, "default_runtime": "nvidia"}))
    assert _checks(host, profile_text("cu128", "2.7.0"))["nvml_risk"]["status"] == "pass"
    (fx / "nvidia-ctk.txt").write_text("NVIDIA Container Toolkit CLI version 1.17.8\ncommit: f202b80\n")
    c = _checks(host, profile_text("cu128", "2.7.0"))["nvml_risk"]
    assert c["status"] == "warn" and "1.17.8" in c["message"]


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
    doc = json.loads(p.stdout)
    jsonschema.Draft202012Validator(SCHEMAS["doctor"]).validate(doc)  # the schema docs/cli.md shows
    checks = {c["name"]: c for c in doc["checks"]}
    assert "gpu_arch" in checks and "gpu_driver" in checks
    assert checks["gpu_arch"]["status"] == "fail" and "variant: cu128" in checks["gpu_arch"]["remedy"]


@pytest.mark.slow  # real processes for seconds: CI's slow tier keeps the unit tier under 90 s
def test_envkit_harness_json_on_this_cpu_host_skips_gpu_arch(capsys):
    from envkit.cli import main
    rc = main(["harness", "--json", "--quick", "--num-workers", "0", "--batch-size", "4"])
    report = json.loads(capsys.readouterr().out)
    jsonschema.Draft202012Validator(SCHEMAS["harness"]).validate(report)  # the schema docs/cli.md shows
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


# nvidia-smi's own words and exit statuses where it fails (nvidia-smi(1), RETURN VALUE: 6 "a query to find an
# object was unsuccessful", 9 "NVIDIA driver is not loaded"; the texts as users report them, e.g. NVIDIA/nvidia-docker#1648).
SMI_NO_DRIVER = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the "
                 "latest NVIDIA driver is installed and running.\n", 9)
SMI_NO_DEVICES = ("No devices were found\n", 6)


def _script_smi(tmp_path: Path, body: str) -> dict:
    """A PATH whose nvidia-smi runs ``body`` (sh)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    smi = bin_dir / "nvidia-smi"
    smi.write_text(f"#!/bin/sh\n{body}\n")
    smi.chmod(0o755)
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}


def _doctor_json(tmp_path: Path, env: dict, variant: str = "cu124"):
    prof = tmp_path / "envkit.yaml"
    prof.write_text(profile_text(variant))
    p = subprocess.run([sys.executable, "-m", "envkit", "doctor", str(prof), "--json"], cwd=tmp_path,
                       env={**os.environ, **env, "PYTHONPATH": os.pathsep.join([str(SRC), str(SRC.parent)])},
                       capture_output=True, text=True, timeout=120)
    return p, ({c["name"]: c for c in json.loads(p.stdout)["checks"]} if p.stdout.startswith("{") else {})


@pytest.mark.parametrize("said, status", [SMI_NO_DRIVER, SMI_NO_DEVICES])
def test_a_failing_nvidia_smi_fails_the_gpu_check_with_its_message(tmp_path, said, status):
    # Before: nvidia-smi on PATH was enough, so doctor printed "gpu pass" whatever nvidia-smi said.
    (tmp_path / "said.txt").write_text(said)
    env = _script_smi(tmp_path, f"cat '{tmp_path / 'said.txt'}'; exit {status}")
    p, checks = _doctor_json(tmp_path, env)
    assert p.returncode == 1, p.stderr
    gpu = checks["gpu"]
    assert gpu["status"] == "fail" and said.strip()[:40] in gpu["message"]
    assert "run.gpus: none" in gpu["remedy"] and "variant: cpu" in gpu["remedy"]
    assert checks["gpu_arch"]["status"] == "skip"


def test_unknown_driver_values_are_unknown_not_old(tmp_path):
    smi = "NVIDIA A100-SXM4-80GB, 8.0, [Unknown Error], 81920 MiB\n"
    c = _checks(_host(tmp_path, smi), profile_text("cu124"))["gpu_driver"]
    assert c["status"] == "skip" and "older" not in c["message"] and "no driver version" in c["message"]
    for value in ("[Not Supported]", "ERR!", "[N/A]"):
        assert parse_smi_csv(f"A100, 8.0, {value}, 1 MiB\n")[0]["driver"] is None


@pytest.mark.parametrize("body", [
    "printf 'NVIDIA A100\\377\\376, 8.0, 570.86.15, 81920 MiB\\n'",        # bytes that are not UTF-8
    "yes 'NVIDIA A100, 8.0, 570.86.15, 81920 MiB' | head -c 40000000",    # 40 MB of output
])
def test_hostile_nvidia_smi_output_is_bounded_and_decoded(tmp_path, body):
    # Before: a non-UTF-8 byte exited 70 (UnicodeDecodeError); 40 MB became a 40 MB report.
    p, checks = _doctor_json(tmp_path, _script_smi(tmp_path, body))
    assert p.returncode in (0, 1), p.stderr
    assert "internal error" not in p.stderr and len(p.stdout) < 2_000_000
    assert checks["gpu"]["status"] == "pass"


def test_init_finds_no_gpu_where_nvidia_smi_finds_no_device(tmp_path):
    env = _script_smi(tmp_path, f"echo '{SMI_NO_DEVICES[0].strip()}'; exit {SMI_NO_DEVICES[1]}")
    p = subprocess.run([sys.executable, "-m", "envkit", "init"], cwd=tmp_path,
                       env={**os.environ, **env, "PYTHONPATH": os.pathsep.join([str(SRC), str(SRC.parent)])},
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    text = (tmp_path / "envkit.yaml").read_text()
    import re

    assert "variant: cpu" in text and not re.search(r"^\s*gpus: all", text, re.M)
