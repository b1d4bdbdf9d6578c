"""The cluster plan takes its CPU count from the one loader plan, not a copy of the rule."""

from __future__ import annotations

from envkit.plan.cluster import cluster_plan
from tests.conftest import loader_plan_of
from envkit.profile.model import Profile
from envkit.targets import TARGET_NAMES, required_section

BASE = {"envkit": 1, "name": "t", "image": {"base": "debian", "tag": "reg.io/t:1"},
        "cluster": {"nodes": 2, "gpus_per_node": 1, "entrypoint": ["train.py"]}}


def _profile(run: dict, **extra) -> Profile:
    return Profile.model_validate({**BASE, "run": run, **extra})


def test_cpus_are_the_loader_plans_cpuset_capped_by_quota():
    for run, cpus in (({"cpuset": "0-7", "cpus": 2.5}, 3), ({"cpuset": "0-3"}, 4), ({"cpus": 7.5}, 8), ({}, None)):
        p = _profile(run)
        assert cluster_plan(p).cpus == loader_plan_of(p).cpus == cpus, run


def test_a_wsl_vms_processors_do_not_bound_a_cluster_node():
    p = _profile({"cpus": 16}, wsl={"processors": 4})
    assert loader_plan_of(p).cpus == 4  # the workstation container inside the WSL VM
    assert cluster_plan(p).cpus == 16  # a node is no WSL VM


def test_the_registry_says_which_targets_need_the_cluster_section():
    needing = [t for t in TARGET_NAMES if required_section(t) is not None]
    assert needing and all(required_section(t) == "cluster" for t in needing)
    assert set(needing) < set(TARGET_NAMES)
