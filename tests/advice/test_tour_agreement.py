"""generate's warnings, the baked expectation and the harness agree on the README's tour profile.

Given the same CPUs, all three plan the same workers and ask for the same /dev/shm, and no remedy
recommends a size below the need it printed.
"""

from __future__ import annotations

import json
import re

import pytest

from envkit.harness.checks_sys import check_shm
from envkit.harness.expect import resolve_loader
from envkit.harness.sizing import MIB
from envkit.plan.envplan import build_plan
from envkit.profile import load_profile_bytes
from envkit.units import parse_size
from tests.conftest import ROOT

TOUR = """envkit: 1
name: tour
image:
  base: python:3.11-slim
  torch: {version: "2.5.1", variant: cpu}
run:
  cpuset: "0-3"
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


@pytest.mark.parametrize("cpus", [4, 2])  # the cpuset's CPUs (generate assumes them), and this 2-CPU host's
@pytest.mark.parametrize("shm_here", [64 * MIB, 24 << 30])  # Docker's default; a host's large /dev/shm
def test_generate_expectation_and_harness_agree_on_workers_and_shm(cpus, shm_here, tmp_path):
    loaded = load_profile_bytes(TOUR.encode(), "envkit.yaml", tmp_path)
    # generate on a host with `cpus` CPUs (without a host it assumes the cpuset's 4)
    plan = build_plan(loaded, host_cpus=None if cpus == 4 else cpus)
    shm_warning = next(w for w in plan.warnings if w.startswith("run.shm_size:"))
    gen_workers = int(re.search(r"that (\d+) DataLoader workers need", shm_warning).group(1))
    gen_ask = _asked(shm_warning, r"use shm_size: (\S+)")
    # the harness in a container granted the same CPUs, reading the baked expectation
    expect = json.loads(plan.expectation)
    loader = resolve_loader(expect, usable=cpus)
    check = check_shm(loader, expect["run"], stats={"path": "/dev/shm", "size_bytes": shm_here, "free_bytes": shm_here})
    assert loader["num_workers"] == gen_workers == plan.loader.workers
    assert check["status"] in ("fail", "warn"), check  # the profile's 64 MiB is below the need either way
    harness_ask = _asked(check["remedy"], r"--shm-size=(\S+)")
    assert harness_ask == gen_ask
    need = check["expected"]["required_bytes"]
    assert need == plan.loader.shm_bytes
    for size in re.findall(r"(?:--shm-size=|shm_size: )(\d+[kmgt]?)\b", check["remedy"] + " " + shm_warning):
        assert parse_size(size) >= need, f"a remedy asks for {size}, below the {need} bytes it says are needed"


def test_a_profile_shm_below_the_need_is_never_the_remedy(tmp_path):
    """A host /dev/shm larger than the profile's passes the loader, but the profile's own size is not the fix."""
    loaded = load_profile_bytes(TOUR.replace("memory: 2g", "memory: 2g\n  shm_size: 64m").encode(), "e.yaml", tmp_path)
    expect = json.loads(build_plan(loaded).expectation)
    check = check_shm(resolve_loader(expect, usable=4), expect["run"],
                      stats={"path": "/dev/shm", "size_bytes": 24 << 30, "free_bytes": 24 << 30})
    assert check["status"] == "warn" and "--shm-size=64m" not in check["remedy"]
    assert "run.shm_size: 512m" in check["remedy"]
