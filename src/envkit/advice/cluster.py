"""Warnings for what the Kubernetes targets cannot express, one line each naming the profile key.

Read through the Kubernetes target modules' ``warnings`` when generate renders them for a
profile with a ``cluster:`` section. Errors (no GPU count derivable) are raised
by ``envkit.advice.clusterplan`` instead, since no manifest could be right.

Example:
    >>> from envkit.profile.model import Profile
    >>> p = Profile.model_validate({"envkit": 1, "name": "t", "image": {"base": "debian", "tag": "reg.io/t:1"},
    ...     "run": {"cpuset": "0-3", "memory": "8g"}, "cluster": {"entrypoint": ["t.py"],
    ...     "kubernetes": {"volumes": [{"claim": "code", "mount": "/workspace"}]}}})
    >>> [w.split(":")[0] for w in kube_warnings(p)]
    ['run.cpuset']
"""

from __future__ import annotations

from envkit.profile.model import Profile

KUBE = "Kubernetes (k8s, trainjob)"


def registry_host(ref: str) -> str | None:
    """The registry host of an image reference, as Docker reads it (None: Docker Hub or local only).

    >>> registry_host("registry.example.com/ml/x:1"), registry_host("localhost:5000/x"), registry_host("team/x:1")
    ('registry.example.com', 'localhost:5000', None)
    """
    first, sep, _ = ref.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        return first
    return None


def kube_warnings(p: Profile) -> list[str]:
    c = p.cluster
    if c is None:
        return []
    run, k = p.run, c.kubernetes
    out: list[str] = []
    if run.cpuset:
        out.append(f"run.cpuset: {KUBE} cannot pin specific cores ({run.cpuset}); each pod asks for "
                   "whole CPUs with requests == limits, which gets exclusive cores only where the node's "
                   "kubelet runs the static CPU manager policy")
    if isinstance(run.numa, int):
        out.append(f"run.numa: {KUBE} cannot name a pod's memory node (--cpuset-mems={run.numa}); the kubelet's "
                   "Topology Manager (policy single-numa-node) keeps a Guaranteed pod's CPUs, memory and GPUs "
                   "on one node")
    missing = [key for key, given in (("run.cpus", run.cpus is not None or run.cpuset is not None),
                                      ("run.memory", run.memory is not None)) if not given]
    if missing:
        out.append(f"{missing[0]}: {' and '.join(missing)} not set, so pods get Burstable QoS (no exclusive "
                   "cores, /dev/shm bounded by no memory limit); set run.cpus and run.memory for Guaranteed QoS")
    for name in (u for u in sorted(run.ulimits) if u != "memlock"):
        out.append(f"run.ulimits.{name}: {KUBE} cannot set ulimits per pod (kubernetes#3595); pods get the "
                   "node's container-runtime default, which the preflight checks")
    if run.ipc == "host":
        out.append(f"run.ipc: 'host' is not used on {KUBE}: hostIPC would share the node's IPC namespace; "
                   "pods get an unsized Memory emptyDir at /dev/shm, bounded by the pod's memory limit; prefer "
                   "ipc: private with a sized shm_size")
    if isinstance(run.gpus, tuple) and c.gpus_per_node is None:
        out.append(f"run.gpus: {KUBE} schedules GPU counts, not device ids; asking for {len(run.gpus)} per "
                   "node (set cluster.gpus_per_node to say so)")
    image = c.image or p.image_tag
    key = "cluster.image" if c.image else "image.tag"
    if registry_host(image) is None:
        out.append(f"{key}: {image!r} names no registry host, so nodes will look for it on Docker Hub; "
                   "push it where they pull from (envkit build --tag REG/IMG:TAG && docker push REG/IMG:TAG) "
                   "and name it in cluster.image")
    if run.volumes and not k.host_path_volumes:
        out.append(f"run.volumes: {len(run.volumes)} host path(s) are not mounted on {KUBE}; use "
                   "cluster.kubernetes.volumes (PVCs), or host_path_volumes: true for paths every node has")
    elif k.host_path_volumes:
        for spec in run.volumes:
            if not spec.startswith("/"):
                out.append(f"run.volumes: {spec.split(':')[0]!r} is relative to the profile's folder, which "
                           "nodes do not have; it is not mounted on the cluster")
    # The image carries the code (image.copy_project; on by default with a cluster section) or a claim mounts it.
    carries_code = p.copies_project
    workdir = p.image.workdir.rstrip("/") or "/"
    mounted = any(workdir == v.mount.rstrip("/") or workdir.startswith(v.mount.rstrip("/") + "/")
                  for v in k.volumes)
    if not carries_code and not mounted:
        what = " ".join(c.entrypoint[:2] if c.entrypoint[0].startswith("-") else c.entrypoint[:1])
        out.append(f"cluster.entrypoint: nodes run {what!r} from {workdir}, but the image carries "
                   f"no project code and no cluster.kubernetes.volumes entry mounts {workdir}; set "
                   "image.copy_project: true (the code goes into the image you push) or mount a claim holding it there")
    return out
