"""Every process the harness starts dies with it, even when it is killed with SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.procs import child_pids

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")


def _descendants(pid: int) -> set[int]:
    found, todo = set(), [pid]
    while todo:
        for child in child_pids(todo.pop()):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.slow  # a real harness with two DataLoader workers, held for seconds on purpose
def test_sigkill_of_envkit_harness_during_a_hanging_dataset_leaves_no_descendant(tmp_path):
    here = Path(__file__).resolve().parent  # fault_datasets.py, importable by the harness's workers
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(here.parents[1] / "src"), str(here)])}
    proc = subprocess.Popen([sys.executable, "-m", "envkit", "harness", "--dataset", "fault_datasets:hang",
                             "--num-workers", "2", "--timeout", "120", "--quick"], cwd=tmp_path, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seen: set[int] = set()
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # the loader child and a worker are up
            seen |= _descendants(proc.pid)
            if len([p for p in seen if _alive(p)]) >= 2:
                break
            time.sleep(0.2)
        assert len(seen) >= 2, f"the harness did not start its loader and a worker: {sorted(seen)}"
        time.sleep(1.0)  # the workers are inside the hanging __getitem__
        seen |= _descendants(proc.pid)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        time.sleep(5)
        survivors = sorted(p for p in seen if _alive(p))
        assert not survivors, f"processes outlived envkit harness: {survivors}"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in seen:  # a failing run must not leave its hanging workers behind
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
