"""The loader runner, executed in a child process that the harness watches (see :mod:`.loader`).

Protocol: the parent starts ``python -c BOOTSTRAP '<json config>'`` in a new
session; this module writes one JSON object per line to the file descriptor
``config["fd"]``: ``boot``, then per run ``ready``, ``batch`` ..., and ``run_done``
(or ``error``), and finally ``done``. A run is one DataLoader configuration::

    {"num_workers": 2, "batch_size": 32, "prefetch_factor": 2, "persistent_workers": false,
     "start_method": "fork", "pin_memory": true, "sample_shape": [3, 224, 224],
     "dtype": "float32", "dataset": "synthetic", "batches": 12, "warmup": 5, "to_device": false,
     "fill": true, "sample_cost_ms": 3.0}

``sample_cost_ms`` (absent: 0) is the CPU each synthetic sample costs (:mod:`.synthetic`).

With ``fill`` the first batch is held until every outstanding batch is ready
(:func:`hold_until_full`): the pipeline's peak, ``num_workers x prefetch_factor``
batches in /dev/shm plus the one the training step holds, is reached on every run,
as it is in training whenever the step is slower than the workers. Without it a
fast consumer drains the queue and whether an undersized /dev/shm fails depends on
timing.

Several ranks (one child each, :func:`.loader.run_loader_children`) start and fill
together: with ``config["go_fd"]`` the child emits ``wait`` and blocks on that fd
before its workers start and again once its pipeline is full, until the parent
releases every rank at once (one byte each). So R loaders hold their peaks in
/dev/shm at the same moment, as torchrun's ranks do when training is slower than
loading. A run's ``rank`` picks its GPU, ``rank % device_count``, for the pinned
transfer.

Throughput (``samples_per_s``) is measured after ``warmup`` batches, so worker
start-up and the initially full prefetch queue do not inflate it.
"""

from __future__ import annotations

import ctypes
import functools
import importlib
import json
import os
import signal
import sys
import sysconfig
import time
import traceback

from .synthetic import SyntheticDataset

HARNESS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the whole package, every room
BOOTSTRAP = ("import sys,json;c=json.loads(sys.argv[1]);sys.path[:0]=c['sys_path'];"
             "import importlib;importlib.import_module(c['module']).child_main(c)")


PR_SET_PDEATHSIG = 1


def die_with_parent(parent_pid: int | None) -> None:
    """Ask the kernel to SIGKILL this process when its parent dies (Linux ``PR_SET_PDEATHSIG``).

    ``parent_pid`` is the parent this process was started by: when it is already gone (it died
    before the request took effect), this process exits at once. None, or a platform without
    prctl, changes nothing.
    """
    if parent_pid is None or not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent_pid:
        os._exit(1)


def _worker_init(parent_pid: int, worker_id: int) -> None:
    """Every DataLoader worker dies with the loader child (a fork or spawn clears the request)."""
    die_with_parent(parent_pid)


def resolve_factory(spec: str):
    """``"pkg.mod:make"`` -> the callable (``attr`` may be dotted). Raises ImportError/AttributeError."""
    module, _, attr = spec.partition(":")
    if not module or not attr:
        raise ValueError(f"--dataset must look like MODULE:CALLABLE, got {spec!r}")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())  # like `python -m`: the user's module is found from cwd
    obj = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    if not callable(obj):
        raise TypeError(f"{spec} is not callable")
    return obj


def _count(batch, default: int) -> int:
    """Samples in a collated batch: the leading dim of the first tensor found."""
    if hasattr(batch, "shape") and len(batch.shape):
        return int(batch.shape[0])
    if isinstance(batch, dict):
        batch = list(batch.values())
    if isinstance(batch, (list, tuple)):
        for item in batch:
            n = _count(item, -1)
            if n >= 0:
                return n
    return default


def _to_device(batch, device, non_blocking: bool):
    if hasattr(batch, "to"):
        return batch.to(device, non_blocking=non_blocking)
    if isinstance(batch, (list, tuple)):
        return [_to_device(b, device, non_blocking) for b in batch]
    if isinstance(batch, dict):
        return {k: _to_device(v, device, non_blocking) for k, v in batch.items()}
    return batch


FILL_MAX_S = 10.0  # a pipeline that is not full by then has a stuck or dead worker; next() reports which


def hold_until_full(it, max_s: float = FILL_MAX_S, poll_s: float = 0.01) -> dict:
    """Wait, holding the current batch, until every batch the iterator has asked for is ready.

    Reads the iterator's outstanding-task count and its result queue (private to
    torch's multi-process iterator, so absent attributes or a queue without
    ``qsize`` fall back to a wait of ``max_s / 10``). An error a worker reported
    counts as ready: the next ``next()`` raises it. Returns what it saw::

        {"outstanding": 4, "ready": 4, "reordered": 0, "waited_s": 0.21, "method": "queue"}

    ``reordered``: batches already received out of order (a later worker's came in
    first), which torch keeps for their turn and does not count as outstanding. The
    pipeline is full when ``ready + reordered`` is every batch asked for, workers x
    prefetch_factor while the epoch has that many left (torch refills one task per
    batch it yields).

    >>> class Queue:
    ...     def qsize(self): return 1
    >>> class It: _tasks_outstanding = 1; _data_queue = Queue(); _task_info = {3: (0,), 4: (1, "batch")}
    >>> {k: v for k, v in hold_until_full(It()).items() if k != "waited_s"}
    {'outstanding': 1, 'ready': 1, 'reordered': 1, 'method': 'queue'}
    """
    t0 = time.perf_counter()
    outstanding = getattr(it, "_tasks_outstanding", None)
    queue = getattr(it, "_data_queue", None)
    ready = 0
    method = "queue"
    while outstanding is not None:
        try:
            ready = queue.qsize() if queue is not None else 0
        except (NotImplementedError, AttributeError, OSError):
            outstanding = None  # macOS multiprocessing queues have no qsize
            break
        if ready >= outstanding or time.perf_counter() - t0 >= max_s:
            break
        time.sleep(poll_s)
        outstanding = getattr(it, "_tasks_outstanding", outstanding)
    if outstanding is None:
        method = "time"
        time.sleep(max_s / 10)
    # torch's index -> (worker,) while a task is out, (worker, data) once received ahead of its turn.
    info = getattr(it, "_task_info", None)
    reordered = (sum(1 for v in info.values() if isinstance(v, tuple) and len(v) == 2)
                 if isinstance(info, dict) else None)
    return {"outstanding": outstanding, "ready": ready, "reordered": reordered,
            "waited_s": round(time.perf_counter() - t0, 3), "method": method}


class _Counts:
    """What one run has loaded so far, and when."""

    def __init__(self) -> None:
        self.batches = self.samples = self.timed_samples = self.epochs = 0
        self.t0 = time.perf_counter()
        self.t_warm: float | None = None
        self.first: float | None = None
        self.fill: dict | None = None


def run_one(index: int, run: dict, emit, wait=None) -> dict:
    """Iterate one DataLoader configuration; return the stats dict (raises on loader failure).

    ``wait(point)``, when given, blocks at the rank barrier: before the workers start
    (``"start"``) and once the pipeline is full (``"full"``).
    """
    phase = "setup"
    try:
        import torch  # in the child, after the parent's watchdog started: importing torch takes seconds

        phase = "build"
        loader, pin, accel, device = _build(run, torch)
        emit({"event": "ready", "run": index, "grace": run.get("grace", 0.0)})
        if wait is not None:
            wait("start")
        counts = _Counts()
        while counts.batches < run["batches"] and counts.epochs < 1000:
            phase = "iter_start"
            # Workers start here (and under spawn the dataset is serialised to them).
            it = iter(loader)
            phase = "iterate"
            if not _epoch(it, index, run, emit, wait, device, pin, counts):
                raise RuntimeError("the dataset yielded no batches (empty dataset?)")
        if device is not None:
            torch.cuda.synchronize()
        del loader
        return _stats(run, counts, pin, accel, device)
    except BaseException as exc:
        exc.envkit_phase = phase  # type: ignore[attr-defined]  # read by the parent's classifier
        raise


def _build(run: dict, torch):
    """``(loader, pin, accelerator, device)``: the run's dataset in a DataLoader, pinned where CUDA is."""
    if run["dataset"] == "synthetic":
        dataset = SyntheticDataset(run["batches"] * run["batch_size"], run["sample_shape"], run["dtype"],
                                   run.get("sample_cost_ms") or 0.0)
    else:
        dataset = resolve_factory(run["dataset"])()
    accel = torch.cuda.is_available()
    pin = bool(run["pin_memory"]) and accel
    device = None
    if accel and run.get("to_device"):
        device = torch.device("cuda")
        if "rank" in run:  # one GPU per rank, as torchrun's LOCAL_RANK picks it; the pin thread uses it too
            device = torch.device("cuda", int(run["rank"]) % max(1, torch.cuda.device_count()))
            torch.cuda.set_device(device)
    nw = run["num_workers"]
    kwargs = dict(batch_size=run["batch_size"], shuffle=False, num_workers=nw, pin_memory=pin)
    if nw > 0:
        kwargs.update(prefetch_factor=run["prefetch_factor"], persistent_workers=bool(run["persistent_workers"]),
                      multiprocessing_context=run["start_method"],
                      worker_init_fn=functools.partial(_worker_init, os.getpid()))
    from torch.utils.data import DataLoader  # torch is imported by now (run_one)

    return DataLoader(dataset, **kwargs), pin, accel, device  # type: ignore[arg-type]  # any map-style dataset


def _epoch(it, index: int, run: dict, emit, wait, device, pin: bool, counts: _Counts) -> bool:
    """Take batches from ``it`` until the run has its batches or the epoch ends; False when it yielded none."""
    got = False
    for batch in it:
        got = True
        if counts.fill is None and run.get("fill") and run["num_workers"] > 0:
            counts.first = time.perf_counter() - counts.t0
            # The parent's watchdog gives the hold its own allowance (it resets on events).
            emit({"event": "fill", "run": index, "max_s": FILL_MAX_S})
            counts.fill = hold_until_full(it)
            if wait is not None:
                wait("full")
        n = _count(batch, run["batch_size"])
        if device is not None:
            batch = _to_device(batch, device, pin)
        counts.batches += 1
        counts.samples += n
        now = time.perf_counter()
        if counts.first is None:
            counts.first = now - counts.t0
        if counts.batches == run["warmup"]:
            counts.t_warm = now
        elif counts.t_warm is not None:
            counts.timed_samples += n
        del batch
        emit({"event": "batch", "run": index, "i": counts.batches, "of": run["batches"]})
        if counts.batches >= run["batches"]:
            break
    counts.epochs += 1
    return got


def _stats(run: dict, counts: _Counts, pin: bool, accel: bool, device) -> dict:
    """The run's stats: samples/s after the warm-up batches (all of them when none were timed)."""
    end = time.perf_counter()
    timed = counts.t_warm is not None and counts.timed_samples
    steady = end - counts.t_warm if timed and counts.t_warm is not None else end - counts.t0
    rate = (counts.timed_samples if timed else counts.samples) / steady if steady > 0 else 0.0
    return {"batches": counts.batches, "samples": counts.samples, "seconds": round(end - counts.t0, 4),
            "first_batch_s": round(counts.first or 0.0, 4), "samples_per_s": round(rate, 2),
            "warmup_batches": run["warmup"], "pin_memory_used": pin, "accelerator": accel,
            "epochs": counts.epochs, "device": str(device) if device is not None else None,
            **({"pipeline_fill": counts.fill} if counts.fill else {})}


def _user_frame(exc: BaseException) -> str | None:
    """``file:line in function`` of the innermost frame outside torch, the standard library and the harness.

    That is the dataset's own code when the dataset raised; None when every frame is someone else's.
    """
    skip = [HARNESS_DIR, sysconfig.get_paths().get("stdlib") or "\0"]
    try:
        import torch  # here: torch may be the very thing that failed to import
        skip.append(os.path.dirname(torch.__file__))
    except Exception:  # torch itself failed to import: every frame is outside it
        pass
    found = None
    for frame in traceback.extract_tb(exc.__traceback__):
        path = os.path.abspath(frame.filename)
        if not any(path.startswith(os.path.abspath(d) + os.sep) for d in skip) and not frame.filename.startswith("<"):
            found = f"{frame.filename}:{frame.lineno} in {frame.name}"
    return found


def child_main(config: dict) -> None:
    """Entry point of the child: run every configuration, report on ``config["fd"]``, exit 0/3."""
    die_with_parent(config.get("parent_pid"))
    out = os.fdopen(config["fd"], "w", buffering=1)

    def emit(event: dict) -> None:
        out.write(json.dumps(event) + "\n")
        out.flush()

    wait = None
    if config.get("go_fd") is not None:
        go_fd = config["go_fd"]

        def wait(point: str) -> None:
            emit({"event": "wait", "point": point})
            os.read(go_fd, 1)  # b"" when the parent is gone: carry on; die_with_parent or the next write ends us

    emit({"event": "boot", "pid": os.getpid(), "pgid": os.getpgid(0)})
    rc = 0
    for index, run in enumerate(config["runs"]):
        try:
            stats = run_one(index, run, emit, wait)
        except Exception as exc:  # reported, classified by the parent
            emit({"event": "error", "run": index, "phase": getattr(exc, "envkit_phase", "setup"),
                  "nw": run.get("num_workers", 0),
                  "type": type(exc).__name__, "message": str(exc), "where": _user_frame(exc),
                  "traceback": "".join(traceback.format_exception(exc))[-6000:]})
            rc = 3
            if config.get("stop_on_error", True):
                break
            continue
        emit({"event": "run_done", "run": index, "stats": stats})
    emit({"event": "done"})
    out.close()
    sys.stdout.flush()
    sys.stderr.flush()
    # os._exit skips interpreter teardown, where a wedged worker could still block us.
    os._exit(rc)
