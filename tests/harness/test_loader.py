"""The loader check with REAL DataLoaders: healthy, hang, segfault, unpicklable, dataset error.

The broken datasets live in harness_datasets.py (importable: pytest puts this
directory on sys.path, and the harness passes sys.path to its child).
"""

import os
import time

import pytest

from envkit.harness.expectation import resolve_loader
from envkit.harness.checks.loader import check_loader, plan_batches

from tests.procs import child_pids, group_pids

# Slow tier (--run-slow; the README's command runs it): real DataLoaders with workers, one harness child each.
pytestmark = pytest.mark.slow


def settings(dataset=None, **loader):
    base = {"num_workers": 2, "batch_size": 8, "sample_shape": [3, 16, 16], "prefetch_factor": 2}
    base.update(loader)
    return resolve_loader({"envkit_expect": 1, "loader": base}, usable=2, dataset=dataset)


def assert_no_leftovers(check):
    pgid = check["measured"]["child_pid"]
    assert check["measured"]["leftover_processes"] == []
    assert group_pids(pgid) == [], "a loader/worker process (or zombie) survived"
    assert pgid not in child_pids(os.getpid())


def test_healthy_loader_passes():
    s = settings()
    c = check_loader(s, timeout=30)
    assert c["status"] == "pass", c["message"]
    m = c["measured"]
    assert m["batches"] == plan_batches(2, 2)[0] == c["expected"]["batches"]
    assert m["samples"] == m["batches"] * 8 and m["samples_per_s"] > 0 and m["seconds"] > 0
    assert m["pin_memory_used"] is False and "no accelerator" in c["message"]
    assert_no_leftovers(c)


def test_quick_runs_fewer_batches():
    c = check_loader(settings(num_workers=1), timeout=30, quick=True)
    assert c["status"] == "pass"
    assert c["measured"]["batches"] == plan_batches(1, 2, quick=True)[0] < plan_batches(1, 2)[0]


@pytest.mark.slow
def test_hang_is_detected_within_timeout_and_cleaned_up():
    lines = []
    start = time.monotonic()
    c = check_loader(settings("harness_datasets:hang"), timeout=3, progress=lines.append)
    elapsed = time.monotonic() - start
    assert c["status"] == "fail"
    assert c["measured"]["failure"] == "hang"
    assert "3 s" in c["message"] and "py-spy" in c["remedy"]
    assert elapsed < 3 + 12, elapsed  # child start-up + the 3 s watchdog, not the dataset's hour-long sleep
    assert_no_leftovers(c)


def test_worker_segfault_is_named():
    c = check_loader(settings("harness_datasets:segfault"), timeout=30)
    assert c["measured"]["failure"] == "worker_killed"
    assert "Segmentation fault" in c["message"]
    assert "spawn" in c["remedy"]
    assert_no_leftovers(c)


def test_unpicklable_dataset_under_spawn():
    c = check_loader(settings("harness_datasets:with_lambda", num_workers=1, start_method="spawn"), timeout=60)
    assert c["measured"]["failure"] == "unpicklable_dataset", c["measured"]
    assert "lambda" in c["message"]
    assert "top level" in c["remedy"] and '__name__ == "__main__"' in c["remedy"]
    assert_no_leftovers(c)


@pytest.mark.parametrize("workers", [0, 1])
def test_dataset_exception_keeps_original_message(workers):
    c = check_loader(settings("harness_datasets:raises", num_workers=workers), timeout=30)
    assert c["measured"]["failure"] == "dataset_error"
    assert "corrupt sample 0: bad header" in c["message"]
    assert_no_leftovers(c)


def test_user_dataset_smaller_than_needed_is_iterated_again():
    c = check_loader(settings("harness_datasets:ok", batch_size=64, num_workers=1), timeout=30)
    assert c["status"] == "pass"
    assert c["measured"]["epochs"] >= 2  # 256 samples = 4 batches < the planned 10


@pytest.mark.slow
def test_holding_the_first_batch_until_the_pipeline_is_full_is_not_a_hang():
    """Slow but healthy: every batch arrives within the 1 s timeout, the hold for the full pipeline takes longer.

    Before the child told the watchdog about the hold (a "fill" event), this was reported as a hang.
    """
    c = check_loader(settings("harness_datasets:slow", batch_size=1, num_workers=2), timeout=1, quick=True)
    assert c["status"] == "pass", (c["message"], c["measured"])
    fill = c["measured"]["pipeline_fill"]
    # 2 workers x prefetch 2 = 4 asked for, every one in hand before it went on: ready in the queue, or received
    # ahead of its turn when worker 1's batches came in before worker 0's (reordered; torch refills one per batch it
    # yields: this failed 1 run in 6 while it asked for 4 outstanding).
    assert fill["ready"] == fill["outstanding"] and fill["ready"] + fill["reordered"] == 4, fill
    assert fill["waited_s"] > 1.0, fill
    assert_no_leftovers(c)
