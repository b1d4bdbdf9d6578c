"""The doctor's GPU checks on the host, before any build: ``gpu_arch``, ``gpu_driver`` and ``nvml_risk``.

- ``gpu_arch``: the compute capability ``nvidia-smi`` reports against the archs of the profile's torch
  variant (:mod:`envkit.harness.rules.cudatable`, read from PyTorch's wheel build scripts); a mismatch names
  the variant that supports the device.
- ``gpu_driver``: ``nvidia-smi``'s driver against the minimum for the variant's CUDA (NVIDIA's release
  notes, minor-version compatibility included); on WSL2 the Windows driver's column applies.
- ``nvml_risk``: Docker's cgroup driver is systemd and ``/dev/char`` lacks links to the NVIDIA device
  nodes: a ``systemctl daemon-reload`` then revokes running containers' GPU access ("Failed to
  initialize NVML: Unknown Error", NVIDIA/nvidia-container-toolkit#48, NVIDIA/nvidia-docker#1730).

The rules are the harness's (:mod:`envkit.harness.checks.gpu`); the facts come through :mod:`envkit.harness.probes.gpufacts`.
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
import re
from envkit.doctor.host import FIXTURE_DIR, Host
from envkit.harness.rules import cudatable as T
from envkit.harness.checks.gpu import arch_remedy, judge_arch, judge_driver, machine_key
from envkit.harness.probes.gpufacts import SmiFacts, SmiGpu, query_smi
from envkit.harness.probes.toolrun import ToolResult, run_tool
from envkit.harness.report import FAIL, PASS, SKIP, WARN, Check, Status, make_check
from envkit.profile.model import Profile

CTK_SYMLINKS = "sudo nvidia-ctk system create-dev-char-symlinks --create-all"
NVML_SOURCES = ("NVIDIA/nvidia-container-toolkit#48; NVIDIA/nvidia-docker#1730; NVIDIA Container Toolkit "
                "troubleshooting, 'Containers losing access to GPUs with error: Failed to initialize NVML: Unknown "
                "Error' (https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/troubleshooting.html)")


def host_smi(host: Host) -> SmiFacts:
    """:func:`~envkit.harness.probes.gpufacts.query_smi` on the host; a fixture host answers from its recording."""
    path = host.which("nvidia-smi")
    if host.is_real or not path:
        return query_smi(path)
    fixture = host.root / FIXTURE_DIR

    def run(cmd, **_kw):
        # The recording, and where a fixture records a failing nvidia-smi, its exit status (nvidia-smi.status).
        try:
            status = int((fixture / "nvidia-smi.status").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            status = 0
        try:
            text = (fixture / "nvidia-smi.csv").read_bytes().decode("utf-8", "replace")
        except OSError:
            return ToolResult(tuple(cmd), 9, "", "", "NVIDIA-SMI has failed (no recording in the fixture)")
        error = None if status == 0 else (text.strip().splitlines() or [f"exit status {status}"])[0]
        return ToolResult(tuple(cmd), status, text, "", error)
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


def _no_gpu(smi: SmiFacts) -> str | None:
    if not smi["path"]:
        return "no NVIDIA GPU here: nvidia-smi is not on PATH"
    if not smi["ok"]:
        return f"nvidia-smi failed ({smi['error']})"
    if not smi["gpus"]:
        return "nvidia-smi lists no GPU"
    return None


def given_gpus(gpus: list[SmiGpu], spec) -> tuple[list[SmiGpu], str]:
    """The GPUs the container gets of the host's (``nvidia-smi``'s lines, in index order) under ``run.gpus``, and
    which: ``all``, a count (the first N, as Docker's ``--gpus N`` picks) or ids (indexes; a UUID matches none here).

    >>> host = [{"name": "A"}, {"name": "B"}, {"name": "C"}]
    >>> [g["name"] for g in given_gpus(host, 2)[0]], [g["name"] for g in given_gpus(host, (2,))[0]]
    (['A', 'B'], ['C'])
    """
    if spec in ("all", "none") or spec is None:
        return gpus, "all of this host's GPUs"
    if isinstance(spec, int):
        return gpus[:spec], f"the first {spec} (run.gpus: {spec})"
    picked = [gpus[i] for i in spec if isinstance(i, int) and 0 <= i < len(gpus)]
    if any(not isinstance(i, int) for i in spec):
        return gpus, "all of this host's GPUs (run.gpus names UUIDs, which nvidia-smi's index order cannot match)"
    return picked, f"GPU {', '.join(map(str, spec))} (run.gpus)"


def check_gpu_arch(host: Host, profile: Profile, smi: SmiFacts) -> Check:
    torch = profile.image.torch
    machine = host_machine(host)
    variant = torch.variant if torch else None
    release = T.release_of(torch.version) if torch else None
    archs = T.arch_list(variant, machine, release) if variant and release else None
    gpus, which = given_gpus(smi.get("gpus") or [], profile.run.gpus)
    wheel = T.wheel(variant, release) if variant and release else None
    measured = {"nvidia_smi": smi.get("path"), "gpus": gpus, "given": which, "error": smi.get("error"), "machine": machine}
    expected = {"torch": torch.version if torch else None, "variant": variant, "arch_list": archs,
                "source": wheel.source if wheel else None}
    why = _no_gpu(smi)
    if why:
        return make_check("gpu_arch", SKIP, measured, expected, f"not checked: {why}")
    if torch is None:
        return make_check("gpu_arch", SKIP, measured, expected, "not checked: the profile installs no torch (image.torch)")
    known = [g for g in gpus if g.get("capability")]
    if variant == "cpu":
        unused: Status = WARN if profile.run.wants_gpus else SKIP
        return make_check("gpu_arch", unused, measured, expected,
                          "the profile's torch is the CPU build (torch.variant: cpu): the GPU goes unused",
                          arch_remedy(known, machine, release) if known and unused == WARN else None)
    if release in T.RELEASES and variant not in T.RELEASES[release]:
        ships = ", ".join(sorted(T.RELEASES[release], key=lambda v: T.version_key(T.variant_cuda(v) or "0")))
        return make_check("gpu_arch", FAIL, measured, expected,
                          f"torch {torch.version} has no {variant} wheels (torch {release} ships {ships}): the image "
                          "cannot install it",
                          arch_remedy(known, machine, release) if known else f"use one of {ships}")
    if archs is None:
        return make_check("gpu_arch", SKIP, measured, expected,
                          f"not checked: no arch list recorded for torch {torch.version}+{variant} on {machine}")
    status, message, remedy = judge_arch(gpus, archs, f"torch {torch.version}+{variant}", machine, release)
    return make_check("gpu_arch", status, measured, expected, f"{message} ({which})" if status != SKIP else message,
                      remedy)


def check_gpu_driver(host: Host, profile: Profile, smi: SmiFacts, wsl: dict) -> Check:
    torch = profile.image.torch
    cuda = T.variant_cuda(torch.variant) if torch else None
    drivers = sorted({g["driver"] for g in smi["gpus"] if g["driver"]})
    measured = {"nvidia_smi": smi["path"], "drivers": drivers, "error": smi["error"], "wsl": wsl.get("version")}
    why = _no_gpu(smi)
    if why:
        return make_check("gpu_driver", SKIP, measured, {}, f"not checked: {why}, so there is no driver to compare")
    if torch is None or cuda is None:
        what = f"torch variant {torch.variant}" if torch else "no torch (image.torch)"
        return make_check("gpu_driver", SKIP, measured, {}, f"not checked: the profile installs {what}, no CUDA wheel")
    if not drivers:
        return make_check("gpu_driver", SKIP, measured, {"cuda": cuda}, "not checked: nvidia-smi reported no driver version")
    status, message, remedy, mins = judge_driver(drivers[0], cuda, windows=wsl.get("version") == 2,
                                                 release=T.release_of(torch.version))
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


CDI_DEFAULT = (1, 18)  # Container Toolkit 1.18.0 made CDI the NVIDIA runtime's default mode (its release notes)
DOCKER_CDI_FIRST = (29, 2)  # Docker 29.2.0's --gpus tries CDI first when nvidia-cdi-hook is installed (moby)
CDI_SOURCE = ("NVIDIA Container Toolkit 1.18.0 release notes (CDI is the default mode of the NVIDIA Container Runtime); "
              "Docker 29.2.0 release notes (--gpus requests go through CDI first where the toolkit's CDI hook is installed)")


def _cdi_injects(version, docker: dict) -> str | None:
    """Why the GPUs of a ``--gpus`` container come in through CDI here (so no update takes them), or None."""
    if version is None or version[:2] < CDI_DEFAULT:
        return None
    if docker.get("default_runtime") == "nvidia":
        return "Docker's default runtime is the NVIDIA runtime, whose default mode is CDI from 1.18"
    server = tuple(int(p) for p in str(docker.get("server_version") or "0").split(".")[:2] if p.isdigit())
    if server >= DOCKER_CDI_FIRST:
        return f"Docker {docker.get('server_version')} asks CDI first for --gpus"
    return None


def toolkit_version(host: Host) -> tuple[tuple[int, ...] | None, str]:
    """The NVIDIA Container Toolkit's version from ``nvidia-ctk --version`` (a fixture host: ``nvidia-ctk.txt``),
    and the words for it: the text as the tool printed it, or why it is unknown."""
    path = host.which("nvidia-ctk")
    if not path:
        return None, "unknown (nvidia-ctk is not on PATH)"
    if host.is_real:
        result = run_tool([path, "--version"], timeout=10)
        text = result.stdout if result.ok else ""
        if not result.ok:
            return None, f"unknown ({path} --version failed: {result.error})"
    else:
        try:
            text = (host.root / FIXTURE_DIR / "nvidia-ctk.txt").read_bytes().decode("utf-8", "replace")
        except OSError:
            return None, "unknown (no nvidia-ctk recording in the fixture)"
    m = re.search(r"version (\d+)\.(\d+)\.(\d+)", text)
    if not m:
        return None, "unknown (nvidia-ctk --version printed no version)"
    return tuple(int(x) for x in m.groups()), ".".join(m.groups())


def check_nvml_risk(host: Host, profile: Profile, docker_measured: dict | None) -> Check:
    """Warn where running containers can lose their GPUs: a ``systemctl daemon-reload`` (systemd cgroup driver
    without /dev/char links) or a ``docker update`` (any cgroup driver), unless the toolkit injects through CDI."""
    info = docker_measured or {}
    driver = info.get("cgroup_driver")
    nodes = nvidia_nodes(host)
    missing = [n for n, ok in nodes.items() if not ok]
    version, shown = toolkit_version(host)
    measured = {"cgroup_driver": driver, "nvidia_nodes": sorted(nodes), "missing_dev_char": missing, "toolkit": shown}
    expected = {"dev_char_links": "every /dev/nvidia* node (runc needs them under the systemd cgroup driver)",
                "toolkit": ">= 1.18 (CDI by default)", "source": f"{NVML_SOURCES}; {CDI_SOURCE}"}
    if not profile.run.wants_gpus:
        return make_check("nvml_risk", SKIP, measured, expected, "not checked: the profile asks for no GPUs")
    cdi = _cdi_injects(version, info)
    if cdi:
        return make_check("nvml_risk", PASS, measured, expected,
                          f"NVIDIA Container Toolkit {shown}: {cdi}, so the GPUs come in through CDI and neither a "
                          "systemd daemon-reload nor a docker update takes them from running containers")
    if not info.get("reachable"):
        return make_check("nvml_risk", SKIP, measured, expected, "not checked: no Docker engine answered, so its cgroup "
                                                                 "driver is unknown")
    if not nodes:
        return make_check("nvml_risk", SKIP, measured, expected,
                          "not checked: no /dev/nvidia* device nodes here (WSL2 reaches the GPU through /dev/dxg)")
    upgrade = ("inject GPUs through CDI: NVIDIA Container Toolkit >= 1.18 with Docker >= 29.2 (its --gpus asks CDI first), "
               "or the nvidia runtime as Docker's default (`sudo nvidia-ctk runtime configure --runtime=docker "
               "--set-as-default`, CDI by default from 1.18)")
    update = (f"with NVIDIA Container Toolkit {shown}, --gpus devices are added outside Docker's own device list, so a "
              "`docker update` of a running container drops them whatever the cgroup driver ('Failed to initialize "
              "NVML: Unknown Error')")
    if driver == "systemd" and missing:
        return make_check("nvml_risk", WARN, measured, expected,
                          f"Docker uses the systemd cgroup driver and /dev/char lacks links to {', '.join('/dev/' + n for n in missing)}: "
                          "after a `systemctl daemon-reload` running containers lose their GPUs ('Failed to initialize "
                          f"NVML: Unknown Error', NVIDIA/nvidia-container-toolkit#48); and {update}",
                          f"{upgrade}; or `{CTK_SYMLINKS}` (NVIDIA Container Toolkit >= 1.12; run it at boot with the udev rule "
                          "ACTION==\"add\", DEVPATH==\"/bus/pci/drivers/nvidia\", RUN+=\"/usr/bin/nvidia-ctk system "
                          "create-dev-char-symlinks --create-all\" in /lib/udev/rules.d/71-nvidia-dev-char.rules), or "
                          "switch dockerd to the cgroupfs driver (\"exec-opts\": [\"native.cgroupdriver=cgroupfs\"] in "
                          "/etc/docker/daemon.json)")
    safe = ("/dev/char links every NVIDIA device node" if driver == "systemd"
            else f"Docker's cgroup driver is {driver or 'unknown'}")
    return make_check("nvml_risk", WARN, measured, expected,
                      f"{safe}, so a systemd daemon-reload leaves running containers' GPUs alone; but {update}",
                      f"{upgrade}; until then, restart a training container rather than `docker update` it")


def gpu_checks(host: Host, profile: Profile, wsl: dict, docker_checks: list[Check], smi: SmiFacts) -> list[Check]:
    """The three checks on one answer of nvidia-smi (``smi``); ``docker_checks``: what :func:`check_docker` returned."""
    docker = next((c["measured"] for c in docker_checks if c["name"] == "docker"), None)
    return [check_gpu_arch(host, profile, smi), check_gpu_driver(host, profile, smi, wsl),
            check_nvml_risk(host, profile, docker)]

