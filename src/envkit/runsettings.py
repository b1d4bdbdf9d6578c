"""The one translation from a profile to container run settings.

``RunSettings.from_profile`` decides every run-time value once; the renderers
below only spell those decisions in each target's syntax: ``docker run`` flags
(run.sh, ``envkit flags``, devcontainer ``runArgs``), a compose service, and
docker-py keyword arguments (``envkit validate``). Because they all read the
same object, they cannot disagree; ``tests/test_agreement.py`` checks it.

Example:
    >>> from envkit.profile import load_profile
    >>> rs = RunSettings.from_profile(load_profile(None).profile)
    >>> docker_flags(rs)[:3]
    ['--shm-size=2g', '--ipc=private', '--init']
"""

from __future__ import annotations

from dataclasses import dataclass

from envkit.profile.model import Profile
from envkit.units import format_size

DEFAULT_SHM = 64 * 1024 * 1024  # Docker's default when --shm-size is absent


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
        return not self.source.startswith("/")


@dataclass(frozen=True)
class RunSettings:
    """Every run-time setting, decided. ``None`` means "leave Docker's default"."""

    shm_size: int | None
    ipc: str
    cpuset: str | None
    cpus: float | None
    memory: int | None
    gpus: object  # "all" | int | tuple of ids; None when no GPUs are requested
    ulimits: tuple[Ulimit, ...]
    volumes: tuple[Volume, ...]
    env: tuple[tuple[str, str], ...]
    # An init process as PID 1 forwards signals and reaps exited DataLoader workers.
    init: bool = True
    # Start as root so the image's entrypoint can give its user the project folder's uid/gid (remaps_user).
    start_as_root: bool = False

    @property
    def project_volume(self) -> Volume | None:
        return next((v for v in self.volumes if v.project), None)

    @classmethod
    def from_profile(cls, p: Profile) -> "RunSettings":
        env = dict(p.run.env)
        # Run-time downloads (datasets, hub models) need the proxy as much as the build does.
        for key, value in proxy_build_args(p):
            env.setdefault(key, value)
        vols = []
        if p.run.mount_project:
            vols.append(Volume(".", p.image.workdir, None, project=True))
        for spec in p.run.volumes:
            src, dst, *mode = spec.split(":", 2)
            vols.append(Volume(src, dst, mode[0] if mode else None))
        return cls(
            # --ipc=host shares the host's /dev/shm, so a size would be ignored: do not emit one.
            shm_size=None if p.run.ipc == "host" else p.run.shm_size,
            ipc=p.run.ipc,
            cpuset=p.run.cpuset,
            cpus=p.run.cpus,
            memory=p.run.memory,
            gpus=None if p.run.gpus == "none" else p.run.gpus,
            ulimits=tuple(Ulimit(n, u.soft, u.hard) for n, u in sorted(p.run.ulimits.items())),
            volumes=tuple(vols),
            env=tuple(sorted(env.items())),
            start_as_root=remaps_user(p) and p.run.mount_project,
        )

    @property
    def effective_shm(self) -> int | None:
        """The /dev/shm size the container will see (None: the host's, under --ipc=host)."""
        if self.ipc == "host":
            return None
        return self.shm_size if self.shm_size is not None else DEFAULT_SHM


# Asks envkit-entrypoint (started as root) to remap the image's user; without it root stays root.
REMAP_ENV = "ENVKIT_REMAP_USER"


def remaps_user(p: Profile) -> bool:
    """True when the image carries envkit-entrypoint: its user is not root, and a container started as root
    gets that user remapped to the uid/gid of the project folder's owner, then runs as it. One image then
    serves every member of a team whatever their host uid (the image bakes image.user.uid).

    >>> from envkit.profile.model import Profile
    >>> remaps_user(Profile.model_validate({"envkit": 1, "name": "d", "image": {"base": "debian:bookworm"}}))
    True
    """
    return not p.image.user.is_root


def proxy_build_args(p: Profile) -> list[tuple[str, str]]:
    """``image.proxy`` as the lower- and upper-case variables tools read (build args and run env)."""
    proxy = p.image.proxy
    out: list[tuple[str, str]] = []
    if proxy:
        for key, value in (("http_proxy", proxy.http), ("https_proxy", proxy.https), ("no_proxy", proxy.no_proxy)):
            if value is not None:
                out += [(key, value), (key.upper(), value)]
    return out


def _cpus_text(cpus: float) -> str:
    return f"{cpus:g}"


def gpus_flag_value(gpus) -> str:
    """``--gpus`` value: ``all``, ``2``, or ``"device=0,1"`` (quotes included: Docker parses it as CSV)."""
    if gpus == "all" or isinstance(gpus, int):
        return str(gpus)
    return '"device=' + ",".join(str(g) for g in gpus) + '"'


def docker_flags(rs: RunSettings, volume_source=lambda v: v.source, *, project: bool = True) -> list[str]:
    """``docker run`` flags, one list item per flag (never shell-joined here).

    ``volume_source`` maps a Volume to the host path text to use (callers resolve relative paths);
    ``project=False`` leaves out the project mount (devcontainer.json states it as workspaceMount).
    """
    flags: list[str] = []
    if rs.shm_size is not None:
        flags.append(f"--shm-size={format_size(rs.shm_size)}")
    flags.append(f"--ipc={rs.ipc}")
    if rs.init:
        flags.append("--init")
    if rs.start_as_root and project:
        # devcontainer.json (project=False) has containerUser and VS Code's own updateRemoteUserUID.
        flags.extend(["--user=root", f"--env={REMAP_ENV}=1"])
    if rs.cpuset:
        flags.append(f"--cpuset-cpus={rs.cpuset}")
    if rs.cpus is not None:
        flags.append(f"--cpus={_cpus_text(rs.cpus)}")
    if rs.memory is not None:
        flags.append(f"--memory={format_size(rs.memory)}")
    if rs.gpus is not None:
        flags.append(f"--gpus={gpus_flag_value(rs.gpus)}")
    flags.extend(f"--ulimit={u.flag_value}" for u in rs.ulimits)
    for v in rs.volumes:
        if v.project and not project:
            continue
        flags.append("--volume=" + ":".join([volume_source(v), v.target] + ([v.mode] if v.mode else [])))
    flags.extend(f"--env={k}={val}" for k, val in rs.env)
    return flags


def compose_escape(text: str) -> str:
    """Compose interpolates ``$VAR``; ``$$`` is a literal ``$`` (so a proxy password survives)."""
    return text.replace("$", "$$")


def compose_service(rs: RunSettings, volume_source=lambda v: v.source) -> dict:
    """The run-time part of a compose service (keys as the Compose Specification names them).

    Values are escaped for compose's interpolation, so compose passes exactly what run.sh does.
    """
    svc: dict = {}
    if rs.shm_size is not None:
        svc["shm_size"] = format_size(rs.shm_size)
    svc["ipc"] = rs.ipc
    if rs.init:
        svc["init"] = True
    if rs.start_as_root:
        svc["user"] = "root"
    if rs.cpuset:
        svc["cpuset"] = rs.cpuset
    if rs.cpus is not None:
        svc["cpus"] = rs.cpus
    if rs.memory is not None:
        svc["mem_limit"] = format_size(rs.memory)
    if rs.ulimits:
        svc["ulimits"] = {u.name: (u.soft if u.soft == u.hard else {"soft": u.soft, "hard": u.hard}) for u in rs.ulimits}
    if rs.volumes:
        svc["volumes"] = [compose_escape(":".join([volume_source(v), v.target] + ([v.mode] if v.mode else [])))
                          for v in rs.volumes]
    env = ([(REMAP_ENV, "1")] if rs.start_as_root else []) + [(k, compose_escape(v)) for k, v in rs.env]
    if env:
        svc["environment"] = dict(env)
    if rs.gpus is not None:
        device = {"driver": "nvidia", "capabilities": ["gpu"]}
        if rs.gpus == "all":
            device["count"] = "all"
        elif isinstance(rs.gpus, int):
            device["count"] = rs.gpus
        else:
            device["device_ids"] = [str(g) for g in rs.gpus]
        svc["deploy"] = {"resources": {"reservations": {"devices": [device]}}}
    return svc


def sdk_kwargs(rs: RunSettings, volume_source=lambda v: v.source) -> dict:
    """docker-py ``containers.create`` keyword arguments (plain data; the engine seam builds SDK types)."""
    # No start_as_root here: validate runs the harness as the image's user, the user it measures for.
    kw: dict = {"ipc_mode": rs.ipc}
    if rs.init:
        kw["init"] = True
    if rs.shm_size is not None:
        kw["shm_size"] = rs.shm_size
    if rs.cpuset:
        kw["cpuset_cpus"] = rs.cpuset
    if rs.cpus is not None:
        kw["nano_cpus"] = int(round(rs.cpus * 1e9))
    if rs.memory is not None:
        kw["mem_limit"] = rs.memory
    if rs.ulimits:
        kw["ulimits"] = [{"name": u.name, "soft": u.soft, "hard": u.hard} for u in rs.ulimits]
    if rs.gpus is not None:
        if rs.gpus == "all":
            req = {"count": -1, "capabilities": [["gpu"]]}
        elif isinstance(rs.gpus, int):
            req = {"count": rs.gpus, "capabilities": [["gpu"]]}
        else:
            req = {"device_ids": [str(g) for g in rs.gpus], "capabilities": [["gpu"]]}
        kw["device_requests"] = [req]
    if rs.volumes:
        kw["volumes"] = [":".join([volume_source(v), v.target] + ([v.mode] if v.mode else [])) for v in rs.volumes]
    if rs.env:
        kw["environment"] = dict(rs.env)
    return kw
