"""Rules across a whole profile's sections, run by ``Profile``'s after-validator once every field is valid.

Each rule returns its problems as ``(key path, message)``; :func:`raise_problems` turns them into one
pydantic ``ValidationError`` of ``PydanticCustomError`` s whose ``ctx`` carries the key path (``at``), the
message and any hint, which envkit.profile.load places at the key's line and column.

Each rule reads the sections it needs (:mod:`envkit.profile.sections`, :mod:`envkit.profile.cluster`), never
the whole profile, so the profile model imports the rules and nothing imports back.

Example:
    >>> from envkit.profile.sections import Run
    >>> gpu_id_problems(Run.model_construct(gpus=(0, "0")))[0][0]
    ('run', 'gpus', 1)
"""

from __future__ import annotations

from pathlib import Path

from pydantic_core import PydanticCustomError
from pydantic_core import ValidationError as CoreValidationError

from envkit.hostpaths import is_drive_path, split_volume
from envkit.profile.cluster import Cluster
from envkit.profile.proxy import proxy_build_args
from envkit.profile.sections import Proxy, Run
from envkit.termtext import neutralise

Problems = list[tuple[tuple[str | int, ...], str]]

# run.env reaches the container as argv words (`--env=KEY=VALUE`: run.sh, devcontainer's runArgs,
# `envkit flags`) or environment strings (the Slurm script's exports). Linux caps each such string at
# MAX_ARG_STRLEN (128 KiB) and argv plus environment together at ARG_MAX (a quarter of the stack limit,
# 2 MiB by default), which the caller's own environment shares. Half of each leaves that room.
ENV_ENTRY_MAX = 64 * 1024
ENV_TOTAL_MAX = 1024 * 1024
# pyxis's --container-mounts is a comma-separated list of SRC:DST[:FLAGS], and apptainer's --bind
# splits its value the same way: a source holding either character becomes other mounts.
SLURM_MOUNT_SEPARATORS = (",", ":")
RUN_ENV_HINT = "put large values in a file the container mounts (run.volumes) and pass its path in run.env"


def raise_problems(kind: str, problems: Problems, data: object, hint: str | None = None) -> None:
    """Raise ``problems`` (if any) as one ValidationError, each a ``kind`` error at its key path."""
    if not problems:
        return
    details = [{"type": PydanticCustomError(kind, "{message}", {"message": message, "at": key, "hint": hint}),
                "loc": (), "input": data} for key, message in problems]
    raise CoreValidationError.from_exception_data("Profile", details)  # type: ignore[arg-type]


def gpu_id_problems(run: Run) -> Problems:
    """A GPU id listed twice in run.gpus, at the second one's key.

    Docker hands the container each listed device once (``--gpus device=0,0`` is one GPU), while the
    cluster targets count the list (two per node): the same profile would ask for different numbers.
    An index and a UUID naming the same card cannot be told apart without the host; only equal spellings
    (0 and "0", a UUID in either case) are caught.
    """
    gpus = run.gpus
    if not isinstance(gpus, tuple):
        return []
    seen: dict[str, int] = {}
    twice: list[tuple[int, int]] = []
    for i, gpu in enumerate(gpus):
        norm = str(gpu).strip().lower()
        if norm in seen:
            twice.append((i, seen[norm]))
        else:
            seen[norm] = i
    written = ", ".join(neutralise(str(g)) for g in gpus)
    return [(("run", "gpus", i), f"GPU {neutralise(str(gpus[i]))} is listed twice "
             f"(first as run.gpus[{first}]); Docker gives the container each device once, so "
             f"[{written}] is {len(seen)} GPU(s) on a workstation but {len(gpus)} on a cluster: "
             "list each id once") for i, first in twice]


def node_gpu_count(cluster: Cluster | None, run: Run) -> int | None:
    """GPUs each cluster node asks for: ``cluster.gpus_per_node``; else ``run.gpus`` as a count (a list of ids
    counts as that many, ``none`` as 0); None where no count follows (``all``, or no cluster: section).

    >>> node_gpu_count(Cluster.model_validate({"entrypoint": ["t.py"]}), Run.model_validate({"gpus": [0, 3]}))
    2
    """
    if cluster is None:
        return None
    if cluster.gpus_per_node is not None:
        return cluster.gpus_per_node
    gpus = run.gpus
    if gpus == "all":
        return None
    return 0 if gpus == "none" else gpus if isinstance(gpus, int) else len(gpus)


# NCCL refuses two ranks on one GPU unless told otherwise: "Multiple Ranks are using the same GPU/Partition. Set
# NCCL_MULTI_RANK_GPU_ENABLE=1" (NVIDIA/nccl v2.30.7-1 src/init.cc:68, 1055-1057); before, "Duplicate GPU
# detected : rank %d and rank %d both on CUDA device" (v2.21.5-1 src/init.cc:943).
NCCL_MULTI_RANK = "NCCL_MULTI_RANK_GPU_ENABLE"


def ranks_per_gpu_problems(cluster: Cluster | None, run: Run) -> Problems:
    """More training processes per node than GPUs, where the ranks use NCCL (the node has GPUs)."""
    gpus = node_gpu_count(cluster, run)
    if cluster is None or cluster.procs_per_node is None or not gpus or cluster.procs_per_node <= gpus:
        return []
    if dict(run.env).get(NCCL_MULTI_RANK) == "1":
        return []
    return [(("cluster", "procs_per_node"),
             f"{cluster.procs_per_node} training processes per node on {gpus} GPU(s) put two ranks on one GPU, "
             "which NCCL refuses at its first collective ('Multiple Ranks are using the same GPU/Partition'; "
             f"older NCCL: 'Duplicate GPU detected'); set procs_per_node to at most {gpus} (one per GPU), or "
             f"leave it out; to share GPUs on purpose set run.env {NCCL_MULTI_RANK}: \"1\" (NCCL >= 2.30)")]


def run_env_problems(run: Run, proxy: Proxy | None) -> Problems:
    """run.env entries over the kernel's argument limits (ENV_ENTRY_MAX each, ENV_TOTAL_MAX together).

    Decided over an env file: docker's ``--env-file`` reads lines of at most 64 KiB (Go's bufio.Scanner)
    and compose interpolates ``$`` in its ``env_file``, so a file would carry neither larger nor more
    literal values than argv does; a large value belongs in a mounted file (run.volumes).
    """
    problems: Problems = []
    env = dict(run.env)
    for key, value in env.items():
        size = len(f"{key}={value}".encode())
        if size > ENV_ENTRY_MAX:
            problems.append((("run", "env", key), f"{key}=VALUE is {size} bytes; one run.env entry is at most "
                             f"{ENV_ENTRY_MAX // 1024} KiB ({ENV_ENTRY_MAX} bytes), under Linux's 128 KiB limit "
                             "on one argument (docker run --env=KEY=VALUE)"))
    for key, value in proxy_build_args(proxy):
        env.setdefault(key, value)
    total = sum(len(f"{k}={v}".encode()) for k, v in env.items())
    if not problems and total > ENV_TOTAL_MAX:
        problems.append((("run", "env"), f"the run's environment is {total} bytes; all entries together are at "
                         f"most {ENV_TOTAL_MAX // 1024} KiB ({ENV_TOTAL_MAX} bytes), under Linux's limit on a "
                         "command's arguments and environment (ARG_MAX)"))
    return problems


def mount_source_problems(run: Run, cluster: Cluster | None, base_dir: Path | None) -> Problems:
    """Host paths holding ':' where they become ``--volume SRC:DST`` (Docker splits at ':'), and mount
    sources the Slurm runtimes' lists cannot carry; the profile's folder (``base_dir``) only when known.

    Decided over writing ``--mount``: run.sh, compose's short syntax, devcontainer and the SDK all
    share the SRC:DST form, and a project path with ':' is rare; a clear refusal beats four spellings.
    """
    def colon(path: Path) -> bool:  # a Windows drive's "C:" is one Docker Desktop reads
        text = str(path)
        return ":" in (text[2:] if is_drive_path(text) else text)

    problems: Problems = []
    if base_dir is not None and run.mount_project and colon(base_dir):
        problems.append((("run", "mount_project"), f"the profile's folder {str(base_dir)!r} contains "
                         "':', which Docker's --volume SRC:DST cannot carry (it splits at ':'); move the project to "
                         "a path without ':', or set run.mount_project: false"))
    for i, spec in enumerate(run.volumes):
        src = split_volume(spec)[0]
        if base_dir is not None and not src.startswith("/") and not is_drive_path(src) and colon(base_dir / src):
            problems.append((("run", "volumes", i), f"{src!r} is relative to {str(base_dir)!r}, "
                             "which contains ':' (Docker's --volume splits at ':'); use an absolute path without ':'"))
    if cluster is not None and cluster.slurm.runtime in ("pyxis", "apptainer"):
        for i, spec in enumerate(run.volumes):
            src = spec.split(":", 1)[0]
            bad = sorted({ch for ch in SLURM_MOUNT_SEPARATORS if ch in src})
            if bad:
                problems.append((("run", "volumes", i),
                    f"the source {src!r} holds {' and '.join(repr(ch) for ch in bad)}, which the Slurm script "
                    f"cannot mount: {cluster.slurm.runtime}'s mount list is comma-separated SRC:DST[:FLAGS]; "
                    "use a path without ',' or ':' (a symlink to it will do)"))
    return problems


def network_problems(cluster: Cluster | None, run: Run) -> Problems:
    """run.env naming a variable cluster.network sets, or a memlock too low for RDMA registration.

    One value each: ``cluster.network.interface`` writes NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME, ``hca``
    writes NCCL_IB_HCA; a second spelling in run.env would win in some targets and lose in others. On an RDMA
    fabric ``ibv_reg_mr`` registers NCCL's buffers under RLIMIT_MEMLOCK (NVIDIA/nccl-tests#206 fails at 8 MiB):
    an unset run.ulimits.memlock becomes unlimited, a written one must be unlimited.
    """
    from envkit.harness.rules.network import NETWORK_ENV, network_env

    if cluster is None:
        return []
    problems: Problems = []
    sets = dict(network_env(cluster.network.interface, cluster.network.hca))
    for key in run.env:
        if key in sets:
            problems.append((("run", "env", key), f"{key} is set by cluster.network.{NETWORK_ENV[key]} "
                             f"({sets[key]}): set it there only, so every target gets the one value"))
    memlock = run.ulimits.get("memlock")
    if cluster.network.fabric != "ethernet" and memlock is not None and memlock.soft != -1:
        problems.append((("run", "ulimits", "memlock"), f"memlock {memlock.soft} bytes on a {cluster.network.fabric} "
                         "fabric: ibv_reg_mr cannot register NCCL's buffers under it (NVIDIA/nccl-tests#206); set "
                         "it to -1 (unlimited) or leave it out (envkit then asks for unlimited)"))
    return problems
