"""The one translation from a profile to container run settings.

``RunSettings.from_profile`` decides every run-time value once; each target
spells those decisions in its own syntax, in its own module: ``docker run`` flags
in :mod:`envkit.targets.run` (also used by devcontainer's ``runArgs`` and
``envkit flags``), the compose service in :mod:`envkit.targets.compose`, and the
container that :meth:`envkit.engine.Engine.run` starts (``envkit validate``; for Docker,
:mod:`envkit.engine.docker` spells them as docker-py's arguments).
Because they all read the same object, they cannot disagree;
``tests/targets/test_agreement.py`` checks it.

The settings are decided from the run's loader plan (it sizes /dev/shm) and the image's user (whether
the image remaps it, :attr:`envkit.plan.image.ImageUser.remapped`), both decided once by the planner;
this module plans neither again.

Example:
    >>> from envkit.plan.image import ImageUser
    >>> from envkit.plan.loader import loader_plan
    >>> from envkit.plan.network import network_plan
    >>> from envkit.profile import load_profile
    >>> p = load_profile(None).profile
    >>> rs = RunSettings.from_profile(p, loader_plan(p), ImageUser.of(p.image.user), network_plan(p))
    >>> rs.shm_size, rs.ipc, rs.cpuset, rs.start_as_root
    (2147483648, 'private', '0-7', True)
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

from envkit.harness.rules.sizing import DOCKER_DEFAULT_SHM as DEFAULT_SHM, NodeLoader
from envkit.hostpaths import is_drive_path, mnt_path, split_volume
from envkit.plan.image import ImageUser
from envkit.plan.network import NetworkPlan
from envkit.profile.model import Profile
from envkit.profile.proxy import proxy_build_args


@dataclass(frozen=True)
class Ulimit:
    name: str
    soft: int
    hard: int

    @property
    def flag_value(self) -> str:
        return f"{self.name}={self.soft}" if self.soft == self.hard else f"{self.name}={self.soft}:{self.hard}"


@dataclass(frozen=True)
class Volume:
    """A bind mount; ``source`` is absolute or relative to the profile's folder."""

    source: str
    target: str
    mode: str | None
    project: bool = False  # the profile's own folder, mounted at image.workdir

    @property
    def is_relative(self) -> bool:
        """Neither a POSIX absolute path (``//c/data`` included) nor a Windows drive path (``C:\\data``)."""
        return not self.source.startswith("/") and not is_drive_path(self.source)


@dataclass(frozen=True)
class RunSettings:
    """Every run-time setting, decided. ``None`` means "leave Docker's default".

    ``ipc`` is None only in settings that keep the engine's own default on purpose
    (:meth:`engine_defaults`); :meth:`from_profile` always decides it.
    """

    shm_size: int | None
    ipc: str | None
    cpuset: str | None
    cpus: float | None
    memory: int | None
    gpus: str | int | tuple[int | str, ...] | None  # "all" | count | ids; None when no GPUs are requested
    ulimits: tuple[Ulimit, ...]
    volumes: tuple[Volume, ...]
    env: tuple[tuple[str, str], ...]
    # An init process as PID 1 forwards signals and reaps exited DataLoader workers.
    init: bool = True
    # --cpuset-mems: memory from this NUMA node only (run.numa as a node id; None otherwise).
    cpuset_mems: str | None = None
    # Start as root so the image's entrypoint can give its user the project folder's uid/gid (ImageUser.remapped).
    start_as_root: bool = False
    # Host devices the container gets at the same path (--device): /dev/infiniband on an RDMA fabric.
    devices: tuple[str, ...] = ()

    @classmethod
    def engine_defaults(cls) -> "RunSettings":
        """Settings that leave every value to the engine: a container started with no options.

        >>> RunSettings.engine_defaults().ipc, RunSettings.engine_defaults().init
        (None, False)
        """
        return cls(shm_size=None, ipc=None, cpuset=None, cpus=None, memory=None, gpus=None, ulimits=(), volumes=(),
                   env=(), init=False)

    def with_sources(self, resolve: Callable[[str], str]) -> "RunSettings":
        """A copy whose relative volume sources are ``resolve(source)`` (an engine needs absolute ones)."""
        return replace(self, volumes=tuple(Volume(resolve(v.source), v.target, v.mode, v.project) if v.is_relative
                                          else v for v in self.volumes))

    @property
    def project_volume(self) -> Volume | None:
        return next((v for v in self.volumes if v.project), None)

    @classmethod
    def from_profile(cls, p: Profile, loader: NodeLoader, user: ImageUser, net: NetworkPlan) -> "RunSettings":
        """The settings of ``p``, given the run's ``loader`` plan (it sizes /dev/shm), the image's ``user``
        (a remapped user starts as root when the project folder is mounted) and the network plan ``net``
        (its variables, devices and memlock)."""
        env = dict(p.run.env) | dict(net.env)  # one spelling each: the profile refuses both (network_problems)
        # Run-time downloads (datasets, hub models) need the proxy as much as the build does.
        for key, value in proxy_build_args(p.image.proxy):
            env.setdefault(key, value)
        vols = []
        if p.run.mount_project:
            vols.append(Volume(".", p.image.workdir, None, project=True))
        # With Docker Engine inside the WSL distribution a drive is where WSL mounts it; Docker Desktop takes C:\
        # as it is written (and from bash as //c/..., run.sh's spelling).
        engine_in_wsl = p.wsl is not None and p.wsl.docker == "engine"
        for spec in p.run.volumes:
            source, target, mode = split_volume(spec)
            vols.append(Volume(mnt_path(source) if engine_in_wsl else source, target, mode))
        return cls(
            # The loaders' plan decides it: run.shm_size, else sized from the need; None under --ipc=host,
            # which shares the host's /dev/shm, so a size would be ignored.
            shm_size=loader.shm_bytes,
            ipc=p.run.ipc,
            cpuset=p.run.cpuset,
            cpus=p.run.cpus,
            memory=p.run.memory,
            gpus=None if p.run.gpus == "none" else p.run.gpus,
            ulimits=planned_ulimits(p, net.memlock_unlimited),
            volumes=tuple(vols),
            env=tuple(sorted(env.items())),
            cpuset_mems=str(p.run.numa) if isinstance(p.run.numa, int) else None,
            start_as_root=user.remapped and p.run.mount_project,
            devices=net.devices,
        )

    @property
    def effective_shm(self) -> int | None:
        """The /dev/shm size the container will see (None: the host's, under --ipc=host)."""
        if self.ipc == "host":
            return None
        return self.shm_size if self.shm_size is not None else DEFAULT_SHM


def planned_ulimits(p: Profile, memlock_unlimited: bool) -> tuple[Ulimit, ...]:
    """run.ulimits, sorted by name, with memlock unlimited where the network plan asks for it (RDMA)."""
    limits = [Ulimit(n, u.soft, u.hard) for n, u in p.run.ulimits.items()]
    if memlock_unlimited:
        limits.append(Ulimit("memlock", -1, -1))
    return tuple(sorted(limits, key=lambda u: u.name))


# Asks envkit-entrypoint (started as root) to remap the image's user; without it root stays root.
REMAP_ENV = "ENVKIT_REMAP_USER"
