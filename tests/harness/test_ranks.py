"""R loaders at once, one per rank of a node, with REAL DataLoaders (torch CPU, small shapes).

torchrun starts one DataLoader per rank; they share the node's CPUs and /dev/shm, so the
``loader`` check starts R of them together and fails when any one does, naming it.
"""

import json
import os

import pytest

from envkit.harness.cli import main
from envkit.harness.expectation import resolve_loader
from envkit.harness.checks.loader import check_loader
from envkit.harness.runtime.shmwatch import alive
from envkit.harness.rules.sizing import batch_bytes

from tests.harness.conftest import small_shm
from tests.procs import child_pids, group_pids


def settings(ranks, dataset=None, **loader):
    base = {"num_workers": 1, "batch_size": 8, "sample_shape": [3, 32, 32], "prefetch_factor": 2}
    base.update(loader)
    s = resolve_loader({"envkit_expect": 1, "loader": base}, usable=2, dataset=dataset)
    s["ranks_per_node"] = ranks
    return s


def assert_nothing_outlives(check):
    m = check["measured"]
    assert len(m["child_pids"]) == m["concurrent_loaders"]
    for pgid in m["child_pids"]:
        assert group_pids(pgid) == [], f"a process of loader {pgid}'s group (or a zombie) survived"
        assert pgid not in child_pids(os.getpid())


@pytest.mark.slow  # real DataLoader workers (or a whole script) run: the slow tier, which CI runs
def test_two_ranks_run_two_loaders_at_once():
    c = check_loader(settings(2), timeout=30, quick=True)
    assert c["status"] == "pass", c["message"]
    m = c["measured"]
    assert m["concurrent_loaders"] == 2 and c["expected"]["ranks_per_node"] == 2
    assert m["peak_shm_bytes"] > 0  # the workers' batches were in /dev/shm
    assert c["message"].startswith("2 loaders at once, 1 worker each: ")
    assert [r["batches"] for r in m["per_rank"]] == [m["batches"]] * 2
    assert m["samples"] == sum(r["samples"] for r in m["per_rank"])
    assert m["leftover_processes"] == []
    assert_nothing_outlives(c)


@pytest.mark.slow  # real DataLoader workers (or a whole script) run: the slow tier, which CI runs
def test_shm_for_one_loader_fails_two(need_unshare, run_cli, write_expect):
    """A 14 MiB /dev/shm holds one loader's full pipeline (3 batches of 3 MiB: 1 worker x prefetch 2, plus the
    one the step holds), not two: the node passes with one rank and fails with the two it will run."""
    loader = {"num_workers": 1, "batch_size": 16, "sample_shape": [3, 128, 128], "dtype": "float32",
              "prefetch_factor": 2}
    expect = write_expect(loader)
    batch = batch_bytes(16, [3, 128, 128], "float32")
    checks = {}
    for ranks in (1, 2):
        p = run_cli("--json", "--quick", "--timeout", "30", "--ranks", str(ranks), "--expect", expect,
                    prefix=small_shm("14m"))
        assert p.returncode in (0, 1), p.stderr
        checks[ranks] = {c["name"]: c for c in json.loads(p.stdout)["checks"]}["loader"]
    one, two = checks[1], checks[2]
    assert one["status"] == "pass", one["message"]
    assert one["measured"]["concurrent_loaders"] == 1 and "loaders at once" not in one["message"]
    assert one["measured"]["peak_shm_bytes"] - one["measured"]["shm_used_before_bytes"] >= 3 * batch
    assert two["status"] == "fail" and two["measured"]["failure"] == "shm_exhausted", two["measured"]
    assert two["measured"]["concurrent_loaders"] == 2 and two["measured"]["failed_rank"] in (0, 1)
    assert two["message"].startswith(f"2 loaders at once, 1 worker each: rank {two['measured']['failed_rank']} failed: ")
    assert "2 loaders need" in two["message"] and "--shm-size=" in two["remedy"]
    assert two["measured"]["leftover_processes"] == []


@pytest.mark.slow  # real DataLoader workers (or a whole script) run: the slow tier, which CI runs
def test_a_hanging_rank_fails_the_check_and_nothing_outlives_it():
    c = check_loader(settings(2, "harness_datasets:rank1_hangs"), timeout=3, quick=True)
    assert c["status"] == "fail"
    m = c["measured"]
    assert m["failure"] == "hang" and m["failed_rank"] == 1 and m["failed_ranks"] == [1]
    assert "rank 1 failed: no batch arrived within 3 s" in c["message"]
    assert m["leftover_processes"] == []
    assert_nothing_outlives(c)


@pytest.mark.slow  # real DataLoader workers (or a whole script) run: the slow tier, which CI runs
def test_a_rank_killed_mid_run_fails_the_check_and_its_workers_go_too():
    c = check_loader(settings(2, "harness_datasets:rank1_killed"), timeout=10, quick=True)
    assert c["status"] == "fail"
    m = c["measured"]
    assert m["failed_rank"] == 1 and m["returncode"] == -9, m
    assert m["leftover_processes"] == []
    assert_nothing_outlives(c)


@pytest.mark.slow  # real DataLoader workers (or a whole script) run: the slow tier, which CI runs
def test_a_worker_escaping_one_ranks_group_is_reported_and_killed():
    c = check_loader(settings(2, "harness_datasets:rank1_escapes"), timeout=30, quick=True)
    escaped = c["measured"]["leftover_processes"]
    assert escaped, c["measured"]  # the setsid sleeper of rank 1's worker, outside every loader's group
    assert not any(alive(pid) for pid in escaped)
    assert_nothing_outlives(c)


@pytest.mark.parametrize("value", ["0", "65", "-1"])
def test_ranks_out_of_range_is_a_usage_error(value, capsys):
    assert main(["--ranks", value, "--quick"]) == 2
    assert "--ranks must be an integer from 1 to 64" in capsys.readouterr().err


@pytest.mark.slow  # real DataLoader workers (or a whole script) run: the slow tier, which CI runs
def test_the_expectations_ranks_run_that_many_loaders(run_cli, write_expect):
    """An expectation whose profile plans 2 ranks per node (run.ranks_per_node) proves 2 loaders at once."""
    expect = write_expect({"num_workers": 1, "batch_size": 8, "sample_shape": [3, 16, 16]}, run={"ranks_per_node": 2})
    p = run_cli("--json", "--quick", "--expect", expect)
    assert p.returncode in (0, 1), p.stderr
    loader = {c["name"]: c for c in json.loads(p.stdout)["checks"]}["loader"]
    assert loader["measured"]["concurrent_loaders"] == 2, loader["measured"]
    assert loader["message"].startswith("2 loaders at once, 1 worker each: ")
