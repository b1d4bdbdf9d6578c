"""cgroup v1/v2 quota parsing, WSL and container detection from fixture trees; the cpus check."""

from pathlib import Path

import pytest

from envkit.harness.probes import env as envmod
from envkit.harness.checks.system import check_cpus


def put(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


@pytest.mark.parametrize("cpu_max, want", [("150000 100000\n", 1.5), ("max 100000\n", None), ("400000 100000", 4.0)])
def test_cgroup_v2_cpu_max(tmp_path, cpu_max, want):
    put(tmp_path, "sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory pids\n")
    put(tmp_path, "sys/fs/cgroup/cpu.max", cpu_max)
    q = envmod.read_cgroup_cpu_quota(tmp_path)
    assert q["version"] == 2
    assert q["quota_cpus"] == want


def test_cgroup_v2_nested_path_takes_tightest_ancestor(tmp_path):
    put(tmp_path, "proc/self/cgroup", "0::/system.slice/docker-abc.scope\n")
    put(tmp_path, "sys/fs/cgroup/cgroup.controllers", "cpu\n")
    put(tmp_path, "sys/fs/cgroup/system.slice/docker-abc.scope/cpu.max", "200000 100000\n")
    put(tmp_path, "sys/fs/cgroup/system.slice/cpu.max", "50000 100000\n")
    q = envmod.read_cgroup_cpu_quota(tmp_path)
    assert q["quota_cpus"] == 0.5
    assert q["source"].endswith("system.slice/cpu.max")


@pytest.mark.parametrize("dirname", ["cpu", "cpu,cpuacct"])
def test_cgroup_v1_cfs_quota(tmp_path, dirname):
    put(tmp_path, f"sys/fs/cgroup/{dirname}/cpu.cfs_quota_us", "250000\n")
    put(tmp_path, f"sys/fs/cgroup/{dirname}/cpu.cfs_period_us", "100000\n")
    q = envmod.read_cgroup_cpu_quota(tmp_path)
    assert (q["version"], q["quota_cpus"]) == (1, 2.5)


def test_cgroup_v1_unlimited(tmp_path):
    put(tmp_path, "sys/fs/cgroup/cpu/cpu.cfs_quota_us", "-1\n")
    put(tmp_path, "sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000\n")
    assert envmod.read_cgroup_cpu_quota(tmp_path) == {"version": 1, "quota_cpus": None, "source": None}


def test_no_cgroup_fs(tmp_path):
    assert envmod.read_cgroup_cpu_quota(tmp_path)["version"] is None


def test_cpus_check_reads_cgroup_root_and_warns_that_torch_ignores_quota(tmp_path):
    put(tmp_path, "sys/fs/cgroup/cgroup.controllers", "cpu\n")
    put(tmp_path, "sys/fs/cgroup/cpu.max", "100000 100000\n")
    c = check_cpus({"num_workers": 2}, {}, usable=4, cgroup_root=str(tmp_path))
    assert c["status"] == "warn"
    assert c["measured"]["cgroup_quota_cpus"] == 1.0 and c["measured"]["effective_cpus"] == 1.0
    assert "sched_getaffinity" in c["message"] and "quota" in c["message"]


def test_cpus_check_statuses():
    none = {"version": 2, "quota_cpus": None, "source": None}
    assert check_cpus({"num_workers": 2}, {"cpuset_count": 4}, usable=4, quota=none)["status"] == "pass"
    fewer = check_cpus({"num_workers": 2}, {"cpuset_count": 8, "cpuset": "0-7"}, usable=4, quota=none)
    assert fewer["status"] == "fail" and "--cpuset-cpus=0-7" in fewer["remedy"]
    more = check_cpus({"num_workers": 2}, {"cpuset_count": 2}, usable=4, quota=none)
    assert more["status"] == "warn" and "not applied" in more["message"]
    over = check_cpus({"num_workers": 6}, {}, usable=4, quota=none)
    assert over["status"] == "warn" and "exceeds" in over["message"]
    quota_missing = check_cpus({"num_workers": 1}, {"cpus": 2.0}, usable=4, quota=none)
    assert quota_missing["status"] == "warn" and "--cpus=2.0" in quota_missing["remedy"]


@pytest.mark.parametrize("release, environ, want", [
    ("5.15.153.1-microsoft-standard-WSL2", {}, 2),
    ("4.4.0-19041-Microsoft", {}, 1),
    ("6.1.0-18-amd64", {}, None),
    ("6.6.0-custom", {"WSL_DISTRO_NAME": "Ubuntu"}, 2),
    # A custom WSL2 kernel: before, the harness said WSL1 here while doctor said WSL2.
    ("6.6.0-microsoft-custom", {}, 2),
])
def test_detect_wsl(tmp_path, release, environ, want):
    put(tmp_path, "proc/sys/kernel/osrelease", release + "\n")
    assert envmod.detect_wsl(tmp_path, environ=environ) == want


def test_detect_container(tmp_path):
    assert envmod.detect_container(tmp_path, environ={}) == {"detected": False, "how": []}
    put(tmp_path, ".dockerenv", "")
    put(tmp_path, "proc/1/cgroup", "0::/kubepods/besteffort/pod1/abc\n")
    c = envmod.detect_container(tmp_path, environ={})
    assert c["detected"] and "/.dockerenv" in c["how"] and "cgroup:kubepods" in c["how"]


def test_environment_block_has_the_documented_keys():
    e = envmod.collect_environment()
    for key in ("os", "kernel", "wsl", "container", "python", "torch", "cuda_available", "cpu_count",
                "usable_cpus", "cgroup", "start_method", "sharing_strategy", "uid", "user", "shm"):
        assert key in e, key
    assert e["usable_cpus"] >= 1 and e["shm"]["size_bytes"] > 0


def test_cpus_check_rounds_the_quota_up_as_the_plan_does():
    """--cpus=4.5 runs 5 processes at once: generate and the runtime plan 5 workers, so the check must accept them."""
    quota = {"version": 2, "quota_cpus": 4.5, "source": "cpu.max"}
    assert check_cpus({"num_workers": 5}, {}, usable=8, quota=quota)["status"] == "pass"
    over = check_cpus({"num_workers": 6}, {}, usable=8, quota=quota)
    assert over["status"] == "warn" and "num_workers <= 4" in over["remedy"]


def test_too_many_workers_on_one_cpu_are_told_the_sizing_rules_zero():
    """One CPU is the training loop's (sizing.plan_workers gives 0): the remedy must not say "<= 1"."""
    over = check_cpus({"num_workers": 2}, {}, usable=1, quota=None)
    assert over["status"] == "warn" and "use num_workers: 0" in over["remedy"], over["remedy"]
