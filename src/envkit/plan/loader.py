"""The loaders' plan for a profile: ranks, workers per rank, /dev/shm and memory, decided once.

Every command states the same :class:`~envkit.harness.rules.sizing.NodeLoader` (its ``loader`` object):
generate's advice and files, the WSL advice, the cluster plan and ``envkit doctor`` take it from
:func:`loader_plan`, which feeds the harness's one rule (:func:`envkit.harness.rules.sizing.size_node`)
with the facts each of them knows; the harness applies the same rule inside the container
(:func:`envkit.harness.expectation.resolve_loader`).

The facts, each named with its source:

- the CPUs: the smallest of the affinity (the host's CPUs where ``envkit doctor`` sees them, else
  a ``wsl:`` section's ``processors``), ``run.cpuset`` and ``run.cpus`` (or the host's cgroup
  quota), rounded up: the CPU fact (:func:`~envkit.harness.rules.sizing.cpu_fact`);
- the training processes per node (:func:`envkit.plan.cluster.ranks_per_node`);
- the /dev/shm the container gets: ``run.shm_size`` when the profile sets it, the host's under
  ``ipc: host``, else sized from the need (:func:`~envkit.harness.rules.sizing.recommended_shm_bytes`).

Example:
    >>> from envkit.profile import load_profile
    >>> lp = loader_plan(load_profile(None).profile)
    >>> lp.cpus, lp.ranks, lp.workers, lp.shm_need // 2**20, lp.shm_bytes // 2**30
    (8, 1, 6, 1195, 2)
"""

from __future__ import annotations

from envkit.harness.rules.sizing import NodeLoader, cpu_fact, shm_fact, size_node
from envkit.plan.cluster import ranks_per_node
from envkit.profile.model import Profile

LoaderPlan = NodeLoader  # the plan's name for the resolved loaders of one node


def loader_plan(profile: Profile, *, host_cpus: int | None = None, host_quota: float | None = None,
                wsl_vm: bool = True, shm: tuple[int | None, str] | None = None) -> NodeLoader:
    """The loaders' plan for ``profile``: the harness's rule fed with what is known.

    ``host_cpus`` / ``host_quota``: the CPUs and cgroup quota the host grants (``envkit doctor``
    reads them; generate does not know the host, so a ``wsl:`` section's ``processors``, the
    VM's CPUs, stand in for them unless ``wsl_vm`` is False: a cluster node is no WSL VM).
    ``shm``: the container's /dev/shm when already decided (doctor passes the files' size, so a
    host's CPUs never resize it); by default it is decided here.
    """
    ld = profile.loader
    return size_node(num_workers=ld.num_workers, batch_size=ld.batch_size, sample_shape=ld.sample_shape,
                     dtype=ld.dtype, prefetch_factor=ld.prefetch_factor, ranks=ranks_per_node(profile),
                     cpus=_cpus(profile, host_cpus, host_quota, wsl_vm), shm=shm or _shm(profile),
                     nccl=_uses_nccl(profile), nodes=profile.cluster.nodes if profile.cluster else 1)


def _cpus(profile: Profile, host_cpus: int | None, host_quota: float | None, wsl_vm: bool) -> tuple[int | None, str]:
    run = profile.run
    # The profile's own limits first: where a host grants the same number, the profile's key is its source.
    return cpu_fact(
        ("count", len(run.cpuset_cpus), f"run.cpuset {run.cpuset!r} ({len(run.cpuset_cpus)} CPUs)"),
        ("quota", run.cpus, f"run.cpus {run.cpus:g}" if run.cpus else ""),
        ("count", None if host_cpus is not None or not wsl_vm or profile.wsl is None else profile.wsl.processors,
         f"wsl.processors {profile.wsl.processors if profile.wsl else None}"),
        ("count", host_cpus, f"this host's {host_cpus} CPUs"),
        ("quota", host_quota, f"this host's cgroup quota {host_quota:g}" if host_quota else ""),
        unknown="not known (no run.cpuset, run.cpus or wsl.processors): auto plans for the most workers")


def _shm(profile: Profile) -> tuple[int | str | None, str]:
    return shm_fact(profile.run.ipc, profile.run.shm_size, "run.shm_size", sized=True)


def _uses_nccl(profile: Profile) -> bool:
    """The ranks talk over NCCL: the node runs GPUs."""
    if profile.cluster is not None and profile.cluster.gpus_per_node is not None:
        return profile.cluster.gpus_per_node > 0
    return profile.run.wants_gpus
