"""System checks: ``cpus``, ``ulimits`` and ``gpus`` (``shm`` has its own module, :mod:`.shm`).

Each function takes the resolved loader settings and/or the expectation's ``run``
section, plus optional measured values (so tests can inject a starved host), and
returns one check record (see :mod:`envkit.harness.report`).

Example:
    >>> check_ulimits({}, limits={n: {"soft": -1, "hard": -1} for n in ULIMITS})["status"]
    'pass'
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ..expectation import AnyLoader, ExpectRun
from ..probes import env as envmod
from ..probes.env import CgroupQuota, TorchInfo
from ..report import FAIL, PASS, SKIP, WARN, Check, Status, make_check
from ..rules.sizing import contention_remedy, cpu_fact, plan_workers


def _at_most(cpus: int) -> str:
    """The remedy for too many workers on ``cpus`` CPUs: the sizing rule's own count (one CPU left to the loop).

    >>> _at_most(5), _at_most(1)
    ('use num_workers <= 4', "use num_workers: 0 (a single CPU is the training loop's)")
    """
    n = plan_workers("auto", cpus)
    return f"use num_workers <= {n}" if n else "use num_workers: 0 (a single CPU is the training loop's)"


def check_cpus(loader: AnyLoader, run: ExpectRun, usable: int | None = None, quota: CgroupQuota | None = None,
               cgroup_root: str = "/") -> Check:
    """Usable CPUs (affinity) and the cgroup quota vs the profile and vs num_workers."""
    usable = envmod.usable_cpus() if usable is None else usable
    quota = envmod.read_cgroup_cpu_quota(cgroup_root) if quota is None else quota
    qcpus = quota["quota_cpus"]
    # The plan's rule (sizing.cpu_fact): a quota of 4.5 CPUs still runs 5 processes at once.
    effective = cpu_fact(("count", usable, "affinity"), ("quota", qcpus, "cgroup quota"))[0] or usable
    nw = loader["num_workers"]
    measured = {"usable_cpus": usable, "cgroup_version": quota["version"],
                "cgroup_quota_cpus": qcpus, "quota_source": quota["source"],
                "effective_cpus": effective, "num_workers": nw}
    expected = {"cpuset_count": run.get("cpuset_count"), "cpuset": run.get("cpuset"), "cpus": run.get("cpus")}
    problems: list[str] = []
    remedies: list[str] = []
    status: Status = PASS
    want = run.get("cpuset_count")
    if want is not None and usable < want:
        status = FAIL
        problems.append(f"only {usable} CPUs are usable but the profile's cpuset {run.get('cpuset') or ''} "
                        f"has {want}: the host has fewer CPUs or another cpuset was applied")
        remedies.append(f"run with --cpuset-cpus={run.get('cpuset') or '0-' + str(want - 1)} on a host that has them")
    elif want is not None and usable > want:
        status = WARN
        problems.append(f"{usable} CPUs are usable but the profile pinned {want}: --cpuset-cpus was not applied")
        remedies.append(f"docker run --cpuset-cpus={run.get('cpuset') or '0-' + str(want - 1)}")
    want_q = run.get("cpus")
    if want_q is not None and (qcpus is None or abs(qcpus - want_q) > 0.01):
        status = FAIL if status == FAIL else WARN
        problems.append(f"the cgroup CPU quota is {qcpus if qcpus else 'unlimited'} but the profile asked "
                        f"--cpus={want_q}: the run flags were not applied")
        remedies.append(f"docker run --cpus={want_q}")
    ranks = loader.get("ranks_per_node") or 1
    measured["ranks_per_node"] = ranks
    if ranks > 1 and ranks * (nw + 1) > effective:
        status = FAIL if status == FAIL else WARN
        problems.append(f"{ranks} training processes x (1 + {nw} workers) = {ranks * (nw + 1)} processes share "
                        f"{effective} CPUs: they will contend for them")
        remedies.append(contention_remedy(loader.get("num_workers_requested", nw), effective, ranks)[1])
    elif nw > usable:
        status = FAIL if status == FAIL else WARN
        problems.append(f"num_workers={nw} exceeds the {usable} usable CPUs (torch warns about this too)")
        remedies.append(_at_most(usable))
    elif qcpus and nw > effective:
        status = FAIL if status == FAIL else WARN
        problems.append(f"num_workers={nw} exceeds the cgroup quota of {qcpus} CPUs; torch's worker bound "
                        "uses sched_getaffinity and ignores the quota, so it will not warn, but the "
                        "workers will be throttled")
        remedies.append(f"{_at_most(effective)} or raise --cpus")
    if not problems:
        q = f", cgroup v{quota['version']} quota {qcpus} CPUs" if qcpus else ", no cgroup CPU quota"
        return make_check("cpus", PASS, measured, expected,
                          f"{usable} usable CPUs{q}; num_workers={nw} fits")
    return make_check("cpus", status, measured, expected, "; ".join(problems), "; ".join(remedies))


# The limits checked, by the names the profile uses (values: the ``resource`` module's RLIMIT_* names; the
# module is POSIX-only and imported where the limits are read, so the harness's parser builds on Windows).
ULIMITS = {"memlock": "RLIMIT_MEMLOCK", "stack": "RLIMIT_STACK", "nofile": "RLIMIT_NOFILE"}


def _norm(v: int) -> int:
    """resource.RLIM_INFINITY -> -1 (the profile's spelling of unlimited)."""
    import resource  # POSIX only: imported where the limits are read (ULIMITS)

    return -1 if v == resource.RLIM_INFINITY or v < 0 else int(v)


def limit_text(v) -> str:
    """How a limit reads in a message: ``-1 -> 'unlimited'``, ``8388608 -> '8388608'``.

    >>> limit_text(-1), limit_text(65536)
    ('unlimited', '65536')
    """
    return "unlimited" if v is not None and v < 0 else str(v)


def _lower(have: int, want: int) -> bool:
    if want == -1:
        return have != -1
    return have != -1 and have < want


def where_running(environ: Mapping[str, str] | None = None) -> str:
    """Where the harness runs, from the variables each scheduler sets: ``kubernetes`` (the kubelet sets
    KUBERNETES_SERVICE_HOST in every container), ``slurm`` (SLURM_JOB_ID, in every job step), else ``local``.

    >>> where_running({"KUBERNETES_SERVICE_HOST": "10.0.0.1"}), where_running({"SLURM_JOB_ID": "7"}), where_running({})
    ('kubernetes', 'slurm', 'local')
    """
    env = os.environ if environ is None else environ
    if env.get("KUBERNETES_SERVICE_HOST"):
        return "kubernetes"
    if env.get("SLURM_JOB_ID"):
        return "slurm"
    return "local"


MEMLOCK_REMEDY = {
    "kubernetes": ("on Kubernetes no pod field raises memlock, and IPC_LOCK is dropped for a non-root user "
                   "(kubernetes/kubernetes#56374): the node's container runtime sets it; raise the runtime's own "
                   "limit on every node (containerd's systemd unit: LimitMEMLOCK=infinity, then restart containerd "
                   "and the pod)"),
    "slurm": ("on Slurm a step gets the submitting shell's limits (PropagateResourceLimits in slurm.conf; "
              "`ulimit -l unlimited` before sbatch, or in the batch script up to the hard limit) capped by "
              "slurmd's own: raise LimitMEMLOCK=infinity in slurmd's systemd unit on every node and restart "
              "slurmd"),
}


def check_ulimits(run: ExpectRun, limits: dict[str, dict[str, int]] | None = None,
                  environ: Mapping[str, str] | None = None) -> Check:
    """getrlimit MEMLOCK/STACK/NOFILE vs the profile; fail only when a limit is lower than asked.

    A low memlock's remedy names where the limit comes from (``where_running(environ)``): the node
    runtime's LimitMEMLOCK on Kubernetes, ``ulimit``/slurmd's limits on Slurm, docker run's flag elsewhere.
    """
    if limits is None:
        import resource  # POSIX only (ULIMITS)

        limits = {n: dict(zip(("soft", "hard"), map(_norm, resource.getrlimit(getattr(resource, r))), strict=True))
                  for n, r in ULIMITS.items()}
    want_all = run.get("ulimits") or {}
    expected = {n: want_all.get(n) for n in ULIMITS}
    low, flags, compose = [], [], []
    for name in ULIMITS:
        want = want_all.get(name) or {}
        asked = {kind: v for kind, v in (("soft", want.get("soft")), ("hard", want.get("hard"))) if v is not None}
        for kind, v in asked.items():
            if _lower(limits[name][kind], v):
                low.append(f"{name} {kind} is {limit_text(limits[name][kind])} but the profile asks for "
                           f"{limit_text(v)}")
        if any(_lower(limits[name][k], v) for k, v in asked.items()):
            soft, hard = want.get("soft", -1), want.get("hard", want.get("soft", -1))
            flags.append(f"--ulimit {name}={soft}:{hard}")
            compose.append(f"{name}: {{soft: {soft}, hard: {hard}}}")
    why = ("CUDA pinned memory (pin_memory=True) is page-locked by the NVIDIA driver and is not bounded by "
           "RLIMIT_MEMLOCK; RDMA/NCCL over InfiniBand is (ibv_reg_mr fails). nofile bounds the shared-memory "
           "file descriptors of the file_descriptor sharing strategy.")
    summary = ", ".join(f"{n} {limit_text(limits[n]['soft'])}/{limit_text(limits[n]['hard'])}" for n in ULIMITS)
    if low:
        remedy = (" ".join(flags) + " (docker run, where -1 means unlimited; compose: ulimits: "
                  "{" + ", ".join(compose) + "}; --ulimit memlock takes bytes while `ulimit -l` prints KiB)")
        place = where_running(environ)
        if place in MEMLOCK_REMEDY and any(f.startswith("--ulimit memlock=") for f in flags):
            remedy = f"memlock: {MEMLOCK_REMEDY[place]}. Elsewhere: {remedy}"
        return make_check("ulimits", FAIL, limits, expected,
                          f"lower than the profile: {'; '.join(low)}. {why}", remedy)
    return make_check("ulimits", PASS, limits, expected,
                      f"soft/hard: {summary}; memlock bounds RDMA/NCCL over InfiniBand, "
                      "not CUDA pinned memory (the driver page-locks it)")


def _gpus_wanted(gpus) -> int | None:
    """Minimum visible GPUs the profile implies: "all" -> 1, int -> n, list -> len, "none"/None -> None."""
    if gpus in (None, "none", 0):
        return None
    if gpus == "all":
        return 1
    if isinstance(gpus, list):
        return len(gpus) or None
    return int(gpus)


GPU_REMEDY = ("start the container with --gpus all (compose: deploy.resources.reservations.devices "
              "[{driver: nvidia, count: all, capabilities: [gpu]}]); the host needs the NVIDIA driver and "
              "nvidia-container-toolkit (nvidia-ctk runtime configure --runtime=docker); the image needs a "
              "CUDA build of torch")


def check_gpus(run: ExpectRun, info: TorchInfo | None = None) -> Check:
    """Visible CUDA devices vs the profile's ``gpus``; skip when none are expected and none exist."""
    if info is None:
        info = envmod.torch_info()
    measured: dict[str, Any] = {"count": info["cuda_device_count"], "torch_cuda": info["torch_cuda"],
                "cuda_available": info["cuda_available"],
                "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES"),
                "NVIDIA_VISIBLE_DEVICES": os.environ.get("NVIDIA_VISIBLE_DEVICES")}
    if info["cuda_available"]:
        try:
            import torch  # here, not at the top: importing torch takes seconds and the harness's modules import without it
            measured["names"] = [torch.cuda.get_device_name(i) for i in range(info["cuda_device_count"])]
        except Exception:  # names are evidence only
            pass
    gpus = run.get("gpus")
    wanted = _gpus_wanted(gpus)
    expected = {"gpus": gpus, "min_count": wanted}
    if info["torch"] is None:
        reason = "torch is not importable"
    elif not info["torch_cuda"]:
        reason = f"torch has no CUDA (CPU-only build {info['torch']})"
    elif not info["cuda_available"]:
        reason = "CUDA not available: no driver/device visible to this container"
    else:
        reason = None
    count = info["cuda_device_count"]
    if wanted is None:
        if reason:
            return make_check("gpus", SKIP, measured, expected, f"{reason}; the profile expects no GPU")
        return make_check("gpus", PASS, measured, expected, f"{count} GPU(s) visible; the profile expects none")
    if reason or count < wanted:
        why = reason or f"only {count} GPU(s) visible"
        return make_check("gpus", FAIL, measured, expected,
                          f"the profile expects gpus={gpus!r} but {why}", GPU_REMEDY)
    return make_check("gpus", PASS, measured, expected, f"{count} GPU(s) visible (profile: gpus={gpus!r})")
