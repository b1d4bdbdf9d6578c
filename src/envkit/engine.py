"""The one seam between envkit and a container engine (after repo2docker's engine.py).

Contract: all Docker use goes through :class:`Engine`, in plain data (paths, dicts of docker-py
``containers.create`` kwargs); every failure is an :class:`~envkit.errors.EngineError` (or
:class:`BuildFailed`) with a ``hint``, never a raw traceback. ``docker`` is imported lazily, so
``envkit generate`` never imports it. Everything envkit creates carries the label ``LABEL=1``.

Example:
    >>> eng = DockerEngine.connect()                                 # doctest: +SKIP
    >>> eng.build(Path("ctx"), "envkit/demo:dev", labels={})           # doctest: +SKIP
    >>> eng.run("envkit/demo:dev", ["python3", "-V"],
    ...         settings={"shm_size": "256m"}, labels={}, timeout=60)  # doctest: +SKIP
    RunResult(exit_code=0, stdout='Python 3.11.2\\n', stderr='', timed_out=False)
"""

from __future__ import annotations

import abc
import re
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from envkit.errors import EngineError

LABEL = "io.envkit.managed"

BASE_IMAGE_HINT = ("build it first with `envkit build`, or for the local base image run "
                   "`sudo bash docker/base-image.sh` (no registry is needed)")
START_HINT = ("Start a Docker engine: on Windows/macOS start Docker Desktop (on WSL2 also "
              "enable Settings > Resources > WSL integration for this distro); on Linux run "
              "`sudo systemctl start docker` (or `sudo dockerd &`, or `sudo bash "
              "docker/engine-up.sh`) and make sure your user may use the socket (group "
              "`docker`). For a remote engine set DOCKER_HOST (e.g. tcp://host:2375).")
GPU_HINT = ("The Docker daemon has no GPU runtime. Install the NVIDIA Container Toolkit "
            "(nvidia-container-toolkit), run `sudo nvidia-ctk runtime configure "
            "--runtime=docker` and restart Docker (Docker Desktop/WSL2: update the Windows "
            "NVIDIA driver). Or drop the GPU request from the profile to run on CPU.")

# Docker ulimit name -> (Linux RLIMIT_* number, /proc/<pid>/limits row). runc names the
# failing limit only by number ("error setting rlimit type 8"), so we need the table.
_ROWS = ("cpu time|file size|data size|stack size|core file size|resident set|processes|"
         "open files|locked memory|address space|file locks|pending signals|msgqueue size|"
         "nice priority|realtime priority|realtime timeout").split("|")
_RLIMITS = {n: (i, "Max " + _ROWS[i]) for i, n in enumerate(
    "cpu fsize data stack core rss nproc nofile memlock as locks sigpending msgqueue nice "
    "rtprio rttime".split())}
_BYTE_LIMITS = {"fsize", "data", "stack", "core", "rss", "memlock", "as", "msgqueue"}
_STEP_RE = re.compile(r"^Step (\d+)/(\d+) : (.*)$")


@dataclass(frozen=True)
class BuildEvent:
    """One line of build progress: ``kind`` is "step" (a new ``Step N/M``) or "log"."""
    kind: str
    step: int  # current step (0 before the first), total steps, and the line itself
    total: int
    text: str


@dataclass(frozen=True)
class RunResult:
    """Outcome of :meth:`Engine.run`; ``timed_out`` means envkit killed the container."""
    exit_code: int
    stdout: str
    stderr: str
    timed_out: bool = False


class BuildFailed(EngineError):
    """``docker build`` failed; ``step``: the failing ``Step N/M : ...`` line; ``log``: its tail."""

    def __init__(self, message: str, *, step: str | None = None, log: list[str] | None = None,
                 hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.step, self.log = step, list(log or [])


class Engine(abc.ABC):
    """What envkit needs from a container engine. Tests use a fake (tests/fakes.py)."""

    @abc.abstractmethod
    def ping(self) -> dict[str, Any]:
        """Server facts: version, os, cgroup_version, runtimes, nvidia_runtime, host_ulimits."""

    @abc.abstractmethod
    def build(self, context_dir: Path, tag: str, *, labels: dict[str, str] | None = None,
              nocache: bool = False, buildargs: dict[str, str] | None = None,
              on_event: Callable[[BuildEvent], None] | None = None) -> str:
        """Build ``context_dir``/Dockerfile as ``tag``; return the image id, or BuildFailed.

        ``buildargs`` are --build-arg values (the proxy settings), never written into the Dockerfile.
        """

    @abc.abstractmethod
    def run(self, image: str, command: list[str], *, settings: dict[str, Any],
            labels: dict[str, str] | None = None, timeout: float = 600) -> RunResult:
        """Run ``command`` in a fresh container (always removed) with docker-py ``settings``."""

    @abc.abstractmethod
    def remove_labeled(self, label_key: str = LABEL) -> int:
        """Force-remove every container carrying ``label_key``; return how many."""

    def list_owned(self) -> list[tuple[str, str, dict[str, str]]]:
        """(id, name, labels) of every container (any state) carrying ``LABEL``; [] when unsupported."""
        return []

    def remove_container(self, container_id: str) -> bool:
        """Force-remove one container; False when it was already gone."""
        return False

    def image_labels(self, image: str) -> dict[str, str]:
        """The labels of ``image`` ({} when the engine cannot tell); ``validate --image`` compares them."""
        return {}


# ---------------------------------------------------------------- pure helpers
class BuildStreamParser:
    """Turns classic-builder JSON chunks into BuildEvents; remembers step, log tail, error, id.

    >>> p = BuildStreamParser(); [e.kind for e in p.feed({"stream": "Step 1/2 : FROM x\\n"})]
    ['step']
    """
    def __init__(self, tail: int = 30) -> None:
        self.step, self.total, self.step_text, self.error = 0, 0, None, None
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


def _parse_volume(spec: str) -> tuple[str, dict[str, str]]:
    """``"src:dst[:mode]"`` -> ``(src, {"bind": dst, "mode": mode})``; tolerates ``C:\\x``."""
    head, _, mode = spec.rpartition(":")  # a trailing "ro" / "rw" / "ro,Z" has no slash
    spec, mode = (head, mode) if ":" in head and not re.search(r"[/\\]", mode) else (spec, "rw")
    src, _, dst = spec.rpartition(":")
    if not src or not dst.startswith("/"):
        raise EngineError(f"bad volume {spec!r}: expected 'SRC:/container/path[:ro|rw]'")
    return src, {"bind": dst, "mode": mode}


def to_create_kwargs(settings: dict[str, Any]) -> dict[str, Any]:
    """Map envkit's plain run settings to docker-py ``containers.create`` kwargs.

    ulimits ``[{"name","soft","hard"}]`` -> ``docker.types.Ulimit`` (``"unlimited"`` -> -1);
    device_requests ``[{"count","device_ids","capabilities"}]`` -> ``docker.types.DeviceRequest``;
    volumes ``["src:dst[:mode]"]`` -> binds dict. Everything else passes through unchanged.
    """
    from docker.types import DeviceRequest, Ulimit
    kw = dict(settings)
    if kw.get("ulimits"):  # hard defaults to soft, as with `docker run --ulimit name=N`
        kw["ulimits"] = [u if isinstance(u, Ulimit) else Ulimit(
            name=u["name"], soft=_as_limit(u.get("soft")),
            hard=_as_limit(u.get("hard", u.get("soft")))) for u in kw["ulimits"]]
    reqs = []  # device_requests: accept plain dicts or ready DeviceRequest objects
    for d in kw.get("device_requests") or []:
        if not isinstance(d, DeviceRequest):
            caps = d.get("capabilities") or [["gpu"]]
            if all(isinstance(c, str) for c in caps):
                caps = [list(caps)]  # ["gpu"] is one AND-set of capabilities: [["gpu"]]
            # Docker rejects count together with device_ids; no ids and no count = all GPUs.
            count = _as_limit(d.get("count", 0 if d.get("device_ids") else -1))
            d = DeviceRequest(driver=d.get("driver", ""), count=count,
                              device_ids=d.get("device_ids"), capabilities=caps)
        reqs.append(d)
    if reqs:
        kw["device_requests"] = reqs
    if isinstance(kw.get("volumes"), (list, tuple)):
        kw["volumes"] = dict(_parse_volume(v) for v in kw["volumes"])
    return kw


def parse_proc_limits(text: str) -> dict[str, tuple[int, int]]:
    """Parse /proc/<pid>/limits into ``{docker_name: (soft, hard)}`` (-1 = unlimited)."""
    out = {}
    for name, (_, row) in _RLIMITS.items():
        m = re.search(rf"^{row}\s+(\S+)\s+(\S+)", text, re.M)
        if m:
            out[name] = tuple(-1 if v == "unlimited" else int(v) for v in m.groups())
    return out


def fmt_limit(name: str, value: int) -> str:
    """Human form of a limit value: bytes for byte limits, ``unlimited`` for -1."""
    if value < 0 or value >= 2**63 - 1:  # RLIM_INFINITY as read by resource.getrlimit
        return "unlimited"
    if name in _BYTE_LIMITS:
        for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
            if value >= size and value % size == 0:
                return f"{value // size} {unit} ({value} bytes)"
        return f"{value} bytes"
    return str(value)


def explain_start_error(message: str, settings: dict[str, Any],
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
    ulimits = [{"name": u.name, "soft": u.soft, "hard": u.hard} if hasattr(u, "name") else u
               for u in settings.get("ulimits") or []]  # plain dicts or docker.types.Ulimit
    if ulimits and any(k in low for k in ("rlimit", "ulimit", "operation not permitted")):
        m = re.search(r"rlimit type (\d+)", low)
        u = next((u for u in ulimits if m and _RLIMITS.get(u["name"], (-1,))[0] == int(m[1])),
                 ulimits[0])  # runc names only the first limit it failed on
        name, soft = u["name"], _as_limit(u.get("soft"))
        hard = _as_limit(u.get("hard", soft))
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
    if "no such image" in low or ("image" in low and "not found" in low):
        return EngineError(f"image not found: {message}", hint=BASE_IMAGE_HINT)
    return EngineError(f"the engine could not start the container: {message}")


def _as_limit(v: Any) -> int:
    return -1 if v in (None, "unlimited", "infinity") else int(v)


def __getattr__(name: str):
    # DockerEngine lives in envkit.engine_docker and is loaded on first use, with docker-py.
    if name == "DockerEngine":
        from envkit.engine_docker import DockerEngine

        return DockerEngine
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
