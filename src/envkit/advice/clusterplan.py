"""What every cluster node runs, decided once: nodes, GPUs and processes per node, whole CPUs, image.

The one place the cluster targets take their per-node counts from: the Kubernetes
targets (``k8s``, ``trainjob``, through ``envkit.targets.kube``) read a
``ClusterPlan``, and a Slurm target takes the same (``--nodes``,
``--gpus-per-node``, ``--ntasks-per-node``/torchrun ``--nproc-per-node``,
``--cpus-per-task``) from it. It is derived from the profile's ``cluster:``
section and the loader plan (:func:`envkit.advice.plan.plan`), whose CPU count
is the harness's rule, so a node gets what the workstation container gets.

Rules (each lives here only, or in the rule it names):

- GPUs per node: ``cluster.gpus_per_node`` when set; else ``run.gpus: N`` maps
  directly; else a list of device ids counts as that many GPUs (a cluster
  schedules counts, never ids); ``run.gpus: all`` without ``gpus_per_node`` is
  an error, since no count can be derived.
- Processes per node (torchrun ``--nproc-per-node``): one per GPU, else one.
- Whole CPUs: the loader plan's CPUs (``harness.sizing.cpu_limit``: the cpuset's
  count, capped by ``ceil(run.cpus)``), without the WSL VM's ``processors`` (a
  node is no WSL VM). Kubernetes gives exclusive cores only to whole-CPU,
  requests == limits pods.

Example:
    >>> from envkit.profile.model import Profile
    >>> p = Profile.model_validate({"envkit": 1, "name": "t", "image": {"base": "debian", "tag": "reg.io/t:1"},
    ...     "run": {"gpus": 2, "cpus": 7.5}, "cluster": {"nodes": 2, "entrypoint": ["train.py"]}})
    >>> cp = ClusterPlan.from_profile(p)
    >>> cp.nodes, cp.gpus_per_node, cp.nproc_per_node, cp.cpus, cp.image
    (2, 2, 2, 8, 'reg.io/t:1')
"""

from __future__ import annotations

from dataclasses import dataclass

from envkit.advice.plan import plan
from envkit.errors import ProfileError
from envkit.profile.model import Profile


@dataclass(frozen=True)
class ClusterPlan:
    """The per-node decisions shared by the cluster targets."""

    nodes: int
    gpus_per_node: int
    nproc_per_node: int
    cpus: int | None  # whole CPUs; None: no CPU limit asked
    image: str
    entrypoint: tuple[str, ...]

    @classmethod
    def from_profile(cls, p: Profile, source: str = "profile") -> "ClusterPlan":
        if p.cluster is None:
            raise ProfileError(f"{source}: the profile has no cluster: section",
                               hint="add cluster: {nodes: 2, entrypoint: [train.py]} (see docs/cluster.md)")
        c = p.cluster
        gpus = gpus_per_node(p, source)
        return cls(nodes=c.nodes, gpus_per_node=gpus, nproc_per_node=max(1, gpus), cpus=plan(p, wsl_vm=False).cpus,
                   image=c.image or p.image_tag, entrypoint=c.entrypoint)


def gpus_per_node(p: Profile, source: str = "profile") -> int:
    """GPUs each node asks for (see the module docstring for the rule).

    >>> from envkit.profile.model import Profile
    >>> base = {"envkit": 1, "name": "t", "image": {"base": "debian"}}
    >>> gpus_per_node(Profile.model_validate({**base, "run": {"gpus": [0, 3]}, "cluster": {"entrypoint": ["t.py"]}}))
    2
    """
    assert p.cluster is not None
    if p.cluster.gpus_per_node is not None:
        return p.cluster.gpus_per_node
    gpus = p.run.gpus
    if gpus == "none":
        return 0
    if isinstance(gpus, int):
        return gpus
    if gpus == "all":
        raise ProfileError(
            f"{source}: run.gpus: 'all' cannot be scheduled on a cluster, which hands out GPU counts; "
            "set cluster.gpus_per_node (e.g. 8)")
    return len(gpus)
