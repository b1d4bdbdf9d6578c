"""The ``loader`` check: real DataLoaders in watched child processes, and failure classification.

:func:`run_loader_child` starts :mod:`.loader_child` in a new session (its own
process group, workers included), reads its JSON-line events and acts as the
watchdog: when no event (batch) arrives within ``timeout`` seconds, it kills the
whole process group and reports ``hang``. Afterwards it always kills and reaps
the group, so no worker is left behind. :func:`run_loader_children` does the same
for R children at once (one per rank, as torchrun starts them), in one loop with
one deadline per child; :func:`check_loader` runs ``settings["ranks_per_node"]`` of them. :func:`classify` maps an error text and
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
from typing import Any, TypedDict

from ..expectation import LoaderSettings
from ..probes.env import SHM_PATH, child_warnings, shm_stats
from ..probes.procs import children_of, group_members, sample
from ..report import FAIL, PASS, Check, human_bytes, make_check, plural
from ..rules.sizing import shm_required_bytes
from .classify import FAILURES, MESSAGES, classify, failure_remedy  # noqa: F401 (re-exported)
from .loader_child import BOOTSTRAP
from .shm import shm_remedy

STARTUP_GRACE_S = 60.0  # importing torch in the child (and in spawned workers) before the first batch
PR_SET_CHILD_SUBREAPER, PR_GET_CHILD_SUBREAPER = 36, 37
_PACKAGE = __name__.rpartition(".")[0]  # "envkit.harness.checks", or "envkit_harness.checks" inside the zipapp

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


class ChildResult(TypedDict):
    """What one watched loader child did (:func:`run_loader_children`)."""

    results: dict[int, dict[str, Any]]  # run index -> the run's stats (its ``run_done`` event)
    errors: dict[int, dict[str, Any]]  # run index -> its ``error`` event
    error: dict[str, Any] | None  # the last error event
    hang: bool  # the watchdog fired
    returncode: int | None
    stderr_tail: str
    child_pid: int | None
    leftover: list[int]  # processes of its group (or escaped) found alive afterwards, then killed
    last_batch: int
    killed_by_harness: bool  # still running when the harness ended it: its exit status means nothing


def _check_watch_timeout(timeout) -> None:
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not math.isfinite(timeout) \
            or timeout <= 0:
        raise ValueError(f"timeout must be a finite number of seconds > 0, got {timeout!r}")


def run_loader_child(runs: list[dict], *, timeout: float, progress=None, label: str = "loader",
                     stop_on_error: bool = True) -> ChildResult:
    """Run DataLoader configurations in a watched child; return events, stats and failure evidence.

    Raises :class:`ValueError` unless ``timeout`` is a finite number > 0 (a NaN or infinite
    timeout would make the watchdog's deadline never fire).
    """
    _check_watch_timeout(timeout)
    return run_loader_children([runs], timeout=timeout, progress=progress, label=label,
                               stop_on_error=stop_on_error)[0]


class _Child:
    """One watched loader child: its process, event pipe, barrier pipe and watchdog deadline."""

    def __init__(self, rank: int, label: str, out: ChildResult):
        self.rank, self.label, self.out = rank, label, out
        self.proc: subprocess.Popen | None = None
        self.rfd = self.go = -1
        self.buf = b""
        self.deadline = 0.0
        self.state = "running"  # "waiting" at the rank barrier, "ended" once no longer watched
        self.after_release = 0.0  # the watchdog's extra allowance once the barrier lets it go


def run_loader_children(runs_per_child: list[list[dict]], *, timeout: float, progress=None, label: str = "loader",
                        stop_on_error: bool = True, on_barrier=None) -> list[ChildResult]:
    """Start one watched child per entry of ``runs_per_child`` at once; return one result each (as
    :func:`run_loader_child`'s), in order.

    Every child leads its own session; one loop watches all their event pipes, each with its own
    watchdog deadline. With more than one child, or with ``on_barrier``, they meet at a barrier
    (:mod:`.loader_child`): when none is running, every waiting child is released together, after
    ``on_barrier()`` is called (the moment every loader holds its full pipeline). A child that hangs or ends leaves
    the barrier. Afterwards every group is killed and reaped, and descendants that escaped their
    group (re-parented to us, the subreaper) are reported in each result's ``leftover`` and killed.
    With more than one child each gets ``LOCAL_RANK`` and ``LOCAL_WORLD_SIZE``, as under torchrun.
    """
    _check_watch_timeout(timeout)
    ranks = len(runs_per_child)
    barrier = ranks > 1 or on_barrier is not None
    base_env = dict(os.environ, PYTORCH_NVML_BASED_CUDA_CHECK="1", PYTHONUNBUFFERED="1",
                    PYTHONWARNINGS=child_warnings())  # inherited by spawned workers too
    kids = [_Child(rank, f"{label} rank {rank}" if ranks > 1 else label, _new_result()) for rank in range(ranks)]
    stderrs = [tempfile.TemporaryFile() for _ in kids]
    before = set(children_of(os.getpid()))
    with _subreaper():
        try:
            for kid, runs, stderr in zip(kids, runs_per_child, stderrs, strict=True):
                _start(kid, runs, stderr, stop_on_error, base_env, ranks, barrier)
            _watch_all(kids, timeout, progress, on_barrier)
            settle = time.monotonic() + 10  # let them exit on their own so their status means something
            for kid in kids:
                if not kid.out["hang"] and kid.proc is not None:
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        kid.proc.wait(timeout=max(0.0, settle - time.monotonic()))
        finally:
            _end_all(kids, before)
    for kid, stderr in zip(kids, stderrs, strict=True):
        kid.out["returncode"] = kid.proc.returncode if kid.proc is not None else None
        stderr.seek(0)
        kid.out["stderr_tail"] = stderr.read().decode("utf-8", "replace")[-4000:]
        stderr.close()
    return [kid.out for kid in kids]


def _new_result() -> ChildResult:
    return {"results": {}, "errors": {}, "error": None, "hang": False, "returncode": None, "stderr_tail": "",
            "child_pid": None, "leftover": [], "last_batch": 0, "killed_by_harness": False}


def _end_all(kids: list[_Child], before: set[int]) -> None:
    """Kill every child's group, reap them, close their pipes, and report then kill what escaped."""
    started = [(kid, kid.proc) for kid in kids if kid.proc is not None]
    for kid, proc in started:
        kid.out["killed_by_harness"] = proc.poll() is None
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)  # every group at once, before any is waited for
    for _, proc in started:
        kill_and_reap(proc, proc.pid)
    for kid in kids:
        for fd in (kid.rfd, kid.go):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
    # Processes that left their group (setsid: a new session) re-parented to us, the subreaper,
    # when their parents died: leftovers too. Reported, then killed and reaped (still as subreaper,
    # so their own children come to us as well).
    pids = {proc.pid for _, proc in started}
    escaped = [pid for pid in adopted_children(before) if pid not in pids]
    for kid, proc in started:
        kid.out["leftover"] = sorted(set(group_members(proc.pid)) | set(escaped))
    reap_adopted(before)


def _start(kid: _Child, runs: list[dict], stderr, stop_on_error: bool, base_env: dict, ranks: int,
           barrier: bool) -> None:
    """Start ``kid``'s child process in a new session, with a barrier pipe if ``barrier`` and, of several
    ``ranks``, torchrun's rank variables."""
    rfd, wfd = os.pipe()
    kid.rfd = rfd
    pass_fds = [wfd]
    go_read = None
    if barrier:
        go_read, kid.go = os.pipe()
        pass_fds.append(go_read)
    config = {"sys_path": [p for p in sys.path if p], "module": f"{_PACKAGE}.loader_child",
              "fd": wfd, "go_fd": go_read, "runs": runs, "stop_on_error": stop_on_error,
              # The child (and each of its workers) asks the kernel to kill it when its parent dies, so
              # nothing outlives a harness killed by SIGKILL. Linux sends that signal when the parent
              # *thread* ends, so only a child started from the main thread may ask for it.
              "parent_pid": os.getpid() if threading.current_thread() is threading.main_thread() else None}
    env = base_env if ranks == 1 else dict(base_env, LOCAL_RANK=str(kid.rank), LOCAL_WORLD_SIZE=str(ranks))
    try:
        kid.proc = subprocess.Popen([sys.executable, "-c", BOOTSTRAP, json.dumps(config)], pass_fds=tuple(pass_fds),
                                    stdin=subprocess.DEVNULL, stdout=stderr, stderr=stderr,
                                    start_new_session=True, env=env)
    finally:
        for fd in pass_fds:
            os.close(fd)
    kid.out["child_pid"] = kid.proc.pid  # start_new_session: the child leads its own group
    kid.deadline = time.monotonic() + STARTUP_GRACE_S


def _finite(value, default: float = 0.0) -> float:
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else default


def _event(kid: _Child, event: dict, timeout: float, progress) -> None:
    """Apply one event of ``kid``'s to its result and its watchdog deadline."""
    out, kind = kid.out, event.get("event")
    if kind == "ready":
        # spawn/forkserver workers re-import torch before their first batch: the
        # parent passes that start-up allowance as "grace" (0 under fork).
        kid.after_release = max(0.0, _finite(event.get("grace", 0.0)))
        kid.deadline = time.monotonic() + timeout + kid.after_release
    elif kind in ("batch", "run_done"):
        kid.deadline = time.monotonic() + timeout
    elif kind == "fill":  # the first batch is held until the pipeline is full (loader_child)
        kid.deadline = time.monotonic() + timeout + min(max(0.0, _finite(event.get("max_s", 0.0))), 60.0)
    elif kind == "wait":  # at the rank barrier: its clock stops until the barrier lets it go
        kid.state = "waiting"
        if event.get("point") != "start":
            kid.after_release = 0.0
    if kind == "batch":
        out["last_batch"] = event["i"]
        if progress:
            progress(f"{kid.label}: batch {event['i']}/{event['of']}")
    elif kind == "run_done":
        out["results"][event["run"]] = event["stats"]
    elif kind == "error":
        out["error"] = out["errors"][event["run"]] = event
    elif kind == "done":
        kid.state = "ended"


def _lines(kid: _Child):
    while b"\n" in kid.buf:
        line, kid.buf = kid.buf.split(b"\n", 1)
        try:
            event = json.loads(line)
        except ValueError:  # not ours (nothing else should write to this fd); ignore
            continue
        if isinstance(event, dict):
            yield event


def _watch_all(kids: list[_Child], timeout: float, progress, on_barrier) -> None:
    """One loop over every child's events until each has said ``done``, died, closed its pipe or hung."""
    eof: set[int] = set()
    while any(kid.state != "ended" for kid in kids):
        live = [kid for kid in kids if kid.state != "ended"]
        ready, _, _ = select.select([kid.rfd for kid in live if kid.rank not in eof], [], [], 0.1)
        for kid in live:
            if kid.rfd in ready:
                chunk = os.read(kid.rfd, 65536)
                if not chunk:
                    eof.add(kid.rank)
                kid.buf += chunk
                for event in _lines(kid):
                    _event(kid, event, timeout, progress)
                    if kid.state == "ended":
                        break
        for kid in live:
            if kid.state == "ended":
                continue
            assert kid.proc is not None  # every child watched was started
            if kid.rank in eof or kid.proc.poll() is not None:
                if kid.rank not in eof:
                    # drain what the child wrote before it died
                    while select.select([kid.rfd], [], [], 0)[0]:
                        chunk = os.read(kid.rfd, 65536)
                        if not chunk:
                            break
                        kid.buf += chunk
                kid.buf += b"\n"
                for event in _lines(kid):
                    if event.get("event") == "error":
                        kid.out["error"] = kid.out["errors"][event["run"]] = event
                    elif event.get("event") == "run_done":
                        kid.out["results"][event["run"]] = event["stats"]
                kid.state = "ended"
            elif kid.state == "running" and time.monotonic() > kid.deadline:
                kid.out["hang"] = True
                kid.state = "ended"
        waiting = [kid for kid in kids if kid.state == "waiting"]
        if waiting and not any(kid.state == "running" for kid in kids):
            if on_barrier is not None:
                on_barrier()
            now = time.monotonic()
            for kid in waiting:
                kid.state = "running"
                kid.deadline = now + timeout + kid.after_release
                with contextlib.suppress(OSError):  # a child that died since: the next round sees it
                    os.write(kid.go, b"g")


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


def make_run(settings: LoaderSettings, quick: bool = False, **overrides) -> dict[str, Any]:
    """One child run configuration from resolved loader settings."""
    batches, warmup = plan_batches(overrides.get("num_workers", settings["num_workers"]),
                                   settings["prefetch_factor"], quick)
    run: dict[str, Any] = {"num_workers": settings["num_workers"], "batch_size": settings["batch_size"],
                           "prefetch_factor": settings["prefetch_factor"],
                           "persistent_workers": settings["persistent_workers"], "start_method": settings["start_method"],
                           "pin_memory": settings["pin_memory"], "sample_shape": settings["sample_shape"],
                           "dtype": settings["dtype"], "dataset": settings["dataset"]}
    run.update(batches=batches, warmup=warmup, to_device=True)
    run.update(overrides)
    run["grace"] = SPAWN_GRACE_S if run["num_workers"] > 0 and run["start_method"] != "fork" else 0.0
    return run


def evaluate(child: ChildResult, run_index: int = 0) -> tuple[dict | None, dict]:
    """From a child result: ``(stats or None, failure evidence)`` for one run."""
    stats = child["results"].get(run_index)
    if stats is not None:
        return stats, {}
    err = child["errors"].get(run_index)
    if child["hang"] and not err:  # an error reported before a slow shutdown is the real cause
        return None, {"failure": "hang", "detail": "no batch within the timeout"}
    err = err or {}
    text = "\n".join(filter(None, [err.get("message"), err.get("traceback"), child["stderr_tail"]]))
    rc = None if child["killed_by_harness"] else child["returncode"]
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


class ShmPeak:
    """The most of /dev/shm in use while it runs: sampled every ``interval`` s in a thread, and on demand.

    ``with ShmPeak() as peak: ...`` then ``peak.peak`` (bytes used, the other users of /dev/shm
    included) and ``peak.before`` (used when it started). :meth:`sample` takes one reading now,
    as the loader check does at the moment every rank holds its full pipeline.
    """

    def __init__(self, path: str | None = None, interval: float = 0.02):
        self.path, self.interval = path or SHM_PATH, interval
        self.before = self.peak = 0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def sample(self) -> int:
        used = int(sample(None, self.path)["shm_used"])
        with self._lock:
            self.peak = max(self.peak, used)
        return used

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def __enter__(self) -> ShmPeak:
        self.before = self.sample()
        self._thread = threading.Thread(target=self._run, name="envkit-shm-peak", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.sample()


def _combined(stats: list[dict]) -> dict:
    """The ranks' stats as one loader check's: every rank's batches, the node's samples/s, the slowest start."""
    return {"batches": min(s["batches"] for s in stats), "samples": sum(s["samples"] for s in stats),
            "seconds": max(s["seconds"] for s in stats), "first_batch_s": max(s["first_batch_s"] for s in stats),
            "samples_per_s": round(sum(s["samples_per_s"] for s in stats), 2),
            "slowest_samples_per_s": min(s["samples_per_s"] for s in stats),
            "warmup_batches": stats[0]["warmup_batches"], "pin_memory_used": all(s["pin_memory_used"] for s in stats),
            "accelerator": any(s["accelerator"] for s in stats), "epochs": max(s["epochs"] for s in stats),
            "per_rank": stats}


def check_loader(settings: LoaderSettings, *, timeout: float = 60.0, quick: bool = False, progress=None) -> Check:
    """Run the real DataLoader in a watched child, one per rank at once, and turn the outcome into the ``loader`` check.

    The ranks are ``settings["ranks_per_node"]``: torchrun starts one DataLoader per
    rank, and they share the node's CPUs and /dev/shm. A failure in any rank fails the check and
    names the rank. ``measured`` carries ``concurrent_loaders`` and ``peak_shm_bytes`` (the most
    of /dev/shm seen in use while the loaders ran).
    """
    ranks = max(1, settings["ranks_per_node"])
    run = make_run(settings, quick, fill=True)  # the pipeline's peak in /dev/shm on every run, not by chance
    expected = {"num_workers": settings["num_workers"], "batch_size": settings["batch_size"],
                "sample_shape": settings["sample_shape"], "dtype": settings["dtype"],
                "pin_memory": settings["pin_memory"], "prefetch_factor": settings["prefetch_factor"],
                "persistent_workers": settings["persistent_workers"], "start_method": settings["start_method"],
                "dataset": settings["dataset"], "batches": run["batches"], "timeout_s": timeout,
                "ranks_per_node": ranks}
    runs = [[run]] if ranks == 1 else [[dict(run, rank=r)] for r in range(ranks)]
    started = time.monotonic()
    with ShmPeak() as peak:
        children = run_loader_children(runs, timeout=timeout, progress=progress, label="loader",
                                       on_barrier=peak.sample)
    outcomes = [evaluate(child) for child in children]
    measured: dict[str, Any] = {
        "child_pid": children[0]["child_pid"],
        "leftover_processes": sorted({pid for child in children for pid in child["leftover"]}),
        "wall_s": round(time.monotonic() - started, 3), "concurrent_loaders": ranks,
        "peak_shm_bytes": peak.peak, "shm_used_before_bytes": peak.before}
    if ranks > 1:
        measured["child_pids"] = [child["child_pid"] for child in children]
    at_once = f"{ranks} loaders at once, {plural(settings['num_workers'], 'worker')} each: " if ranks > 1 else ""
    failed = [r for r, (stats, _) in enumerate(outcomes) if stats is None]
    if not failed:
        passed = [stats for stats, _ in outcomes if stats is not None]
        return _loader_passed(settings, passed[0] if ranks == 1 else _combined(passed), at_once, measured, expected)
    # The rank that failed for a reason of its own, before any that only hung.
    rank = next((r for r in failed if outcomes[r][1]["failure"] != "hang"), failed[0])
    child, bad = children[rank], dict(outcomes[rank][1])
    measured.update(bad, last_batch=child["last_batch"], returncode=child["returncode"],
                    stderr_tail=child["stderr_tail"][-1500:])
    if ranks > 1:
        measured.update(failed_rank=rank, failed_ranks=failed)
    remedy = _shm_exhausted(bad, settings, ranks) if bad["failure"] == "shm_exhausted" else None
    msg = MESSAGES[bad["failure"]].format(detail=bad["detail"], timeout=timeout, last=child["last_batch"],
                                          of=run["batches"], method=settings["start_method"])
    return make_check("loader", FAIL, measured, expected, f"{at_once}rank {rank} failed: {msg}" if ranks > 1 else msg,
                      remedy or failure_remedy(bad["failure"], bad["detail"], settings))


def _loader_passed(settings: LoaderSettings, stats: dict, at_once: str, measured: dict[str, Any],
                   expected: dict[str, Any]) -> Check:
    measured.update(stats)
    note = ""
    if settings["pin_memory"] and not stats["pin_memory_used"]:
        note = "; pin_memory was requested but there is no accelerator, so batches were not pinned"
    if not at_once:
        body = (f"{stats['batches']} batches of {settings['batch_size']} with {settings['num_workers']} "
                f"{settings['start_method']} workers: {stats['samples_per_s']:.0f} samples/s, first batch "
                f"after {stats['first_batch_s']:.2f} s")
    else:
        body = (f"{stats['batches']} batches of {settings['batch_size']} each, {settings['start_method']} workers: "
                f"{stats['samples_per_s']:.0f} samples/s in all (slowest loader "
                f"{stats['slowest_samples_per_s']:.0f}), first batch after {stats['first_batch_s']:.2f} s at most")
    return make_check("loader", PASS, measured, expected, at_once + body + note)


def _shm_exhausted(bad: dict, settings: LoaderSettings, ranks: int) -> str | None:
    """Say in ``bad["detail"]`` how big /dev/shm is against the need; of several ranks, the remedy for all of them."""
    st = shm_stats()
    size = st["size_bytes"] if st else None
    need = shm_required_bytes(batch_size=settings["batch_size"], sample_shape=settings["sample_shape"],
                              dtype=settings["dtype"], num_workers=settings["num_workers"],
                              prefetch_factor=settings["prefetch_factor"])
    if ranks == 1:
        bad["detail"] = f"/dev/shm is {human_bytes(size)}, this loader needs ~{human_bytes(need)}; {bad['detail']}"
        return None
    bad["detail"] = (f"/dev/shm is {human_bytes(size)}, {ranks} loaders need "
                     f"~{human_bytes(ranks * need)} (~{human_bytes(need)} each); {bad['detail']}")
    return shm_remedy(ranks * need)
