"""The seam between ``envkit doctor`` and the machine it inspects.

Every check reads the host through a :class:`Host`, never through ``open`` or
``os`` directly, so tests can present a WSL2, WSL1 or plain Linux machine from
a folder of fixture files. Paths are absolute host paths ("/proc/meminfo")
looked up under ``root``. What cannot live in a file tree comes from
``root/.envkit-fixture/*.json`` when ``root`` is not "/":

- ``statvfs.json``: ``{"/dev/shm": {"size_bytes": N, "free_bytes": N}}``
- ``rlimits.json``: ``{"memlock": [soft, hard]}`` (bytes; -1 = unlimited)
- ``which.json``: ``{"nvidia-smi": "/usr/bin/nvidia-smi"}``
- ``docker.json``: ``{"reachable": true, "runtimes": ["nvidia", "runc"], "error": null, "cgroup_driver": "systemd"}``
- ``nvidia-smi.csv``: what ``nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total
  --format=csv,noheader`` prints (with ``which.json`` naming nvidia-smi)
- ``host.json``: ``{"platform": "linux", "cpus": 8}`` (``cpus``: usable CPUs)

A fixture host without a file answers "unknown" (None). With ``root`` "/",
the real calls are made (``os.statvfs``, ``resource.getrlimit``,
``shutil.which``). The Docker engine is only ever asked through envkit's one
engine seam, :func:`envkit.engine.connect` (then ``ping()`` and ``close()``,
loaded lazily); ``Host.engine_ping`` replaces that call in tests.

Example:
    >>> h = Host(Path("/nonexistent"), environ={})
    >>> h.read_text("/proc/sys/kernel/osrelease") is None, h.getrlimit("memlock")
    (True, None)
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from envkit.engine import EngineSilent, os_error_in
from envkit.engine.dockerd import DaemonFacts, read_daemon
from envkit.errors import EngineError
from envkit.harness.probes.env import ShmStats, shm_stats

FIXTURE_DIR = ".envkit-fixture"


def _environ() -> dict[str, str]:
    return dict(os.environ)


@dataclass(frozen=True)
class Host:
    """A machine to inspect: the real one (``root`` "/") or a fixture tree.

    ``engine_ping`` replaces the engine call: a callable returning
    :meth:`envkit.engine.Engine.ping`'s dict, or raising :class:`~envkit.errors.EngineError`
    when no engine answers (default on the real host: :func:`engine_ping`).
    ``docker_probe`` replaces the whole probe with a ready ``{"reachable", "runtimes", "error"}``
    dict (or ``lambda: None`` to skip the docker checks).
    ``cwd`` is the working directory the checks judge (default: the process's).
    """

    root: Path = Path("/")
    environ: Mapping[str, str] = field(default_factory=_environ)
    cwd: str = field(default_factory=os.getcwd)
    docker_probe: Callable[[], dict | None] | None = None
    engine_ping: Callable[[], dict[str, Any]] | None = None
    ulimit_probe: Callable[[tuple], tuple[bool | None, str]] | None = None

    @property
    def is_real(self) -> bool:
        return self.root == Path("/")

    def path(self, p: str | Path) -> Path:
        """``p`` (an absolute host path) under ``root``."""
        return self.root / str(p).lstrip("/")

    def read_text(self, p: str | Path) -> str | None:
        try:
            return self.path(p).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None

    def exists(self, p: str | Path) -> bool:
        return self.path(p).exists()

    def _fixture(self, name: str):
        try:
            return json.loads((self.root / FIXTURE_DIR / name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    @property
    def platform(self) -> str:
        if self.is_real:
            return sys.platform
        return (self._fixture("host.json") or {}).get("platform", "linux")

    def statvfs(self, p: str) -> ShmStats | None:
        """``{"path", "size_bytes", "free_bytes"}`` of the file system holding ``p``, or None."""
        if not self.is_real:
            entry = (self._fixture("statvfs.json") or {}).get(p)
            return {"path": p, "size_bytes": entry["size_bytes"], "free_bytes": entry["free_bytes"]} if entry else None
        return shm_stats(p)

    def getrlimit(self, name: str) -> tuple[int, int] | None:
        """``(soft, hard)`` of ``RLIMIT_<NAME>`` in the unit the kernel uses (bytes for memlock); -1 = unlimited."""
        if not self.is_real:
            value = (self._fixture("rlimits.json") or {}).get(name)
            return tuple(value) if value else None
        try:
            import resource
        except ImportError:  # Windows
            return None
        soft, hard = resource.getrlimit(getattr(resource, f"RLIMIT_{name.upper()}"))
        inf = resource.RLIM_INFINITY
        return (-1 if soft == inf else soft, -1 if hard == inf else hard)

    def which(self, cmd: str) -> str | None:
        if not self.is_real:
            return (self._fixture("which.json") or {}).get(cmd)
        return shutil.which(cmd)

    def usable_cpus(self) -> int | None:
        """CPUs this process may run on (affinity; cpuinfo on fixture hosts), before any cgroup quota."""
        if self.is_real:
            try:
                return len(os.sched_getaffinity(0))
            except AttributeError:
                return os.cpu_count()
        fixed = (self._fixture("host.json") or {}).get("cpus")
        if fixed:
            return int(fixed)
        cpuinfo = self.read_text("/proc/cpuinfo")
        if cpuinfo is None:
            return None
        return sum(1 for line in cpuinfo.splitlines() if line.split(":")[0].strip() == "processor") or None

    def cpu_ids(self) -> tuple[int, ...] | None:
        """The ids of the CPUs this process may run on (``0..cpus-1`` where only a count is known)."""
        if self.is_real and hasattr(os, "sched_getaffinity"):
            return tuple(sorted(os.sched_getaffinity(0)))
        n = self.usable_cpus()
        return tuple(range(n)) if n else None

    def memory_bytes(self) -> int | None:
        """This machine's RAM: MemTotal of /proc/meminfo (a WSL2 VM's own), on native Windows the PC's
        (GlobalMemoryStatusEx), on macOS the physical pages; a fixture's host.json ``memory_bytes`` first."""
        if not self.is_real:
            fixed = (self._fixture("host.json") or {}).get("memory_bytes")
            if fixed:
                return int(fixed)
        m = re.search(r"^MemTotal:\s+(\d+)\s*kB", self.read_text("/proc/meminfo") or "", re.MULTILINE)
        if m:
            return int(m.group(1)) * 1024
        if not self.is_real:
            return None
        if sys.platform.startswith("win"):
            return _windows_memory()
        try:
            return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (AttributeError, ValueError, OSError):
            return None

    def daemon(self) -> DaemonFacts:
        """The local dockerd's limits, capabilities, PATH, CDI specs and default-shm-size (envkit.engine.dockerd).

        Read under ``root``, so a fixture tree presents a daemon with ``proc/<pid>/{comm,limits,
        status,environ,cmdline}``, ``etc/docker/daemon.json`` and ``etc/cdi/``.
        """
        return read_daemon(self.root, dict(self.environ))

    def probe_ulimits(self, ulimits: tuple) -> tuple[bool | None, str]:
        """Does this host's engine start a container with ``ulimits``? (:meth:`envkit.engine.Engine.probe_ulimits`;
        a fixture host answers from ``ulimit_probe.json``: ``{"granted": bool|null, "said": "..."}``)."""
        if self.ulimit_probe is not None:
            return self.ulimit_probe(ulimits)
        if not self.is_real:
            doc = self._fixture("ulimit_probe.json") or {"granted": None, "said": "no probe in the fixture"}
            return doc.get("granted"), doc.get("said", "")
        from envkit.engine import connect  # lazily: loads docker-py only when a ulimit needs asking

        try:
            engine = connect()
        except EngineError as exc:
            return None, f"no engine to ask ({exc})"
        try:
            return engine.probe_ulimits(ulimits)
        finally:
            engine.close()

    def docker(self) -> dict | None:
        """``{"reachable", "runtimes", "nvidia_runtime", "server_version", "os", "error"}``, or None when not probed."""
        if self.docker_probe is not None:
            return self.docker_probe()
        if self.engine_ping is not None:
            return probe_engine(self.engine_ping, self.environ)
        if not self.is_real:
            return self._fixture("docker.json")
        return probe_engine(engine_ping, self.environ)


def _windows_memory() -> int | None:
    """The PC's physical memory on native Windows (kernel32 GlobalMemoryStatusEx), or None."""
    import ctypes

    class MemoryStatus(ctypes.Structure):
        _fields_ = [("dwLength", ctypes.c_ulong), ("dwMemoryLoad", ctypes.c_ulong),
                    ("ullTotalPhys", ctypes.c_ulonglong), ("ullAvailPhys", ctypes.c_ulonglong),
                    ("ullTotalPageFile", ctypes.c_ulonglong), ("ullAvailPageFile", ctypes.c_ulonglong),
                    ("ullTotalVirtual", ctypes.c_ulonglong), ("ullAvailVirtual", ctypes.c_ulonglong),
                    ("ullAvailExtendedVirtual", ctypes.c_ulonglong)]

    status = MemoryStatus()
    status.dwLength = ctypes.sizeof(MemoryStatus)
    try:
        ok = ctypes.windll.kernel32.GlobalMemoryStatusEx(ctypes.byref(status))  # type: ignore[attr-defined]
    except (AttributeError, OSError):
        return None
    return int(status.ullTotalPhys) if ok else None


def engine_ping() -> dict[str, Any]:
    """``connect().ping()`` through :mod:`envkit.engine`; raises EngineError without an engine."""
    from envkit.engine import connect  # lazily: loads docker-py only when the doctor asks

    engine = connect()
    try:
        return engine.ping()
    finally:
        engine.close()


DEFAULT_SOCKET = "/var/run/docker.sock"
_OS_ERROR_RE = re.compile(r"\b(FileNotFoundError|PermissionError|ConnectionRefusedError|ConnectionResetError|"
                          r"TimeoutError)\(\d+, '([^']*)'\)")
_REASONS = {FileNotFoundError: "file not found", PermissionError: "permission denied",
            ConnectionRefusedError: "connection refused", ConnectionResetError: "connection reset",
            TimeoutError: "timed out"}


def engine_address(environ: Mapping[str, str] | None = None) -> str:
    """Where docker-py looks for the engine: DOCKER_HOST (``unix://`` shown as the path) or the default socket.

    >>> engine_address({}), engine_address({"DOCKER_HOST": "unix:///run/user/1000/docker.sock"})
    ('/var/run/docker.sock', '/run/user/1000/docker.sock')
    """
    where = ((os.environ if environ is None else environ).get("DOCKER_HOST") or "").strip()
    if not where:
        return DEFAULT_SOCKET
    return where[len("unix://"):] if where.startswith("unix://") else where


def readable_engine_error(exc: BaseException, environ: Mapping[str, str] | None = None) -> str:
    """One sentence for "no engine answers", instead of docker-py's nested exception tuples.

    >>> readable_engine_error(EngineError("cannot reach a Docker engine: Error while fetching server API "
    ...     "version: ('Connection aborted.', FileNotFoundError(2, 'No such file or directory'))"), {})
    'no Docker engine answers at /var/run/docker.sock (file not found)'
    """
    if isinstance(exc, EngineSilent):  # already says where and what it waited for; its cause is a bare timeout
        return str(exc)
    where = engine_address(environ)
    found = os_error_in(exc)
    if found is not None:
        if isinstance(found, PermissionError):
            return f"the Docker engine's socket {where} is there, but this user may not open it (permission denied)"
        reason = next((r for t, r in _REASONS.items() if isinstance(found, t)), None)
        reason = reason or (found.strerror or str(found) or type(found).__name__).lower()
        return f"no Docker engine answers at {where} ({reason})"
    m = _OS_ERROR_RE.search(str(exc))  # the chain was lost; the text still names the OS error
    if m:
        reason = {t.__name__: r for t, r in _REASONS.items()}[m.group(1)]
        return f"no Docker engine answers at {where} ({reason})"
    return str(exc)


def probe_engine(ping: Callable[[], dict[str, Any]], environ: Mapping[str, str] | None = None) -> dict:
    """Turn an engine ``ping`` (or its :class:`EngineError`) into the doctor's docker facts.

    ``error`` is one readable sentence; ``detail`` keeps the engine's own text as evidence.
    """
    try:
        info = ping() or {}
    except EngineError as exc:
        return {"reachable": False, "runtimes": [], "nvidia_runtime": False,
                "error": readable_engine_error(exc, environ), "detail": str(exc), "hint": exc.hint}
    except ImportError as exc:  # the docker package is missing from this installation
        return {"reachable": False, "runtimes": [], "nvidia_runtime": False,
                "error": f"the docker Python package cannot be imported ({exc}); reinstall envkit", "hint": None}
    runtimes = sorted(info.get("runtimes") or [])
    return {"reachable": True, "runtimes": runtimes,
            "nvidia_runtime": bool(info.get("nvidia_runtime")) or "nvidia" in runtimes,
            "server_version": info.get("server_version"), "os": info.get("os"), "error": None,
            "cgroup_driver": info.get("cgroup_driver"), "cgroup_version": info.get("cgroup_version"),
            "default_runtime": info.get("default_runtime")}
