"""The ``loader`` check: a real DataLoader in a watched child process, and failure classification.

:func:`run_loader_child` starts :mod:`.loader_child` in a new session (its own
process group, workers included), reads its JSON-line events and acts as the
watchdog: when no event (batch) arrives within ``timeout`` seconds, it kills the
whole process group and reports ``hang``. Afterwards it always kills and reaps
the group, so no worker is left behind. :func:`classify` maps an error text and
exit status to one of :data:`.classify.FAILURES`.

Example:
    >>> child = run_loader_child([make_run(settings)], timeout=60)     # doctest: +SKIP
    >>> evaluate(child)                                                # doctest: +SKIP
    ({'batches': 20, 'samples_per_s': 9150.3, ...}, {})
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import math
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

from .classify import FAILURES, MESSAGES, classify, failure_remedy  # noqa: F401 (re-exported)
from .env import child_warnings
from .loader_child import BOOTSTRAP

STARTUP_GRACE_S = 60.0  # importing torch in the child (and in spawned workers) before the first batch
PR_SET_CHILD_SUBREAPER, PR_GET_CHILD_SUBREAPER = 36, 37
_PACKAGE = __name__.rpartition(".")[0]  # "envkit.harness", or "envkit_harness" inside the zipapp

def _prctl(option: int, arg: int = 0) -> int | None:
    """prctl via libc; None where unavailable (non-Linux). Used to become a child subreaper."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if option == PR_GET_CHILD_SUBREAPER:
            val = ctypes.c_int(0)
            libc.prctl(option, ctypes.byref(val), 0, 0, 0)
            return val.value
        return libc.prctl(option, arg, 0, 0, 0)
    except (OSError, AttributeError):
        return None


@contextlib.contextmanager
def _subreaper():
    """Make orphaned workers re-parent to us (not to a container's PID 1 that may never reap them)."""
    before = _prctl(PR_GET_CHILD_SUBREAPER)
    if before == 0:
        _prctl(PR_SET_CHILD_SUBREAPER, 1)
    try:
        yield
    finally:
        if before == 0:
            _prctl(PR_SET_CHILD_SUBREAPER, 0)


def kill_and_reap(proc: subprocess.Popen, pgid: int, grace: float = 5.0) -> None:
    """SIGKILL the whole process group, wait for the child, then reap re-parented group members."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            # Only members of *this* group that re-parented to us (we are a subreaper), never
            # anyone else's children; loop until none is left, zombies included.
            pid, _ = os.waitpid(-pgid, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            time.sleep(0.01)


def _live_procs():
    """(pid, fields after the command name) of every live (non-zombie) process, from /proc.

    Fields: 0 state, 1 ppid, 2 pgid (proc(5)); the name may hold spaces or ")", so split after the last ")".
    """
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rpartition(")")[2].split()
        except OSError:
            continue
        if len(fields) > 2 and fields[0] != "Z":
            yield int(entry), fields


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) pids in process group ``pgid``, from /proc (empty where /proc is absent)."""
    return [pid for pid, fields in _live_procs() if int(fields[2]) == pgid]


def children_of(ppid: int) -> list[int]:
    """Live (non-zombie) pids whose parent is ``ppid``, from /proc."""
    return [pid for pid, fields in _live_procs() if int(fields[1]) == ppid]


def adopted_children(before: set[int]) -> list[int]:
    """Our children now that were not before the run: descendants that outlived their parents."""
    return [pid for pid in children_of(os.getpid()) if pid not in before]


def reap_adopted(before: set[int], grace: float = 5.0) -> None:
    """SIGKILL and reap adopted descendants until none is left (their children re-parent to us in turn)."""
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        pids = adopted_children(before)
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        for pid in pids:
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, 0)


def run_loader_child(runs: list[dict], *, timeout: float, progress=None, label: str = "loader",
                     stop_on_error: bool = True) -> dict:
    """Run DataLoader configurations in a watched child; return events, stats and failure evidence.

    Returns ``{"results": {run_index: stats}, "errors": {run_index: event}, "error": last event|None, "hang": bool,
    "returncode": int|None, "stderr_tail": str, "child_pid": int, "leftover": [pids]}``.
    Raises :class:`ValueError` unless ``timeout`` is a finite number > 0 (a NaN or infinite
    timeout would make the watchdog's deadline never fire).
    """
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not math.isfinite(timeout) \
            or timeout <= 0:
        raise ValueError(f"timeout must be a finite number of seconds > 0, got {timeout!r}")
    rfd, wfd = os.pipe()
    config = {"sys_path": [p for p in sys.path if p], "module": f"{_PACKAGE}.loader_child",
              "fd": wfd, "runs": runs, "stop_on_error": stop_on_error,
              # The child (and each of its workers) asks the kernel to kill it when its parent dies, so
              # nothing outlives a harness killed by SIGKILL. Linux sends that signal when the parent
              # *thread* ends, so only a child started from the main thread may ask for it.
              "parent_pid": os.getpid() if threading.current_thread() is threading.main_thread() else None}
    env = dict(os.environ, PYTORCH_NVML_BASED_CUDA_CHECK="1", PYTHONUNBUFFERED="1",
               PYTHONWARNINGS=child_warnings())  # inherited by spawned workers too
    stderr = tempfile.TemporaryFile()
    out: dict[str, Any] = {"results": {}, "errors": {}, "error": None, "hang": False, "returncode": None, "stderr_tail": "",
           "child_pid": None, "leftover": [], "last_batch": 0}
    before = set(children_of(os.getpid()))
    with _subreaper():
        proc = subprocess.Popen([sys.executable, "-c", BOOTSTRAP, json.dumps(config)], pass_fds=(wfd,),
                                stdin=subprocess.DEVNULL, stdout=stderr, stderr=stderr,
                                start_new_session=True, env=env)
        os.close(wfd)
        out["child_pid"] = pgid = proc.pid  # start_new_session: the child leads its own group
        try:
            _watch(proc, rfd, timeout, progress, label, out)
            if not out["hang"]:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=10)  # let it exit on its own so its status means something
        finally:
            out["killed_by_harness"] = proc.poll() is None
            kill_and_reap(proc, pgid)
            os.close(rfd)
            # Processes that left the group (setsid: a new session) re-parented to us, the subreaper,
            # when their parents died: leftovers too. Reported, then killed and reaped (still as subreaper,
            # so their own children come to us as well).
            escaped = [pid for pid in adopted_children(before) if pid != proc.pid]
            out["leftover"] = sorted(set(group_members(pgid)) | set(escaped))
            reap_adopted(before)
    out["returncode"] = proc.returncode
    stderr.seek(0)
    out["stderr_tail"] = stderr.read().decode("utf-8", "replace")[-4000:]
    stderr.close()
    return out


def _watch(proc, rfd: int, timeout: float, progress, label: str, out: dict) -> None:
    buf = b""
    deadline = time.monotonic() + timeout + STARTUP_GRACE_S
    eof = False
    while True:
        ready, _, _ = select.select([rfd], [], [], 0.1)
        if ready:
            chunk = os.read(rfd, 65536)
            eof = not chunk
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                try:
                    event = json.loads(line)
                except ValueError:  # not ours (nothing else should write to this fd); ignore
                    continue
                kind = event.get("event")
                if kind == "ready":
                    # spawn/forkserver workers re-import torch before their first batch: the
                    # parent passes that start-up allowance as "grace" (0 under fork).
                    grace = event.get("grace", 0.0)
                    grace = float(grace) if isinstance(grace, (int, float)) and math.isfinite(grace) else 0.0
                    deadline = time.monotonic() + timeout + max(0.0, grace)
                elif kind in ("batch", "run_done"):
                    deadline = time.monotonic() + timeout
                elif kind == "fill":  # the first batch is held until the pipeline is full (loader_child)
                    hold = event.get("max_s", 0.0)
                    hold = float(hold) if isinstance(hold, (int, float)) and math.isfinite(hold) else 0.0
                    deadline = time.monotonic() + timeout + min(max(0.0, hold), 60.0)
                if kind == "batch":
                    out["last_batch"] = event["i"]
                    if progress:
                        progress(f"{label}: batch {event['i']}/{event['of']}")
                elif kind == "run_done":
                    out["results"][event["run"]] = event["stats"]
                elif kind == "error":
                    out["error"] = out["errors"][event["run"]] = event
                elif kind == "done":
                    return
        if eof or proc.poll() is not None:
            if not eof and proc.poll() is not None:
                # drain what the child wrote before it died
                while select.select([rfd], [], [], 0)[0]:
                    chunk = os.read(rfd, 65536)
                    if not chunk:
                        break
                    buf += chunk
                for line in buf.split(b"\n"):
                    with contextlib.suppress(ValueError):
                        event = json.loads(line)
                        if event.get("event") == "error":
                            out["error"] = out["errors"][event["run"]] = event
                        elif event.get("event") == "run_done":
                            out["results"][event["run"]] = event["stats"]
            return
        if time.monotonic() > deadline:
            out["hang"] = True
            return


SPAWN_GRACE_S = 20.0


def plan_batches(num_workers: int, prefetch_factor: int, quick: bool = False) -> tuple[int, int]:
    """``(batches, warmup)``: enough batches to fill the prefetch pipeline twice (once with --quick).

    >>> plan_batches(4, 2), plan_batches(4, 2, quick=True), plan_batches(0, 2)
    ((20, 9), (11, 5), (10, 1))
    """
    in_flight = num_workers * prefetch_factor
    if quick:
        batches = max(4, in_flight + 3)
        return batches, max(1, min(in_flight + 1, batches // 2))
    return max(10, in_flight * 2 + 4), in_flight + 1


def make_run(settings: dict, quick: bool = False, **overrides) -> dict:
    """One child run configuration from resolved loader settings."""
    batches, warmup = plan_batches(overrides.get("num_workers", settings["num_workers"]),
                                   settings["prefetch_factor"], quick)
    run = {k: settings[k] for k in ("num_workers", "batch_size", "prefetch_factor", "persistent_workers",
                                    "start_method", "pin_memory", "sample_shape", "dtype", "dataset")}
    run.update(batches=batches, warmup=warmup, to_device=True)
    run.update(overrides)
    run["grace"] = SPAWN_GRACE_S if run["num_workers"] > 0 and run["start_method"] != "fork" else 0.0
    return run


def evaluate(child: dict, run_index: int = 0) -> tuple[dict | None, dict]:
    """From a child result: ``(stats or None, failure evidence)`` for one run."""
    stats = child["results"].get(run_index)
    if stats is not None:
        return stats, {}
    err = child["errors"].get(run_index)
    if child["hang"] and not err:  # an error reported before a slow shutdown is the real cause
        return None, {"failure": "hang", "detail": "no batch within the timeout"}
    err = err or {}
    text = "\n".join(filter(None, [err.get("message"), err.get("traceback"), child["stderr_tail"]]))
    rc = None if child.get("killed_by_harness") else child["returncode"]
    nw = err.get("nw", 1)
    failure, detail = classify(text, rc, nw, err.get("phase"))
    if failure == "unknown" and err.get("where"):
        failure = "dataset_error"  # the innermost frame outside torch and the harness raised: the dataset's code
    in_worker = "Original Traceback" in (err.get("message") or "")  # classify already quotes the worker's error
    if failure in ("dataset_error", "unknown") and err.get("type") and not in_worker:
        # The dataset's own exception and the frame of its code that raised it, not the harness's line.
        where = f" (at {err['where']})" if err.get("where") else ""
        detail = f"{err['type']}: {err.get('message') or ''}{where}"[:500]
    return None, {"failure": failure, "detail": detail, "error": (err.get("message") or "")[-2000:]}


def check_loader(settings: dict, *, timeout: float = 60.0, quick: bool = False, progress=None) -> dict:
    """Run the real DataLoader once in a watched child and turn the outcome into the ``loader`` check."""
    from .report import FAIL, PASS, make_check

    run = make_run(settings, quick, fill=True)  # the pipeline's peak in /dev/shm on every run, not by chance
    expected = {k: settings[k] for k in ("num_workers", "batch_size", "sample_shape", "dtype", "pin_memory",
                                         "prefetch_factor", "persistent_workers", "start_method", "dataset")}
    expected.update(batches=run["batches"], timeout_s=timeout)
    started = time.monotonic()
    child = run_loader_child([run], timeout=timeout, progress=progress, label="loader")
    stats, bad = evaluate(child)
    measured = {"child_pid": child["child_pid"], "leftover_processes": child["leftover"],
                "wall_s": round(time.monotonic() - started, 3)}
    if stats is not None:
        measured.update(stats)
        note = ""
        if settings["pin_memory"] and not stats["pin_memory_used"]:
            note = "; pin_memory was requested but there is no accelerator, so batches were not pinned"
        return make_check("loader", PASS, measured, expected,
                          f"{stats['batches']} batches of {settings['batch_size']} with {settings['num_workers']} "
                          f"{settings['start_method']} workers: {stats['samples_per_s']:.0f} samples/s, first batch "
                          f"after {stats['first_batch_s']:.2f} s{note}")
    measured.update(bad, last_batch=child["last_batch"], returncode=child["returncode"],
                    stderr_tail=child["stderr_tail"][-1500:])
    if bad["failure"] == "shm_exhausted":
        from .sizing import shm_required_bytes
        from .env import shm_stats
        from .report import human_bytes
        st = shm_stats() or {}
        need = shm_required_bytes(batch_size=settings["batch_size"], sample_shape=settings["sample_shape"],
                                  dtype=settings["dtype"], num_workers=settings["num_workers"],
                                  prefetch_factor=settings["prefetch_factor"])
        bad["detail"] = (f"/dev/shm is {human_bytes(st.get('size_bytes'))}, this loader needs "
                         f"~{human_bytes(need)}; {bad['detail']}")
    msg = MESSAGES[bad["failure"]].format(detail=bad["detail"], timeout=timeout, last=child["last_batch"],
                                          of=run["batches"], method=settings["start_method"])
    return make_check("loader", FAIL, measured, expected, msg,
                      failure_remedy(bad["failure"], bad["detail"], settings))
