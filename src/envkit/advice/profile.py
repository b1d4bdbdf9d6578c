"""Workload-aware advice from the profile alone: what no peer generator does.

``profile_warnings`` sizes the run settings from the loader section and says,
per key path, what is too small or contradictory and what value to use. It reads
the decided :class:`~envkit.plan.runsettings.RunSettings` (what Docker will get), and
every number comes from the harness's rules (:mod:`envkit.harness.rules.sizing`) through
the run's loader plan (:func:`envkit.plan.loader.loader_plan`), which ``envkit doctor`` also uses with the host's facts, so
generate's warnings, the doctor and the in-container checks agree.

Memory rule (docs/profile.md): a container's memory cgroup is charged for the
/dev/shm pages its processes write, and each DataLoader worker is a full Python
process with torch imported, so ``memory >= shm_need + (workers + 1) * PROCESS_RSS``.

Example:
    >>> from envkit.planner import build_plan
    >>> from envkit.profile import load_profile
    >>> loaded = load_profile(None)
    >>> plan = build_plan(loaded)
    >>> profile_warnings(loaded.profile, plan.settings, plan.loader)
    []
"""

from __future__ import annotations

import math
from pathlib import Path

from envkit.harness.report import human_bytes, plural
from envkit.advice.image import image_warnings
from envkit.advice.wslvm import wsl_warnings
from envkit.findings import Finding
from envkit.harness.rules.sizing import GIB, PROCESS_RSS, batch_bytes, contention_remedy, recommended_shm_bytes
from envkit.plan.image import ImagePlan
from envkit.plan.loader import LoaderPlan
from envkit.profile.model import Profile
from envkit.plan.runsettings import RunSettings
from envkit.units import format_size


def file_warnings(profile: Profile, image: ImagePlan) -> list[Finding]:
    """Warnings about the files a profile points at (the image plan lists them)."""
    out: list[Finding] = []
    torch = profile.image.torch
    if torch and torch.find_links:
        wanted = (f"torch-{torch.version}+{torch.variant}-", f"torch-{torch.version}-")
        wheels = [w.source.name for w in image.wheels if w.source.name.startswith("torch-")]
        if not any(name.startswith(wanted) for name in wheels):
            out.append(Finding("image.torch.find_links", f"no torch {torch.version}+{torch.variant} wheel in "
                       f"{', '.join(torch.find_links)} (found: {', '.join(sorted(wheels)) or 'none'}); the build "
                       f"will look for it on the index instead (pip download torch=={torch.version} --no-deps -d <dir>)"))
    for key, path, kind in image.skipped:
        out.append(Finding(key, f"skipped {path!r}: it is {kind}, and only regular files are copied into the build context"))
    out += image.notes
    return out


def _need_text(profile: Profile, p: LoaderPlan) -> str:
    """How the node's /dev/shm need was worked out, in the numbers it came from."""
    ld = profile.loader
    per_rank = (f"{human_bytes(batch_bytes(ld.batch_size, ld.sample_shape, ld.dtype))} per batch x "
                f"({plural(p.workers, 'worker')} x prefetch_factor {ld.prefetch_factor} + 1) x 1.25")
    if p.ranks == 1:
        verb = "needs" if p.workers == 1 else "need"
        return f"the {human_bytes(p.shm_need)} that {plural(p.workers, 'DataLoader worker')} {verb} ({per_rank})"
    nccl = f" + NCCL's {human_bytes(p.nccl_bytes // p.ranks)} per process" if p.nccl_bytes else ""
    return (f"the {human_bytes(p.shm_need)} that {p.ranks} training processes with "
            f"{plural(p.workers, 'DataLoader worker')} each need ({p.ranks} x {human_bytes(p.rank_need)}: {per_rank}{nccl})")


def volume_notes(rs: RunSettings, base_dir: Path) -> list[Finding]:
    """Bind-mount sources the profile names that do not exist yet (relative ones, against the profile's folder):
    run.sh and validate make them as the user; Compose and the Dev Containers CLI cannot, and Docker would make
    them owned by root. Said once, as a note (a data folder made later is no mistake)."""
    out: list[Finding] = []
    for i, v in enumerate(v for v in rs.volumes if not v.project):
        if v.is_relative and not (base_dir / v.source).exists():
            out.append(Finding(f"run.volumes[{i}]", f"{v.source} does not exist yet: run.sh and envkit validate make it, "
                       "as you; compose.yaml and devcontainer.json cannot, and Docker would make it owned by root, so "
                       f"make it first there (mkdir -p {v.source})"))
    return out


def sizing_notes(profile: Profile, rs: RunSettings, p: LoaderPlan) -> list[Finding]:
    """What envkit sized for a profile that left it open, and from which numbers: said once, as a note."""
    if profile.run.shm_size is not None or rs.ipc == "host" or rs.shm_size is None:
        return []
    cpus = dict(p.facts)["cpus"]
    memory = ("" if profile.run.memory is not None else
              f"; run.memory is not set, so the container has no memory limit (its loaders need about "
              f"{human_bytes(p.memory_need)})")
    return [Finding("run.shm_size", f"not set, so envkit sized it: {format_size(rs.shm_size)} for {_need_text(profile, p)}; "
            f"CPUs: {cpus}; ranks: {dict(p.facts)['ranks_per_node']}{memory}")]


def profile_warnings(profile: Profile, rs: RunSettings, p: LoaderPlan) -> list[Finding]:
    """The workload's warnings, each a :class:`~envkit.findings.Finding` naming the key it concerns; ``rs`` and ``p``: the run's
    settings and loader plan."""
    run, ld = profile.run, profile.loader
    out: list[Finding] = []
    workers, need = p.workers, p.shm_need
    if rs.ipc == "host":
        if run.shm_size is not None:
            out.append(Finding("run.shm_size", "ignored because run.ipc is 'host' (the container shares the host's /dev/shm); "
                       "prefer ipc: private with a sized shm_size, which keeps the IPC namespace isolated"))
    elif rs.shm_size is not None and need > rs.shm_size:
        rec = format_size(recommended_shm_bytes(need))
        out.append(
            Finding("run.shm_size", f"{format_size(rs.shm_size)} is below {_need_text(profile, p)}; multi-worker loading "
            f"will fail with 'unable to allocate shared memory(shm)' or 'Bus error'; use shm_size: {rec} "
            "(or drop run.shm_size and envkit sizes it)")
        )
    if p.cpus is not None and p.processes > p.cpus:
        who = ("the training process" if p.ranks == 1 else f"each of the {p.ranks} training processes "
               f"({dict(p.facts)['ranks_per_node']})")
        key, remedy = contention_remedy(ld.num_workers, p.cpus, p.ranks)
        out.append(Finding(key, f"{plural(p.workers, 'worker')} for {who} make "
                   f"{p.processes} processes on the {p.cpus} CPUs of {dict(p.facts)['cpus']}; they will contend "
                   f"for CPUs; {remedy}"))
    if run.cpus is not None and run.cpuset and run.cpus > len(run.cpuset_cpus):
        out.append(Finding("run.cpus", f"{run.cpus:g} is more than the {len(run.cpuset_cpus)} CPUs in run.cpuset "
                   f"{run.cpuset!r}; the quota can never be used"))
    if isinstance(run.numa, int):
        out.append(Finding("run.numa", f"compose.yaml cannot express --cpuset-mems={run.numa} (the Compose Specification "
                   "has no key for it); run.sh, devcontainer.json and envkit validate apply it"
                   + ("" if run.cpuset else "; set run.cpuset to the node's CPUs (envkit doctor lists them)")))
    elif run.numa == "auto":
        out.append(Finding("run.numa", "auto is resolved where the host is visible: envkit doctor prints the GPU's node "
                   "and its CPUs; the generated files carry no NUMA flags until run.numa names that node"))
    if rs.memory is not None and rs.memory < p.memory_need:
        procs = p.processes
        shm_pages = p.memory_need - procs * PROCESS_RSS
        out.append(Finding("run.memory", f"{format_size(rs.memory)} is below the {human_bytes(p.memory_need)} that shm "
                   f"({human_bytes(shm_pages)}) plus {plural(procs, 'process')} x {human_bytes(PROCESS_RSS)} "
                   f"need ({plural(p.ranks, 'training process')} with "
                   f"{plural(workers, 'worker')} each; shm pages count against the container's memory limit); "
                   f"use memory: {format_size(math.ceil(p.memory_need / GIB) * GIB)} or more"))
    torch = profile.image.torch
    if run.wants_gpus and torch is not None and not torch.is_cuda:
        out.append(Finding("run.gpus", f"GPUs are requested but image.torch.variant is {torch.variant!r}, a build without "
                   "CUDA: the GPUs will sit idle; use a cuXYZ variant (e.g. cu124)"))
    if not run.wants_gpus and torch is not None and torch.is_cuda:
        out.append(Finding("run.gpus", f"'none', but image.torch.variant is {torch.variant!r}; "
                   "the container will not see a GPU (set gpus: all, or use variant: cpu for a smaller image)"))
    if profile.image.user.is_root:
        out.append(Finding("image.user", "the container runs as root; files it writes to bind mounts will be owned by "
                   "root on the host (use a non-root user with your uid/gid)"))
    if ld.start_method != "fork" and not ld.persistent_workers and workers > 0:
        out.append(Finding("loader.persistent_workers", f"with start_method {ld.start_method!r} every epoch re-imports your "
                   "script in each worker; set persistent_workers: true"))
    out.extend(image_warnings(profile))
    out.extend(wsl_warnings(profile, p))
    return out
