"""The pod both Kubernetes targets run, decided once from ``RunSettings`` and the ``ClusterPlan``.

``pod(ctx)`` returns a frozen ``Pod``: every value already decided and already
escaped for Kubernetes, which the pieces below turn into manifest data. The translation, against run.sh's ``docker run`` flags:

- ``--shm-size`` -> an ``emptyDir {medium: Memory, sizeLimit}`` at /dev/shm (the
  size the container would see; unsized under ``ipc: host``);
- ``--cpus``/``--cpuset-cpus`` -> whole CPUs, ``--memory`` -> memory, ``--gpus`` ->
  ``nvidia.com/gpu``, with requests == limits (the QoS class: ``qos_class``);
- the image user -> ``securityContext`` runAsUser/runAsGroup/fsGroup;
- ``--ulimit memlock`` -> the ``IPC_LOCK`` capability for a root pod (uid 0) only:
  Kubernetes has no ulimits, and for a non-zero runAsUser the runtime drops added
  capabilities from the effective set (kubernetes/kubernetes#56374), so a non-root
  pod gets the node runtime's memlock limit (a warning says so);
- ``--env`` -> ``env``; volumes -> PVCs from ``cluster.kubernetes.volumes``, and
  absolute ``run.volumes`` as hostPath when ``host_path_volumes`` is set.

Kubernetes expands ``$(VAR)`` in ``command``, ``args`` and env ``value``; ``$$``
is a literal ``$``, so every ``$`` from the profile is doubled (``kube_escape``).

The manifests are data: ``labels`` .. ``pod_volumes`` build the pieces both
targets share as dicts and lists, k8s.py and trainjob.py assemble their objects,
and ``envkit.render.to_kube_yaml`` dumps them (the templates add only the header
comment). Every text value goes out double-quoted in JSON spelling (which YAML
reads back exactly, with what YAML refuses raw escaped), so no profile value --
quotes, ``$``, ``: ``, ``#``, a leading ``-``, ``yes`` -- can change the
structure; envkit's own words are ``Word`` (plain). A property test and the
parse-back agreement test hold that.

Example:
    >>> kube_escape("p$w $(HOME)"), quantity(16 * 2**30), quantity(1500)
    ('p$$w $$(HOME)', '16Gi', '1500')
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from envkit.hostpaths import is_drive_path
from envkit.plan.cluster import ClusterAsk, ClusterPlan, Pull
from envkit.plan.envplan import EnvPlan
from envkit.plan.paths import CHECK_FILE, SHM_MOUNT
from envkit.render import DataMap, Flow, Word
from envkit.targets import GenContext
from envkit.findings import Finding

MASTER_PORT = 29500
QOS_DOC = "https://kubernetes.io/docs/concepts/workloads/pods/pod-qos/"
# Only these count for QoS: kubernetes/kubernetes pkg/apis/core/v1/helper/qos/qos.go supportedQoSComputeResources.
QOS_RESOURCES = ("cpu", "memory")
SHM_VOLUME = "dshm"
# Pod hostnames are "<job>-<index>" and TrainJob pods "<name>-node-0-<index>-<hash>": keep room under 63.
NAME_MAX = 40
HASH_HEX = 6


def kube_escape(text: str) -> str:
    """A literal for a field where Kubernetes expands ``$(VAR)``: ``$$`` reads back as ``$``."""
    return text.replace("$", "$$")


def quantity(n: int) -> str:
    """Bytes as a Kubernetes quantity: the largest binary suffix that divides exactly, else plain bytes."""
    for suffix, power in (("Ei", 60), ("Pi", 50), ("Ti", 40), ("Gi", 30), ("Mi", 20), ("Ki", 10)):
        if n and n % (1 << power) == 0:
            return f"{n >> power}{suffix}"
    return str(n)


def full_object_name(profile_name: str) -> str:
    """The profile's name as a DNS-1035 label (a Service name: starts with a letter), before any shortening.

    >>> full_object_name("3d.vision_train")
    'envkit-3d-vision-train'
    """
    name = re.sub(r"[^a-z0-9-]+", "-", profile_name.lower()).strip("-")
    return name if name[:1].isalpha() else "envkit-" + name


def object_name(profile_name: str) -> str:
    """``full_object_name``, or, over NAME_MAX characters, its prefix and a hash of the whole profile name.

    Cutting alone would give two long names that differ only at the end (``...-baseline-lr3e4`` and
    ``...-baseline-lr1e3``) one Job, Service and TrainJob, each run replacing the other's; the suffix
    (HASH_HEX hex digits of the name's sha256) keeps them apart.

    >>> object_name("3d.vision_train")
    'envkit-3d-vision-train'
    >>> a, b = object_name("imagenet-resnet50-ablation-baseline-lr3e4"), object_name("imagenet-resnet50-ablation-baseline-lr1e3")
    >>> a, len(a), a != b
    ('imagenet-resnet50-ablation-baseli-fbe776', 40, True)
    """
    name = full_object_name(profile_name)
    if len(name) <= NAME_MAX:
        return name
    digest = hashlib.sha256(profile_name.encode()).hexdigest()[:HASH_HEX]
    return f"{name[:NAME_MAX - HASH_HEX - 1].rstrip('-')}-{digest}"


@dataclass(frozen=True)
class Volume:
    """A pod volume and its one mount. ``kind``: emptyDir | persistentVolumeClaim | hostPath."""

    name: str
    kind: str
    mount: str
    read_only: bool = False
    size_limit: str | None = None  # emptyDir
    claim: str | None = None  # persistentVolumeClaim
    path: str | None = None  # hostPath


@dataclass(frozen=True)
class Pod:
    name: str
    namespace: str
    labels: tuple[tuple[str, str], ...]
    image: str
    workdir: str
    env: tuple[tuple[str, str], ...]
    resources: tuple[tuple[str, str], ...]  # requests == limits
    run_as_user: int
    run_as_group: int
    capabilities: tuple[str, ...]
    volumes: tuple[Volume, ...]
    node_selector: tuple[tuple[str, str], ...]
    tolerations: tuple[tuple[tuple[str, object], ...], ...]
    service_account: str | None
    plan: ClusterPlan
    # The preflight: the harness with the profile's baked expectation (on the image's PATH).
    check_command: tuple[str, ...] = (CHECK_FILE,)

    @property
    def master_addr(self) -> str:
        """Pod index 0 through the headless Service: ``<job>-0.<service>``."""
        return f"{self.name}-0.{self.name}"


def resources(memory: int | None, plan: ClusterPlan) -> tuple[tuple[str, str], ...]:
    """requests == limits for every resource asked (``memory``: bytes per node, None: no limit)."""
    out: list[tuple[str, str]] = []
    if plan.cpus is not None:
        out.append(("cpu", str(plan.cpus)))
    if memory is not None:
        out.append(("memory", quantity(memory)))
    if plan.gpus_per_node:
        out.append(("nvidia.com/gpu", str(plan.gpus_per_node)))
    if plan.rdma_resource:  # the RDMA device plugin's devices (/dev/infiniband), one per pod
        out.append((plan.rdma_resource, "1"))
    return tuple(out)


def qos_class(containers: Iterable[tuple[Mapping[str, str], Mapping[str, str]]]) -> str:
    """The pod's QoS class from each container's (requests, limits), by the rule of
    https://kubernetes.io/docs/concepts/workloads/pods/pod-qos/ (init containers count too):

    - Guaranteed: every container has a cpu and a memory request and limit, each request == its limit;
    - BestEffort: no container has a cpu or memory request or limit;
    - Burstable: any other pod.

    Only cpu and memory count (``QOS_RESOURCES``): an extended resource such as ``nvidia.com/gpu``
    does not make a pod Burstable (kubernetes/kubernetes pkg/apis/core/v1/helper/qos/qos.go,
    ``supportedQoSComputeResources``). Requests are read as the API server stores them: a limit
without a request gets the limit as its request. Quantities compare as envkit writes them
(one spelling each).

    >>> gpu = {"nvidia.com/gpu": "8"}
    >>> qos_class([(gpu, gpu)]), qos_class([({"cpu": "2"}, {"cpu": "2"})])
    ('BestEffort', 'Burstable')
    >>> full = {"cpu": "2", "memory": "1Gi", **gpu}
    >>> qos_class([(full, full), (full, full)])
    'Guaranteed'
    """
    pairs = []
    for req, lim in containers:
        limits = {k: v for k, v in lim.items() if k in QOS_RESOURCES}
        pairs.append(({**limits, **{k: v for k, v in req.items() if k in QOS_RESOURCES}}, limits))
    if not any(req or lim for req, lim in pairs):
        return "BestEffort"
    if all(set(req) == set(lim) == set(QOS_RESOURCES) and req == lim for req, lim in pairs):
        return "Guaranteed"
    return "Burstable"


def volumes(ctx: GenContext) -> tuple[Volume, ...]:
    rs, k = ctx.settings, ctx.plan.require_cluster().kubernetes
    shm = rs.effective_shm
    out = [Volume(SHM_VOLUME, "emptyDir", SHM_MOUNT, size_limit=quantity(shm) if shm is not None else None)]
    out += [Volume(f"claim-{i}", "persistentVolumeClaim", v.mount, v.read_only, claim=v.claim)
            for i, v in enumerate(k.volumes)]
    if k.host_path_volumes:
        # The project folder, relative paths and Windows drive paths live on the workstation only.
        host = [v for v in rs.volumes if not v.project and not v.is_relative and not is_drive_path(v.source)]
        out += [Volume(f"host-{i}", "hostPath", v.target, v.mode is not None and "ro" in v.mode.split(","),
                       path=v.source) for i, v in enumerate(host)]
    return tuple(out)


def pod(ctx: GenContext) -> Pod:
    spec = ctx.plan.image.spec
    plan = ctx.plan.require_cluster()
    k = plan.kubernetes
    name = object_name(spec.name)
    return Pod(
        name=name,
        namespace=k.namespace,
        labels=(("app.kubernetes.io/name", name), ("app.kubernetes.io/managed-by", "envkit")),
        image=plan.image,
        workdir=spec.workdir,
        env=tuple((key, kube_escape(value)) for key, value in ctx.settings.env),
        resources=resources(ctx.settings.memory, plan),
        run_as_user=spec.user.uid,
        run_as_group=spec.user.gid,
        capabilities=("IPC_LOCK",) if any(u.name == "memlock" for u in ctx.settings.ulimits) and spec.user.uid == 0 else (),
        volumes=volumes(ctx),
        node_selector=k.node_selector,
        tolerations=k.tolerations,
        service_account=k.service_account,
        plan=plan,
    )


def labels(p: Pod) -> dict:
    return {"labels": DataMap(p.labels)}


def metadata(p: Pod) -> dict:
    return {"name": p.name, "namespace": p.namespace, **labels(p)}


def env(p: Pod) -> dict:
    return {"env": [{"name": name, "value": value} for name, value in p.env]} if p.env else {}


def container_resources(p: Pod, key: str = "resources") -> dict:
    """requests == limits (two equal mappings, never one YAML alias)."""
    return {key: {"requests": DataMap(p.resources), "limits": DataMap(p.resources)}} if p.resources else {}


def capabilities(p: Pod) -> dict:
    return {"securityContext": {"capabilities": {"add": Flow(p.capabilities)}}} if p.capabilities else {}


def mounts(p: Pod) -> dict:
    return {"volumeMounts": [{"name": v.name, "mountPath": v.mount, **({"readOnly": True} if v.read_only else {})}
                             for v in p.volumes]}


def scheduling(p: Pod) -> dict:
    """serviceAccountName, nodeSelector and tolerations, each where the profile sets it."""
    out: dict = {}
    if p.service_account:
        out["serviceAccountName"] = p.service_account
    if p.node_selector:
        out["nodeSelector"] = DataMap(p.node_selector)
    if p.tolerations:
        out["tolerations"] = [dict(t) for t in p.tolerations]
    return out


def pod_security(p: Pod) -> dict:
    return {"securityContext": {"runAsUser": p.run_as_user, "runAsGroup": p.run_as_group, "fsGroup": p.run_as_group}}


def _volume_source(v: Volume) -> dict:
    if v.kind == "emptyDir":
        return {"emptyDir": {"medium": Word("Memory"), **({"sizeLimit": v.size_limit} if v.size_limit else {})}}
    if v.kind == "persistentVolumeClaim":
        return {"persistentVolumeClaim": {"claimName": v.claim, **({"readOnly": True} if v.read_only else {})}}
    return {"hostPath": {"path": v.path, "type": Word("Directory")}}


def pod_volumes(p: Pod) -> dict:
    return {"volumes": [{"name": v.name, **_volume_source(v)} for v in p.volumes]}


KUBE = "Kubernetes (k8s, trainjob)"
# Where a node pulls the image from, the same remedy for every reason it cannot.
PUSH = "push it where they pull from (envkit build --tag REG/IMG:TAG && docker push REG/IMG:TAG) and name it in cluster.image"
_PULL = {
    Pull.LOCAL_ONLY: "is a local-only name (the image envkit builds here), which nodes cannot pull",
    Pull.DOCKER_HUB: "names no registry host, so nodes will look for it on Docker Hub",
}


def _cpuset(plan: EnvPlan, a: ClusterAsk) -> Iterator[Finding]:
    if a.cpuset:
        yield Finding("run.cpuset", f"{KUBE} cannot pin specific cores ({a.cpuset}); each pod asks for whole CPUs with "
                      "requests == limits, which gets exclusive cores only where the node's kubelet runs the static "
                      "CPU manager policy")


def _numa(plan: EnvPlan, a: ClusterAsk) -> Iterator[Finding]:
    if isinstance(a.numa, int):
        # kubernetes.io/docs/tasks/administer-cluster/topology-manager/: the Topology Manager aligns what its
        # hint providers report; memory is one only under the Memory Manager's Static policy
        # (.../memory-manager/, "Static policy"); the CPU Manager's static policy provides the CPUs.
        yield Finding("run.numa", f"{KUBE} cannot name a pod's memory node (--cpuset-mems={a.numa}); on a node whose "
                      "kubelet runs the Topology Manager (policy single-numa-node) a Guaranteed pod's CPUs and GPUs "
                      "share one NUMA node where the CPU Manager's static policy runs, and its memory too only where "
                      "the Memory Manager's Static policy runs")


def _qos(plan: EnvPlan, a: ClusterAsk) -> Iterator[Finding]:
    if plan.cluster is None:
        return
    asked = dict(resources(plan.settings.memory, plan.cluster))
    qos = qos_class([(asked, asked)])  # every container of the pod asks the same
    if qos == "Guaranteed":
        return
    missing = [key for key, given in (("run.cpus", "cpu" in asked), ("run.memory", "memory" in asked)) if not given]
    lacks = [what for key, what in (("run.cpus", "no exclusive cores"), ("run.memory", "/dev/shm bounded by no memory limit"))
             if key in missing]
    yield Finding(missing[0], f"{' and '.join(missing)} not set, so pods get {qos} QoS ({', '.join(lacks)}; "
                  f"the rule: {QOS_DOC}); set run.cpus and run.memory for Guaranteed QoS")


def _ulimits(plan: EnvPlan, a: ClusterAsk) -> Iterator[Finding]:
    uid = plan.image.spec.user.uid
    if "memlock" in a.ulimit_names and uid != 0:
        yield Finding("run.ulimits.memlock", f"{KUBE} cannot raise memlock for a non-root pod (image.user uid {uid}): the "
                      "runtime drops added capabilities such as IPC_LOCK for a non-zero runAsUser "
                      "(kubernetes/kubernetes#56374), so pods get the node runtime's limit (containerd's systemd unit: "
                      "LimitMEMLOCK=infinity), which the preflight checks")
    for name in (u for u in a.ulimit_names if u != "memlock"):
        yield Finding(f"run.ulimits.{name}", f"{KUBE} cannot set ulimits per pod (kubernetes#3595); pods get the node's "
                      "container-runtime default, which the preflight checks")


def _ipc(plan: EnvPlan, a: ClusterAsk) -> Iterator[Finding]:
    if a.ipc == "host":
        yield Finding("run.ipc", f"'host' is not used on {KUBE}: hostIPC would share the node's IPC namespace; pods get "
                      "an unsized Memory emptyDir at /dev/shm, bounded by the pod's memory limit; prefer ipc: private "
                      "with a sized shm_size")


def _gpu_ids(plan: EnvPlan, a: ClusterAsk) -> Iterator[Finding]:
    if a.gpu_ids_counted is not None:
        yield Finding("run.gpus", f"{KUBE} schedules GPU counts, not device ids; asking for {a.gpu_ids_counted} per node "
                      "(set cluster.gpus_per_node to say so)")


def _name(plan: EnvPlan, a: ClusterAsk) -> Iterator[Finding]:
    full, short = full_object_name(plan.image.spec.name), object_name(plan.image.spec.name)
    if full != short:
        yield Finding("name", f"the Kubernetes objects are named {short!r}, not {full!r}: a name is at most {NAME_MAX} "
                      "characters (pod hostnames add '-<index>' and TrainJob's '-node-0-<index>-<hash>' under 63), so it "
                      f"keeps a prefix and ends in {HASH_HEX} hex digits of the profile name's sha256, which keeps two "
                      "long names apart")


def _image(plan: EnvPlan, a: ClusterAsk) -> Iterator[Finding]:
    image = a.node_image
    if image.unpullable is not None:
        yield Finding(image.key, f"{image.ref!r} {_PULL[image.unpullable]}; {PUSH}")


def _volumes(plan: EnvPlan, a: ClusterAsk) -> Iterator[Finding]:
    if a.volume_specs and not a.host_path_volumes:
        yield Finding("run.volumes", f"{len(a.volume_specs)} host path(s) are not mounted on {KUBE}; use "
                      "cluster.kubernetes.volumes (PVCs), or host_path_volumes: true for paths every node has")
    elif a.host_path_volumes:
        for written in a.volume_specs:
            if not written.startswith("/"):
                yield Finding("run.volumes", f"{written.split(':')[0]!r} is relative to the profile's folder, which "
                              "nodes do not have; it is not mounted on the cluster")


def _code(plan: EnvPlan, a: ClusterAsk) -> Iterator[Finding]:
    # The image carries the code (image.copy_project; on by default with a cluster section) or a claim mounts it.
    spec = plan.image.spec
    workdir = spec.workdir.rstrip("/") or "/"
    mounted = any(workdir == m.rstrip("/") or workdir.startswith(m.rstrip("/") + "/") for m in a.claim_mounts)
    if not spec.copies_project and not mounted:
        what = " ".join(a.entrypoint[:2] if a.entrypoint[0].startswith("-") else a.entrypoint[:1])
        yield Finding("cluster.entrypoint", f"nodes run {what!r} from {workdir}, but the image carries no project code "
                      f"and no cluster.kubernetes.volumes entry mounts {workdir}; set image.copy_project: true (the code "
                      "goes into the image you push) or mount a claim holding it there")


# What the Kubernetes targets cannot express, in the order the warnings are said.
_RULES = (_cpuset, _numa, _qos, _ulimits, _ipc, _gpu_ids, _name, _image, _volumes, _code)


def kube_warnings(plan: EnvPlan) -> list[Finding]:
    """What the Kubernetes targets (k8s, trainjob) cannot express, one line each naming the profile key: the
    cluster rules the plan decides (:class:`~envkit.plan.cluster.ClusterAsk`) in Kubernetes' words, and the
    rules of Kubernetes alone (QoS, NUMA, memlock for a non-root pod, object names, volumes, the code).
    Called for a plan with a ``cluster:`` section only (the registry renders these targets for no other).

    >>> from pathlib import Path
    >>> from envkit.planner import build_plan
    >>> from envkit.profile import load_profile_bytes
    >>> lp = load_profile_bytes(b"envkit: 1\\nname: t\\nimage: {base: debian, tag: reg.io/t:1}\\n"
    ...     b"run: {cpuset: '0-3', memory: 8g}\\ncluster: {entrypoint: [t.py], kubernetes: "
    ...     b"{volumes: [{claim: code, mount: /workspace}]}}\\n", "t.yaml", Path("."))
    >>> [w.path for w in kube_warnings(build_plan(lp))]
    ['run.cpuset']
    """
    a = plan.cluster_ask
    assert a is not None, "a cluster target renders only for a profile with a cluster: section"
    return [finding for rule in _RULES for finding in rule(plan, a)]
