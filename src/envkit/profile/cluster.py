"""The ``cluster`` section: the same environment on several nodes (Kubernetes, Slurm).

Version 1, additive: a profile without ``cluster`` is unchanged. Key names are the
contract stated in the cluster issues; each is documented in docs/. Values that
land in manifests or shell scripts use conservative alphabets, so no profile value
can be read as YAML structure or shell syntax.

Example:
    >>> c = Cluster.model_validate({"nodes": 2, "gpus_per_node": 8, "entrypoint": ["train.py"],
    ...                             "slurm": {"partition": "gpu", "time": "04:00:00"}})
    >>> c.nodes, c.slurm.runtime, c.kubernetes.namespace
    (2, 'pyxis', 'default')
"""

# No `from __future__ import annotations`: the models' hints are evaluated once, by Python, at class
# creation, instead of by typing.get_type_hints at first validation, which every run would pay.

from typing import Annotated, Literal

from envkit.profile.typed import BaseModel, ConfigDict, Field

# An image reference as nodes pull it: [registry[:port]/]path[:tag][@sha256:...] (Docker's grammar, simplified
# to its alphabet; the engine-level grammar check lives with the other image-name checks).
ImageRef = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9._/:-]*(@sha256:[0-9a-f]{64})?$", max_length=255)]
# One argv word of the entrypoint: printable, no control characters (it is quoted by each target).
Word = Annotated[str, Field(pattern=r"^[^\x00-\x1f\x7f]*$", max_length=4096)]
# A Kubernetes DNS-1123 label (namespaces, service accounts, claim names).
Label = Annotated[str, Field(pattern=r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")]
# A label key ([prefix/]name) and value, as node selectors use them.
LabelKey = Annotated[str, Field(pattern=r"^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")]
LabelValue = Annotated[str, Field(pattern=r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")]
MountPath = Annotated[str, Field(pattern=r"^/[A-Za-z0-9._/+-]*$")]
# Slurm names (partition, account): what sbatch accepts without quoting.
SlurmName = Annotated[str, Field(pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$")]
# Slurm's time formats: MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS.
SlurmTime = Annotated[str, Field(pattern=r"^(\d+-)?\d+(:\d{1,2}){0,2}$")]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Toleration(_Section):
    """A pod toleration, in Kubernetes' own shape (camelCase keys)."""

    key: LabelKey | None = None
    operator: Literal["Equal", "Exists"] | None = None
    value: LabelValue | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None
    tolerationSeconds: Annotated[int, Field(ge=0)] | None = None


class ClaimVolume(_Section):
    """A PersistentVolumeClaim mounted into every pod."""

    claim: Label
    mount: MountPath
    read_only: bool = False


class Kubernetes(_Section):
    """Kubernetes-only settings (the ``k8s`` and ``trainjob`` targets)."""

    namespace: Label = "default"
    service_account: Label | None = None
    node_selector: dict[LabelKey, LabelValue] = {}
    tolerations: tuple[Toleration, ...] = ()
    volumes: tuple[ClaimVolume, ...] = ()
    # run.volumes are host paths on a workstation; on a cluster they become hostPath volumes only if asked.
    host_path_volumes: bool = False


class Slurm(_Section):
    """Slurm-only settings (the ``slurm`` target)."""

    partition: SlurmName | None = None
    account: SlurmName | None = None
    time: SlurmTime | None = None
    runtime: Literal["pyxis", "oci", "apptainer"] = "pyxis"
    # oci only: the bundle `envkit bundle` writes, on a filesystem every node sees. None: ./bundle beside the
    # submit directory. ENVKIT_BUNDLE at submit time overrides it.
    bundle: MountPath | None = None


class Cluster(_Section):
    """Several nodes running the profile's image: ``nodes`` x ``gpus_per_node`` training processes."""

    nodes: Annotated[int, Field(ge=1, le=4096)] = 1
    # Required by the cluster targets when run.gpus is "all" or a list of ids (a cluster schedules counts).
    gpus_per_node: Annotated[int, Field(ge=0, le=64)] | None = None
    # What nodes pull; None: the profile's image tag (a local-only tag gets a warning).
    image: ImageRef | None = None
    # Run by torchrun on every node, relative to image.workdir: [script, arg, ...].
    entrypoint: Annotated[tuple[Word, ...], Field(min_length=1, max_length=256)]
    kubernetes: Kubernetes = Kubernetes()
    slurm: Slurm = Slurm()
