"""The ``environment`` block: OS, WSL, container, Python/torch, CPUs, cgroup quota, shm, user.

Every reader takes a ``root`` (default ``"/"``) so tests can point it at a fixture
tree instead of the live system. Nothing here imports torch at module level.

Example:
    >>> read_cgroup_cpu_quota("/nonexistent")["quota_cpus"] is None
    True
"""

from __future__ import annotations

import multiprocessing
import os
import platform
import sys
import warnings
from pathlib import Path
from typing import Annotated, TypedDict

class CgroupQuota(TypedDict):
    """the cgroup CPU quota, the tightest over this process's cgroup and its ancestors"""

    version: Annotated[int | None, "cgroup version (1 or 2); null: no cgroup file system"]
    quota_cpus: Annotated[float | None, "the CFS quota in CPUs (docker run --cpus); null: none"]
    source: Annotated[str | None, "the file the quota was read from"]


class ShmStats(TypedDict):
    """the shared-memory tmpfs (statvfs)"""

    path: str
    size_bytes: int
    free_bytes: int


class ContainerEvidence(TypedDict):
    """whether this runs in a container, and the evidence"""

    detected: bool
    how: list[str]


class _TorchInfo(TypedDict):
    torch: Annotated[str | None, "torch.__version__; null: torch is not importable"]
    torch_cuda: Annotated[str | None, "torch.version.cuda; null: a CPU-only (or ROCm) build"]
    cuda_available: bool
    cuda_device_count: int
    sharing_strategy: Annotated[str | None, "torch.multiprocessing's sharing strategy"]


class TorchInfo(_TorchInfo, total=False):
    """what torch says about itself and CUDA"""

    torch_error: Annotated[str, "why torch did not import (present only then)"]


class Environment(TorchInfo):
    """where the harness ran: the OS, WSL, container, Python, torch, CPUs, cgroup quota, /dev/shm and user"""

    os: str
    kernel: str
    machine: str
    wsl: Annotated[int | None, "1 or 2 under WSL, else null"]
    container: ContainerEvidence
    python: str
    executable: str
    cpu_count: int | None
    usable_cpus: Annotated[int, "the affinity mask's size (what torch's worker bound sees)"]
    cgroup: CgroupQuota
    start_method: str
    default_start_method: str
    uid: int | None
    user: str | None
    shm: ShmStats | None


V1_CPU_DIRS = ("cpu", "cpu,cpuacct", "cpuacct,cpu")
CONTAINER_CGROUP_MARKERS = ("docker", "kubepods", "containerd", "libpod", "lxc", "crio")


# torch warns "Failed to initialize NumPy: No module named 'numpy'" while importing when numpy is
# absent. The harness never uses numpy, so that warning is noise (and would end up in stderr tails).
NUMPY_WARNING = "Failed to initialize NumPy"
NUMPY_WARNING_OPTION = f"ignore:{NUMPY_WARNING}:UserWarning"  # -W / PYTHONWARNINGS spelling


def quiet_numpy_warning() -> None:
    """Ignore torch's "Failed to initialize NumPy" UserWarning in this process (only that one)."""
    warnings.filterwarnings("ignore", message=NUMPY_WARNING, category=UserWarning)


def child_warnings(environ=None) -> str:
    """``PYTHONWARNINGS`` for child processes: the caller's options plus the NumPy-warning filter.

    Ours comes last, so it wins over a blanket ``error`` or ``default`` for this one warning.

    >>> child_warnings({"PYTHONWARNINGS": "default"})
    'default,ignore:Failed to initialize NumPy:UserWarning'
    """
    environ = os.environ if environ is None else environ
    current = [o for o in (environ.get("PYTHONWARNINGS") or "").split(",") if o.strip()]
    if NUMPY_WARNING_OPTION not in current:
        current.append(NUMPY_WARNING_OPTION)
    return ",".join(current)


def read_text(path: Path) -> str | None:
    """A small text file's stripped content; None when it cannot be read (absent, no permission, not Linux)."""
    try:
        return path.read_text().strip()
    except OSError:
        return None


def available_memory(root: str | os.PathLike = "/") -> int | None:
    """Bytes this process may still allocate: ``MemAvailable``, lowered by a cgroup v2 ``memory.max``.

    None when neither can be read (not Linux).
    """
    root = Path(root)
    avail = None
    for line in (read_text(root / "proc/meminfo") or "").splitlines():
        if line.startswith("MemAvailable:"):
            try:
                avail = int(line.split()[1]) * 1024
            except (IndexError, ValueError):
                pass
    cg = _own_cgroup_paths(root).get("")
    if cg is not None:
        base = root / "sys/fs/cgroup" / cg.lstrip("/")
        limit, used = read_text(base / "memory.max"), read_text(base / "memory.current")
        if limit and limit.isdigit() and used and used.isdigit():
            room = max(0, int(limit) - int(used))
            avail = room if avail is None else min(avail, room)
    return avail


def usable_cpus() -> int:
    """CPUs this process may run on: the affinity mask (cpuset-aware), like torch's worker bound."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _own_cgroup_paths(root: Path) -> dict:
    """Map controller -> this process's cgroup path from /proc/self/cgroup (``""`` is v2)."""
    text = read_text(root / "proc/self/cgroup") or ""
    paths = {}
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            for ctrl in parts[1].split(","):
                paths[ctrl] = parts[2]
    return paths


def _candidate_dirs(mount: Path, rel: str) -> list[Path]:
    """The cgroup dir and its ancestors up to the mount: the effective quota is the tightest one.

    Inside a container with a private cgroup namespace the own path is "/" and the
    mount root *is* the container's cgroup; on a host the path is nested.
    """
    dirs = []
    rel_path = Path(rel.lstrip("/")) if rel else Path()
    while True:
        d = mount / rel_path
        if d.is_dir() and d not in dirs:
            dirs.append(d)
        if rel_path == Path() or str(rel_path) == ".":
            break
        rel_path = rel_path.parent
    if mount.is_dir() and mount not in dirs:
        dirs.append(mount)
    return dirs


def read_cgroup_cpu_quota(root: str | os.PathLike = "/") -> CgroupQuota:
    """Read the CFS CPU quota as a number of CPUs (``None`` = no quota): the one cgroup reader.

    The tightest quota over this process's cgroup and its ancestors counts (a quota on
    a parent slice binds its children). ``envkit doctor`` reads the host through it too.

    cgroup v2: ``cpu.max`` holds ``"<quota|max> <period>"``; v1: ``cpu.cfs_quota_us``
    (-1 = none) and ``cpu.cfs_period_us``. ``docker run --cpus 1.5`` writes
    ``150000 100000``. sched_getaffinity (and so torch's num_workers warning)
    does not see this quota.

    >>> read_cgroup_cpu_quota("/nonexistent")
    {'version': None, 'quota_cpus': None, 'source': None}
    """
    root = Path(root)
    base = root / "sys/fs/cgroup"
    own = _own_cgroup_paths(root)
    result: CgroupQuota = {"version": None, "quota_cpus": None, "source": None}
    # v2 is one unified tree (cgroup.controllers at its root); a bare cpu.max there is v2 too.
    if (base / "cgroup.controllers").exists() or (base / "cpu.max").exists():
        result["version"] = 2
        for d in _candidate_dirs(base, own.get("", "/")):
            text = read_text(d / "cpu.max")
            if not text:
                continue
            quota, _, period = text.partition(" ")
            if quota != "max" and period:
                cpus = int(quota) / int(period)
                if result["quota_cpus"] is None or cpus < result["quota_cpus"]:
                    result["quota_cpus"], result["source"] = round(cpus, 3), str(d / "cpu.max")
        return result
    for name in V1_CPU_DIRS:
        mount = base / name
        if not mount.is_dir():
            continue
        result["version"] = 1
        for d in _candidate_dirs(mount, own.get("cpu", "/")):
            q_text, p_text = read_text(d / "cpu.cfs_quota_us"), read_text(d / "cpu.cfs_period_us")
            if q_text is None or p_text is None or int(q_text) <= 0 or int(p_text) <= 0:
                continue
            cpus = int(q_text) / int(p_text)
            if result["quota_cpus"] is None or cpus < result["quota_cpus"]:
                result["quota_cpus"], result["source"] = round(cpus, 3), str(d / "cpu.cfs_quota_us")
        break
    return result


WSL_ENV_VARS = ("WSL_DISTRO_NAME", "WSL_INTEROP")
WSL_INTEROP_FILE = "proc/sys/fs/binfmt_misc/WSLInterop"


def wsl_version(release: str, *, environ=None, interop: bool = False) -> int | None:
    """1 or 2 under WSL, else None: the one WSL rule (the harness and ``envkit doctor`` use it).

    WSL1 reports the Windows build with a capitalised ``-Microsoft`` suffix
    (``4.4.0-19041-Microsoft``). Any other kernel release containing "microsoft"
    (``5.15.167.4-microsoft-standard-WSL2``, ``6.6.0-microsoft-custom``) is a WSL2 kernel.
    A custom WSL2 kernel may hide the word; WSL's init still sets ``WSL_DISTRO_NAME`` /
    ``WSL_INTEROP`` and registers the WSLInterop binfmt (``interop``), and WSL1 cannot run
    custom kernels, so that evidence means WSL2.

    >>> wsl_version("4.4.0-19041-Microsoft"), wsl_version("6.6.0-microsoft-custom")
    (1, 2)
    >>> wsl_version("6.8.0-45-generic"), wsl_version("6.6.0-custom", environ={"WSL_DISTRO_NAME": "Ubuntu"})
    (None, 2)
    """
    release = release.strip()
    if release.endswith("-Microsoft"):
        return 1
    if "microsoft" in release.lower():
        return 2
    environ = {} if environ is None else environ
    if interop or any(environ.get(var) for var in WSL_ENV_VARS):
        return 2
    return None


def detect_wsl(root: str | os.PathLike = "/", environ=None) -> int | None:
    """:func:`wsl_version` of the machine under ``root`` (its kernel release, env and binfmt).

    >>> detect_wsl("/nonexistent", environ={})
    """
    environ = os.environ if environ is None else environ
    root = Path(root)
    release = read_text(root / "proc/sys/kernel/osrelease") or ""
    return wsl_version(release, environ=environ, interop=(root / WSL_INTEROP_FILE).exists())


def detect_container(root: str | os.PathLike = "/", environ=None) -> ContainerEvidence:
    """``{"detected": bool, "how": [evidence, ...]}`` from marker files, env and /proc/1/cgroup."""
    environ = os.environ if environ is None else environ
    root = Path(root)
    how = []
    for marker in ("/.dockerenv", "/run/.containerenv"):
        if (root / marker.lstrip("/")).exists():
            how.append(marker)
    if environ.get("container"):
        how.append(f"env container={environ['container']}")
    if environ.get("KUBERNETES_SERVICE_HOST"):
        how.append("env KUBERNETES_SERVICE_HOST")
    cgroup = read_text(root / "proc/1/cgroup") or ""
    hits = sorted({m for m in CONTAINER_CGROUP_MARKERS if m in cgroup})
    if hits:
        how.append("cgroup:" + ",".join(hits))
    return {"detected": bool(how), "how": how}


SHM_PATH = "/dev/shm"  # where Linux (and every container) mounts the shared-memory tmpfs


def shm_stats(path: str = SHM_PATH) -> ShmStats | None:
    """Size and free bytes of the shm tmpfs (statvfs), or None when it does not exist (or, on Windows, cannot)."""
    try:
        st = os.statvfs(path)
    except (OSError, AttributeError):  # AttributeError: no os.statvfs (Windows)
        return None
    return {"path": path, "size_bytes": st.f_blocks * st.f_frsize, "free_bytes": st.f_bavail * st.f_frsize}


def default_start_method() -> str:
    """The platform's default start method, without fixing the global context as a side effect."""
    # get_all_start_methods() documents its first element as the default.
    return multiprocessing.get_start_method(allow_none=True) or multiprocessing.get_all_start_methods()[0]


def _user() -> tuple[int | None, str | None]:
    if not hasattr(os, "getuid"):
        return None, None
    uid = os.getuid()
    try:
        import pwd  # POSIX only
        return uid, pwd.getpwuid(uid).pw_name
    except (ImportError, KeyError):  # arbitrary uid (docker run --user 1234) has no passwd entry
        return uid, None


def torch_info() -> TorchInfo:
    """torch version, CUDA build, availability, device count and sharing strategy (imports torch)."""
    try:
        import torch  # here, not at the top: importing torch takes seconds and the harness's modules import without it
        import torch.multiprocessing as tmp
    except ImportError as exc:
        return {"torch": None, "torch_error": str(exc), "torch_cuda": None, "cuda_available": False,
                "cuda_device_count": 0, "sharing_strategy": None}
    try:
        available = bool(torch.cuda.is_available())
        count = torch.cuda.device_count() if available else 0
    except Exception:  # a broken driver must not take the whole report down
        available, count = False, 0
    return {"torch": torch.__version__, "torch_cuda": torch.version.cuda,
            "cuda_available": available, "cuda_device_count": count,
            "sharing_strategy": tmp.get_sharing_strategy()}


def collect_environment(start_method: str | None = None, root: str = "/", cgroup: CgroupQuota | None = None) -> Environment:
    """The report's ``environment`` block (imports torch lazily via :func:`torch_info`).

    ``cgroup``: an already-read :func:`read_cgroup_cpu_quota` result (read here when None).
    """
    uid, user = _user()
    info = torch_info()
    return {
        "os": platform.system(), "kernel": platform.release(), "machine": platform.machine(),
        "wsl": detect_wsl(root), "container": detect_container(root),
        "python": platform.python_version(), "executable": sys.executable,
        **info,
        "cpu_count": os.cpu_count(), "usable_cpus": usable_cpus(),
        "cgroup": cgroup if cgroup is not None else read_cgroup_cpu_quota(root),
        "start_method": start_method or default_start_method(),
        "default_start_method": default_start_method(),
        "uid": uid, "user": user, "shm": shm_stats(),
    }
