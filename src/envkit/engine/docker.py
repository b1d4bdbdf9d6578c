"""The Docker implementation of :class:`envkit.engine.Engine`, over the Docker SDK (docker-py).

Everything that knows Docker lives here: docker-py's ``containers.create`` arguments from
:class:`~envkit.plan.runsettings.RunSettings` (:func:`create_kwargs`, the only such translation), the
classic builder's stream (:class:`BuildStreamParser`), the daemon's error texts
(:func:`explain_start_error`). docker-py itself is imported only inside the functions that call
it, so importing this module (and ``envkit generate``) never loads it. Only
:func:`envkit.engine.connect` imports this module.

Example:
    >>> eng = DockerEngine.connect()                                     # doctest: +SKIP
    >>> eng.run("envkit/demo:dev", ["python3", "-V"], build_plan(loaded).settings, timeout=60)  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import uuid
from collections import deque
from pathlib import Path
from typing import Any, Callable

from envkit.engine import LABEL, BuildEvent, BuildFailed, Engine, EngineSilent, RunResult, os_error_in
from envkit.engine.pullerror import base_of, explain as explain_pull
from envkit.engine.dockerd import _RLIMITS, find_dockerd, fmt_limit, parse_proc_limits, read_daemon
from envkit.errors import EngineError
from envkit.leftovers import owner_labels
from envkit.plan.runsettings import RunSettings, Ulimit
from envkit.termtext import neutralise

# An image a container was to run from is missing (validate --image, bundle, a removed image): the
# build's own base is explained by envkit.engine.pullerror instead.
IMAGE_HINT = ("build it with `envkit build` (its tag is the profile's image.tag, by default "
              "localhost/envkit/<name>:latest), or name an image this engine has (`docker images`)")
START_HINT = ("Start a Docker engine: on Windows/macOS start Docker Desktop (on WSL2 also "
              "enable Settings > Resources > WSL integration for this distro); on Linux run "
              "`sudo systemctl start docker` (or `sudo dockerd &`) and make sure your user may "
              "use the socket (group "
              "`docker`). For a remote engine set DOCKER_HOST (e.g. tcp://host:2375).")
# The socket is there and a daemon behind it: the user lacks the right to open it. A second daemon is the wrong
# remedy; the docker group is the right one (Docker's post-installation steps for Linux).
PERMISSION_HINT = ("The Docker socket exists but this user may not open it: add yourself to the docker group "
                   "(`sudo usermod -aG docker $USER`), then log out and back in (or run `newgrp docker` in this "
                   "shell); a running engine needs no second one started. (Rootless Docker: set DOCKER_HOST to its "
                   "socket, e.g. unix:///run/user/$(id -u)/docker.sock.)")
SILENT_HINT = ("Something listens there but does not answer the Docker API: a hung daemon, or not a Docker "
               "daemon at all. Restart it (Linux: `sudo systemctl restart docker`; Docker Desktop: Restart), "
               "or point DOCKER_HOST at an engine that answers.")
# What decides --gpus (moby daemon/nvidia_linux.go): nvidia-container-runtime-hook on dockerd's
# PATH, or CDI specs; a registered "nvidia" runtime is neither needed nor enough.
GPU_HINT = ("dockerd found no nvidia-container-runtime-hook on its PATH and no CDI spec for the request. "
            "Install the NVIDIA Container Toolkit (nvidia-container-toolkit; it puts the hook in /usr/bin), "
            "run `sudo nvidia-ctk runtime configure --runtime=docker` and restart Docker (Docker "
            "Desktop/WSL2: update the Windows NVIDIA driver); `envkit doctor` shows what dockerd sees. "
            "Or drop the GPU request from the profile to run on CPU.")

# docker-py waits 60 s (docker.constants.DEFAULT_TIMEOUT_SECONDS) on every request; a daemon that
# answers at all answers /version and /_ping in milliseconds, so the first contact waits this long
# and then says so, instead of leaving `doctor` and `build` silent for a minute. Requests after it
# get docker-py's 60 s back; build streams and container waits carry their own (longer) limits.
CONNECT_TIMEOUT_S = 10
API_TIMEOUT_S = 60

_STEP_RE = re.compile(r"^Step (\d+)/(\d+) : (.*)$")


# ---------------------------------------------------------------- pure helpers


def _timed_out(exc: BaseException | None, seen: set[int] | None = None) -> str | None:
    """``"connect"`` or ``"read"`` when ``exc`` (or its cause/context) is a requests timeout, else None.

    docker-py wraps the version request's failure in DockerException ``from`` the requests error.
    """
    import requests.exceptions

    seen = set() if seen is None else seen
    if exc is None or id(exc) in seen:
        return None
    seen.add(id(exc))
    if isinstance(exc, requests.exceptions.ConnectTimeout):
        return "connect"
    if isinstance(exc, requests.exceptions.Timeout):
        return "read"
    return _timed_out(exc.__cause__, seen) or _timed_out(exc.__context__, seen)
class BuildStreamParser:
    """Turns classic-builder JSON chunks into BuildEvents; remembers step, log tail, error, id.

    >>> p = BuildStreamParser(); [e.kind for e in p.feed({"stream": "Step 1/2 : FROM x\\n"})]
    ['step']
    """
    def __init__(self, tail: int = 30) -> None:
        self.step, self.total = 0, 0
        self.step_text: str | None = None
        self.error: str | None = None
        self.tail: deque[str] = deque(maxlen=tail)
        self.image_id: str | None = None  # the daemon sends {"aux": {"ID": "sha256:..."}}
        self._partial = ""  # a stream chunk may end mid-line

    def feed(self, chunk: dict[str, Any]) -> list[BuildEvent]:
        if isinstance(chunk.get("aux"), dict) and "ID" in chunk["aux"]:
            self.image_id = chunk["aux"]["ID"]
        if "error" in chunk or "errorDetail" in chunk:
            detail = chunk.get("errorDetail") or {}
            self.error = str(chunk.get("error") or detail.get("message") or "failed").strip()
            return self._lines(self.error + "\n")
        text = chunk.get("stream")
        if text is None and chunk.get("status"):  # pulls report {"status": ..., "id": ...}
            text = " ".join(str(chunk[k]) for k in ("id", "status") if chunk.get(k)) + "\n"
        return self._lines(text) if text else []

    def close(self) -> list[BuildEvent]:
        rest, self._partial = self._partial, ""
        return self._lines(rest + "\n") if rest else []

    def _lines(self, text: str) -> list[BuildEvent]:
        *lines, self._partial = (self._partial + text).split("\n")
        events = []
        for raw in lines:
            if not (line := raw.rstrip("\r")).strip():
                continue
            m = _STEP_RE.match(line)
            if m:
                self.step, self.total, self.step_text = int(m[1]), int(m[2]), line
                events.append(BuildEvent("step", self.step, self.total, m[3]))
            else:
                events.append(BuildEvent("log", self.step, self.total, line))
            self.tail.append(line)
        return events


def explain_start_error(message: str, ulimits: tuple[Ulimit, ...],
                        host_limit: Callable[[str], tuple[int, int, str] | None]) -> EngineError:
    """Turn a daemon create/start error into an EngineError a user can act on.

    ``host_limit(name)`` -> ``(soft, hard, where_read)`` or None. Real memlock text (runc):
    "... error setting rlimits for ready process: error setting rlimit type 8: operation
    not permitted: unknown" (8 = RLIMIT_MEMLOCK).
    """
    low = message.lower()
    if "could not select device driver" in low or "nvidia-container-cli" in low:
        return EngineError(f"GPUs were requested but the engine cannot provide them: {message}",
                           hint=GPU_HINT)
    if ulimits and any(k in low for k in ("rlimit", "ulimit", "operation not permitted")):
        m = re.search(r"rlimit type (\d+)", low)
        u = next((u for u in ulimits if m and _RLIMITS.get(u.name, (-1,))[0] == int(m[1])),
                 ulimits[0])  # runc names only the first limit it failed on
        name, soft, hard = u.name, u.soft, u.hard
        want = fmt_limit(name, soft) + ("" if hard == soft else f" (hard {fmt_limit(name, hard)})")
        have = host_limit(name)
        limit = (f", but the Docker daemon's hard limit for {name} is {fmt_limit(name, have[1])}"
                 f" (read from {have[2]})") if have else ""
        return EngineError(
            f"cannot start the container: ulimit {name}={want} was requested{limit}; a daemon "
            f"without CAP_SYS_RESOURCE (rootless, or itself in a container) cannot go above its "
            f"own limit. Daemon said: {message}",
            hint=(f"Raise dockerd's limit (`sudo systemctl edit docker` -> [Service] "
                  f"Limit{name.upper()}=infinity, restart docker; without systemd raise `ulimit "
                  f'-H` in the shell that starts dockerd) and set /etc/docker/daemon.json '
                  f'"default-ulimits": {{"{name}": {{"Name": "{name}", "Hard": -1, "Soft": -1}}}}'
                  f"; or lower run.ulimits.{name} in the profile to fit the host limit."))
    if "error gathering device information" in low and "infiniband" in low:
        # moby daemon/oci devices_linux.go: a --device path the host lacks
        return EngineError(f"this host has no /dev/infiniband, which cluster.network.fabric (an RDMA fabric) gives "
                           f"the container: {message}",
                           hint="run it on a node with InfiniBand/RoCE devices (their driver loaded), or check the "
                                "profile here with cluster.network.fabric: ethernet")
    if "no such image" in low or ("image" in low and "not found" in low):
        return EngineError(f"image not found: {message}", hint=IMAGE_HINT)
    return EngineError(f"the engine could not start the container: {message}")


def create_kwargs(rs: RunSettings) -> dict[str, Any]:
    """docker-py ``containers.create`` keyword arguments for ``rs``, in docker-py's own types.

    ulimits -> ``docker.types.Ulimit``; a GPU request -> one ``docker.types.DeviceRequest``
    (capability ``gpu``; "all" is count -1; ids, never together with a count); volumes -> the
    SDK's binds mapping ``{source: {"bind": target, "mode": mode}}`` ("rw" when the profile names
    none), built from the typed volumes, whose sources must be absolute. Binds, not
    ``docker.types.Mount``: the profile's modes include SELinux relabelling (``z``, ``Z``), which
    only a bind expresses; the mapping, not bind strings, because docker-py derives the
    container's volume paths from strings correctly only for the modes ``ro`` and ``rw``. The
    mapping is keyed by source: of two volumes with one source, the later one is mounted.
    ``start_as_root`` -> ``user="root"``.
    """
    from docker.types import DeviceRequest, Ulimit as SdkUlimit

    kw: dict[str, Any] = {}
    if rs.ipc is not None:
        kw["ipc_mode"] = rs.ipc
    if rs.init:
        kw["init"] = True
    if rs.shm_size is not None:
        kw["shm_size"] = rs.shm_size
    if rs.cpuset:
        kw["cpuset_cpus"] = rs.cpuset
    if rs.cpuset_mems is not None:
        kw["cpuset_mems"] = rs.cpuset_mems
    if rs.cpus is not None:
        kw["nano_cpus"] = int(round(rs.cpus * 1e9))
    if rs.memory is not None:
        kw["mem_limit"] = rs.memory
    if rs.ulimits:
        kw["ulimits"] = [SdkUlimit(name=u.name, soft=u.soft, hard=u.hard) for u in rs.ulimits]
    if rs.devices:
        kw["devices"] = [f"{d}:{d}:rwm" for d in rs.devices]
    if rs.gpus is not None:
        if rs.gpus == "all":
            req = DeviceRequest(driver="", count=-1, capabilities=[["gpu"]])
        elif isinstance(rs.gpus, int):
            req = DeviceRequest(driver="", count=rs.gpus, capabilities=[["gpu"]])
        else:  # Docker rejects a count together with device ids
            req = DeviceRequest(driver="", count=0, device_ids=[str(g) for g in tuple(rs.gpus)],
                                capabilities=[["gpu"]])
        kw["device_requests"] = [req]
    if rs.volumes:
        for v in rs.volumes:
            if v.is_relative:
                raise EngineError(f"volume {v.source}:{v.target}: the source must be an absolute path here")
        kw["volumes"] = {v.source: {"bind": v.target, "mode": v.mode or "rw"} for v in rs.volumes}
    if rs.env:
        kw["environment"] = dict(rs.env)
    if rs.start_as_root:
        kw["user"] = "root"
    return kw


class DockerEngine(Engine):
    """:class:`Engine` over the Docker SDK. ``labels`` go on everything it creates."""

    def __init__(self, client: Any, labels: dict[str, str] | None = None) -> None:
        import docker.errors
        import requests.exceptions  # docker-py's own transport; its timeouts surface as these
        self.client, self._errors, self._requests_exc = client, docker.errors, requests.exceptions
        self.labels = {**(labels or {}), LABEL: "1"}

    @classmethod
    def connect(cls, labels: dict[str, str] | None = None) -> "DockerEngine":
        """Connect via DOCKER_HOST / the default socket; EngineError (with hint) if no engine."""
        import docker  # here, not at module top: `envkit generate` must never import it
        client, asked = None, "/version"  # from_env() negotiates the API version before anything else
        try:
            client = docker.from_env(timeout=CONNECT_TIMEOUT_S)
            asked = "/_ping"
            client.ping()
        except Exception as exc:  # DockerException, requests errors, FileNotFoundError ...
            if client is not None:
                with contextlib.suppress(Exception):  # a half-open connection must not hide the cause
                    client.close()  # else its socket leaks (a ResourceWarning) on every failed connect
            host = os.environ.get("DOCKER_HOST")
            waited = _timed_out(exc)
            if waited is not None:
                daemon = neutralise(host or "unix:///var/run/docker.sock")
                what = ("did not accept the connection" if waited == "connect"
                        else f"accepted the connection but did not answer {asked}")
                raise EngineSilent(f"the Docker daemon at {daemon} {what} within {CONNECT_TIMEOUT_S} s",
                                  hint=SILENT_HINT) from None
            where = neutralise(host) if host else "the default socket (/var/run/docker.sock)"
            denied = isinstance(os_error_in(exc), PermissionError)
            raise EngineError(f"cannot reach a Docker engine at {where}: {exc}",
                              hint=PERMISSION_HINT if denied else START_HINT) from None
        client.api.timeout = API_TIMEOUT_S
        return cls(client, labels)

    def ping(self) -> dict[str, Any]:
        try:
            info, ver = self.client.info(), self.client.version()
        except self._errors.DockerException as exc:
            raise EngineError(f"the engine stopped answering: {exc}", hint=START_HINT) from None
        runtimes, host = sorted(info.get("Runtimes") or {}), {}
        daemon = read_daemon(Path("/"), dict(os.environ))
        for n in ("memlock", "nofile", "stack"):
            if v := self._host_limit(n):
                host[n] = {"soft": v[0], "hard": v[1], "source": v[2]}
        return {
            "server_version": ver.get("Version"), "api_version": ver.get("ApiVersion"),
            "os": info.get("OperatingSystem"), "os_type": info.get("OSType"),
            "arch": info.get("Architecture"), "kernel": info.get("KernelVersion"),
            "cgroup_version": info.get("CgroupVersion"), "cgroup_driver": info.get("CgroupDriver"),
            "runtimes": runtimes, "nvidia_runtime": "nvidia" in runtimes,
            "default_runtime": info.get("DefaultRuntime"),
            "ncpu": info.get("NCPU"), "mem_total": info.get("MemTotal"),
            # The API does not expose daemon.json default-ulimits; the daemon's own hard
            # limits are the ceiling containers inherit, so report those where readable.
            "host_ulimits": host,
            # Local-daemon facts the API does not give (envkit.engine.dockerd): None when unreadable.
            "default_shm_size": daemon.default_shm_size, "default_shm_source": daemon.default_shm_source,
            "cap_sys_resource": daemon.cap_sys_resource, "gpus_possible": daemon.gpus_possible,
            "nvidia_hook": daemon.nvidia_hook, "cdi_specs": list(daemon.cdi_specs)}

    def _daemon_pid(self) -> int | None:
        if not os.environ.get("DOCKER_HOST", "unix://").startswith("unix://"):
            return None  # remote daemon: its /proc is not ours
        return find_dockerd(Path("/"))

    def _host_limit(self, name: str) -> tuple[int, int, str] | None:
        """(soft, hard, where): the daemon's limit (the containers' ceiling), else ours."""
        pid = self._daemon_pid()
        with contextlib.suppress(OSError):  # not ours to read (other user) or just exited
            lim = parse_proc_limits(Path(f"/proc/{pid}/limits").read_text()) if pid else {}
            if name in lim:
                return (*lim[name], f"/proc/{pid}/limits of dockerd")
        if name not in _RLIMITS:  # not a Linux rlimit we know
            return None
        import resource  # POSIX-only: keep `import envkit.engine` working on Windows
        soft, hard = resource.getrlimit(_RLIMITS[name][0])
        return (soft, hard, "this process's limit (`ulimit -H`), as the daemon's was not readable")

    def build(self, context_dir: Path, tag: str, *, labels: dict[str, str] | None = None,
              nocache: bool = False, buildargs: dict[str, str] | None = None,
              on_event: Callable[[BuildEvent], None] | None = None) -> str:
        parser, emit = BuildStreamParser(), on_event or (lambda _e: None)
        try:
            # Low-level API: images.build() only reports after the build ends; we stream.
            # rm/forcerm: intermediate containers must not outlive a failed step.
            for chunk in self.client.api.build(
                    path=str(context_dir), tag=tag, labels={**(labels or {}), **self.labels},
                    nocache=nocache, rm=True, forcerm=True, decode=True, buildargs=dict(buildargs or {})):
                for ev in parser.feed(chunk):
                    emit(ev)
        except (self._errors.DockerException, OSError, TypeError) as exc:
            why = getattr(exc, "explanation", None) or exc  # APIError: the daemon's own words
            base, hint = base_of(parser.step_text) if parser.step_text else None, None
            if base is not None:
                what, hint = explain_pull(base, str(why))
                why = f"{what}; the engine said: {why}"
            raise BuildFailed(f"docker build of {tag} failed: {why}", step=parser.step_text,
                              log=list(parser.tail), hint=hint) from None
        for ev in parser.close():
            emit(ev)
        if parser.error or not parser.image_id:
            step, hint = parser.step_text, None
            error = parser.error or "no image id"
            base = base_of(step) if step else None
            if base is not None:  # a FROM that failed is a pull that failed: say which failure, and the way out
                what, hint = explain_pull(base, error)
                error = f"{what}; the engine said: {error}"
            raise BuildFailed(f"docker build of {tag} failed: {error}", step=step, log=list(parser.tail), hint=hint)
        return parser.image_id

    def run(self, image: str, command: list[str], run: RunSettings, *,
            labels: dict[str, str] | None = None, timeout: float = 600) -> RunResult:
        errors, rexc, kwargs = self._errors, self._requests_exc, create_kwargs(run)
        # Our own unique name lets the finally remove the container even if interrupted between
        # the daemon creating it and create() returning.
        name = kwargs["name"] = f"envkit-run-{uuid.uuid4().hex[:12]}"
        try:
            try:
                # create + start, not run(remove=True): that leaves a "Created" container
                # behind when start fails.
                # The owner (pid, start time, boot id) lets a later run sweep this container if we are killed.
                c = self.client.containers.create(
                    image, command, labels={**(labels or {}), **self.labels, **owner_labels()}, detach=True,
                    **kwargs)
                c.start()
            except errors.ImageNotFound as exc:
                raise EngineError(f"image {image!r} not found: {exc.explanation}",
                                  hint=IMAGE_HINT) from None
            except TypeError as exc:  # docker-py rejects unknown keyword arguments
                raise EngineError(f"unsupported container setting: {exc}") from None
            except errors.APIError as exc:
                raise explain_start_error(str(exc.explanation or exc), run.ulimits,
                                          self._host_limit) from None
            timed_out = False
            try:
                code = int(c.wait(timeout=timeout).get("StatusCode", -1))
            except (rexc.ReadTimeout, rexc.ConnectionError):  # docker-py's wait timeout
                timed_out, code = True, -1
                with contextlib.suppress(errors.APIError, rexc.RequestException):
                    c.kill()  # if this fails the finally's forced remove still kills it
                    code = int(c.wait(timeout=30).get("StatusCode", -1))
            out = c.logs(stdout=True, stderr=False).decode("utf-8", "replace")
            err = c.logs(stdout=False, stderr=True).decode("utf-8", "replace")
            return RunResult(code, out, err, timed_out)
        except errors.APIError as exc:
            raise EngineError(f"the engine failed while running {image}: "
                              f"{exc.explanation or exc}") from None
        finally:
            # Always, also after start failures, timeouts and KeyboardInterrupt. APIError:
            # never created (NotFound) or a removal already in progress.
            with contextlib.suppress(errors.APIError):
                self.client.api.remove_container(name, force=True)

    def probe_ulimits(self, ulimits: tuple[Ulimit, ...]) -> tuple[bool | None, str]:
        errors = self._errors
        try:
            images = [i for i in self.client.images.list() if i.attrs.get("Os", "linux") == "linux"]
        except errors.DockerException as exc:
            return None, f"the engine did not list its images: {exc}"
        if not images:
            return None, "no local image to start a probe container from (nothing is pulled for a probe)"
        image = min(images, key=lambda i: i.attrs.get("Size") or 0)
        name = f"envkit-ulimit-probe-{uuid.uuid4().hex[:12]}"
        kwargs = create_kwargs(dataclasses.replace(RunSettings.engine_defaults(), ulimits=tuple(ulimits)))
        try:
            self.client.containers.create(
                image.id, ["/envkit-ulimit-probe/does-not-exist"], name=name, network_disabled=True,
                labels={**self.labels, **owner_labels()}, **kwargs).start()
            return True, "the probe container started"  # an image whose entrypoint ignores the command
        except errors.APIError as exc:
            said = str(exc.explanation or exc)
            low = said.lower()
            if "rlimit" in low:
                return False, said
            if "executable file not found" in low or "no such file or directory" in low:
                return True, "the engine set the ulimits (the probe's command is deliberately missing)"
            return None, f"the probe container did not start for another reason: {said}"
        finally:
            with contextlib.suppress(errors.APIError):
                self.client.api.remove_container(name, force=True)

    def list_owned(self) -> list[tuple[str, str, dict[str, str]]]:
        try:
            found = self.client.containers.list(all=True, filters={"label": LABEL})
        except self._errors.APIError as exc:
            raise EngineError(f"the engine failed while listing containers: {exc.explanation or exc}") from None
        return [(c.id, c.name, dict(c.labels or {})) for c in found]

    def remove_container(self, container_id: str) -> bool:
        try:
            self.client.api.remove_container(container_id, force=True)
            return True
        except self._errors.NotFound:
            return False
        except self._errors.APIError as exc:
            raise EngineError(
                f"the engine failed while removing {container_id[:12]}: {exc.explanation or exc}") from None

    def list_superseded_images(self) -> list[tuple[str, dict[str, str]]]:
        try:  # "dangling": untagged top-level images; a build's intermediate (cache) images have children
            found = self.client.images.list(filters={"dangling": True, "label": LABEL})
        except self._errors.APIError as exc:
            raise EngineError(f"the engine failed while listing images: {exc.explanation or exc}") from None
        # An image pulled by digest has no tag but was not superseded by anything: not ours to judge.
        return [(i.id, dict(i.labels or {})) for i in found if not i.attrs.get("RepoDigests")]

    def remove_image(self, image_id: str) -> bool:
        try:
            self.client.api.remove_image(image_id)  # not forced: an image a container uses stays
            return True
        except self._errors.NotFound:
            return False
        except self._errors.APIError as exc:
            if getattr(exc, "status_code", None) == 409:  # conflict: a container (maybe stopped) uses it
                return False
            raise EngineError(f"the engine failed while removing image {image_id[:19]}: "
                              f"{exc.explanation or exc}") from None

    def image_labels(self, image: str) -> dict[str, str]:
        try:
            return dict(self.client.images.get(image).labels or {})
        except self._errors.ImageNotFound as exc:
            raise EngineError(f"image {image!r} not found: {exc.explanation}", hint=IMAGE_HINT) from None
        except self._errors.APIError as exc:
            raise EngineError(f"the engine failed while inspecting {image}: {exc.explanation or exc}") from None

    def export_image(self, image: str, write: Callable[[bytes], object], *,
                     labels: dict[str, str] | None = None) -> tuple[str, list[str]]:
        try:
            img = self.client.images.get(image)
        except self._errors.DockerException as exc:  # ImageNotFound, APIError
            raise EngineError(f"image {image}: {exc}", hint=f"build it first: envkit build --tag {image}") from None
        # Created, never started: export needs a container, not a running one. Only the caller's
        # labels (not envkit's run label, which test suites sweep); removed below whatever happens.
        try:
            container = self.client.containers.create(img.id, command=["true"], labels=dict(labels or {}))
        except self._errors.APIError as exc:
            raise EngineError(f"the engine could not create a container of {image}: {exc.explanation or exc}") from None
        try:
            for chunk in container.export():
                write(chunk)
        finally:
            with contextlib.suppress(Exception):  # already gone (removed by someone else): nothing left to clean up
                container.remove(force=True)
        return img.id, img.attrs.get("Config", {}).get("Env") or []

    def close(self) -> None:
        with contextlib.suppress(Exception):  # closing a half-dead connection must not hide the caller's answer
            self.client.close()

    def remove_labeled(self, label_key: str = LABEL) -> int:
        n = 0
        for c in self.client.containers.list(all=True, filters={"label": label_key}):
            with contextlib.suppress(self._errors.NotFound):  # raced with another remover
                c.remove(force=True)
                n += 1
        return n
