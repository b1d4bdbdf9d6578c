"""Warnings and notes are values made with their key path; the plan places each at the key's line and column."""

import io
from pathlib import Path

from envkit.findings import Finding, Locator
from envkit.generation import plan_warnings, report_warnings, warning_record
from envkit.planner import build_plan
from envkit.profile import load_profile_bytes

PROFILE = (b"envkit: 1\n"
           b"name: demo\n"
           b"image:\n"
           b"  base: debian:bookworm\n"
           b"  tag: reg.example.com/demo:1\n"
           b"  copy_project: false\n"
           b"run:\n"
           b"  cpus: 4\n"
           b"  memory: 8g\n"
           b"  ipc: host\n"
           b"  shm_size: 1g\n"
           b"cluster:\n"
           b"    entrypoint: [train.py]\n")


def _plan():
    return build_plan(load_profile_bytes(PROFILE, "p.yaml", Path("/")), Path("out"))


def test_a_warning_on_a_written_key_carries_its_line_and_column():
    (w,) = [w for w in _plan().warnings if w.path == "run.shm_size"]
    assert (w.source, w.line, w.column) == ("p.yaml", 11, 3)
    assert warning_record(w) == {"path": "run.shm_size", "line": 11, "column": 3, "text": w.text}
    assert w.text.startswith("ignored because run.ipc is 'host'")


def test_a_target_warning_whose_text_holds_a_key_and_colon_keeps_its_own_path():
    """The Kubernetes warning on cluster.entrypoint says "image.copy_project: true" in its middle."""
    plan = _plan()
    (w,) = [w for w in plan_warnings(plan, ("k8s",)) if w.path == "cluster.entrypoint"]
    assert "image.copy_project: true" in w.text
    assert (w.line, w.column) == (13, 5)
    out = io.StringIO()
    report_warnings(plan, False, out, ("k8s",))
    assert f"envkit: warning: p.yaml: cluster.entrypoint: {w.text}\n" in out.getvalue()


def test_a_finding_without_a_key_is_never_split_at_its_first_colon():
    """Text starting with "word: " names no key: its record keeps the whole text and no path."""
    where = Locator("p.yaml", {("word",): (1, 1)})
    f = where(Finding(None, "word: not a key, just a sentence"))
    assert warning_record(f) == {"path": None, "line": None, "column": None, "text": "word: not a key, just a sentence"}
    assert f == "word: not a key, just a sentence" and f.source == "p.yaml"


def test_a_key_the_profile_does_not_write_takes_its_nearest_written_parent():
    where = Locator("p.yaml", {("run",): (7, 1)})
    f = where(Finding("run.ulimits.nofile", "not on Kubernetes"))
    assert (f.path, f.line, f.column, f.text) == ("run.ulimits.nofile", 7, 1, "not on Kubernetes")
    assert where(Finding("envkit.lock.txt", "stale")).line is None
