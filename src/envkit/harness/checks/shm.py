"""The ``shm`` check: /dev/shm against what the node's loaders need; the one shm check of envkit.

The harness runs it in the container, where the /dev/shm it measures is the loaders' own;
``envkit doctor`` runs the same check with the host's facts (``inside=False``): there the /dev/shm
measured is the host's, which the loaders use only under ``ipc: host``; otherwise the container
gets the planned size (:func:`envkit.harness.expectation.planned_shm`), and that is what is judged.

Example:
    >>> c = check_shm({"batch_size": 8, "sample_shape": [3, 8, 8], "dtype": "float32",
    ...                "num_workers": 2, "prefetch_factor": 2}, {},
    ...               stats={"path": "/dev/shm", "size_bytes": 1 << 30, "free_bytes": 1 << 30})
    >>> c["status"]
    'pass'
    >>> c = check_shm({"batch_size": 8, "sample_shape": [3, 8, 8], "dtype": "float32", "num_workers": 2,
    ...                "prefetch_factor": 2, "shm_need_bytes": 2 << 20}, {"shm_size_bytes": 1 << 20}, None, inside=False)
    >>> c["status"], c["message"][:58]
    ('warn', "the container is planned with 1.0 MiB (the profile's plan)")
"""

from __future__ import annotations

from typing import Any

from ..expectation import AnyLoader, ExpectRun, planned_shm
from ..probes import env as envmod
from ..probes.env import ShmStats
from ..report import FAIL, PASS, SKIP, WARN, Check, human_bytes, make_check, plural
from ..rules.sizing import DOCKER_DEFAULT_SHM, docker_size, recommended_shm_bytes, shm_required_bytes

# tmpfs sizes are page-rounded; anything within 1 % of the asked size counts as applied.
SHM_MATCH_TOLERANCE = 0.01
WILL_DIE = "workers will die with 'unable to allocate shared memory(shm)' or a bus error"


def shm_remedy(required: int) -> str:
    size = docker_size(recommended_shm_bytes(required))
    return (f"docker run --shm-size={size} (compose: shm_size: {size}; Kubernetes: an emptyDir "
            f"with medium: Memory and sizeLimit: {size} mounted at /dev/shm), or lower batch_size, "
            "num_workers or prefetch_factor. Note: with --ipc=host /dev/shm is the host's and "
            "--shm-size is ignored.")


def ipc_host_remedy(required: int) -> str:
    """Under ``ipc: host`` the container's /dev/shm is the host's: --shm-size cannot raise it."""
    return (f"use ipc: private (envkit then sizes shm_size: {docker_size(recommended_shm_bytes(required))}), or on "
            "WSL2 raise the VM's memory (/dev/shm is a tmpfs of half the VM's RAM)")


def _shm_name(size: int) -> str:
    """A /dev/shm size, named for what it is when it is Docker's default."""
    return human_bytes(size) + (" (Docker's default: no --shm-size reached the container)"
                                if size == DOCKER_DEFAULT_SHM else "")


def _need(loader: AnyLoader, run: ExpectRun, required: int, ranks: int) -> str:
    """What the node's loaders need, in words: who, the batch and the workers behind the number."""
    who = "the loader" if ranks == 1 else f"{ranks} loaders at once (one per training process)"
    return (f"{who} (batch {loader['batch_size']} x {loader['sample_shape']} {loader['dtype']}, "
            f"{plural(loader['num_workers'], 'worker')} x prefetch "
            f"{loader['prefetch_factor']}{', with NCCL' if run.get('nccl') and ranks > 1 else ''}) "
            f"{'needs' if ranks == 1 else 'need'} ~{human_bytes(required)}")


def _planned_below(size: int | None, asked: int, source: str, need: str) -> str:
    here = f"/dev/shm is {human_bytes(size)} here, but " if size is not None else ""
    return (f"{here}the container is planned with {human_bytes(asked)} ({source}), below what {need}: "
            f"started with the generated settings, {WILL_DIE}")


def _planned_remedy(required: int) -> str:
    return (f"drop run.shm_size (envkit sizes it) or set run.shm_size: {docker_size(recommended_shm_bytes(required))}, "
            "and generate again; by hand: " + shm_remedy(required))


def check_shm(loader: AnyLoader, run: ExpectRun, stats: ShmStats | None = None, *, inside: bool = True) -> Check:
    """/dev/shm size and free space vs what the node's loaders need (``sizing.size_node``; a bare loader
    dict: ``sizing.shm_required_bytes`` for one loader).

    ``stats``: the /dev/shm measured here (read when None and ``inside``). ``inside`` False: ``envkit
    doctor`` on a host, where ``stats`` is the host's /dev/shm, the loaders' only under ``ipc: host``.
    """
    required = loader.get("shm_need_bytes")
    if required is None:
        required = shm_required_bytes(batch_size=loader["batch_size"], sample_shape=loader["sample_shape"],
                                      dtype=loader["dtype"], num_workers=loader["num_workers"],
                                      prefetch_factor=loader["prefetch_factor"])
    ranks = loader.get("ranks_per_node") or 1
    asked, source = planned_shm(run)
    expected = {"required_bytes": required, "recommended_bytes": recommended_shm_bytes(required),
                "ranks_per_node": ranks, "profile_shm_size_bytes": run.get("shm_size_bytes"), "ipc": run.get("ipc")}
    need = _need(loader, run, required, ranks)
    stats = envmod.shm_stats() if stats is None and inside else stats
    if not inside and asked is not None:  # a host's /dev/shm is not the container's: judge the planned one
        return _judge_planned(stats, asked, source, required, need, expected)
    if stats is None:
        if not required:
            return make_check("shm", SKIP, {}, expected, "no /dev/shm, and num_workers=0 does not need it")
        return make_check("shm", FAIL if inside else WARN, {}, expected,
                          "/dev/shm does not exist: multi-worker DataLoaders cannot share batches",
                          ipc_host_remedy(required) if run.get("ipc") == "host" else shm_remedy(required))
    return _judge_measured(stats, run, asked, source, required, need, expected)


def _judge_planned(stats: ShmStats | None, asked: int, source: str, required: int, need: str,
                   expected: dict[str, Any]) -> Check:
    """The container's /dev/shm as planned against the need (``envkit doctor``: it is not started yet)."""
    measured = dict(stats or {})
    size = stats["size_bytes"] if stats else None
    if asked < required:
        return make_check("shm", WARN, measured, expected, _planned_below(size, asked, source, need),
                          _planned_remedy(required))
    here = f"; this host's /dev/shm ({human_bytes(size)}) is not the container's" if size is not None else ""
    return make_check("shm", PASS, measured, expected,
                      f"the container gets {human_bytes(asked)} of /dev/shm ({source}); {need}{here}")


def _judge_measured(stats: ShmStats, run: ExpectRun, asked: int | None, source: str, required: int, need: str,
                    expected: dict[str, Any]) -> Check:
    """The /dev/shm the loaders use, as measured, against the need and against the plan."""
    size, free = stats["size_bytes"], stats["free_bytes"]
    measured = dict(stats)
    host_ipc = run.get("ipc") == "host"
    if size < required:
        return make_check("shm", FAIL, measured, expected, f"/dev/shm is {_shm_name(size)} but {need}: {WILL_DIE}",
                          ipc_host_remedy(required) if host_ipc else shm_remedy(required))
    if free < required:
        return make_check("shm", WARN, measured, expected,
                          f"/dev/shm is {human_bytes(size)} but only {human_bytes(free)} is free and {need}; "
                          "something else holds shared memory (leaked torch_* segments?)",
                          "free /dev/shm (ls -la /dev/shm) or " + shm_remedy(required))
    if asked and asked < required:
        # Enough here, but not under the profile's own settings: the remedy is the size the loader needs,
        # never the too-small one the profile asks for.
        return make_check("shm", WARN, measured, expected, _planned_below(size, asked, source, need),
                          _planned_remedy(required))
    if asked and abs(size - asked) > asked * SHM_MATCH_TOLERANCE:
        return make_check("shm", WARN, measured, expected,
                          f"/dev/shm is {_shm_name(size)} but the container is planned with {human_bytes(asked)} "
                          f"({source}): the run flags were not applied (it is enough for this loader: {need})",
                          f"start the container with the generated flags: docker run --shm-size={docker_size(asked)} "
                          f"(compose: shm_size: {docker_size(asked)})")
    note = " (--ipc=host: this is the host's /dev/shm)" if host_ipc else ""
    return make_check("shm", PASS, measured, expected,
                      f"/dev/shm is {human_bytes(size)} ({human_bytes(free)} free){note}; {need}")
