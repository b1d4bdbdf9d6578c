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

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, StrictBool, model_validator

from envkit.harness.rules.network import FABRICS, RDMA_FABRICS, hca_problem, interface_problem
from envkit.harness.rules.sizing import MAX_RANKS
from envkit.profile.types import WholeText, described

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


def _joined(value: object) -> object:
    """A YAML list of names as NCCL's comma-separated spelling (a string stays as written)."""
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, str) for v in value):
        return ",".join(value)
    return value


def _interface(spec: str) -> str:
    problem = interface_problem(spec)
    if problem:
        raise ValueError(problem)
    return spec


def _hca(spec: str) -> str:
    problem = hca_problem(spec)
    if problem:
        raise ValueError(problem)
    return spec


Interface = Annotated[str, BeforeValidator(_joined), Field(min_length=1, max_length=256), AfterValidator(_interface)]
Hca = Annotated[str, BeforeValidator(_joined), Field(min_length=1, max_length=256), AfterValidator(_hca)]
# An extended resource as a device plugin offers it: a domain prefix, '/', a name (Kubernetes' qualified name:
# apimachinery validation IsQualifiedName; extended resources must be domain-prefixed).
ResourceName = Annotated[str, Field(
    pattern=r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"),
    described("a Kubernetes extended resource: DOMAIN/NAME as the RDMA device plugin offers it, such as "
              "rdma/rdma_shared_device_a or nvidia.com/hostdev (kubectl describe node lists them)")]
Fabric = Literal[FABRICS]  # type: ignore[valid-type]


class Network(_Section):
    """How the nodes talk: the fabric, the interface, and where RDMA comes from (every target, one value each)."""

    fabric: Fabric = Field("ethernet",
        description="ethernet (sockets), infiniband or roce (RDMA: the image gets libibverbs, the containers "
                    "/dev/infiniband and unlimited memlock).")
    interface: Interface | None = Field(None,
        description="The interface the ranks talk over, as NCCL_SOCKET_IFNAME spells it: a name, a list, a "
                    "prefix, ^ to exclude, = for exact; sets NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME.")
    hca: Hca | None = Field(None, description="RDMA only: NCCL_IB_HCA, the HCAs NCCL uses (mlx5_0:1,mlx5_1 or a prefix).")
    rdma_resource: ResourceName | None = Field(None,
        description="RDMA on Kubernetes: the device plugin's resource each pod asks one of (rdma/rdma_shared_device_a, "
                    "nvidia.com/hostdev, ...); clusters name it differently.")

    @model_validator(mode="after")
    def _rdma_only(self) -> "Network":
        if self.rdma_resource is not None and self.rdma_resource.split("/")[0].endswith("kubernetes.io"):
            raise ValueError(f"cluster.network.rdma_resource {self.rdma_resource} is in the kubernetes.io domain, "
                             "which extended resources cannot use (Kubernetes IsExtendedResourceName); name the "
                             "device plugin's resource (kubectl describe node lists it)")
        if self.fabric not in RDMA_FABRICS:
            for key in ("hca", "rdma_resource"):
                if getattr(self, key) is not None:
                    raise ValueError(f"cluster.network.{key} is for an RDMA fabric; set fabric: infiniband or roce, "
                                     f"or remove {key}")
        return self


class Toleration(_Section):
    """A pod toleration, in Kubernetes' own shape (camelCase keys)."""

    key: LabelKey | None = Field(None, description="The taint key.")
    operator: Literal["Equal", "Exists"] | None = Field(None, description="Equal or Exists.")
    value: LabelValue | None = Field(None, description="The taint value (with Equal).")
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = Field(None, description="The taint effect to tolerate.")
    tolerationSeconds: Annotated[int, Field(ge=0), WholeText] | None = Field(None, description="How long a NoExecute taint is tolerated.")


class ClaimVolume(_Section):
    """A PersistentVolumeClaim mounted into every pod."""

    claim: Label = Field(description="The PersistentVolumeClaim's name.")
    mount: MountPath = Field(description="Where it is mounted in the container.")
    read_only: StrictBool = Field(False, description="Mount the claim read-only.")


class Kubernetes(_Section):
    """Kubernetes-only settings (the ``k8s`` and ``trainjob`` targets)."""

    namespace: Label = Field("default", description="Namespace of the Job, Service and TrainJob.")
    service_account: Label | None = Field(None, description="The pods' serviceAccountName.")
    node_selector: dict[LabelKey, LabelValue] = Field({}, description="The pods' nodeSelector: label key -> label value.")
    tolerations: tuple[Toleration, ...] = Field((), description="Pod tolerations, in Kubernetes' shape.")
    volumes: tuple[ClaimVolume, ...] = Field((), description="PersistentVolumeClaims mounted into every pod and its preflight.")
    # run.volumes are host paths on a workstation; on a cluster they become hostPath volumes only if asked.
    host_path_volumes: StrictBool = Field(False,
        description="Mount run.volumes with absolute host paths as hostPath volumes (only for paths every node has).")


class Slurm(_Section):
    """Slurm-only settings (the ``slurm`` target)."""

    partition: SlurmName | None = Field(None, description="sbatch --partition.")
    account: SlurmName | None = Field(None, description="sbatch --account.")
    time: SlurmTime | None = Field(None, description="sbatch --time (MM, HH:MM:SS, D-HH:MM, ...).")
    runtime: Literal["pyxis", "oci", "apptainer"] = Field("pyxis", description="How the nodes run the image.")
    # oci only: the bundle `envkit bundle` writes, on a filesystem every node sees. None: ./bundle beside the
    # submit directory. ENVKIT_BUNDLE at submit time overrides it.
    bundle: MountPath | None = Field(None,
        description="oci only: the bundle from envkit bundle, on storage every node sees; default $SLURM_SUBMIT_DIR/bundle.")


class Cluster(_Section):
    """Several nodes running the profile's image: ``nodes`` x ``procs_per_node`` training processes."""

    nodes: Annotated[int, Field(ge=1, le=4096), WholeText] = Field(1, description="Nodes (pods, Slurm tasks), each running one torchrun.")
    # Required by the cluster targets when run.gpus is "all" or a list of ids (a cluster schedules counts).
    gpus_per_node: Annotated[int, Field(ge=0, le=64), WholeText] | None = Field(None,
        description="GPUs each node asks for; default: run.gpus as a count; required when run.gpus is all.")
    # Training processes (torchrun ranks) per node; None: one per GPU, else one.
    procs_per_node: Annotated[int, Field(ge=1, le=MAX_RANKS), WholeText] | None = Field(None,
        description="Training processes (torchrun ranks) per node, each with its own DataLoader; default: "
                    "gpus_per_node, else 1. Set it for a CPU job or a node running fewer ranks than GPUs.")
    # What nodes pull; None: the profile's image tag (a local-only tag gets a warning).
    image: ImageRef | None = Field(None, description="What the nodes pull; default: the profile's image tag.")
    # Run by torchrun on every node, relative to image.workdir: [script, arg, ...].
    entrypoint: Annotated[tuple[Word, ...], Field(min_length=1, max_length=256)] = Field(
        description="Run by torchrun on every node, relative to image.workdir: [script, arg, ...].")
    network: Network = Field(Network(), description="How the nodes talk: fabric, interface, RDMA resource.")
    kubernetes: Kubernetes = Field(Kubernetes(), description="Settings for the Kubernetes targets (k8s, trainjob).")
    slurm: Slurm = Field(Slurm(), description="Settings for the slurm target.")
