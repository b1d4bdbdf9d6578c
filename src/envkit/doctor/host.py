"""The seam between ``envkit doctor`` and the machine it inspects.

Every check reads the host through a :class:`Host`, never through ``open`` or
``os`` directly, so tests can present a WSL2, WSL1 or plain Linux machine from
a folder of fixture files. Paths are absolute host paths ("/proc/meminfo")
looked up under ``root``. What cannot live in a file tree comes from
``root/.envkit-fixture/*.json`` when ``root`` is not "/":

- ``statvfs.json``: ``{"/dev/shm": {"size_bytes": N, "free_bytes": N}}``
- ``rlimits.json``: ``{"memlock": [soft, hard]}`` (bytes; -1 = unlimited)
- ``which.json``: ``{"nvidia-smi": "/usr/bin/nvidia-smi"}``
- ``docker.json``: ``{"reachable": true, "runtimes": ["nvidia", "runc"], "error": null}``
- ``host.json``: ``{"platform": "linux", "cpus": 8}`` (``cpus``: usable CPUs)

A fixture host without a file answers "unknown" (None). With ``root`` "/",
the real calls are made (``os.statvfs``, ``resource.getrlimit``,
``shutil.which``, the Docker SDK or CLI).

Example:
    >>> h = Host(Path("/nonexistent"), environ={})
    >>> h.read_text("/proc/sys/kernel/osrelease") is None, h.getrlimit("memlock")
    (True, None)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping

FIXTURE_DIR = ".envkit-fixture"
DOCKER_TIMEOUT_S = 5.0


def _environ() -> dict[str, str]:
    return dict(os.environ)


@dataclass(frozen=True)
class Host:
    """A machine to inspect: the real one (``root`` "/") or a fixture tree.

    ``docker_probe`` replaces the Docker engine probe (tests; or ``lambda: None`` to skip it).
    ``cwd`` is the working directory the checks judge (default: the process's).
    """

    root: Path = Path("/")
    environ: Mapping[str, str] = field(default_factory=_environ)
    cwd: str = field(default_factory=os.getcwd)
    docker_probe: Callable[[], dict | None] | None = None

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

    def statvfs(self, p: str) -> dict | None:
        """``{"path", "size_bytes", "free_bytes"}`` of the file system holding ``p``, or None."""
        if not self.is_real:
            entry = (self._fixture("statvfs.json") or {}).get(p)
            return {"path": p, **entry} if entry else None
        try:
            st = os.statvfs(p)
        except (OSError, AttributeError):
            return None
        return {"path": p, "size_bytes": st.f_blocks * st.f_frsize, "free_bytes": st.f_bavail * st.f_frsize}

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

    def docker(self) -> dict | None:
        """``{"reachable", "runtimes", "error"}`` for the Docker engine, or None when not probed."""
        if self.docker_probe is not None:
            return self.docker_probe()
        if not self.is_real:
            return self._fixture("docker.json")
        return probe_docker()


def probe_docker() -> dict:
    """Ping the engine with the docker SDK (imported lazily), falling back to the docker CLI."""
    try:
        import docker  # noqa: PLC0415 - optional at import time; doctor must run without it
        client = docker.from_env(timeout=int(DOCKER_TIMEOUT_S))
        try:
            client.ping()
            info = client.info()
        finally:
            client.close()
        return {"reachable": True, "runtimes": sorted((info.get("Runtimes") or {}).keys()), "error": None}
    except ImportError:
        pass
    except Exception as e:  # the SDK raises many types for "no engine"; all mean unreachable here
        sdk_error = str(e).splitlines()[0] if str(e) else type(e).__name__
        if not shutil.which("docker"):
            return {"reachable": False, "runtimes": [], "error": sdk_error}
    if not shutil.which("docker"):
        return {"reachable": False, "runtimes": [], "error": "neither the docker Python package nor the docker CLI is installed"}
    try:
        proc = subprocess.run(["docker", "info", "--format", "{{json .Runtimes}}"], capture_output=True,
                              text=True, timeout=DOCKER_TIMEOUT_S + 5)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"reachable": False, "runtimes": [], "error": str(e)}
    if proc.returncode != 0:
        return {"reachable": False, "runtimes": [], "error": (proc.stderr.strip().splitlines() or ["docker info failed"])[-1]}
    try:
        runtimes = sorted(json.loads(proc.stdout or "{}").keys())
    except ValueError:
        runtimes = []
    return {"reachable": True, "runtimes": runtimes, "error": None}
