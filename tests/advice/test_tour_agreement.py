"""generate's warnings, the baked expectation and the harness agree on the README's tour profile.

Given the same CPUs, all three plan the same workers and ask for the same /dev/shm, and no remedy
recommends a size below the need it printed.
"""

from __future__ import annotations

import json
import re

import pytest

from envkit.harness.checks.shm import check_shm
from envkit.harness.expectation import resolve_loader
from envkit.harness.rules.sizing import MIB
from envkit.planner import build_plan
from envkit.profile import load_profile_bytes
from envkit.units import parse_size
from tests.conftest import ROOT

TOUR = """envkit: 1
name: tour
image:
  base: python:3.11-slim
  torch: {version: "2.5.1", variant: cpu}
run:
  cpus: 2
  memory: 2g
loader:
  num_workers: auto
  batch_size: 64
  sample_shape: [3, 224, 224]
"""


def test_the_tour_profile_is_the_readme_s():
    assert "$ cat envkit.yaml\n" + TOUR in (ROOT / "README.md").read_text()


def _asked(text: str, pattern: str) -> int:
    found = re.findall(pattern, text)
    assert found, text
    assert len(set(found)) == 1, found
    return parse_size(found[0])


@pytest.mark.parametrize("usable", [2, 16])  # this 2-CPU host's affinity; a big host's (the quota binds)
def test_generate_expectation_and_harness_agree_on_workers_and_shm(usable, tmp_path):
    loaded = load_profile_bytes(TOUR.encode(), "envkit.yaml", tmp_path)
    plan = build_plan(loaded)
    note = next(n for n in plan.notes if n.startswith("run.shm_size:"))
    sized = _asked(note, r"envkit sized it: (\S+) for")
    assert sized == plan.settings.shm_size >= plan.loader.shm_need > 0
    assert not any(w.startswith("run.shm_size:") for w in plan.warnings)
    # the harness in a container granted the same CPUs (the quota of run.cpus), reading the baked expectation
    expect = json.loads(plan.expectation)
    loader = resolve_loader(expect, usable=usable, quota=2.0)
    assert loader["node"] | {"facts": None} == plan.loader.as_json() | {"facts": None}
    assert loader["num_workers"] == plan.loader.workers == 1
    for shm_here, status in ((sized, "pass"), (64 * MIB, "fail")):  # the generated settings; Docker's default
        check = check_shm(loader, expect["run"], stats={"path": "/dev/shm", "size_bytes": shm_here,
                                                       "free_bytes": shm_here})
        assert check["status"] == status, check
        assert check["expected"]["required_bytes"] == plan.loader.shm_need
    assert "Docker's default" in check["message"]
    for size in re.findall(r"--shm-size=(\d+[kmgt]?)\b", check["remedy"]):
        assert parse_size(size) >= plan.loader.shm_need


def test_a_profile_shm_below_the_need_is_never_the_remedy(tmp_path):
    """A host /dev/shm larger than the profile's passes the loader, but the profile's own size is not the fix."""
    loaded = load_profile_bytes(TOUR.replace("memory: 2g", "memory: 2g\n  shm_size: 64m").replace("cpus: 2", "cpus: 4")
                                .encode(), "e.yaml", tmp_path)
    expect = json.loads(build_plan(loaded).expectation)
    check = check_shm(resolve_loader(expect, usable=4), expect["run"],
                      stats={"path": "/dev/shm", "size_bytes": 24 << 30, "free_bytes": 24 << 30})
    assert check["status"] == "warn" and "--shm-size=64m" not in check["remedy"]
    assert "run.shm_size: 512m" in check["remedy"]
