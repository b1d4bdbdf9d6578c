"""The profile's sections, each a typed, frozen model: ``image`` (with its ``user``, ``torch`` and ``proxy``),
``run`` and ``loader``; the ``cluster`` and ``wsl`` sections are :mod:`envkit.profile.cluster`'s and
:mod:`envkit.profile.wsl`'s.

Every model forbids unknown keys, so a typo is an error with a did-you-mean, not a silently ignored
setting. A section's own rules are its validators; the rules across sections are the whole profile's
(:class:`envkit.profile.model.Profile`, :mod:`envkit.profile.rules`), which read these types.

Example:
    >>> Run.model_validate({"cpuset": "0-3"}).cpuset_cpus
    (0, 1, 2, 3)
"""

from __future__ import annotations

import re

from typing import TYPE_CHECKING, Annotated, Literal, Union

from pydantic import (
    AfterValidator, BaseModel, ConfigDict, Field, StrictBool, field_validator, model_validator,
)

from envkit.harness.rules.defaults import DEFAULT_SAMPLE_COST_MS, LOADER, MAX_SAMPLE_COST_MS
from envkit.harness.rules.sizing import DTYPE_ITEMSIZE, MAX_PREFETCH, MAX_WORKERS, workload_problem
from envkit.hostpaths import split_volume
from envkit.profile.dockerref import check_cpus, check_reference, volume_target_problem
from envkit.profile.types import (
    AbsPath, Cpuset, DebPackage, EnvName, EnvValue, NumberNotBool, PipRequirement, PositiveInt, ProxyUrl, RunEnvValue,
    NAME_WORDS, PROXY_WORDS, RunText, Size, WholeText, described, expecting,
)
from envkit.project import SECRETS
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

    name: Annotated[str, Field(pattern=r"^[a-z_][a-z0-9_-]{0,31}$"), described(NAME_WORDS)] = Field("dev",
        description="The container user's name; root runs as root (warned).")
    uid: Annotated[int, Field(ge=0, le=2**31 - 1), WholeText] = Field(1000,
        description="The user's uid; an image user already holding it is replaced.")
    gid: Annotated[int, Field(ge=0, le=2**31 - 1), WholeText] = Field(1000, description="The user's gid.")

    @property
    def is_root(self) -> bool:
        return self.name == "root" or self.uid == 0


class Torch(Model):
    """Which PyTorch wheel to install and from where."""

    version: Annotated[str, Field(pattern=r"^\d+\.\d+(\.\d+)?$"),
        described("a release such as '2.5.1'")] = Field(description="The PyTorch release, e.g. \"2.5.1\".")
    variant: Annotated[str, Field(pattern=r"^(cpu|cu\d{3}|rocm\d+\.\d+(\.\d+)?)$"),
                       described("'cpu', 'cuXYZ' (e.g. cu124) or 'rocmX.Y'")] = Field("cpu",
        description="cpu, cuXYZ or rocmX.Y: selects https://download.pytorch.org/whl/<variant>.")
    index_url: Annotated[str, Field(pattern=r"^(https?|file)://\S+$"), described("an http(s):// or file:// URL")] | None = Field(None,
        description="An index to install torch from instead of PyTorch's (e.g. a corporate mirror).")
    find_links: tuple[str, ...] = Field((),
        description="Local wheelhouse folders (offline builds), relative to the profile; torch is then pinned as version+variant.")

    @property
    def is_cuda(self) -> bool:
        return self.variant.startswith("cu")


class Proxy(Model):
    """Proxy settings, applied to the build (as build args, not baked into the image) and the run."""

    http: Annotated[str, Field(pattern=r"^[^\s\x00-\x1f]+$"), described(PROXY_WORDS), RunText, ProxyUrl] | None = Field(None,
        description="http_proxy / HTTP_PROXY, for the build (as a build argument) and the run.")
    https: Annotated[str, Field(pattern=r"^[^\s\x00-\x1f]+$"), described(PROXY_WORDS), RunText, ProxyUrl] | None = Field(None,
        description="https_proxy / HTTPS_PROXY, for the build (as a build argument) and the run.")
    no_proxy: Annotated[str, Field(pattern=r"^[^\s\x00-\x1f]*$"),
                        described("a comma-separated host list without spaces"), RunText] | None = Field(None,
        description="no_proxy / NO_PROXY, for the build (as a build argument) and the run.")


class Image(Model):
    """What goes into the image (build-time settings)."""

    base: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9._/:@-]*$", max_length=255), described(
        "an image reference such as 'nvidia/cuda:12.4.1-runtime-ubuntu22.04' (digest goes in image.digest)")] = Field(
        description="The Debian/Ubuntu-family base image (envkit installs with apt-get); no digest here.")
    digest: Annotated[str, Field(pattern=r"^sha256:[0-9a-f]{64}$"),
        described("'sha256:' followed by 64 hex digits")] | None = Field(None, description="Pins the base: FROM base@digest.")
    tag: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9._/-]*(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?$"),
                   described("an image tag such as 'team/vision-train:dev'")] | None = Field(None,
        description="The image's tag; default localhost/envkit/<name>:latest (local only: never pulled from Docker Hub).")
    # The base's Python ("3.12"); when left out, the base's name implies it (python:3.12-slim, *bookworm*)
    # or nothing is known until the build. Checked against torch's wheels at load, and in the image by build.
    python: Annotated[str, Field(pattern=r"^3\.\d{1,2}$"), described("a Python version such as '3.12'")] | None = Field(None,
        description="The base's Python, e.g. \"3.12\"; default: what image.base names.")
    system_packages: tuple[DebPackage, ...] = Field((), description="Debian packages, installed with --no-install-recommends.")
    pip_packages: tuple[PipRequirement, ...] = Field((), description="pip requirements, installed after torch in the image's venv.")
    torch: Torch | None = Field(None, description="Which PyTorch to install; omit for none.")
    user: User = Field(User(), description="The image's non-root user.")
    env: dict[EnvName, EnvValue] = Field({}, description="ENV in the image.")
    ca_certificates: tuple[str, ...] = Field((),
        description="PEM files (relative to the profile) installed as trusted CAs before any download.")
    proxy: Proxy | None = Field(None, description="Proxy settings: build arguments (never baked into the image) and run-time environment.")
    workdir: Annotated[AbsPath, described(
        "an absolute path of letters, digits and . _ / + - such as /workspace")] = Field("/workspace",
        description="The working directory, owned by the user.")
    # uv installs torch several times faster than pip; pip stays for indexes or
    # tooling uv does not handle. Both read the same find_links, index, proxy and CA settings.
    installer: Literal["uv", "pip"] = Field("uv", description="What installs torch, requirements and pip_packages.")
    # True when the image compiles CUDA extensions and so needs a nvidia/cuda:*-devel base (nvcc,
    # headers). Without it, a nvidia/cuda base next to a CUDA torch wheel is warned about: the
    # wheel brings its own CUDA libraries, so the base's copy is dead weight.
    cuda_devel: StrictBool = Field(False, description="The image compiles CUDA extensions, so its base is a nvidia/cuda:*-devel image.")
    # A team's own requirement files (relative to the profile), installed as they are after torch and
    # constrained to it; a file with hashes is installed with --require-hashes.
    requirements: tuple[Annotated[str, Field(pattern=r"^[^\x00-\x1f]+$")], ...] = Field((),
        description="Requirement files (relative to the profile) installed as they are, after torch and constrained to it.")
    # The profile's folder copied into image.workdir as the image's last layers (a cluster node pulls the
    # image and needs the code in it). Default: on when the profile has a cluster section, else off
    # (a workstation bind-mounts the folder). See Profile.copies_project.
    copy_project: StrictBool | None = Field(None,
        description="Copy the profile's folder into image.workdir; default: true with a cluster section, else false.")
    # `pip install --no-deps .` of the copied project (it needs a pyproject.toml or setup.py).
    install_project: StrictBool = Field(False,
        description="pip install --no-deps the copied project (needs its pyproject.toml or setup.py).")
    # The built-in credential patterns (envkit.project.SECRETS) the copied project deliberately ships.
    ship_secrets: tuple[SecretPattern, ...] = Field((),
        description="Built-in secret patterns (e.g. '.aws/config') whose files image.copy_project copies anyway; "
                    "by default none ships.")

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

    soft: Annotated[int, Field(ge=-1, le=2**63 - 1), WholeText] = Field(description="The soft limit; -1 is unlimited.")
    hard: Annotated[int, Field(ge=-1, le=2**63 - 1), WholeText] = Field(description="The hard limit; -1 is unlimited.")

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


def _secret_pattern(pattern: str) -> str:
    if pattern not in SECRETS:
        raise ValueError(f"{pattern!r} is not one of envkit's built-in secret patterns{did_you_mean(pattern, SECRETS)}; "
                         f"they are: {', '.join(SECRETS)}")
    return pattern


# One of envkit.project.SECRETS, spelt as the list spells it.
SecretPattern = Annotated[str, AfterValidator(_secret_pattern), Field(json_schema_extra={"enum": list(SECRETS)})]


def _ulimit_name(name: str) -> str:
    if name not in ULIMIT_NAMES:
        raise ValueError(f"unknown ulimit {name!r}{did_you_mean(name, ULIMIT_NAMES)}; "
                         f"expected one of: {', '.join(ULIMIT_NAMES)}")
    return name


# A key type, so an error points at the misspelt name's own line.
UlimitName = Annotated[str, AfterValidator(_ulimit_name)]

GpuId = Union[Annotated[int, Field(ge=0, le=1023), WholeText], Annotated[str, Field(pattern=r"^(GPU-)?[A-Za-z0-9-]{1,64}$")]]
GpuSpec = Union[Literal["all", "none"], Annotated[int, Field(ge=1, le=1024), WholeText],
                Annotated[tuple[GpuId, ...], Field(min_length=1)]]


# HOST:/CONTAINER[:mode]; no `~` (nothing expands it) and no control characters.
# HOST is a path (absolute, relative, or a Windows drive path as Docker Desktop reads it: C:\\x, C:/x).
_VOLUME_PATTERN = (r"^([A-Za-z]:[\\/][^:\x00-\x1f]*|[^:~\x00-\x1f][^:\x00-\x1f]*)"
                   r":/[A-Za-z0-9._/+-]*(:(ro|rw|z|Z|ro,z|ro,Z))?$")


def _volume_words(value: object) -> str:
    """What a run.volumes entry should be, with the way out for a Windows path."""
    words = ("a bind mount 'HOST_PATH:/CONTAINER_PATH' with an optional ':ro' or ':rw' (HOST_PATH absolute or "
             "relative to the profile, not starting with '~'; CONTAINER_PATH of letters, digits and . _ / + -)")
    if re.match(r"^[A-Za-z]:[\\/]", str(value)):
        words += ("; a Windows path: inside WSL2 write /mnt/c/... (slow: 9P), or better, copy the data into "
                  "the Linux file system (~/data) and mount that")
    return words


class Run(Model):
    """How the container runs (run-time settings: flags, compose, devcontainer, SDK)."""

    shm_size: Size | None = Field(None, description="/dev/shm, where DataLoader workers hand batches over; Docker's default is 64 MB.")
    ipc: Literal["private", "shareable", "host"] = Field("private",
        description="IPC namespace; host shares the host's and makes shm_size moot.")
    cpuset: Cpuset | None = Field(None, description="--cpuset-cpus; torch's worker bound sees it.")
    cpus: Annotated[float, Field(gt=0, le=4096), NumberNotBool, AfterValidator(check_cpus)] | None = Field(None,
        description="CFS quota (--cpus); torch does not see it, the harness does.")
    memory: Size | None = Field(None, description="--memory; shm pages count against it.")
    gpus: Annotated[GpuSpec, expecting(
        "'all', 'none', a GPU count >= 1, or a list of device ids such as [0, 1]")] = Field("none",
        description="all, none, a count, or a list of GPU ids (--gpus).")
    ulimits: Annotated[dict[UlimitName, Ulimit], Field(json_schema_extra={"propertyNames": {"enum": list(ULIMIT_NAMES)}})] = Field({},
        description="ulimit name -> limit: an int (soft = hard), unlimited, or {soft, hard}; -1 is unlimited.")
    mount_project: StrictBool = Field(True, description="Bind-mount the profile's folder at image.workdir.")
    volumes: tuple[Annotated[str, Field(pattern=_VOLUME_PATTERN), described(_volume_words), RunText], ...] = Field((),
        description="Bind mounts HOST:/CONTAINER[:ro|rw]; HOST absolute, relative to the profile, "
                    "or a Windows drive path (C:\\data, C:/data, //c/data); not ~.")
    env: dict[EnvName, RunEnvValue] = Field({}, description="Run-time environment; values reach the container literally.")
    # NUMA placement: none, a node id (--cpuset-mems=N; run.cpuset should lie in that node), or auto
    # (the first GPU's node, resolved where the host is visible: envkit doctor and the harness).
    numa: Annotated[Literal["auto", "none"] | Annotated[int, Field(ge=0, le=1023), WholeText],
                    expecting("'none', 'auto' or a NUMA node id from 0 to 1023")] = Field("none",
        description="none, a NUMA node id (--cpuset-mems), or auto (the first GPU's node, resolved where the host is visible).")

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
            target = split_volume(spec)[1]
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

    num_workers: Annotated[Annotated[int, Field(ge=0, le=MAX_WORKERS), WholeText] | Literal["auto"],
                           expecting(f"'auto' or a whole number from 0 to {MAX_WORKERS}")] = Field(LOADER.num_workers,
        description="DataLoader workers, or auto (CPUs per training process - 1, at least 0, at most 8).")
    batch_size: PositiveInt = Field(LOADER.batch_size, description="Samples per batch.")
    sample_shape: Annotated[tuple[Annotated[int, Field(ge=1, le=2**20), WholeText], ...], Field(min_length=1, max_length=8)] = Field(
        LOADER.sample_shape, description="One sample's tensor shape.")
    dtype: Dtype = Field(LOADER.dtype, description="The samples' dtype.")
    pin_memory: StrictBool = Field(LOADER.pin_memory, description="Page-locked host buffers for faster host-to-GPU copies.")
    prefetch_factor: Annotated[int, Field(ge=1, le=MAX_PREFETCH), WholeText] = Field(LOADER.prefetch_factor,
        description=f"Batches in flight per worker (1 to {MAX_PREFETCH}).")
    persistent_workers: StrictBool = Field(LOADER.persistent_workers, description="Keep workers between epochs.")
    start_method: Literal["fork", "spawn", "forkserver"] = Field(LOADER.start_method,
        description="Worker start method (Windows and macOS use spawn).")
    sample_cost_ms: Annotated[float, Field(ge=0, le=MAX_SAMPLE_COST_MS, allow_inf_nan=False), NumberNotBool] = Field(
        LOADER.sample_cost_ms, description=f"CPU milliseconds one sample costs to decode and augment; the harness's "
        f"sweep burns it per synthetic sample (default: an ImageNet JPEG to 224x224, {DEFAULT_SAMPLE_COST_MS:g}).")

    @model_validator(mode="after")
    def _workload_fits_a_machine(self):
        problem = workload_problem(self.batch_size, self.sample_shape, self.dtype, self.prefetch_factor)
        if problem:
            raise ValueError(problem)
        return self
