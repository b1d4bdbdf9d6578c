"""What every cluster node runs, decided once: nodes, GPUs and processes per node, whole CPUs, image.

The one place the cluster targets take their per-node counts from: the Kubernetes targets
(``k8s``, ``trainjob``, through ``envkit.targets.kube``) and the Slurm target read the
:class:`ClusterPlan` in the run's :class:`~envkit.plan.envplan.EnvPlan`.

Rules (each lives here only, or in the rule it names):

- GPUs per node: ``cluster.gpus_per_node`` when set; else ``run.gpus: N`` maps
  directly; else a list of device ids counts as that many GPUs (a cluster
  schedules counts, never ids); ``run.gpus: all`` without ``gpus_per_node`` is
  an error, since no count can be derived.
- Training processes per node (torchrun ranks, ``--nproc-per-node``; :func:`ranks_per_node`):
  ``cluster.procs_per_node`` when set; else one per GPU, else one. Without a ``cluster:``
  section the profile runs one training process. The loader plan sizes the node for them.
- Whole CPUs: the harness's rule (``harness.rules.sizing.cpu_limit``: the cpuset's count, capped by
  ``ceil(run.cpus)``), without the WSL VM's ``processors`` (a node is no WSL VM). Kubernetes
  gives exclusive cores only to whole-CPU, requests == limits pods.
- The registry host of the image nodes pull (:func:`registry_host`), None for Docker Hub.

The rules every cluster target words, each decided here once (:class:`ClusterAsk`), never in a target:

- the image nodes run (:class:`NodeImage`): ``cluster.image``, else the image's tag, and why nodes
  cannot pull it (:class:`Pull`: a local-only name, or no registry host so Docker Hub is asked);
- ``run.gpus`` as device ids without ``cluster.gpus_per_node``: a cluster schedules a count
  (:attr:`ClusterAsk.gpu_ids_counted`);
- ``run.cpuset``: a cluster schedules a number of CPUs, never cores (:attr:`ClusterAsk.cpuset`,
  ``cpuset_count``); ``run.ulimits``: no cluster runtime sets them per job as Docker does
  (:attr:`ClusterAsk.ulimit_names`).

Kubernetes and Slurm each say these in their own words (``envkit.targets.kube.kube_warnings``,
``envkit.targets.slurm.warnings``), and add the rules of their runtime alone.

Example:
    >>> from envkit.profile.model import Profile
    >>> p = Profile.model_validate({"envkit": 1, "name": "t", "image": {"base": "debian", "tag": "reg.io/t:1"},
    ...     "run": {"gpus": 2, "cpus": 7.5}, "cluster": {"nodes": 2, "entrypoint": ["train.py"]}})
    >>> cp = cluster_plan(p)
    >>> cp.nodes, cp.gpus_per_node, cp.nproc_per_node, cp.cpus, cp.image, cp.registry
    (2, 2, 2, 8, 'reg.io/t:1', 'reg.io')
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from envkit.errors import ProfileError
from envkit.harness.rules.sizing import cpu_fact
from envkit.plan.network import network_plan
from envkit.profile.dockerref import is_local_only
from envkit.profile.model import Profile
from envkit.profile.rules import node_gpu_count


@dataclass(frozen=True)
class ClaimVolume:
    """A PersistentVolumeClaim mounted at ``mount`` (cluster.kubernetes.volumes)."""

    claim: str
    mount: str
    read_only: bool


@dataclass(frozen=True)
class KubernetesPlan:
    """cluster.kubernetes, as the Kubernetes targets write it: tolerations as (key, value) pairs, unset keys left out."""

    namespace: str
    node_selector: tuple[tuple[str, str], ...]
    tolerations: tuple[tuple[tuple[str, object], ...], ...]
    service_account: str | None
    volumes: tuple[ClaimVolume, ...]
    host_path_volumes: bool


@dataclass(frozen=True)
class SlurmPlan:
    """cluster.slurm: the container runtime and the sbatch options the profile sets (None: unset)."""

    runtime: str
    partition: str | None
    account: str | None
    time: str | None
    bundle: str | None


@dataclass(frozen=True)
class ClusterPlan:
    """The per-node decisions shared by the cluster targets."""

    nodes: int
    gpus_per_node: int
    nproc_per_node: int
    cpus: int | None  # whole CPUs; None: no CPU limit asked
    image: str
    entrypoint: tuple[str, ...]
    registry: str | None  # the image's registry host; None: Docker Hub or local only
    kubernetes: KubernetesPlan
    slurm: SlurmPlan
    rdma_resource: str | None = None  # cluster.network.rdma_resource: one per pod (Kubernetes)

    @property
    def network_check(self) -> tuple[str, ...]:
        """The preflight's network stage, for a job of several nodes (each target adds where they meet)."""
        return ("--network",) if self.nodes > 1 else ()


class Pull(enum.Enum):
    """Why nodes cannot pull the image they are told to run."""

    LOCAL_ONLY = "local-only"  # a name only the machine that built it has (envkit's default, localhost/...)
    DOCKER_HUB = "docker-hub"  # no registry host: nodes look for it on Docker Hub


@dataclass(frozen=True)
class NodeImage:
    """The image every node runs: its reference, the profile key naming it (``cluster.image`` when the cluster
    section names it, else ``image.tag``, written or envkit's default) and why nodes cannot pull it (None:
    a registry reference they can reach)."""

    ref: str
    key: str
    unpullable: Pull | None

    @property
    def named(self) -> bool:
        """``cluster.image`` names it."""
        return self.key == "cluster.image"


def node_image(p: Profile) -> NodeImage:
    """The :class:`NodeImage` of a profile with a ``cluster:`` section.

    >>> p = Profile.model_validate({"envkit": 1, "name": "t", "image": {"base": "debian"},
    ...     "cluster": {"entrypoint": ["t.py"], "image": "team/t:1"}})
    >>> node_image(p)
    NodeImage(ref='team/t:1', key='cluster.image', unpullable=<Pull.DOCKER_HUB: 'docker-hub'>)
    >>> node_image(p.model_copy(update={"cluster": p.cluster.model_copy(update={"image": None})})).unpullable
    <Pull.LOCAL_ONLY: 'local-only'>
    """
    assert p.cluster is not None
    ref = p.cluster.image or p.image_tag
    unpullable = Pull.LOCAL_ONLY if is_local_only(ref) else Pull.DOCKER_HUB if registry_host(ref) is None else None
    return NodeImage(ref, "cluster.image" if p.cluster.image else "image.tag", unpullable)


@dataclass(frozen=True)
class ClusterAsk:
    """What a profile with a ``cluster:`` section asks of the run, as it writes it, and the rules every cluster
    target words (set whether or not the cluster can be planned). ``gpu_ids``: how many device ids
    ``run.gpus`` lists (None: a count, ``all`` or none); ``volume_specs``: run.volumes as written;
    ``node_image``: the image nodes run and whether they can pull it."""

    cpuset: str | None
    cpuset_count: int
    numa: int | str | None
    ulimit_names: tuple[str, ...]
    ipc: str | None
    gpu_ids: int | None
    env_names: tuple[str, ...]
    volume_specs: tuple[str, ...]
    gpus_per_node_set: bool
    node_image: NodeImage
    runtime: str
    host_path_volumes: bool
    claim_mounts: tuple[str, ...]
    entrypoint: tuple[str, ...]

    @property
    def gpu_ids_counted(self) -> int | None:
        """How many GPUs per node a cluster is asked for when ``run.gpus`` lists device ids and
        ``cluster.gpus_per_node`` does not say (a cluster schedules a count, never ids); None otherwise."""
        return self.gpu_ids if self.gpu_ids is not None and not self.gpus_per_node_set else None


def cluster_ask(p: Profile) -> ClusterAsk | None:
    """The :class:`ClusterAsk` of a profile (None without a ``cluster:`` section)."""
    c = p.cluster
    if c is None:
        return None
    run = p.run
    return ClusterAsk(
        cpuset=run.cpuset or None, cpuset_count=len(run.cpuset_cpus), numa=run.numa,
        ulimit_names=tuple(sorted({*run.ulimits, *(("memlock",) if network_plan(p).memlock_unlimited else ())})),
        ipc=run.ipc,
        gpu_ids=len(run.gpus) if isinstance(run.gpus, tuple) else None, env_names=tuple(run.env),
        volume_specs=tuple(run.volumes), gpus_per_node_set=c.gpus_per_node is not None, node_image=node_image(p),
        runtime=c.slurm.runtime, host_path_volumes=c.kubernetes.host_path_volumes,
        claim_mounts=tuple(v.mount for v in c.kubernetes.volumes), entrypoint=tuple(c.entrypoint))


def cluster_plan(p: Profile, source: str = "profile") -> ClusterPlan:
    """The cluster plan of a profile with a ``cluster:`` section (ProfileError without one)."""
    if p.cluster is None:
        raise ProfileError(f"{source}: the profile has no cluster: section",
                           hint="add cluster: {nodes: 2, entrypoint: [train.py]} (see docs/cluster.md)")
    c = p.cluster
    gpus = gpus_per_node(p, source)
    cpus = cpu_fact(("count", len(p.run.cpuset_cpus), "run.cpuset"), ("quota", p.run.cpus, "run.cpus"))[0]
    image = c.image or p.image_tag
    k, s = c.kubernetes, c.slurm
    kube = KubernetesPlan(
        namespace=k.namespace, node_selector=tuple(sorted(k.node_selector.items())),
        tolerations=tuple(tuple(t.model_dump(exclude_none=True).items()) for t in k.tolerations),
        service_account=k.service_account,
        volumes=tuple(ClaimVolume(v.claim, v.mount, v.read_only) for v in k.volumes),
        host_path_volumes=k.host_path_volumes)
    slurm = SlurmPlan(runtime=s.runtime, partition=s.partition, account=s.account, time=s.time, bundle=s.bundle)
    return ClusterPlan(nodes=c.nodes, gpus_per_node=gpus, nproc_per_node=ranks_per_node(p)[0], cpus=cpus,
                       image=image, entrypoint=c.entrypoint, registry=registry_host(image), kubernetes=kube,
                       slurm=slurm, rdma_resource=c.network.rdma_resource)


def ranks_per_node(p: Profile) -> tuple[int, str]:
    """Training processes (torchrun ranks) on each node, and where that number came from.

    >>> from envkit.profile.model import Profile
    >>> base = {"envkit": 1, "name": "t", "image": {"base": "debian"}}
    >>> ranks_per_node(Profile.model_validate(base))
    (1, 'one training process (no cluster: section)')
    >>> ranks_per_node(Profile.model_validate({**base, "cluster": {"gpus_per_node": 8, "entrypoint": ["t.py"]}}))
    (8, 'cluster.gpus_per_node 8: one training process per GPU')
    >>> ranks_per_node(Profile.model_validate({**base, "cluster": {"procs_per_node": 2, "entrypoint": ["t.py"]}}))
    (2, 'cluster.procs_per_node 2')
    """
    c = p.cluster
    if c is None:
        return 1, "one training process (no cluster: section)"
    if c.procs_per_node is not None:
        return c.procs_per_node, f"cluster.procs_per_node {c.procs_per_node}"
    try:
        gpus = gpus_per_node(p)
    except ProfileError:  # run.gpus: all without gpus_per_node: the cluster targets refuse it themselves
        return 1, "one training process (run.gpus: all gives no count; set cluster.procs_per_node)"
    if gpus == 0:
        return 1, "one training process (no GPUs; set cluster.procs_per_node for more)"
    key = "cluster.gpus_per_node" if c.gpus_per_node is not None else "run.gpus"
    return gpus, f"{key} {gpus}: one training process per GPU"


def gpus_per_node(p: Profile, source: str = "profile") -> int:
    """GPUs each node asks for (see the module docstring for the rule).

    >>> from envkit.profile.model import Profile
    >>> base = {"envkit": 1, "name": "t", "image": {"base": "debian"}}
    >>> gpus_per_node(Profile.model_validate({**base, "run": {"gpus": [0, 3]}, "cluster": {"entrypoint": ["t.py"]}}))
    2
    """
    assert p.cluster is not None
    count = node_gpu_count(p.cluster, p.run)
    if count is None:
        raise ProfileError(
            f"{source}: run.gpus: 'all' cannot be scheduled on a cluster, which hands out GPU counts; "
            "set cluster.gpus_per_node (e.g. 8)")
    return count


def registry_host(ref: str) -> str | None:
    """The registry host of an image reference, as Docker reads it (None: Docker Hub or local only).

    >>> registry_host("registry.example.com/ml/x:1"), registry_host("localhost:5000/x"), registry_host("team/x:1")
    ('registry.example.com', 'localhost:5000', None)
    """
    first, sep, _ = ref.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        return first
    return None
