"""The profile, version 1: typed, frozen models validated once at load time.

Templates and targets only ever see these objects, never raw dicts. Every model
forbids unknown keys, so a typo is an error with a did-you-mean, not a silently
ignored setting (hpccm's and compose's failure mode).

Example:
    >>> p = Profile.model_validate({"envkit": 1, "name": "demo", "image": {"base": "debian:bookworm"}})
    >>> p.run.ipc, p.image.user.name
    ('private', 'dev')
"""

# No `from __future__ import annotations`: the models' hints are evaluated once, by Python, at class
# creation, instead of by typing.get_type_hints at first validation, which every run would pay.

from typing import TYPE_CHECKING, Annotated, Literal, Union

from envkit.profile.typed import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from envkit.harness.sizing import DTYPE_ITEMSIZE, batch_bytes
from envkit.profile.cluster import Cluster
from envkit.profile.dockerref import PATH_COMPONENT, check_cpus, check_reference, volume_target_problem
from envkit.profile.types import (
    AbsPath, Cpuset, DebPackage, EnvName, EnvValue, Name, PipRequirement, PositiveInt, RunEnvValue, RunText, Size,
)
from envkit.profile.wsl import Wsl
from envkit.units import ULIMIT_NAMES, did_you_mean, parse_cpuset

if TYPE_CHECKING:  # the dtypes are the harness's DTYPE_ITEMSIZE keys; a checker sees a string
    Dtype = str
else:
    Dtype = Literal[tuple(sorted(DTYPE_ITEMSIZE))]


class Model(BaseModel):
    """Base for every profile section: frozen, unknown keys refused."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class User(Model):
    """The container user. Non-root by default; match uid/gid to the host for bind mounts."""

    name: Annotated[str, Field(pattern=r"^[a-z_][a-z0-9_-]{0,31}$")] = "dev"
    uid: Annotated[int, Field(ge=0, le=2**31 - 1)] = 1000
    gid: Annotated[int, Field(ge=0, le=2**31 - 1)] = 1000

    @property
    def is_root(self) -> bool:
        return self.name == "root" or self.uid == 0


class Torch(Model):
    """Which PyTorch wheel to install and from where."""

    version: Annotated[str, Field(pattern=r"^\d+\.\d+(\.\d+)?$")]
    variant: Annotated[str, Field(pattern=r"^(cpu|cu\d{3}|rocm\d+\.\d+(\.\d+)?)$")] = "cpu"
    index_url: Annotated[str, Field(pattern=r"^(https?|file)://\S+$")] | None = None
    find_links: tuple[str, ...] = ()

    @property
    def is_cuda(self) -> bool:
        return self.variant.startswith("cu")


class Proxy(Model):
    """Proxy settings, applied to the build (as build args, not baked into the image) and the run."""

    http: Annotated[str, Field(pattern=r"^[^\s\x00-\x1f]+$"), RunText] | None = None
    https: Annotated[str, Field(pattern=r"^[^\s\x00-\x1f]+$"), RunText] | None = None
    no_proxy: Annotated[str, Field(pattern=r"^[^\s\x00-\x1f]*$"), RunText] | None = None


class Image(Model):
    """What goes into the image (build-time settings)."""

    base: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9._/:@-]*$", max_length=255)]
    digest: Annotated[str, Field(pattern=r"^sha256:[0-9a-f]{64}$")] | None = None
    tag: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9._/-]*(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?$")] | None = None
    # The base's Python ("3.12"); when left out, the base's name implies it (python:3.12-slim, *bookworm*)
    # or nothing is known until the build. Checked against torch's wheels at load, and in the image by build.
    python: Annotated[str, Field(pattern=r"^3\.\d{1,2}$")] | None = None
    system_packages: tuple[DebPackage, ...] = ()
    pip_packages: tuple[PipRequirement, ...] = ()
    torch: Torch | None = None
    user: User = User()
    env: dict[EnvName, EnvValue] = {}
    ca_certificates: tuple[str, ...] = ()
    proxy: Proxy | None = None
    workdir: AbsPath = "/workspace"
    # uv installs torch several times faster than pip; pip stays for indexes or
    # tooling uv does not handle. Both read the same find_links, index, proxy and CA settings.
    installer: Literal["uv", "pip"] = "uv"
    # True when the image compiles CUDA extensions and so needs a nvidia/cuda:*-devel base (nvcc,
    # headers). Without it, a nvidia/cuda base next to a CUDA torch wheel is warned about: the
    # wheel brings its own CUDA libraries, so the base's copy is dead weight.
    cuda_devel: bool = False
    # A team's own requirement files (relative to the profile), installed as they are after torch and
    # constrained to it; a file with hashes is installed with --require-hashes.
    requirements: tuple[Annotated[str, Field(pattern=r"^[^\x00-\x1f]+$")], ...] = ()
    # The profile's folder copied into image.workdir as the image's last layers (a cluster node pulls the
    # image and needs the code in it). Default: on when the profile has a cluster section, else off
    # (a workstation bind-mounts the folder). See Profile.copies_project.
    copy_project: bool | None = None
    # `pip install --no-deps .` of the copied project (it needs a pyproject.toml or setup.py).
    install_project: bool = False

    @field_validator("base")
    @classmethod
    def _no_digest_in_base(cls, v: str) -> str:
        if "@" in v:
            raise ValueError("put the digest in image.digest, not in image.base")
        return check_reference(v, what="image reference")

    @field_validator("tag")
    @classmethod
    def _tag_is_a_reference(cls, v: str | None) -> str | None:
        return None if v is None else check_reference(v, what="image tag")


class Ulimit(Model):
    """A resource limit; -1 means unlimited."""

    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_extra=lambda schema: schema.update(
        {"anyOf": [{"type": "integer", "minimum": -1}, {"const": "unlimited"},
                   {k: schema.pop(k) for k in list(schema) if k in ("type", "properties", "required",
                                                                       "additionalProperties")}]}))

    soft: Annotated[int, Field(ge=-1, le=2**63 - 1)]
    hard: Annotated[int, Field(ge=-1, le=2**63 - 1)]

    @model_validator(mode="before")
    @classmethod
    def _from_scalar(cls, v):
        # `memlock: -1` and `memlock: unlimited` mean soft = hard.
        if isinstance(v, str) and v.strip().lower() == "unlimited":
            return {"soft": -1, "hard": -1}
        if isinstance(v, int) and not isinstance(v, bool):
            return {"soft": v, "hard": v}
        return v

    @model_validator(mode="after")
    def _soft_le_hard(self):
        if self.hard != -1 and (self.soft == -1 or self.soft > self.hard):
            raise ValueError(f"soft limit {self.soft} is above hard limit {self.hard}")
        return self


def _ulimit_name(name: str) -> str:
    if name not in ULIMIT_NAMES:
        raise ValueError(f"unknown ulimit {name!r}{did_you_mean(name, ULIMIT_NAMES)}; "
                         f"expected one of: {', '.join(ULIMIT_NAMES)}")
    return name


# A key type, so an error points at the misspelt name's own line.
UlimitName = Annotated[str, AfterValidator(_ulimit_name)]

GpuId = Union[Annotated[int, Field(ge=0, le=1023)], Annotated[str, Field(pattern=r"^(GPU-)?[A-Za-z0-9-]{1,64}$")]]
GpuSpec = Union[Literal["all", "none"], Annotated[int, Field(ge=1, le=1024)],
                Annotated[tuple[GpuId, ...], Field(min_length=1)]]


# HOST:/CONTAINER[:mode]; no `~` (nothing expands it) and no control characters.
_VOLUME_PATTERN = r"^[^:~\x00-\x1f]([^:\x00-\x1f]*):/[A-Za-z0-9._/+-]*(:(ro|rw|z|Z|ro,z|ro,Z))?$"


class Run(Model):
    """How the container runs (run-time settings: flags, compose, devcontainer, SDK)."""

    shm_size: Size | None = None
    ipc: Literal["private", "shareable", "host"] = "private"
    cpuset: Cpuset | None = None
    cpus: Annotated[float, Field(gt=0, le=4096), AfterValidator(check_cpus)] | None = None
    memory: Size | None = None
    gpus: GpuSpec = "none"
    ulimits: Annotated[dict[UlimitName, Ulimit], Field(json_schema_extra={"propertyNames": {"enum": list(ULIMIT_NAMES)}})] = {}
    mount_project: bool = True
    volumes: tuple[Annotated[str, Field(pattern=_VOLUME_PATTERN), RunText], ...] = ()
    env: dict[EnvName, RunEnvValue] = {}
    # NUMA placement: none, a node id (--cpuset-mems=N; run.cpuset should lie in that node), or auto
    # (the first GPU's node, resolved where the host is visible: envkit doctor and the harness).
    numa: Literal["auto", "none"] | Annotated[int, Field(ge=0, le=1023)] = "none"

    @field_validator("memory", "shm_size")
    @classmethod
    def _docker_minimums(cls, v, info):
        # Docker refuses a memory limit below 6 MB at `docker run`; say so at load time instead.
        if v is not None and info.field_name == "memory" and v < 6 * 1024 * 1024:
            raise ValueError(f"Docker's smallest memory limit is 6m; got {v} bytes")
        return v

    @field_validator("volumes")
    @classmethod
    def _targets_docker_accepts(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        seen: dict[str, int] = {}
        for i, spec in enumerate(v):
            target = spec.split(":")[1]
            problem = volume_target_problem(target)
            if problem:
                raise ValueError(f"run.volumes[{i}]: container path {target!r}: {problem}")
            norm = "/" + "/".join(s for s in target.split("/") if s not in ("", "."))
            if norm in seen:
                raise ValueError(f"run.volumes[{i}] mounts onto {norm}, as run.volumes[{seen[norm]}] does; "
                                 "Docker refuses duplicate mount points")
            seen[norm] = i
        return v

    @property
    def cpuset_cpus(self) -> tuple[int, ...]:
        return parse_cpuset(self.cpuset) if self.cpuset else ()

    @property
    def wants_gpus(self) -> bool:
        return self.gpus != "none"


class Loader(Model):
    """The training workload: sizes the settings and drives the harness."""

    num_workers: Annotated[int, Field(ge=0, le=256)] | Literal["auto"] = "auto"
    batch_size: PositiveInt = 32
    sample_shape: Annotated[tuple[Annotated[int, Field(ge=1, le=2**20)], ...], Field(min_length=1, max_length=8)] = (3, 224, 224)
    dtype: Dtype = "float32"
    pin_memory: bool = True
    prefetch_factor: PositiveInt = 2
    persistent_workers: bool = True
    start_method: Literal["fork", "spawn", "forkserver"] = "fork"

    @model_validator(mode="after")
    def _batch_fits_a_machine(self):
        size = batch_bytes(self.batch_size, self.sample_shape, self.dtype)
        if size > 2**40:
            raise ValueError(f"one batch would be {size} bytes (over 1 TiB); check batch_size and sample_shape")
        return self


class Profile(Model):
    """A whole profile, ``envkit: 1``."""

    envkit: Literal[1]
    name: Name
    image: Image
    run: Run = Run()
    loader: Loader = Loader()
    wsl: Wsl | None = None
    cluster: Cluster | None = None

    @field_validator("name")
    @classmethod
    def _name_makes_an_image_name(cls, v: str) -> str:
        # The default image is envkit/<name>: the name must be one path component of Docker's grammar.
        if not PATH_COMPONENT.match(v):
            raise ValueError(f"{v!r} cannot be part of an image name (envkit/{v}); use lowercase letters and "
                             "digits joined by single '.', '_' or '-', e.g. vision-train")
        return v

    @model_validator(mode="after")
    def _project_mount_is_free(self):
        if self.run.mount_project:
            for i, spec in enumerate(self.run.volumes):
                target = spec.split(":")[1]
                if target.rstrip("/") == self.image.workdir.rstrip("/"):
                    raise ValueError(
                        f"run.volumes[{i}] mounts onto image.workdir ({self.image.workdir}), where the profile's "
                        "folder is mounted; set run.mount_project: false to mount your own")
        return self

    @property
    def copies_project(self) -> bool:
        """image.copy_project, or its default: on for a profile with a cluster section."""
        return self.image.copy_project if self.image.copy_project is not None else self.cluster is not None

    @model_validator(mode="after")
    def _install_needs_the_copy(self):
        if self.image.install_project and not self.copies_project:
            raise ValueError("image.install_project installs the copied project: set image.copy_project: true")
        return self

    @property
    def image_tag(self) -> str:
        return self.image.tag or f"envkit/{self.name}:latest"
