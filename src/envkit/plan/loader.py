"""The loader's plan for a profile: workers, /dev/shm need and memory need, decided once.

Generate's advice, the WSL advice, the cluster plan and ``envkit doctor`` take their numbers from
:func:`loader_plan`, which feeds the harness's rules (:mod:`envkit.harness.sizing`) with what each
of them knows; the harness applies the same rules inside the container
(:func:`envkit.harness.expect.resolve_loader`).

Example:
    >>> from envkit.profile import load_profile
    >>> from envkit.runsettings import RunSettings
    >>> p = load_profile(None).profile
    >>> lp = loader_plan(p, RunSettings.from_profile(p))
    >>> lp.cpus, lp.workers, lp.shm_bytes // 2**20
    (8, 6, 1195)
"""

from __future__ import annotations

from dataclasses import dataclass

from envkit.harness.sizing import cpu_limit, memory_need_bytes, plan_workers, shm_required_bytes
from envkit.profile.model import Profile
from envkit.runsettings import RunSettings


@dataclass(frozen=True)
class LoaderPlan:
    """What a profile's loader needs when it runs: CPUs it may use (None: unknown), workers,
    /dev/shm bytes and the container's memory bytes."""

    cpus: int | None
    workers: int
    shm_bytes: int
    memory_bytes: int


def loader_plan(profile: Profile, settings: RunSettings, *, host_cpus: int | None = None,
                host_quota: float | None = None, wsl_vm: bool = True) -> LoaderPlan:
    """The loader's plan for ``profile`` run with ``settings``: the harness's rules fed with what is known.

    ``host_cpus`` / ``host_quota``: the CPUs and cgroup quota the host grants (``envkit doctor``
    reads them; generate does not know the host, so a ``wsl:`` section's ``processors``, the
    VM's CPUs, stand in for them unless ``wsl_vm`` is False: a cluster node is no WSL VM).
    The profile's cpuset and ``cpus`` limit the container too.
    """
    run, ld = profile.run, profile.loader
    affinity = host_cpus
    if affinity is None and wsl_vm and profile.wsl is not None:
        affinity = profile.wsl.processors
    quotas = [q for q in (run.cpus, host_quota) if q]
    cpus = cpu_limit(affinity=affinity, cpuset=len(run.cpuset_cpus) or None, quota=min(quotas) if quotas else None)
    workers = plan_workers(ld.num_workers, cpus)
    shm = shm_required_bytes(batch_size=ld.batch_size, sample_shape=ld.sample_shape, dtype=ld.dtype,
                             num_workers=workers, prefetch_factor=ld.prefetch_factor)
    # The container's own /dev/shm as Docker will size it (None under ipc: host): the decided settings.
    return LoaderPlan(cpus, workers, shm, memory_need_bytes(shm_need=shm, workers=workers,
                                                            shm_size=settings.effective_shm))
