"""Workload-aware checks of a profile: what no peer generator does.

``profile_warnings`` sizes the run settings from the loader section and says,
per key path, what is too small or contradictory and what value to use. The
shm formula is the harness's own (``envkit.harness.sizing``), so generate's
warning and the in-container check agree.

Memory formula (documented in the README): a container's memory cgroup is
charged for its /dev/shm pages, and each DataLoader worker is a full Python
process with torch imported, so ``memory >= shm_need + (workers + 1) * 512 MiB``.

Example:
    >>> from envkit.profile import load_profile
    >>> profile_warnings(load_profile(None).profile)
    []
"""

from __future__ import annotations

import math
from pathlib import Path

from envkit.harness.report import human_bytes
from envkit.harness.sizing import (
    DOCKER_DEFAULT_SHM, GIB, MIB, batch_bytes, recommended_shm_bytes, shm_required_bytes,
)
from envkit.profile.model import Profile
from envkit.units import format_size

WORKER_RSS = 512 * MIB
AUTO_WORKERS_WITHOUT_LIMIT = 4


def cpu_budget(profile: Profile) -> int | None:
    """CPUs the container may use: the cpuset's count, capped by a ``cpus`` quota."""
    n = len(profile.run.cpuset_cpus) or None
    if profile.run.cpus is not None:
        quota = math.ceil(profile.run.cpus)
        n = min(n, quota) if n else quota
    return n


def planned_workers(profile: Profile) -> int:
    """num_workers, with ``auto`` resolved as the harness will: CPUs - 1 (at least 1, at most 8)."""
    nw = profile.loader.num_workers
    if nw != "auto":
        return nw
    cpus = cpu_budget(profile)
    return min(8, max(1, cpus - 1)) if cpus else AUTO_WORKERS_WITHOUT_LIMIT


def shm_need(profile: Profile) -> int:
    ld = profile.loader
    return shm_required_bytes(batch_size=ld.batch_size, sample_shape=ld.sample_shape, dtype=ld.dtype,
                              num_workers=planned_workers(profile), prefetch_factor=ld.prefetch_factor)


def file_warnings(profile: Profile, base_dir: Path) -> list[str]:
    """Warnings about the files a profile points at (relative to its folder)."""
    out: list[str] = []
    torch = profile.image.torch
    if torch and torch.find_links:
        wanted = (f"torch-{torch.version}+{torch.variant}-", f"torch-{torch.version}-")
        wheels = [w.name for rel in torch.find_links for w in (base_dir / rel).glob("torch-*.whl")]
        if not any(name.startswith(wanted) for name in wheels):
            out.append(f"image.torch.find_links: no torch {torch.version}+{torch.variant} wheel in "
                       f"{', '.join(torch.find_links)} (found: {', '.join(sorted(wheels)) or 'none'}); the build "
                       f"will look for it on the index instead (pip download torch=={torch.version} --no-deps -d <dir>)")
    from envkit.pythons import check_profile

    _, note = check_profile(profile.image, [base_dir / d for d in (torch.find_links if torch else ())])
    if note:
        out.append(f"image.torch.version: {note}")
    return out


# CUDA libraries a nvidia/cuda base holds that torch's CUDA wheels (nvidia-*-cu12: cublas, cudnn,
# nccl, ...) install again, in bytes. Estimates for CUDA 12 Ubuntu images, from their uncompressed
# sizes minus the Ubuntu base: runtime ~2.6 GB, cudnn-runtime ~3.6 GB; a -devel image holds the
# runtime's libraries too (its compilers and headers are not duplicated).
CUDA_RUNTIME_LIBS = 2.5 * GIB
CUDNN_LIBS = 1.0 * GIB


def cuda_twice_bytes(base: str) -> float:
    """Estimated bytes a ``nvidia/cuda`` base stores again next to a CUDA torch wheel (0 for others).

    >>> round(cuda_twice_bytes("nvidia/cuda:12.4.1-cudnn-runtime-ubuntu22.04") / GIB, 1)
    3.5
    >>> cuda_twice_bytes("ubuntu:24.04")
    0
    """
    repo, _, tag = base.partition(":")
    if repo.rsplit("/", 2)[-2:] != ["nvidia", "cuda"] or not any(f in tag for f in ("runtime", "devel")):
        return 0  # -base images hold only cudart: nothing worth a warning
    return CUDA_RUNTIME_LIBS + (CUDNN_LIBS if "cudnn" in tag else 0)


def image_warnings(profile: Profile) -> list[str]:
    """CUDA stored twice (a nvidia/cuda base under a CUDA torch wheel) and cuda_devel's base."""
    image, out = profile.image, []
    torch = image.torch
    twice = cuda_twice_bytes(image.base)
    is_devel = "devel" in image.base.partition(":")[2] and twice > 0
    if image.cuda_devel and not is_devel:
        out.append(f"image.cuda_devel: true, but image.base {image.base!r} is not a nvidia/cuda:*-devel image: "
                   "compiling CUDA extensions needs its nvcc and headers (e.g. nvidia/cuda:12.4.1-devel-ubuntu22.04)")
    if twice and torch is not None and torch.is_cuda and not (is_devel and image.cuda_devel):
        out.append(f"image.base: {image.base} stores CUDA twice: torch's {torch.variant} wheels install their own "
                   f"CUDA libraries (nvidia-*-cu12) and load those, so about {twice / GIB:.1f} GB of the base's "
                   "copy is dead weight in every pull; use a plain base such as ubuntu:22.04 (the driver comes "
                   "from the host), or a -devel base with image.cuda_devel: true only to compile CUDA extensions")
    return out


def profile_warnings(profile: Profile) -> list[str]:
    """Human-readable warnings, each starting with the key path it concerns."""
    run, ld = profile.run, profile.loader
    out: list[str] = []
    workers = planned_workers(profile)
    need = shm_need(profile)
    if run.ipc == "host":
        if run.shm_size is not None:
            out.append("run.shm_size: ignored because run.ipc is 'host' (the container shares the host's /dev/shm); "
                       "prefer ipc: private with a sized shm_size, which keeps the IPC namespace isolated")
    else:
        have = run.shm_size if run.shm_size is not None else DOCKER_DEFAULT_SHM
        if need > have:
            rec = format_size(recommended_shm_bytes(need))
            what = format_size(have) if run.shm_size is not None else "Docker's default 64m"
            out.append(
                f"run.shm_size: {what} is below the {human_bytes(need)} that {workers} DataLoader workers need "
                f"({human_bytes(batch_bytes(ld.batch_size, ld.sample_shape, ld.dtype))} per batch x "
                f"({workers} workers x prefetch_factor {ld.prefetch_factor} + 1) x 1.25); "
                f"multi-worker loading will fail with 'unable to allocate shared memory(shm)' or "
                f"'Bus error'; use shm_size: {rec}"
            )
    cpus = cpu_budget(profile)
    if cpus is not None and ld.num_workers != "auto" and ld.num_workers > cpus:
        out.append(f"loader.num_workers: {ld.num_workers} workers exceed the {cpus} CPUs that run.cpuset/run.cpus "
                   f"grant; workers will contend for CPUs; use num_workers: {max(1, cpus - 1)} or widen the cpuset")
    if run.cpus is not None and run.cpuset and run.cpus > len(run.cpuset_cpus):
        out.append(f"run.cpus: {run.cpus:g} is more than the {len(run.cpuset_cpus)} CPUs in run.cpuset "
                   f"{run.cpuset!r}; the quota can never be used")
    if run.memory is not None:
        floor = (need if run.ipc != "host" else 0) + (workers + 1) * WORKER_RSS
        if run.memory < floor:
            out.append(f"run.memory: {format_size(run.memory)} is below the {human_bytes(floor)} that shm ({human_bytes(need)}) "
                       f"plus {workers + 1} processes x 512 MiB need (shm pages count against the container's "
                       f"memory limit); use memory: {format_size(math.ceil(floor / GIB) * GIB)} or more")
    torch = profile.image.torch
    if run.wants_gpus and torch is not None and not torch.is_cuda:
        out.append(f"run.gpus: GPUs are requested but image.torch.variant is {torch.variant!r}, a build without "
                   "CUDA: the GPUs will sit idle; use a cuXYZ variant (e.g. cu124)")
    if not run.wants_gpus and torch is not None and torch.is_cuda:
        out.append(f"run.gpus: 'none', but image.torch.variant is {torch.variant!r}; "
                   "the container will not see a GPU (set gpus: all, or use variant: cpu for a smaller image)")
    if profile.image.user.is_root:
        out.append("image.user: the container runs as root; files it writes to bind mounts will be owned by "
                   "root on the host (use a non-root user with your uid/gid)")
    if ld.start_method != "fork" and not ld.persistent_workers and workers > 0:
        out.append(f"loader.persistent_workers: with start_method {ld.start_method!r} every epoch re-imports your "
                   "script in each worker; set persistent_workers: true")
    out.extend(image_warnings(profile))
    if profile.wsl is not None:
        from envkit.checks_wsl import wsl_warnings

        out.extend(wsl_warnings(profile))
    return out
