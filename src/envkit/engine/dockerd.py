"""What the local Docker daemon (dockerd) decides for its containers, read from /proc and its config.

Facts, and why each one matters (sources in the docstrings below):

- its rlimits (``/proc/<pid>/limits``) and whether it holds CAP_SYS_RESOURCE (``CapEff`` bit 24 in
  ``/proc/<pid>/status``): runc sets a container's rlimits from the daemon's side, so a
  ``--ulimit`` above the daemon's hard limit fails only when the daemon lacks CAP_SYS_RESOURCE
  (rootless, nested); the user's shell limit decides nothing;
- its PATH (``/proc/<pid>/environ``) and the CDI spec folders: ``--gpus`` works when
  ``nvidia-container-runtime-hook`` is on dockerd's PATH (moby ``daemon/nvidia_linux.go`` registers
  the GPU device driver after an ``exec.LookPath`` of the hook) or when CDI specs exist (``/etc/cdi``,
  ``/var/run/cdi``); a registered ``nvidia`` runtime is not required;
- ``default-shm-size`` (``--default-shm-size`` on its command line, else daemon.json): it replaces
  Docker's built-in 64 MiB for every container started without ``--shm-size``; ``docker info``
  does not show it.

Everything is read under ``root`` (the real machine: ``/``; tests: a fixture tree) and every reader
answers None for "could not tell" (not ours to read, no daemon, a remote daemon).

Example:
    >>> facts = read_daemon(Path("/nonexistent"))
    >>> facts.pid is None and facts.default_shm_size is None
    True
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from envkit.harness.rules.bytesize import exact_bytes
from envkit.harness.rules.sizing import DOCKER_DEFAULT_SHM

CAP_SYS_RESOURCE = 24  # linux/capability.h
NVIDIA_HOOK = "nvidia-container-runtime-hook"
CDI_DIRS = ("/etc/cdi", "/var/run/cdi")
DAEMON_JSON = "/etc/docker/daemon.json"


# Docker ulimit name -> (Linux RLIMIT_* number, /proc/<pid>/limits row). runc names the
# failing limit only by number ("error setting rlimit type 8"), so we need the table.
_ROWS = ("cpu time|file size|data size|stack size|core file size|resident set|processes|"
         "open files|locked memory|address space|file locks|pending signals|msgqueue size|"
         "nice priority|realtime priority|realtime timeout").split("|")
_RLIMITS = {n: (i, "Max " + _ROWS[i]) for i, n in enumerate(
    "cpu fsize data stack core rss nproc nofile memlock as locks sigpending msgqueue nice "
    "rtprio rttime".split())}

_BYTE_LIMITS = {"fsize", "data", "stack", "core", "rss", "memlock", "as", "msgqueue"}


def fmt_limit(name: str, value: int) -> str:
    """Human form of a limit value: bytes for byte limits, ``unlimited`` for -1."""
    if value < 0 or value >= 2**63 - 1:  # RLIM_INFINITY as read by resource.getrlimit
        return "unlimited"
    if name in _BYTE_LIMITS:
        text = exact_bytes(value)
        return text if text.endswith(" bytes") else f"{text} ({value} bytes)"
    return str(value)


def parse_proc_limits(text: str) -> dict[str, tuple[int, int]]:
    """Parse /proc/<pid>/limits into ``{docker_name: (soft, hard)}`` (-1 = unlimited)."""
    out: dict[str, tuple[int, int]] = {}
    for name, (_, row) in _RLIMITS.items():
        m = re.search(rf"^{row}\s+(\S+)\s+(\S+)", text, re.M)
        if m:
            soft, hard = (-1 if v == "unlimited" else int(v) for v in m.groups())
            out[name] = (soft, hard)
    return out


@dataclass(frozen=True)
class DaemonFacts:
    """What could be read about the local dockerd; None: unknown."""

    pid: int | None = None
    limits: dict | None = None              # {"memlock": (soft, hard), ...}; -1 = unlimited
    cap_sys_resource: bool | None = None
    path: tuple[str, ...] | None = None     # dockerd's PATH entries
    nvidia_hook: str | None = None          # where the hook was found on that PATH
    cdi_specs: tuple[str, ...] = ()
    default_shm_size: int | None = None     # bytes, when the daemon sets one
    default_shm_source: str | None = None   # where it was read

    @property
    def shm_default(self) -> int:
        """The /dev/shm size a container gets without --shm-size from this daemon."""
        return self.default_shm_size if self.default_shm_size is not None else DOCKER_DEFAULT_SHM

    @property
    def gpus_possible(self) -> bool | None:
        """Can ``--gpus`` work? True: hook on PATH or CDI specs; False: PATH read, no hook, no CDI."""
        if self.nvidia_hook or self.cdi_specs:
            return True
        return False if self.path is not None else None


def _read(root: Path, path: str, binary: bool = False):
    try:
        p = root / path.lstrip("/")
        return p.read_bytes() if binary else p.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def find_dockerd(root: Path) -> int | None:
    """The pid of a process named ``dockerd`` under ``root``/proc, or None."""
    proc = root / "proc"
    try:
        entries = sorted((p for p in proc.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
    except OSError:
        return None
    for entry in entries:
        try:
            if (entry / "comm").read_text().strip() == "dockerd":
                return int(entry.name)
        except OSError:  # exited while we looked, or not ours to read
            continue
    return None


def parse_cap_sys_resource(status: str) -> bool | None:
    """Whether ``CapEff`` in a /proc/<pid>/status text holds CAP_SYS_RESOURCE (bit 24).

    >>> parse_cap_sys_resource("CapEff:\\t000001ffffffffff\\n"), parse_cap_sys_resource("CapEff:\\t0000000000000000\\n")
    (True, False)
    """
    for line in status.splitlines():
        if line.startswith("CapEff:"):
            return bool(int(line.split(":", 1)[1].strip(), 16) >> CAP_SYS_RESOURCE & 1)
    return None


def parse_environ_path(environ: bytes) -> tuple[str, ...] | None:
    """PATH's entries from a NUL-separated /proc/<pid>/environ, or None when it has no PATH.

    >>> parse_environ_path(b"HOME=/root\\0PATH=/usr/sbin:/usr/bin\\0")
    ('/usr/sbin', '/usr/bin')
    """
    for item in environ.split(b"\0"):
        if item.startswith(b"PATH="):
            return tuple(p for p in item[5:].decode("utf-8", "replace").split(":") if p)
    return None


def parse_default_shm(cmdline: bytes, daemon_json: str | None) -> tuple[int, str] | None:
    """``(bytes, source)`` of the daemon's default-shm-size: its command line first, then daemon.json.

    >>> parse_default_shm(b"dockerd\\0--default-shm-size=1g\\0", None)
    (1073741824, 'dockerd --default-shm-size')
    >>> parse_default_shm(b"dockerd\\0", '{"default-shm-size": "256M"}')
    (268435456, '/etc/docker/daemon.json')
    """
    from envkit.units import parse_size

    args = [a.decode("utf-8", "replace") for a in cmdline.split(b"\0") if a]
    for i, arg in enumerate(args):
        value = None
        if arg.startswith("--default-shm-size="):
            value = arg.split("=", 1)[1]
        elif arg == "--default-shm-size" and i + 1 < len(args):
            value = args[i + 1]
        if value is not None:
            try:
                return parse_size(value), "dockerd --default-shm-size"
            except ValueError:
                return None
    if daemon_json:
        try:
            value = json.loads(daemon_json).get("default-shm-size")
            if value is not None:
                return parse_size(value), DAEMON_JSON
        except (ValueError, AttributeError):
            return None
    return None


def config_file(cmdline: bytes) -> str:
    """The daemon.json dockerd reads: ``--config-file`` when given, else /etc/docker/daemon.json."""
    args = [a.decode("utf-8", "replace") for a in cmdline.split(b"\0") if a]
    for i, arg in enumerate(args):
        if arg.startswith("--config-file="):
            return arg.split("=", 1)[1]
        if arg == "--config-file" and i + 1 < len(args):
            return args[i + 1]
    return DAEMON_JSON


def read_daemon(root: Path = Path("/"), environ: dict | None = None) -> DaemonFacts:
    """Every fact readable about the dockerd under ``root`` (a remote DOCKER_HOST: none of them)."""
    host = (environ or {}).get("DOCKER_HOST", "")
    if host and not host.startswith("unix://"):
        return DaemonFacts()  # another machine's daemon: this /proc says nothing about it
    cdi = tuple(sorted(f"{d}/{p.name}" for d in CDI_DIRS
                       for p in _listdir(root, d) if p.suffix in (".json", ".yaml", ".yml")))
    pid = find_dockerd(root)
    if pid is None:
        conf = _read(root, DAEMON_JSON)
        shm = parse_default_shm(b"", conf)
        return DaemonFacts(cdi_specs=cdi, default_shm_size=shm[0] if shm else None,
                           default_shm_source=shm[1] if shm else None)
    limits_text = _read(root, f"/proc/{pid}/limits")
    status = _read(root, f"/proc/{pid}/status")
    environ_raw = _read(root, f"/proc/{pid}/environ", binary=True)
    cmdline = _read(root, f"/proc/{pid}/cmdline", binary=True) or b""
    path = parse_environ_path(environ_raw) if environ_raw else None
    hook = next((f"{d}/{NVIDIA_HOOK}" for d in path or () if (root / d.lstrip("/") / NVIDIA_HOOK).exists()), None)
    shm = parse_default_shm(cmdline, _read(root, config_file(cmdline)))
    return DaemonFacts(
        pid=pid, limits=parse_proc_limits(limits_text) if limits_text else None,
        cap_sys_resource=parse_cap_sys_resource(status) if status else None,
        path=path, nvidia_hook=hook, cdi_specs=cdi,
        default_shm_size=shm[0] if shm else None, default_shm_source=shm[1] if shm else None)


def _listdir(root: Path, folder: str) -> list[Path]:
    try:
        return [p for p in (root / folder.lstrip("/")).iterdir() if p.is_file()]
    except OSError:
        return []

