"""Failure classification for the ``loader`` check: error text + exit status -> failure class.

The texts are PyTorch's own (torch/csrc/DataLoader.cpp, aten MapAllocator.cpp,
torch/utils/data/dataloader.py); each class has a message template and a remedy.

Example:
    >>> classify("DataLoader worker (pid 7) is killed by signal: Segmentation fault. ")
    ('worker_killed', 'Segmentation fault')
    >>> classify("RuntimeError: unable to allocate shared memory(shm) for file </torch_1_2_0>: "
    ...          "No space left on device (28)")[0]
    'shm_exhausted'
"""

from __future__ import annotations

import re
import signal

from ..expectation import LoaderSize
from ..rules.sizing import shm_required_bytes
from .shm import shm_remedy

FAILURES = ("shm_exhausted", "worker_killed", "worker_exited", "hang", "too_many_open_files",
            "unpicklable_dataset", "dataset_error", "unknown")
SHM_PATTERNS = ("unable to allocate shared memory", "out of shared memory", "bus error",
                "unable to stretch file")
PICKLE_PATTERNS = ("can't pickle", "cannot pickle", "picklingerror", "can't get local object",
                   "can't get attribute", "pickle")


def classify(text: str, returncode: int | None = None, nw: int = 1, phase: str | None = None):
    """``(failure, detail)`` from the error text (exception + stderr tail) and the child's exit status.

    Order matters: a shm allocation error raised inside a worker also reads
    "Caught RuntimeError in DataLoader worker", so resource errors win over
    ``dataset_error``.
    """
    low = text.lower()
    if any(p in low for p in SHM_PATTERNS) or (
            "no space left on device" in low and ("shm" in low or "torch_" in low)):
        return "shm_exhausted", _line_with(text, SHM_PATTERNS + ("no space left on device",)) or "shm exhausted"
    if "too many open files" in low or "received 0 items of ancdata" in low:
        return "too_many_open_files", _line_with(text, ("too many open files", "ancdata")) or "EMFILE"
    m = re.search(r"killed by signal: ([^.\n]+)", text)
    if m:
        return "worker_killed", m.group(1).strip()
    # Source lines quoted in tracebacks (indented) are code, not what happened: a comment or a name
    # there holding "pickle" must not turn a dataset's TypeError into "unpicklable".
    said = "\n".join(ln for ln in low.splitlines() if not ln.startswith("    "))
    if any(p in said for p in PICKLE_PATTERNS) and phase in (None, "iter_start", "iterate"):
        hit = [ln.strip() for ln in text.splitlines() if "pickle" in ln.lower() or "can't get" in ln.lower()]
        return "unpicklable_dataset", (hit[0] if hit else "the dataset could not be pickled")[:300]
    m = re.search(r"exited unexpectedly(?: with exit code (-?\d+))?", text)
    if m:
        return "worker_exited", f"exit code {m.group(1)}" if m.group(1) else "exited unexpectedly"
    if "dataloader timed out" in low:
        return "hang", "DataLoader timed out"
    m = re.search(r"Caught (\w+) in DataLoader worker process", text)
    if m or (phase == "iterate" and nw == 0) or phase == "build":
        return "dataset_error", _last_line(text)
    if returncode is not None and returncode < 0:
        name = _signame(-returncode)
        if -returncode == signal.SIGBUS:
            return "shm_exhausted", name
        return "worker_killed", f"{name} (the loader process itself)"
    return "unknown", _last_line(text)


def _signame(signum: int) -> str:
    try:
        return signal.strsignal(signum) or signal.Signals(signum).name
    except (ValueError, AttributeError):
        return f"signal {signum}"


def _line_with(text: str, patterns) -> str | None:
    """The last line of ``text`` containing one of ``patterns`` (case-insensitive), trimmed."""
    hits = [ln.strip() for ln in text.splitlines() if any(p in ln.lower() for p in patterns)]
    return hits[-1][:300] if hits else None


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def failure_remedy(failure: str, detail: str, settings: LoaderSize) -> str:
    """What to change for each failure class (the shm size comes from :mod:`envkit.harness.rules.sizing`)."""
    if failure == "shm_exhausted":
        required = shm_required_bytes(batch_size=settings["batch_size"], sample_shape=settings["sample_shape"],
                                      dtype=settings["dtype"], num_workers=settings["num_workers"],
                                      prefetch_factor=settings["prefetch_factor"])
        return shm_remedy(required)
    if failure == "too_many_open_files":
        return ("raise the fd limit (docker run --ulimit nofile=65536:65536; compose ulimits: nofile) or call "
                "torch.multiprocessing.set_sharing_strategy('file_system') at the start of your program")
    if failure == "unpicklable_dataset":
        return ("under spawn/forkserver the dataset is pickled to every worker: define the Dataset class, "
                "collate_fn and worker_init_fn at module top level (no lambdas or local functions as "
                "attributes), and guard the entry point with `if __name__ == \"__main__\":`")
    if failure == "hang":
        return ("find the blocked worker (py-spy dump --pid <worker>); usual causes: a lock or thread pool "
                "copied by fork (try start_method 'spawn' or 'forkserver'), a __getitem__ waiting on network "
                "or a slow file system, or too little CPU; rerun with --num-workers 0 to reproduce in-process")
    if failure == "worker_killed":
        if "killed" == detail.split(" (")[0].lower():
            return ("SIGKILL is usually the kernel OOM killer: raise the container memory limit (--memory) or "
                    "lower batch_size/num_workers/prefetch_factor; check `dmesg` for oom-kill")
        return ("a native extension crashed in a worker (often not fork-safe: OpenCV, decoders, CUDA used "
                "before fork): try start_method 'spawn', and rerun with --num-workers 0 for a traceback")
    if failure == "worker_exited":
        return "rerun with --num-workers 0 to see the worker's real traceback"
    if failure == "dataset_error":
        return "fix the exception in the dataset; rerun with --num-workers 0 for the full traceback"
    return "rerun with --num-workers 0 for a traceback; see measured.stderr_tail"


MESSAGES = {
    "shm_exhausted": "DataLoader workers ran out of shared memory (/dev/shm): {detail}",
    "worker_killed": "a DataLoader worker was killed by signal: {detail}",
    "worker_exited": "a DataLoader worker exited unexpectedly ({detail})",
    "hang": "no batch arrived within {timeout:g} s (after batch {last}/{of}): the loader hangs",
    "too_many_open_files": "too many open files: workers pass each batch as a shared-memory fd",
    "unpicklable_dataset": "the dataset cannot be pickled to {method} workers: {detail}",
    "dataset_error": "the dataset raised an exception: {detail}",
    "unknown": "the loader failed: {detail}",
}
