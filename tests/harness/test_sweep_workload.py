"""--sweep measures the workload: bounded by the CPUs for the ranks, over samples that cost CPU.

The sweeps run real DataLoaders on small shapes; what they assert is the bound and the cost's
plumbing, never a speed (a CPU-time floor is not a timing: a thread cannot finish its work in
less CPU time than the work takes).
"""

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from envkit.harness.checks import sweep
from envkit.harness.runner import run_checks
from envkit.harness.errors import UsageError
from envkit.harness.expectation import ExpectError, resolve_loader, validate_expect
from envkit.harness.checks.synthetic import SyntheticDataset
from envkit.harness.rules.defaults import DEFAULT_SAMPLE_COST_MS

SRC = str(Path(__file__).resolve().parents[2] / "src")

TINY = {"envkit_expect": 1, "loader": {"batch_size": 4, "sample_shape": [4], "prefetch_factor": 1,
                                       "sample_cost_ms": 2}}


def test_bound_and_counts_follow_the_rule():
    # max(0, floor(C / R) - 1) workers per rank; counts tried up to max(bound, 1) + 1
    assert [sweep.worker_bound(c, r) for c, r in ((2, 1), (1, 1), (16, 8), (32, 8), (2, 2), (3, 2))] == \
        [1, 0, 1, 3, 0, 0]
    assert sweep.worker_counts(0) == [0, 1, 2] and sweep.worker_counts(1) == [0, 1, 2]
    assert sweep.worker_counts(15) == [0, 1, 2, 4, 8, 15, 16]
    assert max(sweep.worker_counts(100)) == sweep.MAX_WORKERS
    assert sweep.cpu_facts(8, 2.5, 1)["cpus"] == 3 and sweep.cpu_facts(8, 2.5, 1)["cpus_source"] == "cgroup_quota"


# A subprocess with its affinity set, so the harness reads exactly that many CPUs.
SWEEP_CHILD = r"""
import json, os, sys
os.sched_setaffinity(0, set(json.loads(sys.argv[1])))
from envkit.harness.probes import env
from envkit.harness.checks import sweep
from envkit.harness.expectation import resolve_loader
expect = json.loads(sys.argv[2])
s = resolve_loader(expect, usable=env.usable_cpus())
c = sweep.check_workers_sweep(s, usable=env.usable_cpus(), quota=None, quick=True, timeout=60)
print(json.dumps(c))
"""


def _sweep_with_affinity(cpus: list[int], expect: dict) -> dict:
    p = subprocess.run([sys.executable, "-c", SWEEP_CHILD, json.dumps(cpus), json.dumps(expect)],
                       env=dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [SRC, os.environ.get("PYTHONPATH")]))),
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


def _mask(n: int) -> list[int]:
    have = sorted(os.sched_getaffinity(0))
    if len(have) < n:
        pytest.skip(f"needs {n} CPUs in this process's affinity mask, has {len(have)}")
    return have[:n]


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs sched_setaffinity (Linux)")
@pytest.mark.slow  # real DataLoader workers (or a whole script) run: the slow tier, which CI runs
def test_two_cpus_one_rank_recommend_at_most_one_worker():
    c = _sweep_with_affinity(_mask(2), TINY)
    m = c["measured"]
    assert m["cpus"] == 2 and m["ranks_per_node"] == 1 and c["expected"]["max_workers_per_rank"] == 1
    assert [r["num_workers"] for r in m["table"]] == [0, 1, 2]  # no count past max(1, 1) + 1 is tried
    assert m["recommended"] == 1  # 0 would load between the training steps; 2 is past the bound
    assert "at most 1 worker per rank, max(0, floor(2 / 1) - 1)" in c["message"]
    assert "synthetic samples costing 2 ms of CPU each" in c["message"]


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs sched_setaffinity (Linux)")
@pytest.mark.slow  # real DataLoader workers (or a whole script) run: the slow tier, which CI runs
def test_one_cpu_recommends_no_worker():
    c = _sweep_with_affinity(_mask(1), TINY)
    m = c["measured"]
    assert m["cpus"] == 1 and c["expected"]["max_workers_per_rank"] == 0
    assert max(r["num_workers"] for r in m["table"]) == 2  # max(0, 1) + 1
    assert m["recommended"] == 0  # max(0, floor(1 / 1) - 1)
    assert "at most 0 workers per rank" in c["message"] and "1 CPU (the affinity mask" in c["message"]


@pytest.mark.slow  # real DataLoader workers (or a whole script) run: the slow tier, which CI runs
def test_quota_and_ranks_bound_the_recommendation():
    # 2 CPUs by affinity, but a quota of 1 CPU; and separately 2 CPUs shared by 2 ranks: no worker either way
    s = resolve_loader(TINY, usable=2)
    by_quota = sweep.check_workers_sweep(s, usable=2, quota=1.0, quick=True, timeout=60, counts=[0, 1])
    assert by_quota["measured"]["recommended"] == 0 and by_quota["measured"]["cpus_source"] == "cgroup_quota"
    assert "cgroup quota of 1 CPU, rounded up" in by_quota["message"]
    s["ranks_per_node"] = 2
    by_ranks = sweep.check_workers_sweep(s, usable=2, quota=None, quick=True, timeout=60, counts=[0, 1])
    assert by_ranks["measured"]["recommended"] == 0 and by_ranks["measured"]["ranks_per_node"] == 2
    assert "floor(2 / 2) - 1" in by_ranks["message"]


def test_synthetic_samples_burn_their_cost_in_cpu_time():
    ds = SyntheticDataset(11, [2], "float32", sample_cost_ms=5)
    SyntheticDataset(1, [2])[0]  # imports torch, outside the measured CPU time
    t0 = time.process_time()
    for i in range(10):
        ds[i]
    assert time.process_time() - t0 >= 10 * 0.005  # CPU time: a sleeping sample would cost ~0
    assert SyntheticDataset(1, [2]).sample_cost_ms == 0  # the loader check's pipeline stays free


@pytest.mark.slow  # real DataLoader workers (or a whole script) run: the slow tier, which CI runs
def test_sweep_runs_the_cost_in_its_loaders():
    # 0 workers: every sample is burnt on the loader's one thread, so no more than 1000 / 20 per second
    # of wall time can come out (the CPU-time floor of the samples; no upper limit on time is asserted)
    s = resolve_loader(dict(TINY, loader=dict(TINY["loader"], sample_cost_ms=20)), usable=1)
    c = sweep.check_workers_sweep(s, usable=1, quick=True, timeout=60, counts=[0])
    row = c["measured"]["table"][0]
    assert row["samples_per_s"] is not None and row["samples_per_s"] <= 1000 / 20
    assert c["measured"]["sample_cost_ms"] == 20 and "costing 20 ms of CPU each" in c["message"]


def test_user_dataset_is_named_as_measured():
    s = resolve_loader(TINY, usable=1, dataset="harness_datasets:ok")
    assert sweep.measured_what(s) == "your dataset harness_datasets:ok"
    s0 = resolve_loader(dict(TINY, loader=dict(TINY["loader"], sample_cost_ms=0)), usable=1)
    assert sweep.measured_what(s0).startswith("free synthetic samples")


def test_expectation_carries_and_checks_the_cost():
    assert resolve_loader(None, usable=2)["sample_cost_ms"] == DEFAULT_SAMPLE_COST_MS
    assert resolve_loader(TINY, usable=2)["sample_cost_ms"] == 2
    for bad in (-1, 10001, True, "5", math.inf):
        with pytest.raises(ExpectError, match="loader.sample_cost_ms must be a number of milliseconds from 0"):
            validate_expect({"envkit_expect": 1, "loader": {"sample_cost_ms": bad}})


def test_profile_key_reaches_the_expectation():
    from envkit.plan.expectfile import expectation
    from envkit.profile.model import Profile
    from tests.conftest import plan_of

    base = {"envkit": 1, "name": "d", "image": {"base": "debian:bookworm"}}
    p = Profile.model_validate(base)
    plan = plan_of(p)
    assert expectation(p, plan.settings, plan.loader)["loader"]["sample_cost_ms"] == DEFAULT_SAMPLE_COST_MS
    p = Profile.model_validate(dict(base, loader={"sample_cost_ms": 12.5}))
    plan = plan_of(p)
    assert expectation(p, plan.settings, plan.loader)["loader"]["sample_cost_ms"] == 12.5
    for bad in (-0.5, 10000.5, True, float("nan")):
        with pytest.raises(ValueError, match="sample_cost_ms"):
            Profile.model_validate(dict(base, loader={"sample_cost_ms": bad}))


def test_a_batch_that_cannot_arrive_within_the_timeout_is_refused():
    with pytest.raises(UsageError, match=r"one synthetic batch costs 160 s of CPU \(batch_size 32 x 5000 ms\)"):
        run_checks({"envkit_expect": 1, "loader": {"batch_size": 32}}, sweep=True, sample_cost_ms=5000, timeout=60)


@pytest.mark.parametrize("bad", ["abc", "-1", "nan", "inf", "10001"])
def test_invalid_sample_cost_option_exits_2(run_cli, bad):
    p = run_cli("--sweep", "--sample-cost-ms", bad)
    assert p.returncode == 2
    assert f"--sample-cost-ms: must be a number of milliseconds from 0 to 10000, got '{bad}'" in p.stderr
    assert "Traceback" not in p.stderr


def test_invalid_sample_cost_in_an_expectation_exits_2(run_cli, write_expect):
    p = run_cli("--sweep", "--expect", write_expect({"sample_cost_ms": -3}))
    assert p.returncode == 2 and "loader.sample_cost_ms must be a number of milliseconds" in p.stderr


@pytest.mark.slow  # real DataLoader workers (or a whole script) run: the slow tier, which CI runs
def test_envkit_harness_takes_the_profile_cost_and_the_override(tmp_path):
    from tests.conftest import run_envkit

    bad = run_envkit("harness", "--sweep", "--sample-cost-ms", "-2", cwd=tmp_path)
    assert bad.returncode == 2 and "--sample-cost-ms: must be a number of milliseconds from 0 to 10000" in bad.stderr
    profile = tmp_path / "p.yaml"
    profile.write_text("envkit: 1\nname: p\nimage: {base: 'debian:bookworm'}\nloader: {sample_cost_ms: -1}\n")
    bad = run_envkit("harness", "--profile", str(profile), "--sweep", cwd=tmp_path)
    assert bad.returncode == 2 and "sample_cost_ms" in bad.stderr and "Traceback" not in bad.stderr
