"""The doctor's host checks: each takes a :class:`Host` (and the profile) and returns one check record.

Records have the harness's shape (``envkit.harness.report.make_check``):
``name``, ``status`` (pass | warn | fail | skip), ``measured``, ``expected``,
``message``, ``remedy``.

Example:
    >>> from pathlib import Path
    >>> detect_wsl(Host(Path("/nonexistent"), environ={"WSL_DISTRO_NAME": "Ubuntu"}))["version"]
    2
"""

from __future__ import annotations

import os
import re
import stat
import time
from pathlib import Path

from envkit.plan.loader import LoaderPlan, loader_plan
from envkit.advice.wslvm import VM_HEADROOM, container_memory_need
from envkit.doctor.host import Host
from envkit.harness.probes.cpulist import format_cpulist
from envkit.harness.probes.env import WSL_ENV_VARS, WSL_INTEROP_FILE, read_cgroup_cpu_quota, wsl_version
from envkit.engine.dockerd import fmt_limit
from envkit.harness.probes.numa import read_topology, resolve_node
from envkit.harness.expectation import ExpectRun, LoaderNeed
from envkit.harness.probes.env import ShmStats
from envkit.harness.probes.gpufacts import SmiFacts
from envkit.harness.report import FAIL, PASS, SKIP, WARN, Check, Status, human_bytes, make_check, plural
from envkit.harness.rules.sizing import GIB, MIB, contention_remedy, cpu_fact
from envkit.profile.model import Profile
from envkit.plan.runsettings import Ulimit

READ_MAX_BYTES = 64 * MIB
READ_BUDGET_S = 3.0
_DRIVE_RE = re.compile(r"^/mnt/([a-zA-Z])(/|$)")
SLOW_FS = ("9p", "drvfs", "v9fs")


def detect_wsl(host: Host) -> dict:
    """``{"version": 2 | 1 | None, "osrelease", "evidence": [...]}``: the harness's WSL rule
    (:func:`envkit.harness.probes.env.wsl_version`) applied to the host, with the evidence it read."""
    release = (host.read_text("/proc/sys/kernel/osrelease") or "").strip()
    interop = host.exists("/" + WSL_INTEROP_FILE)
    version = wsl_version(release, environ=host.environ, interop=interop)
    evidence = [f"osrelease {release}"] if "microsoft" in release.lower() else []
    evidence += [f"{var}={host.environ[var]}" for var in WSL_ENV_VARS if host.environ.get(var)]
    if interop:
        evidence.append("binfmt_misc/WSLInterop")
    return {"version": version, "osrelease": release or None, "evidence": evidence}


def check_os(host: Host, wsl: dict) -> Check:
    measured = {"platform": host.platform, "osrelease": wsl["osrelease"], "wsl": wsl["version"],
                "evidence": wsl["evidence"], "distro": host.environ.get("WSL_DISTRO_NAME")}
    if host.platform.startswith("win"):
        return make_check("os", WARN, measured, {"wsl": 2}, "native Windows: envkit's containers run in WSL2",
                          "run envkit inside a WSL2 distribution (setup-wsl.ps1 installs one), in ~/ not /mnt/c")
    if wsl["version"] == 1:
        return make_check("os", FAIL, measured, {"wsl": 2},
                          f"WSL 1 ({wsl['osrelease']}): no real Linux kernel, so no Docker engine, cgroups or CUDA",
                          "convert the distribution from Windows: wsl --set-version <distro> 2 "
                          "(wsl -l -v lists them), and wsl --set-default-version 2")
    if wsl["version"] == 2:
        return make_check("os", PASS, measured, {"wsl": 2},
                          f"WSL 2 ({wsl['osrelease'] or 'custom kernel'}), distribution "
                          f"{host.environ.get('WSL_DISTRO_NAME') or 'unknown'}")
    name = {"linux": "Linux", "darwin": "macOS"}.get(host.platform, host.platform)
    return make_check("os", PASS, measured, {}, f"{name} {wsl['osrelease'] or ''}".strip())


def meminfo_total(host: Host) -> int | None:
    text = host.read_text("/proc/meminfo") or ""
    m = re.search(r"^MemTotal:\s+(\d+)\s*kB", text, re.MULTILINE)
    return int(m.group(1)) * 1024 if m else None


def host_plan(host: Host, profile: Profile, container: LoaderPlan) -> LoaderPlan:
    """The loaders' plan on this host: the profile's limits and the host's CPUs and cgroup quota, with the
    /dev/shm of ``container``, the plan's loaders (``build_plan(...).loader``: what the generated files give
    the container; a host's CPUs never resize it)."""
    return loader_plan(profile, host_cpus=host.usable_cpus(), host_quota=cpu_quota(host),
                       shm=(container.shm_bytes, dict(container.facts)["shm_bytes"]))


def check_memory(host: Host, profile: Profile, wsl: dict, the_plan: LoaderPlan) -> Check:
    total = meminfo_total(host)
    need, how = container_memory_need(profile, the_plan)
    expected = {"container_bytes": need, "how": how, "need_bytes": the_plan.memory_need}
    if total is None:
        return make_check("memory", SKIP, {}, expected, "cannot read /proc/meminfo")
    remedy = ("raise memory in %UserProfile%\\.wslconfig (wsl.memory in the profile; envkit wsl apply), "
              "then wsl --shutdown" if wsl["version"] == 2 else "lower run.memory or the loader's batch/workers")
    measured = {"memory_bytes": total}
    if total < need:
        return make_check("memory", FAIL, measured, expected,
                          f"{human_bytes(total)} of memory, but the container needs {human_bytes(need)} ({how})", remedy)
    if total < need + VM_HEADROOM:
        return make_check("memory", WARN, measured, expected,
                          f"{human_bytes(total)} of memory leaves under {human_bytes(VM_HEADROOM)} beside the "
                          f"container's {human_bytes(need)} for the OS and Docker", remedy)
    return make_check("memory", PASS, measured, expected, f"{human_bytes(total)} of memory; the container needs {human_bytes(need)}")


WINDOWS_ROOM = 4 * GIB  # what Windows itself keeps beside the WSL VM


def check_wsl_fit(host: Host, profile: Profile) -> Check:
    """On native Windows: the profile's ``wsl.memory`` and ``wsl.processors`` against this PC, which the VM is cut from.

    More processors than the PC has, or more memory, is a fail: setup-wsl.ps1's own check (``nproc``,
    ``free``) then finds the VM smaller than the profile says. Memory leaving Windows under
    :data:`WINDOWS_ROOM` is a warning.
    """
    wsl = profile.wsl
    memory, cpus = host.memory_bytes(), host.usable_cpus()
    expected = {"wsl_memory_bytes": wsl.memory if wsl else None, "wsl_processors": wsl.processors if wsl else None}
    measured = {"pc_memory_bytes": memory, "pc_cpus": cpus}
    if wsl is None:
        return make_check("wsl_fit", SKIP, measured, expected, "the profile has no wsl section")
    fails, warns = [], []
    if wsl.processors is not None and cpus and wsl.processors > cpus:
        fails.append(f"wsl.processors {wsl.processors} is more than this PC's {cpus} logical CPUs")
    if wsl.memory is not None and memory:
        if wsl.memory > memory:
            fails.append(f"wsl.memory {human_bytes(wsl.memory)} is more than this PC's {human_bytes(memory)}")
        elif wsl.memory > memory - WINDOWS_ROOM:
            warns.append(f"wsl.memory {human_bytes(wsl.memory)} leaves Windows under {human_bytes(WINDOWS_ROOM)} "
                         f"of this PC's {human_bytes(memory)}")
    remedy = (f"lower wsl.memory (at most {human_bytes(max(0, (memory or 0) - WINDOWS_ROOM))}) and wsl.processors "
              f"(at most {cpus}) and run.memory/run.cpuset inside them; `envkit init --force` writes a profile sized "
              "for this PC")
    if fails or warns:
        return make_check("wsl_fit", FAIL if fails else WARN, measured, expected, "; ".join(fails + warns), remedy)
    return make_check("wsl_fit", PASS, measured, expected,
                      f"this PC has {human_bytes(memory)} and {cpus} logical CPUs: the profile's VM fits")


def cpu_quota(host: Host) -> float | None:
    """CPUs allowed by the host's cgroup quota (tightest over the ancestors), or None when unlimited."""
    return read_cgroup_cpu_quota(host.root)["quota_cpus"]


def planned_differs(planned: LoaderPlan, here: LoaderPlan) -> str:
    """Where generate's plan (made without this host) gives other workers than this host's, each number with its
    fact: ``"; generate planned 7 workers per training process for the 8 CPUs of wsl.processors 8; here it is 1,
    from this host's 2 CPUs"``; empty where the workers agree."""
    if planned.workers == here.workers:
        return ""
    source = dict(planned.facts)["cpus"]
    sized = (f"for the {planned.cpus} CPUs of {source}" if planned.cpus is not None else
             "with no CPU count in the profile (no run.cpuset, run.cpus or wsl.processors: auto plans for the most)")
    return (f"; generate planned {plural(planned.workers, 'worker')} per training process {sized}; "
            f"here it is {here.workers}, from {dict(here.facts)['cpus']}")


def check_cpus(host: Host, profile: Profile, the_plan: LoaderPlan, planned: LoaderPlan) -> Check:
    """The host's CPUs against ``the_plan`` (this host's loaders), saying where ``planned`` (the
    container's, as generate planned it without seeing this host) differs."""
    cpus = host.usable_cpus()
    quota = cpu_quota(host)
    cpuset = profile.run.cpuset_cpus
    nw = profile.loader.num_workers
    workers = the_plan.workers
    expected = {"cpuset": profile.run.cpuset, "cpuset_count": len(cpuset), "num_workers": nw, "workers": workers}
    if cpus is None:
        return make_check("cpus", SKIP, {}, expected, "cannot count this machine's CPUs")
    effective = cpu_fact(("count", cpus, "this host's CPUs"), ("quota", quota, "this host's cgroup quota"))[0] or cpus
    measured = {"cpus": cpus, "quota_cpus": quota, "effective": effective}
    if cpuset and max(cpuset) >= cpus:
        return make_check("cpus", FAIL, measured, expected,
                          f"run.cpuset {profile.run.cpuset} names CPU {max(cpuset)}, but this machine has CPUs "
                          f"0-{cpus - 1}: the container will not start ('Requested CPUs are not available')",
                          "shrink run.cpuset, or on WSL2 raise processors in .wslconfig and wsl --shutdown")
    ranks = the_plan.ranks
    differs = planned_differs(planned, the_plan)
    if the_plan.processes > effective:
        who = "the training process" if ranks == 1 else f"each of {ranks} training processes"
        return make_check("cpus", WARN, measured, expected,
                          f"{effective} usable CPU(s) for {workers} DataLoader workers of {who} plus "
                          f"{'itself' if ranks == 1 else 'themselves'}: {the_plan.processes} processes{differs}",
                          contention_remedy(nw, effective, ranks)[1])
    return make_check("cpus", PASS, measured, expected,
                      f"{effective} usable CPU(s)" + (f" (cgroup quota {quota:g})" if quota else "")
                      + (f"; run.cpuset {profile.run.cpuset} fits" if cpuset else "")
                      + f"; {the_plan.processes} processes ({ranks} x (1 + {workers} "
                      f"{'worker' if workers == 1 else 'workers'})){differs}")


def check_numa(host: Host, profile: Profile) -> Check:
    """The host's NUMA topology (nodes, their CPUs, each NVIDIA GPU's node) against ``run.numa``."""
    topo = read_topology(host.root)
    measured = {"nodes": {str(k): format_cpulist(v) for k, v in topo["nodes"].items()}, "gpus": topo["gpus"]}
    numa = profile.run.numa
    expected = {"numa": numa, "cpuset": profile.run.cpuset}
    where = "; ".join(f"node {k}: CPUs {v}" for k, v in measured["nodes"].items()) or "no NUMA information"
    gpus = ", ".join(f"GPU {g['pci']} on node {g['node'] if g['node'] is not None else '?'}" for g in topo["gpus"])
    summary = where + (f"; {gpus}" if gpus else "")
    node, why = resolve_node(numa, topo)
    if node is None:
        hint = None
        if numa == "none" and len(topo["nodes"]) > 1 and topo["gpus"]:
            g_node, _ = resolve_node("auto", topo)
            if g_node is not None:
                hint = f"run.numa: {g_node} keeps the loader's CPUs and memory beside the first GPU"
        status = WARN if numa == "auto" and len(topo["nodes"]) > 1 else PASS
        return make_check("numa", status, measured, expected, f"{summary} ({why})", hint)
    cpus = topo["nodes"].get(node)
    if cpus is None:
        return make_check("numa", FAIL, measured, expected, f"{summary}; run.numa names node {node}, which this "
                          "host does not have", f"set run.numa to one of {sorted(topo['nodes'])} or auto")
    flags = f"--cpuset-cpus={format_cpulist(cpus)} --cpuset-mems={node}"
    chosen = set(profile.run.cpuset_cpus)
    if chosen and not chosen <= set(cpus):
        return make_check("numa", WARN, measured, expected,
                          f"{summary}; run.cpuset {profile.run.cpuset} reaches outside node {node} ({why})",
                          f"run.cpuset: \"{format_cpulist(cpus)}\" (docker run {flags})")
    remedy = None
    if numa == "auto" or not chosen:
        remedy = (f"on this host: run.numa: {node} and run.cpuset: \"{format_cpulist(cpus)}\" "
                  f"(docker run {flags})")
    return make_check("numa", PASS, measured, expected,
                      f"{summary}; node {node} ({why})" + (f"; {remedy}" if remedy else ""), remedy)


def shm_facts(host: Host, profile: Profile, the_plan: LoaderPlan) -> tuple[LoaderNeed, ExpectRun, ShmStats | None]:
    """This host's facts for the harness's one ``shm`` check (:func:`envkit.harness.checks.shm.check_shm`,
    run with ``inside=False``): the node's loaders as planned on this host, the container's planned
    /dev/shm with its source and ``ipc``, and this host's /dev/shm (the loaders' only under ``ipc: host``)."""
    ld = profile.loader
    loader: LoaderNeed = {"batch_size": ld.batch_size, "sample_shape": list(ld.sample_shape), "dtype": ld.dtype,
              "num_workers": the_plan.workers, "prefetch_factor": ld.prefetch_factor,
              "ranks_per_node": the_plan.ranks, "shm_need_bytes": the_plan.shm_need}
    run: ExpectRun = {"shm_size_bytes": the_plan.shm_bytes, "ipc": profile.run.ipc, "nccl": the_plan.nccl,
           "facts": {"shm_bytes": dict(the_plan.facts)["shm_bytes"]}}
    return loader, run, host.statvfs("/dev/shm")


RAISE_DAEMON = ("raise dockerd's limit (systemd: `sudo systemctl edit docker` -> [Service] Limit{NAME}=infinity, then "
                "restart docker; without systemd raise `ulimit -H` in the shell that starts dockerd; rootless Docker "
                "cannot exceed its own)")


def ulimit_fit(host: Host, daemon, name: str, want) -> tuple[Status, str, str | None, dict]:
    """``(status, sentence, remedy, measured)``: does the engine grant ulimit ``name`` as the profile asks (``want``)?

    runc applies a container's rlimits from the daemon's side, so the daemon's hard limit is the ceiling a
    container starts under; going above it needs the kernel to let the daemon raise it, which CAP_SYS_RESOURCE
    does not always decide (here, a dockerd holding it still got "error setting rlimit type 7: operation not
    permitted"). So above the daemon's limit the engine is asked (:meth:`Host.probe_ulimits`: a probe container,
    seconds, no pull), and only where it cannot be asked is the capability the guess.
    """
    lim = (daemon.limits or {}).get(name)
    where = f"the Docker daemon's (dockerd pid {daemon.pid})" if lim else "this shell's (the daemon's limits were not readable)"
    if lim is None:
        lim = host.getrlimit(name)
    measured: dict = {"soft": lim[0] if lim else None, "hard": lim[1] if lim else None, "source": where,
                      "daemon_pid": daemon.pid, "daemon_cap_sys_resource": daemon.cap_sys_resource}
    asked, hard = want.hard, (lim[1] if lim else None)
    shown = f"run.ulimits.{name} {fmt_limit(name, asked)}"
    if hard is not None and (hard == -1 or (asked != -1 and asked <= hard)):
        return PASS, f"{where} hard limit {fmt_limit(name, hard)} covers {shown}", None, measured
    granted, said = host.probe_ulimits((Ulimit(name, want.soft, want.hard),))
    measured["probe"] = said
    remedy = (f"{RAISE_DAEMON.replace('{NAME}', name.upper())}, or lower run.ulimits.{name} to at most "
              f"{fmt_limit(name, hard) if hard is not None else 'that limit'}")
    limit_words = f"{where} hard limit {fmt_limit(name, hard)}" if hard is not None else "a limit envkit could not read"
    if granted:
        return PASS, f"{shown} is above {limit_words}, but the engine granted it (a probe container started)", None, measured
    if granted is False:
        return FAIL, f"{shown} is above {limit_words}: the engine refuses to start such a container ({said})", remedy, measured
    certain = daemon.limits is not None and daemon.cap_sys_resource is False
    if certain:
        return (FAIL, f"{shown} is above {limit_words} and the daemon lacks CAP_SYS_RESOURCE: the container will "
                f"not start ('error setting rlimit'); the engine could not be asked ({said})", remedy, measured)
    return (WARN, f"{shown} is above {limit_words}: the container may not start ('error setting rlimit'); the engine "
            f"could not be asked ({said})", remedy, measured)


def check_memlock(host: Host, profile: Profile, daemon=None) -> Check:
    """Can the container get the profile's memlock? The Docker daemon's limit decides, not this shell's
    (:func:`ulimit_fit`)."""
    want = profile.run.ulimits.get("memlock")
    expected = {"profile_memlock": [want.soft, want.hard] if want else None}
    why = ("CUDA pinned memory (pin_memory=True) does not need memlock: the NVIDIA driver page-locks on its own; "
           "NCCL over InfiniBand/RDMA does (ibv_reg_mr)")
    daemon = daemon or host.daemon()
    lim = (daemon.limits or {}).get("memlock") or host.getrlimit("memlock")
    if lim is None:
        return make_check("memlock", SKIP, {}, expected, "cannot read the locked-memory limit here. " + why)
    if want is None:
        where = "the Docker daemon's" if (daemon.limits or {}).get("memlock") else "this shell's"
        return make_check("memlock", PASS, {"soft_bytes": lim[0], "hard_bytes": lim[1], "source": where},
                          expected, f"{where} locked-memory limit is {human_bytes(lim[0])}; the profile sets none. {why}")
    status, sentence, remedy, measured = ulimit_fit(host, daemon, "memlock", want)
    measured.update(soft_bytes=measured.pop("soft"), hard_bytes=measured.pop("hard"))
    return make_check("memlock", status, measured, expected, f"{sentence}. {why}",
                      remedy and f"{remedy}; or drop run.ulimits.memlock if you do not use RDMA/NCCL over InfiniBand")


def check_ulimits(host: Host, profile: Profile, daemon=None) -> Check:
    """Every other ulimit the profile asks (nofile, nproc, stack, ...) against what the engine grants (:func:`ulimit_fit`)."""
    asked = {n: u for n, u in profile.run.ulimits.items() if n != "memlock"}
    expected = {n: [u.soft, u.hard] for n, u in asked.items()}
    if not asked:
        return make_check("ulimits", SKIP, {}, expected, "the profile asks no ulimit but memlock (checked on its own)")
    daemon = daemon or host.daemon()
    results = {n: ulimit_fit(host, daemon, n, u) for n, u in asked.items()}
    order = {FAIL: 0, WARN: 1, PASS: 2}
    status = min((r[0] for r in results.values()), key=order.__getitem__)
    worst = [r for r in results.values() if r[0] == status]
    message = "; ".join(r[1] for r in (worst if status != PASS else results.values()))
    remedy = "; ".join(r[2] for r in worst if r[2]) or None
    return make_check("ulimits", status, {n: r[3] for n, r in results.items()}, expected, message, remedy)


def check_docker(host: Host, profile: Profile) -> list[Check]:
    info = host.docker()
    if info is None:
        return [make_check("docker", SKIP, {}, {}, "Docker engine not probed")]
    reachable, runtimes = info.get("reachable"), list(info.get("runtimes") or [])
    measured = {"reachable": reachable, "runtimes": runtimes, "error": info.get("error")}
    measured.update({k: info[k] for k in ("server_version", "os", "detail", "cgroup_driver", "default_runtime")
                     if info.get(k) is not None})
    nvidia = bool(info.get("nvidia_runtime")) or "nvidia" in runtimes
    if not reachable:
        error = info.get("error") or "unreachable"
        message = error if error.startswith(("no Docker engine answers", "the Docker engine's socket")) else \
            f"no Docker engine answers: {error}"
        checks = [make_check("docker", FAIL, measured, {"reachable": True}, message,
                             info.get("hint") or
                             "WSL2: enable Docker Desktop's WSL integration for this distribution, or install "
                             "docker.io in it and start it (sudo service docker start); Linux: start dockerd")]
    else:
        version = f"Docker {measured['server_version']}; " if measured.get("server_version") else ""
        daemon = host.daemon()
        shm = (f"; containers without --shm-size get {human_bytes(daemon.default_shm_size)} /dev/shm "
               f"(default-shm-size from {daemon.default_shm_source}), not Docker's built-in 64 MiB"
               if daemon.default_shm_size else "")
        measured["default_shm_bytes"] = daemon.shm_default
        checks = [make_check("docker", PASS, measured, {},
                             f"engine reachable; {version}runtimes: {', '.join(runtimes) or 'none'}{shm}")]
    if not profile.run.wants_gpus:
        checks.append(make_check("gpu_runtime", SKIP, measured, {}, "the profile asks for no GPUs"))
    elif not reachable:
        checks.append(make_check("gpu_runtime", SKIP, measured, {"runtime": "nvidia"}, "no engine to ask"))
    else:
        checks.append(gpu_runtime_check(measured, nvidia, host.daemon()))
    return checks


def gpu_runtime_check(measured: dict, nvidia_runtime: bool, daemon) -> Check:
    """Can ``docker run --gpus`` work? What decides it is the daemon, not a runtime's name.

    moby registers its GPU device driver when ``nvidia-container-runtime-hook`` is on dockerd's
    PATH (``daemon/nvidia_linux.go``: ``exec.LookPath`` of the hook); CDI specs in /etc/cdi or
    /var/run/cdi serve GPU requests too. A registered ``nvidia`` runtime is neither needed nor
    enough on its own, but where dockerd's PATH cannot be read it is the best remaining sign.
    """
    measured = {**measured, "nvidia_hook": daemon.nvidia_hook, "cdi_specs": list(daemon.cdi_specs),
                "daemon_path_read": daemon.path is not None}
    expected = {"gpus": "nvidia-container-runtime-hook on dockerd's PATH, or CDI specs"}
    how = "(moby daemon/nvidia_linux.go looks the hook up on dockerd's PATH)"
    if daemon.nvidia_hook:
        return make_check("gpu_runtime", PASS, measured, expected,
                          f"{daemon.nvidia_hook} is on dockerd's PATH, so --gpus works {how}")
    if daemon.cdi_specs:
        return make_check("gpu_runtime", PASS, measured, expected,
                          f"CDI specs found ({', '.join(daemon.cdi_specs)}): GPU requests can be served through CDI")
    remedy = ("install the NVIDIA Container Toolkit (it puts nvidia-container-runtime-hook in /usr/bin), restart "
              "Docker; or generate CDI specs with `nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml`")
    if daemon.path is not None:
        return make_check("gpu_runtime", WARN, measured, expected,
                          f"nvidia-container-runtime-hook is not on dockerd's PATH (read from /proc/{daemon.pid}/environ)"
                          f" and there are no CDI specs: --gpus will fail ('could not select device driver \"\" with "
                          f"capabilities: [[gpu]]') {how}"
                          + ("; the registered nvidia runtime does not change that for --gpus" if nvidia_runtime else ""),
                          remedy)
    if nvidia_runtime:
        return make_check("gpu_runtime", PASS, measured, expected,
                          "the nvidia runtime is registered (dockerd's PATH was not readable to look for "
                          "nvidia-container-runtime-hook, which is what --gpus needs; the toolkit installs both)")
    return make_check("gpu_runtime", WARN, measured, expected,
                      "cannot read dockerd's PATH to find nvidia-container-runtime-hook, no CDI specs and no nvidia "
                      f"runtime registered: --gpus may fail {how}", remedy)


# A GPU profile on a host without one can also run on the CPU: each remedy names that way out as well.
CPU_WAY = "or run on the CPU here: run.gpus: none and image.torch.variant: cpu (a CUDA wheel is gigabytes)"


def check_gpu(host: Host, profile: Profile, wsl: dict, smi: SmiFacts) -> Check:
    """Does this host show the GPUs the profile asks for? ``smi``: what nvidia-smi said (:func:`envkit.doctor.gpu.host_smi`).

    nvidia-smi that is present but fails ("couldn't communicate with the NVIDIA driver", "No devices were
    found") is a failure with its own words, whatever else is there.
    """
    path = smi.get("path")
    wsl_cuda = host.exists("/usr/lib/wsl/lib/libcuda.so") or host.exists("/usr/lib/wsl/lib/libcuda.so.1")
    measured = {"nvidia_smi": path, "nvidia_smi_ok": smi.get("ok"), "nvidia_smi_error": smi.get("error"),
                "gpus": [g.get("name") for g in smi.get("gpus") or []], "wsl_libcuda": wsl_cuda,
                "dev_nvidia0": host.exists("/dev/nvidia0")}
    expected = {"gpus": profile.run.gpus}
    seen = bool(path or wsl_cuda or measured["dev_nvidia0"])
    if not profile.run.wants_gpus:
        return make_check("gpu", SKIP, measured, {}, "the profile asks for no GPUs" + (" (a GPU is visible)" if seen else ""))
    driver = ("install or update the NVIDIA Windows driver (it provides CUDA to WSL2; install no Linux driver inside WSL)"
              if wsl["version"] == 2 else "install the NVIDIA driver (or load it: sudo modprobe nvidia); nvidia-smi must work on the host")
    if path and smi.get("ok"):
        names = [g.get("name") for g in smi.get("gpus") or []]
        return make_check("gpu", PASS, measured, expected, f"{len(names)} NVIDIA GPU(s) visible via {path}: {', '.join(map(str, names))}")
    if path:
        return make_check("gpu", FAIL, measured, expected,
                          f"the profile asks for GPUs but {path} failed: {smi.get('error') or 'no GPU listed'}",
                          f"{driver}; {CPU_WAY}")
    if seen:
        what = "/usr/lib/wsl/lib/libcuda.so (WSL's GPU driver)" if wsl_cuda else "/dev/nvidia0"
        return make_check("gpu", PASS, measured, expected, f"NVIDIA GPU visible via {what} (no nvidia-smi on PATH to list it)")
    return make_check("gpu", FAIL, measured, expected,
                      "the profile asks for GPUs but none is visible (no nvidia-smi, no WSL libcuda)", f"{driver}; {CPU_WAY}")


def read_mounts(host: Host) -> list[tuple[str, str, str]]:
    """``(device, mountpoint, fstype)`` from /proc/self/mounts (or /proc/mounts)."""
    text = host.read_text("/proc/self/mounts") or host.read_text("/proc/mounts") or ""
    out = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 3:
            out.append((parts[0], parts[1].replace("\\040", " "), parts[2]))
    return out


def mount_of(path: str, mounts) -> tuple[str, str, str] | None:
    best = None
    for m in mounts:
        mp = m[1].rstrip("/") or "/"
        if path == mp or path.startswith(mp + "/") or mp == "/":
            if best is None or len(mp) > len(best[1].rstrip("/") or "/"):
                best = m
    return best


def _walk_files(path: Path, deadline: float, skipped: list[int]):
    """Regular files under ``path``, in sorted order, listed lazily so the time budget covers the listing.

    Unreadable folders, vanished entries and anything not a regular file are skipped (counted in ``skipped``).
    """
    try:
        st = os.stat(path)
    except OSError:
        skipped[0] += 1
        return
    if stat.S_ISREG(st.st_mode):
        yield path
        return
    stack = [path] if stat.S_ISDIR(st.st_mode) else []
    while stack and time.perf_counter() < deadline:
        folder = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            skipped[0] += 1
            continue
        subdirs = []
        for e in entries:
            try:
                if e.is_dir(follow_symlinks=False):
                    subdirs.append(Path(e.path))
                elif e.is_file(follow_symlinks=False):
                    yield Path(e.path)
            except OSError:
                skipped[0] += 1
        stack.extend(reversed(subdirs))


def measure_read(path: Path, max_bytes: int = READ_MAX_BYTES, budget_s: float = READ_BUDGET_S) -> dict:
    """Read up to ``max_bytes`` from the files under ``path`` within ``budget_s``; MB/s with MB = 1e6.

    The budget covers listing too; unreadable entries are skipped and counted, never fatal, and
    files are opened without blocking (a FIFO or /proc/kmsg cannot hang the walk).
    """
    done, start = 0, time.perf_counter()
    deadline = start + budget_s
    skipped = [0]
    for f in _walk_files(path, deadline, skipped):
        try:
            fd = os.open(f, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
        except OSError:
            skipped[0] += 1
            continue
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                continue
            while done < max_bytes and time.perf_counter() < deadline:
                chunk = os.read(fd, min(MIB, max_bytes - done))
                if not chunk:
                    break
                done += len(chunk)
        except OSError:
            skipped[0] += 1
        finally:
            os.close(fd)
        if done >= max_bytes or time.perf_counter() >= deadline:
            break
    seconds = time.perf_counter() - start
    return {"bytes": done, "seconds": round(seconds, 3), "skipped": skipped[0],
            "mb_per_s": round(done / seconds / 1e6, 1) if seconds and done else None}


def check_location(host: Host, name: str, path: str, wsl: dict, mounts, measure: bool) -> Check:
    """Is ``path`` on Windows' drives (/mnt/c through 9P/drvfs)? With ``measure``, also time a read."""
    m = mount_of(path, mounts)
    fstype = m[2] if m else None
    measured: dict = {"path": path, "mount": m[1] if m else None, "fstype": fstype}
    on_drive = bool(_DRIVE_RE.match(path)) and (fstype in SLOW_FS or fstype is None) and wsl["version"] is not None
    if measure:
        real = host.path(path)
        if not real.exists():
            return make_check(name, FAIL, measured, {}, f"{path}: no such file or folder")
        measured["read"] = measure_read(real)
    rate = (measured.get("read") or {}).get("mb_per_s")
    rate_text = f"; read {rate} MB/s (first {human_bytes(measured['read']['bytes'])}, may be cached)" if rate else ""
    if on_drive:
        return make_check(name, WARN, measured, {"filesystem": "the Linux file system (ext4)"},
                          f"{path} is on a Windows drive ({fstype or 'drvfs'} through 9P): file access is many times "
                          f"slower than in ~/{rate_text}",
                          "keep code and data in the distribution's file system, e.g. git clone into ~/src, "
                          "and copy data to ~/data (cp -r /mnt/c/... ~/data)")
    return make_check(name, PASS, measured, {}, f"{path} ({fstype or 'unknown file system'}){rate_text}")
