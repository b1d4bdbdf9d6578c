"""The cluster rules are decided once, in the plan (envkit.plan.cluster), and every cluster target says each
in its own words: Kubernetes (k8s, trainjob) and Slurm warn on the same key exactly when the plan's rule holds."""

from __future__ import annotations

import pytest

from envkit.plan.cluster import NodeImage, Pull
from envkit.profile.model import Profile
from envkit.targets.kube import kube_warnings
from envkit.targets.slurm import warnings as slurm_warnings
from tests.conftest import plan_of

IMAGE_KEYS = ("image.tag", "cluster.image")


def _profile(tag: str | None = None, cluster_image: str | None = None, runtime: str = "pyxis", **run) -> Profile:
    image = {"base": "debian:bookworm", **({"tag": tag} if tag else {})}
    cluster = {"entrypoint": ["t.py"], "slurm": {"runtime": runtime}, **({"image": cluster_image} if cluster_image else {})}
    return Profile.model_validate({"envkit": 1, "name": "rules", "image": image, "run": {"cpus": 4, "memory": "8g", **run},
                                   "cluster": cluster})


@pytest.mark.parametrize("tag, cluster_image, key, unpullable", [
    (None, None, "image.tag", Pull.LOCAL_ONLY),            # envkit's default tag: built here only
    ("reg.io/t:1", None, "image.tag", None),               # a pushed tag: nodes pull it (Slurm used to warn here)
    ("team/t:1", None, "image.tag", Pull.DOCKER_HUB),
    ("reg.io/t:1", "reg.io/x:1", "cluster.image", None),
    ("reg.io/t:1", "team/x:1", "cluster.image", Pull.DOCKER_HUB),
    ("reg.io/t:1", "localhost/x:1", "cluster.image", Pull.LOCAL_ONLY),
])
def test_whether_nodes_can_pull_the_image_is_decided_once_and_said_by_both_runtimes(tag, cluster_image, key, unpullable):
    plan = plan_of(_profile(tag, cluster_image))
    assert plan.cluster_ask is not None
    ref = cluster_image or tag or "localhost/envkit/rules:latest"
    assert plan.cluster_ask.node_image == NodeImage(ref, key, unpullable)
    kube = [w.path for w in kube_warnings(plan) if w.path in IMAGE_KEYS]
    slurm = [w.path for w in slurm_warnings(plan) if w.path in IMAGE_KEYS]
    assert kube == slurm == ([key] if unpullable else [])


def test_an_oci_bundle_is_made_here_so_slurm_says_nothing_of_pulling():
    plan = plan_of(_profile(runtime="oci"))
    assert plan.cluster_ask is not None and plan.cluster_ask.node_image.unpullable is Pull.LOCAL_ONLY
    assert [w.path for w in kube_warnings(plan) if w.path in IMAGE_KEYS] == ["image.tag"]
    assert not [w for w in slurm_warnings(plan) if w.path in IMAGE_KEYS]


@pytest.mark.parametrize("gpus_per_node, counted", [(None, 2), (4, None)])
def test_gpu_ids_are_counted_once_and_said_by_both_runtimes(gpus_per_node, counted):
    p = _profile("reg.io/t:1", gpus=[0, 3])
    if gpus_per_node:
        p = p.model_copy(update={"cluster": p.cluster.model_copy(update={"gpus_per_node": gpus_per_node})})
    plan = plan_of(p)
    assert plan.cluster_ask is not None and plan.cluster_ask.gpu_ids_counted == counted
    said = [[w for w in warn(plan) if w.path == "run.gpus"] for warn in (kube_warnings, slurm_warnings)]
    assert all(len(ws) == (1 if counted else 0) for ws in said), said
    assert all(f"asking for {counted} per node" in ws[0] for ws in said if ws)
