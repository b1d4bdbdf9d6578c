"""The harness names what really failed and owns every descendant. Real DataLoaders."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[1] / "src"


def _harness(*args, env=None, timeout=300):
    full = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), str(HERE)]), **(env or {})}
    return subprocess.run([sys.executable, "-m", "envkit.harness", *args], capture_output=True, text=True,
                          env=full, timeout=timeout, cwd=HERE)


def _loader_check(res) -> dict:
    doc = json.loads(res.stdout)
    return {c["name"]: c for c in doc["checks"]}["loader"]


@pytest.mark.slow
def test_a_factory_returning_42_is_named_not_called_unpicklable():
    res = _harness("--dataset", "fault_datasets:forty_two", "--json", "--quick", "--num-workers", "2",
                   "--timeout", "60")
    loader = _loader_check(res)
    assert loader["status"] == "fail"
    assert loader["measured"]["failure"] != "unpicklable_dataset", loader
    assert "int" in loader["measured"]["detail"], loader["measured"]["detail"]


@pytest.mark.slow
def test_a_raising_len_is_named_with_the_datasets_own_frame():
    res = _harness("--dataset", "fault_datasets:bad_len", "--json", "--quick", "--num-workers", "2",
                   "--timeout", "60")
    loader = _loader_check(res)
    m = loader["measured"]
    assert m["failure"] == "dataset_error", m
    assert "ArithmeticError: my __len__ is broken" in m["detail"]
    assert "fault_datasets.py" in m["detail"] and "__len__" in m["detail"], m["detail"]
    assert "loader_child.py" not in m["detail"], "the harness's own line is not the culprit"


def _sleepers(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmd = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmd:
                found.append(int(entry))
    return found


@pytest.mark.slow
def test_processes_started_in_a_new_session_are_reported_and_killed():
    marker = f"envkit-fault-{uuid.uuid4().hex}"
    res = _harness("--dataset", "fault_datasets:escapes", "--json", "--quick", "--num-workers", "2",
                   "--timeout", "60", env={"ENVKIT_FAULT_MARKER": marker})
    try:
        loader = _loader_check(res)
        assert loader["measured"]["leftover_processes"], loader["measured"]
        time.sleep(0.5)
        assert _sleepers(marker) == [], "the harness killed what it reported"
    finally:
        for pid in _sleepers(marker):
            os.kill(pid, 9)
