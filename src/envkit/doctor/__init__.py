"""``envkit doctor``: is this host (Linux, WSL2, WSL1, Windows) ready for the profile, and are the scripts spawn-safe?

:func:`diagnose` runs every check through a :class:`~envkit.doctor.host.Host`
seam and returns one document::

    {"envkit_doctor": 1, "verdict": "pass|warn|fail", "host": {...},
     "checks": [{"name", "status", "measured", "expected", "message", "remedy"}, ...]}

Check records are the harness's (:class:`envkit.harness.report.Check`); the document is
:class:`envkit.jsonout.DoctorReport`, whose schema docs/cli.md shows.

Example:
    >>> from pathlib import Path
    >>> from envkit.profile import load_profile
    >>> h = Host(Path("/nonexistent"), environ={}, cwd="/home/me", docker_probe=lambda: None)
    >>> doc = diagnose(h, load_profile(None), [], [])
    >>> doc["envkit_doctor"], [c["name"] for c in doc["checks"]][:3]
    (1, ['os', 'memory', 'cpus'])
"""

from __future__ import annotations

import errno
import os
import textwrap
from pathlib import Path
from typing import Literal

from envkit.doctor import checks as C
from envkit.doctor.gpu import gpu_checks, host_smi
from envkit.doctor.host import Host
from envkit.doctor.spawncheck import SCRIPT_MAX, check_file
from envkit import planner
from envkit.harness.checks.shm import check_shm
from envkit.harness.report import FAIL, PASS, WARN, Check, make_check, verdict
from envkit.jsonout import DoctorHost, DoctorReport
from envkit.plan.envplan import EnvPlan
from envkit.profile import LoadedProfile

SCHEMA_VERSION: Literal[1] = 1

__all__ = ["Host", "diagnose", "host_fit", "render_table", "check_script"]


def _unreadable_remedy(exc: OSError) -> str:
    """What to do about a script that could not be read, by the reason it could not.

    >>> import errno
    >>> _unreadable_remedy(OSError(errno.EFBIG, "larger than 8 MiB"))
    'pass the training script itself (doctor reads scripts up to 8 MiB; a data or generated file is not one)'
    """
    if exc.errno == errno.EFBIG:
        return (f"pass the training script itself (doctor reads scripts up to {SCRIPT_MAX // 2**20} MiB; "
                "a data or generated file is not one)")
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "make it readable by this user (ls -l shows its permissions)"
    if exc.errno == errno.ENOENT:
        return "check the path: the file was removed while doctor ran"
    return "check the file and the disk it is on (the system refused the read)"


def check_script(path: Path, shown: str | None = None) -> Check:
    """One ``script`` check: the spawn-safety findings of :mod:`.spawncheck` for ``path``."""
    name, label = f"script:{shown or path}", shown or str(path)

    def unreadable(problem: str, remedy: str) -> Check:
        return make_check(name, FAIL, {"path": str(path), "error": problem}, {"spawn_safe": True},
                          f"{label}: {problem}", remedy)

    if path.is_dir():
        return unreadable("is a directory, not a script", "pass the training script itself: --script DIR/train.py")
    if not path.exists():
        return unreadable("no such file", "check the path (relative paths start in the current directory)")
    if not path.is_file():  # a FIFO or device: reading it could block or never end
        return unreadable("is not a regular file", "pass the training script (a .py file)")
    try:
        findings = check_file(path)
    except OSError as exc:  # too large, permission denied, I/O error, vanished since the checks above
        return unreadable(f"cannot be read ({exc.strerror or exc})", _unreadable_remedy(exc))
    except (RecursionError, MemoryError):  # nesting deeper than Python's parser (or memory) allows
        return unreadable("is nested too deeply for Python's parser to read (it ran out of stack or memory), "
                          "so Python could not import it either",
                          "check that this is the training script; split deeply nested expressions")
    measured = {"path": str(path), "findings": [{"line": f.line, "kind": f.kind, "message": f.message}
                                                for f in findings]}
    if not findings:
        return make_check(name, PASS, measured, {"spawn_safe": True},
                          "spawn-safe: no DataLoader with workers at import time, nothing unpicklable passed to one")
    fixes = list(dict.fromkeys(f.fix for f in findings))  # in line order; each names its object
    # Spawn-safety findings fail; a blocking copy from a pinned loader only costs speed: a warning.
    status = WARN if all(f.is_warning for f in findings) else FAIL
    return make_check(name, status, measured, {"spawn_safe": True, "non_blocking_copies": True},
                      "; ".join(f.describe() for f in findings), "; ".join(fixes))


def _abs(host: Host, p: Path) -> str:
    return os.path.normpath(str(p) if str(p).startswith("/") else os.path.join(host.cwd, str(p)))


def diagnose(host: Host, loaded: LoadedProfile, scripts: list[Path], data_paths: list[Path]) -> DoctorReport:
    """Run every check; scripts are read from the local file system, data paths through ``host``.

    The container's decisions are the one plan's (:func:`envkit.planner.build_plan`); this host's
    loaders are that plan fed with the host's CPUs (:func:`.checks.host_plan`)."""
    profile = loaded.profile
    container = planner.build_plan(loaded).loader
    wsl = C.detect_wsl(host)
    mounts = C.read_mounts(host)
    plan = C.host_plan(host, profile, container)  # the loader's plan on this host, decided once for every check
    results = [C.check_os(host, wsl), C.check_memory(host, profile, wsl, plan),
               C.check_cpus(host, profile, plan, container),
               C.check_numa(host, profile), check_shm(*C.shm_facts(host, profile, plan), inside=False)]
    daemon = host.daemon()
    results += [C.check_memlock(host, profile, daemon), C.check_ulimits(host, profile, daemon)]
    if host.platform.startswith("win"):  # the VM is cut from this PC: compare the profile's wsl.* with it
        results.append(C.check_wsl_fit(host, profile))
    docker = C.check_docker(host, profile)
    results.extend(docker)
    smi = host_smi(host)  # nvidia-smi asked once, for every GPU check
    results.append(C.check_gpu(host, profile, wsl, smi))
    results.extend(gpu_checks(host, profile, wsl, docker, smi))
    results.append(C.check_location(host, "workdir", os.path.normpath(host.cwd), wsl, mounts, measure=False))
    for p in data_paths:
        shown = _abs(host, p)
        results.append(C.check_location(host, f"data:{shown}", shown, wsl, mounts, measure=True))
    for s in scripts:
        results.append(check_script(s if s.is_absolute() or host.is_real else host.path(_abs(host, s)), str(s)))
    host_doc: DoctorHost = {"platform": host.platform, "wsl": wsl["version"], "osrelease": wsl["osrelease"],
                "distro": host.environ.get("WSL_DISTRO_NAME"), "cwd": host.cwd,
                "cpus": host.usable_cpus(), "memory_bytes": C.meminfo_total(host)}
    return {"envkit_doctor": SCHEMA_VERSION, "verdict": verdict(results), "host": host_doc,
            "loader": plan.as_json(), "checks": results}


def host_fit(host: Host, loaded: LoadedProfile, plan: EnvPlan) -> list[Check]:
    """doctor's checks of what the container asks of this host: memory, cpus (the cpuset), GPUs and every ulimit.

    Each is the same check :func:`diagnose` runs; ``envkit validate`` runs them before it builds, so a
    profile the host cannot start fails in seconds instead of after the build. ``plan``: the run's one plan
    (the container's loaders are its), which the build then uses.

    >>> h = Host(Path("/nonexistent"), environ={}, cwd="/home/me", docker_probe=lambda: None)
    >>> from envkit.profile import load_profile
    >>> loaded = load_profile(None)
    >>> [c["name"] for c in host_fit(h, loaded, planner.build_plan(loaded))]
    ['memory', 'cpus', 'gpu', 'memlock', 'ulimits']
    """
    profile = loaded.profile
    container = plan.loader
    wsl = C.detect_wsl(host)
    here = C.host_plan(host, profile, container)
    return [C.check_memory(host, profile, wsl, here), C.check_cpus(host, profile, here, container),
            C.check_gpu(host, profile, wsl, host_smi(host)),
            C.check_memlock(host, profile, daemon := host.daemon()), C.check_ulimits(host, profile, daemon)]


def render_table(doc: DoctorReport, width: int = 100) -> str:
    """The doctor's report as a table (check, status, detail), then how to fix what did not pass."""
    h = doc["host"]
    where = f"WSL {h['wsl']}" if h["wsl"] else h["platform"]
    lines = [f"envkit doctor: verdict {doc['verdict'].upper()} ({where}, {h['cpus']} CPUs, "
             f"{C.human_bytes(h['memory_bytes'])} memory)"]
    name_w = min(28, max(len("CHECK"), *(len(c["name"]) for c in doc["checks"])))
    lines.append(f"{'CHECK':<{name_w}} {'STATUS':<7} DETAIL")
    detail_w = max(30, width - name_w - 9)
    for c in doc["checks"]:
        name = c["name"] if len(c["name"]) <= name_w else "..." + c["name"][-(name_w - 3):]
        wrapped = textwrap.wrap(c["message"] or "", detail_w) or [""]
        lines.append(f"{name:<{name_w}} {c['status']:<7} {wrapped[0]}")
        lines.extend(" " * (name_w + 9) + w for w in wrapped[1:])
    todo = [(c["name"], c["remedy"]) for c in doc["checks"] if c["status"] not in (PASS, "skip") and c["remedy"]]
    if todo:
        lines += ["", "How to fix:"]
        for name, remedy in todo:
            lines.append(f"  {name}:")
            lines.extend("    " + w for w in textwrap.wrap(remedy, width - 4))
    return "\n".join(lines)
