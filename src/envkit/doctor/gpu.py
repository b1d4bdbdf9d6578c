"""The doctor's GPU checks on the host, before any build: ``gpu_arch``, ``gpu_driver`` and ``nvml_risk``.

- ``gpu_arch``: the compute capability ``nvidia-smi`` reports against the archs of the profile's torch
  variant (:mod:`envkit.harness.cudatable`, read from PyTorch's wheel build scripts); a mismatch names
  the variant that supports the device.
- ``gpu_driver``: ``nvidia-smi``'s driver against the minimum for the variant's CUDA (NVIDIA's release
  notes, minor-version compatibility included); on WSL2 the Windows driver's column applies.
- ``nvml_risk``: Docker's cgroup driver is systemd and ``/dev/char`` lacks links to the NVIDIA device
  nodes: a ``systemctl daemon-reload`` then revokes running containers' GPU access ("Failed to
  initialize NVML: Unknown Error", NVIDIA/nvidia-container-toolkit#48, NVIDIA/nvidia-docker#1730).

The rules are the harness's (:mod:`envkit.harness.gpu`); the facts come through :mod:`envkit.harness.gpufacts`.
On a fixture host ``nvidia-smi``'s output is ``root/.envkit-fixture/nvidia-smi.csv``.

Example:
    >>> from pathlib import Path
    >>> from envkit.doctor.host import Host
    >>> host_smi(Host(Path("/nonexistent"), environ={}))["path"] is None
    True
"""

from __future__ import annotations

import json
import os
import platform
import subprocess

from envkit.doctor.host import FIXTURE_DIR, Host
from envkit.harness import cudatable as T
from envkit.harness.gpu import judge_arch, judge_driver, machine_key
from envkit.harness.gpufacts import query_smi
from envkit.harness.report import PASS, SKIP, WARN, make_check
from envkit.profile.model import Profile

CTK_SYMLINKS = "sudo nvidia-ctk system create-dev-char-symlinks --create-all"
NVML_SOURCES = ("NVIDIA/nvidia-container-toolkit#48; NVIDIA/nvidia-docker#1730; NVIDIA Container Toolkit "
                "troubleshooting, 'Containers losing access to GPUs with error: Failed to initialize NVML: Unknown "
                "Error' (https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/troubleshooting.html)")


def host_smi(host: Host) -> dict:
    """:func:`~envkit.harness.gpufacts.query_smi` on the host; a fixture host answers from its recording."""
    path = host.which("nvidia-smi")
    if host.is_real or not path:
        return query_smi(path)
    recording = host.root / FIXTURE_DIR / "nvidia-smi.csv"

    def run(cmd, **_kw):
        try:
            return subprocess.CompletedProcess(cmd, 0, recording.read_text(encoding="utf-8"), "")
        except OSError:
            return subprocess.CompletedProcess(cmd, 9, "", "NVIDIA-SMI has failed (no recording in the fixture)")
    return query_smi(path, run=run)


def host_machine(host: Host) -> str:
    """The host's CPU architecture column (``x86_64`` | ``aarch64``); a fixture's ``host.json`` may say ``machine``."""
    if host.is_real:
        return machine_key(platform.machine())
    try:
        doc = json.loads((host.root / FIXTURE_DIR / "host.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        doc = {}
    return machine_key(doc.get("machine") or "x86_64")


def _no_gpu(smi: dict) -> str | None:
    if not smi.get("path"):
        return "no NVIDIA GPU here: nvidia-smi is not on PATH"
    if not smi.get("ok"):
        return f"nvidia-smi failed ({smi.get('error')})"
    if not smi.get("gpus"):
        return "nvidia-smi lists no GPU"
    return None


def check_gpu_arch(host: Host, profile: Profile, smi: dict) -> dict:
    torch = profile.image.torch
    machine = host_machine(host)
    variant = torch.variant if torch else None
    archs = T.arch_list(variant, machine) if variant else None
    measured = {"nvidia_smi": smi.get("path"), "gpus": smi.get("gpus"), "error": smi.get("error"), "machine": machine}
    expected = {"variant": variant, "arch_list": archs, "source": (T.ARCHS.get(variant or "") or {}).get("source")}
    why = _no_gpu(smi)
    if why:
        return make_check("gpu_arch", SKIP, measured, expected, f"not checked: {why}")
    if torch is None:
        return make_check("gpu_arch", SKIP, measured, expected, "not checked: the profile installs no torch (image.torch)")
    if variant == "cpu":
        caps = [g["capability"] for g in smi["gpus"] if g.get("capability")]
        fixes = T.variants_for(caps[0], machine) if caps else []
        status = WARN if profile.run.wants_gpus else SKIP
        return make_check("gpu_arch", status, measured, expected,
                          "the profile's torch is the CPU build (torch.variant: cpu): the GPU goes unused",
                          f"set torch.variant: {fixes[0]}" if fixes and status == WARN else None)
    if archs is None:
        return make_check("gpu_arch", SKIP, measured, expected,
                          f"not checked: no arch list recorded for torch variant {variant} on {machine}")
    status, message, remedy = judge_arch(smi["gpus"], archs, f"torch {torch.version}+{variant}", machine)
    return make_check("gpu_arch", status, measured, expected, message, remedy)


def check_gpu_driver(host: Host, profile: Profile, smi: dict, wsl: dict) -> dict:
    torch = profile.image.torch
    cuda = T.variant_cuda(torch.variant) if torch else None
    drivers = sorted({g["driver"] for g in smi.get("gpus") or [] if g.get("driver")})
    measured = {"nvidia_smi": smi.get("path"), "drivers": drivers, "error": smi.get("error"), "wsl": wsl.get("version")}
    why = _no_gpu(smi)
    if why:
        return make_check("gpu_driver", SKIP, measured, {}, f"not checked: {why}, so there is no driver to compare")
    if torch is None or cuda is None:
        what = f"torch variant {torch.variant}" if torch else "no torch (image.torch)"
        return make_check("gpu_driver", SKIP, measured, {}, f"not checked: the profile installs {what}, no CUDA wheel")
    if not drivers:
        return make_check("gpu_driver", SKIP, measured, {"cuda": cuda}, "not checked: nvidia-smi reported no driver version")
    status, message, remedy, mins = judge_driver(drivers[0], cuda, windows=wsl.get("version") == 2)
    return make_check("gpu_driver", status, measured, mins, f"{message} (torch {torch.version}+{torch.variant})",
                      remedy)


def nvidia_nodes(host: Host) -> dict[str, bool]:
    """``{node: has a /dev/char link}`` for each ``/dev/nvidia*`` device node (the ``nvidia-caps`` folder aside)."""
    dev, char = host.path("/dev"), host.path("/dev/char")
    try:
        names = sorted(n for n in os.listdir(dev) if n.startswith("nvidia") and not (dev / n).is_dir())
    except OSError:
        return {}
    linked: set[str] = set()
    try:
        for entry in os.listdir(char):
            try:
                linked.add(os.path.basename(os.readlink(char / entry)))
            except OSError:
                continue
    except OSError:
        pass
    out = {}
    for n in names:
        ok = n in linked
        try:
            st = os.stat(dev / n)
            if not ok and (st.st_mode & 0o170000) == 0o020000:  # a character device: /dev/char/MAJ:MIN
                ok = (char / f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}").exists()
        except OSError:
            pass
        out[n] = ok
    return out


def check_nvml_risk(host: Host, profile: Profile, docker_measured: dict | None) -> dict:
    """Warn where a ``systemctl daemon-reload`` would take running containers' GPUs away."""
    info = docker_measured or {}
    driver = info.get("cgroup_driver")
    nodes = nvidia_nodes(host)
    missing = [n for n, ok in nodes.items() if not ok]
    measured = {"cgroup_driver": driver, "nvidia_nodes": sorted(nodes), "missing_dev_char": missing}
    expected = {"dev_char_links": "every /dev/nvidia* node (runc needs them under the systemd cgroup driver)",
                "source": NVML_SOURCES}
    if not profile.run.wants_gpus:
        return make_check("nvml_risk", SKIP, measured, expected, "not checked: the profile asks for no GPUs")
    if not info.get("reachable"):
        return make_check("nvml_risk", SKIP, measured, expected, "not checked: no Docker engine answered, so its cgroup "
                                                                 "driver is unknown")
    if not nodes:
        return make_check("nvml_risk", SKIP, measured, expected,
                          "not checked: no /dev/nvidia* device nodes here (WSL2 reaches the GPU through /dev/dxg)")
    if driver != "systemd":
        return make_check("nvml_risk", PASS, measured, expected,
                          f"Docker's cgroup driver is {driver or 'unknown'}: a systemd daemon-reload does not touch "
                          "containers' device access")
    if not missing:
        return make_check("nvml_risk", PASS, measured, expected,
                          "Docker uses the systemd cgroup driver and /dev/char links every NVIDIA device node")
    return make_check("nvml_risk", WARN, measured, expected,
                      f"Docker uses the systemd cgroup driver and /dev/char lacks links to {', '.join('/dev/' + n for n in missing)}: "
                      "after a `systemctl daemon-reload` running containers lose their GPUs ('Failed to initialize "
                      "NVML: Unknown Error', NVIDIA/nvidia-container-toolkit#48)",
                      f"`{CTK_SYMLINKS}` (NVIDIA Container Toolkit >= 1.12; run it at boot with the udev rule "
                      "ACTION==\"add\", DEVPATH==\"/bus/pci/drivers/nvidia\", RUN+=\"/usr/bin/nvidia-ctk system "
                      "create-dev-char-symlinks --create-all\" in /lib/udev/rules.d/71-nvidia-dev-char.rules), or "
                      "switch dockerd to the cgroupfs driver (\"exec-opts\": [\"native.cgroupdriver=cgroupfs\"] in "
                      "/etc/docker/daemon.json)")


def gpu_checks(host: Host, profile: Profile, wsl: dict, docker_checks: list[dict]) -> list[dict]:
    """The three checks, with nvidia-smi asked once; ``docker_checks``: what :func:`check_docker` returned."""
    smi = host_smi(host)
    docker = next((c["measured"] for c in docker_checks if c["name"] == "docker"), None)
    return [check_gpu_arch(host, profile, smi), check_gpu_driver(host, profile, smi, wsl),
            check_nvml_risk(host, profile, docker)]

