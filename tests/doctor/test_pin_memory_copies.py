"""doctor --script: a pin_memory=True loader whose batches are moved without non_blocking=True is a warning.

Real script files in tests/doctor/scripts/; the warning names the line of each blocking copy.
"""

from __future__ import annotations

import json
from pathlib import Path

from envkit.doctor import check_script
from envkit.doctor.spawncheck import check_file
from tests.conftest import call_envkit

SCRIPTS = Path(__file__).resolve().parent / "scripts"


def test_blocking_copies_from_a_pinned_loader_are_named_by_line():
    findings = check_file(SCRIPTS / "pinned_blocking.py")
    assert [(f.line, f.kind) for f in findings] == [(18, "blocking_copy"), (19, "blocking_copy")]
    assert "batch[0].to(device)" in findings[0].message and "line 9" in findings[0].message
    check = check_script(SCRIPTS / "pinned_blocking.py")
    assert check["status"] == "warn"  # it costs speed; the script still works
    assert "line 18" in check["message"] and "line 19" in check["message"]
    assert "non_blocking=True" in check["remedy"]


def test_non_blocking_copies_and_unpinned_loaders_pass():
    assert check_file(SCRIPTS / "pinned_non_blocking.py") == []
    assert check_script(SCRIPTS / "pinned_non_blocking.py")["status"] == "pass"


def test_the_cli_reports_it(tmp_path):
    res = call_envkit("doctor", "--script", str(SCRIPTS / "pinned_blocking.py"), "--json", timeout=120)
    doc = json.loads(res.stdout)
    check = next(c for c in doc["checks"] if c["name"].startswith("script:"))
    assert check["status"] == "warn" and "line 18" in check["message"]
