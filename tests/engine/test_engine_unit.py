"""Engine seam tests that need no Docker daemon: stream parsing, settings mapping, error
explanations, container lifecycle against a stub docker client, and the FakeEngine."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import docker.errors
import pytest
import requests.exceptions
from docker.types import DeviceRequest, Ulimit
from tests.conftest import copy_example, example_profiles

from envkit.engine import LABEL, BuildEvent, BuildFailed, RunResult
from envkit.engine.docker import GPU_HINT, BuildStreamParser, DockerEngine, create_kwargs, explain_start_error, fmt_limit, parse_proc_limits
from envkit.errors import EngineError, EnvkitError
from envkit.leftovers import owner_labels
from envkit.planner import build_plan
from envkit.profile import load_profile
from envkit.plan.runsettings import RunSettings, Volume
from envkit.plan.runsettings import Ulimit as EnvkitUlimit
from fakes import FakeEngine

# Captured from dockerd 20.10 / runc on a host whose memlock hard limit is 8 MiB.
MEMLOCK_MSG = ("failed to create shim task: OCI runtime create failed: runc create failed: "
               "unable to start container process: error during container init: error setting "
               "rlimits for ready process: error setting rlimit type 8: operation not "
               "permitted: unknown")
GPU_MSG = 'could not select device driver "" with capabilities: [[gpu]]'
PROC_LIMITS = """Limit                     Soft Limit           Hard Limit           Units
Max cpu time              unlimited            unlimited            seconds
Max stack size            8388608              unlimited            bytes
Max processes             unlimited            unlimited            processes
Max open files            20000                20000                files
Max locked memory         8388608              8388608              bytes
"""


def host8(name):
    return (8 << 20, 8 << 20, "/proc/42/limits of dockerd") if name == "memlock" else None


# ------------------------------------------------------------------ build stream parsing
def feed_all(chunks):
    p, events = BuildStreamParser(), []
    for c in chunks:
        events += p.feed(c)
    events += p.close()
    return p, events


def test_stream_steps_and_logs():
    p, ev = feed_all([
        {"stream": "Step 1/3 : FROM envkit/bookworm-python:local\n"},
        {"stream": " ---> 26a9c601dcd0\n"},
        {"stream": "Step 2/3 : RUN echo hello\n"},
        {"stream": "hello\n"},
        {"stream": "Step 3/3 : LABEL io.envkit.managed=1\n"},
        {"aux": {"ID": "sha256:abc"}},
        {"stream": "Successfully built abc\n"},
    ])
    steps = [(e.step, e.total, e.text) for e in ev if e.kind == "step"]
    assert steps == [(1, 3, "FROM envkit/bookworm-python:local"), (2, 3, "RUN echo hello"),
                     (3, 3, "LABEL io.envkit.managed=1")]
    assert BuildEvent("log", 2, 3, "hello") in ev
    assert p.image_id == "sha256:abc" and p.error is None


def test_stream_lines_split_across_chunks_and_crlf():
    _, ev = feed_all([{"stream": "Step 1/2 : FR"}, {"stream": "OM x\r\nhel"}, {"stream": "lo"}])
    assert [(e.kind, e.text) for e in ev] == [("step", "FROM x"), ("log", "hello")]


def test_stream_error_and_tail():
    chunks = [{"stream": "Step 1/2 : FROM x\n"}, {"stream": "Step 2/2 : RUN false\n"}]
    chunks += [{"stream": f"line {i}\n"} for i in range(40)]
    chunks += [{"errorDetail": {"code": 1, "message": "The command '/bin/sh -c false' returned "
                                "a non-zero code: 1"},
                "error": "The command '/bin/sh -c false' returned a non-zero code: 1"}]
    p, ev = feed_all(chunks)
    assert p.error.startswith("The command '/bin/sh -c false'")
    assert p.step_text == "Step 2/2 : RUN false"
    assert len(p.tail) == 30 and p.tail[-1] == p.error
    assert ev[-1].kind == "log" and ev[-1].step == 2


def test_stream_pull_status_lines_are_logs():
    _, ev = feed_all([{"status": "Pulling from library/debian", "id": "bookworm"}])
    assert ev == [BuildEvent("log", 0, 0, "bookworm Pulling from library/debian")]


# ------------------------------------------------------------------ settings mapping
def _rs(**changes):
    return replace(RunSettings.engine_defaults(), **changes)


def test_engine_defaults_are_no_options():
    assert create_kwargs(RunSettings.engine_defaults()) == {}


def test_every_setting_becomes_its_sdk_argument():
    rs = _rs(shm_size=2 << 30, ipc="private", init=True, cpuset="0-3", cpuset_mems="1", cpus=3.5, memory=16 << 30,
             ulimits=(EnvkitUlimit("memlock", -1, -1), EnvkitUlimit("nofile", 1024, 4096)), gpus="all",
             volumes=(Volume("/w", "/workspace", None, project=True), Volume("/d", "/data", "ro,Z")),
             env=(("A", "1"), ("B", "x y")), start_as_root=True)
    kw = create_kwargs(rs)
    ulimits, (gpu,) = kw.pop("ulimits"), kw.pop("device_requests")
    assert [dict(u) for u in ulimits] == [{"Name": "memlock", "Soft": -1, "Hard": -1},
                                          {"Name": "nofile", "Soft": 1024, "Hard": 4096}]
    assert all(isinstance(u, Ulimit) for u in ulimits) and isinstance(gpu, DeviceRequest)
    assert (gpu.count, gpu.device_ids, gpu.capabilities, gpu.driver) == (-1, [], [["gpu"]], "")
    assert kw == {"ipc_mode": "private", "init": True, "shm_size": 2 << 30, "cpuset_cpus": "0-3", "cpuset_mems": "1",
                  "nano_cpus": 3_500_000_000, "mem_limit": 16 << 30,
                  "volumes": {"/w": {"bind": "/workspace", "mode": "rw"}, "/d": {"bind": "/data", "mode": "ro,Z"}},
                  "environment": {"A": "1", "B": "x y"}, "user": "root"}


@pytest.mark.parametrize("gpus, count, ids", [("all", -1, []), (2, 2, []), ((0, "1"), 0, ["0", "1"])])
def test_gpu_requests(gpus, count, ids):
    (d,) = create_kwargs(_rs(gpus=gpus))["device_requests"]
    assert isinstance(d, DeviceRequest)
    # Docker rejects a count together with device ids.
    assert (d.count, d.device_ids, d.capabilities, d.driver) == (count, ids, [["gpu"]], "")


def test_a_relative_volume_source_is_refused():
    with pytest.raises(EngineError, match="absolute"):
        create_kwargs(_rs(volumes=(Volume("./data", "/data", None),)))


@pytest.mark.parametrize("example", [p.name for p in example_profiles()])
def test_the_profiles_settings_reach_docker_py_as_the_flags_say(example, tmp_path):
    """What docker-py sends for each example (its HostConfig) says what run.sh's flags say."""
    from docker.models.containers import _create_container_args

    loaded = load_profile(copy_example(example, tmp_path))
    rs = build_plan(loaded).settings.with_sources(lambda src: str(loaded.resolve(src)))
    host = _create_container_args({**create_kwargs(rs), "image": "i", "command": ["true"],
                                   "version": "1.44"})["host_config"]
    assert host.get("IpcMode") == rs.ipc and host.get("Init") is True
    assert host.get("ShmSize") == rs.shm_size and host.get("CpusetCpus") == rs.cpuset
    assert host.get("Memory") == rs.memory and host.get("NanoCpus") == (int(round(rs.cpus * 1e9)) if rs.cpus else None)
    assert [(u["Name"], u["Soft"], u["Hard"]) for u in host.get("Ulimits") or []] == \
        [(u.name, u.soft, u.hard) for u in rs.ulimits]
    assert host.get("Binds") == [f"{v.source}:{v.target}:{v.mode or 'rw'}" for v in rs.volumes]


# ------------------------------------------------------------------ limits + error explanations
def test_parse_proc_limits():
    lim = parse_proc_limits(PROC_LIMITS)
    assert lim["memlock"] == (8388608, 8388608)
    assert lim["stack"] == (8388608, -1)
    assert lim["nofile"] == (20000, 20000)
    assert lim["cpu"] == (-1, -1)


@pytest.mark.parametrize("name, value, text", [
    ("memlock", 8 << 20, "8 MiB (8388608 bytes)"), ("memlock", -1, "unlimited"),
    ("memlock", 2**64 - 1, "unlimited"), ("memlock", 1000, "1000 bytes"),
    ("nofile", 1024, "1024"), ("stack", 64 << 20, "64 MiB (67108864 bytes)"),
])
def test_fmt_limit(name, value, text):
    assert fmt_limit(name, value) == text


def test_memlock_failure_names_setting_value_host_limit_and_fixes():
    err = explain_start_error(MEMLOCK_MSG, (EnvkitUlimit("memlock", -1, -1),), host8)
    msg = str(err)
    assert isinstance(err, EngineError) and err.exit_code == 3
    assert "memlock=unlimited" in msg
    assert "8 MiB (8388608 bytes)" in msg and "/proc/42/limits of dockerd" in msg
    assert "rlimit type 8" in msg  # the daemon's own words are kept
    assert "LimitMEMLOCK=infinity" in err.hint and "default-ulimits" in err.hint
    assert "run.ulimits.memlock" in err.hint


def test_rlimit_type_number_picks_the_failing_ulimit():
    ulimits = (EnvkitUlimit("nofile", 1024, 1024), EnvkitUlimit("memlock", -1, -1))
    err = explain_start_error(MEMLOCK_MSG, ulimits, host8)
    assert "memlock=unlimited" in str(err) and "nofile=" not in str(err)
    err = explain_start_error(MEMLOCK_MSG, (EnvkitUlimit("memlock", 1 << 30, 1 << 30),), lambda n: None)
    assert "memlock=1 GiB" in str(err) and "LimitMEMLOCK" in err.hint


def test_gpu_failure_points_at_nvidia_toolkit():
    err = explain_start_error(GPU_MSG, (), host8)
    assert err.hint == GPU_HINT and "nvidia-ctk runtime configure" in err.hint
    assert "[[gpu]]" in str(err)


def test_missing_image_and_unknown_errors():
    err = explain_start_error("No such image: envkit/x:1", (), host8)
    assert "envkit build" in err.hint and "docker images" in err.hint
    err = explain_start_error("something odd", (), host8)
    assert "something odd" in str(err) and err.hint is None


def test_build_failed_is_engine_error():
    e = BuildFailed("boom", step="Step 2/3 : RUN false", log=["a", "b"])
    assert isinstance(e, EngineError) and isinstance(e, EnvkitError) and e.exit_code == 3
    assert (e.step, e.log, e.hint) == ("Step 2/3 : RUN false", ["a", "b"], None)


# ------------------------------------------------------------------ lifecycle with a stub client
class StubContainer:
    def __init__(self, client, name, start_error=None, wait_plan=None):
        self.client, self.name = client, name
        self.start_error, self.wait_plan = start_error, list(wait_plan or [{"StatusCode": 0}])
        self.killed = False

    def start(self):
        if self.start_error:
            raise self.start_error

    def wait(self, timeout=None):
        self.client.waits.append(timeout)
        r = self.wait_plan.pop(0)
        if isinstance(r, BaseException):
            raise r
        return r

    def kill(self):
        self.killed = True

    def logs(self, stdout=True, stderr=True):
        return b"out\n" if stdout else b"err\n"


class StubClient:
    """Just enough of docker.DockerClient for DockerEngine.run/build."""

    def __init__(self, **container_kw):
        self.created, self.removed, self.waits, self.container_kw = [], [], [], container_kw
        self.build_chunks: list[dict] = []
        stub = self

        class Containers:
            def create(self, image, command, **kw):
                if image == "missing":
                    raise docker.errors.ImageNotFound("No such image: missing")
                stub.created.append(kw)
                stub.last = StubContainer(stub, kw["name"], **stub.container_kw)
                return stub.last

        class Api:
            def remove_container(self, name, force=False):
                stub.removed.append((name, force))

            def build(self, **kw):
                stub.build_kw = kw
                yield from stub.build_chunks

        self.containers, self.api = Containers(), Api()


def api_error(msg):
    return docker.errors.APIError("500 Server Error", explanation=msg)


def test_run_success_collects_stdout_and_stderr_separately_and_removes():
    client = StubClient()
    r = DockerEngine(client).run("img", ["true"], _rs(shm_size=1 << 30), labels={"a": "b"}, timeout=7)
    assert r == RunResult(0, "out\n", "err\n", False)
    kw = client.created[0]
    # The owner labels let a later run sweep the container if this process is killed.
    assert kw["labels"] == {"a": "b", LABEL: "1", **owner_labels()} and kw["shm_size"] == 1 << 30
    assert client.removed == [(kw["name"], True)] and client.waits == [7]


def test_start_failure_removes_container_and_explains():
    client = StubClient(start_error=api_error(MEMLOCK_MSG))
    eng = DockerEngine(client)
    eng._host_limit = host8
    with pytest.raises(EngineError, match="memlock=unlimited") as ei:
        eng.run("img", ["true"], _rs(ulimits=(EnvkitUlimit("memlock", -1, -1),)), timeout=5)
    assert "8 MiB" in str(ei.value)
    assert client.removed == [(client.created[0]["name"], True)]


def test_timeout_kills_and_removes():
    client = StubClient(wait_plan=[requests.exceptions.ReadTimeout("x"), {"StatusCode": 137}])
    r = DockerEngine(client).run("img", ["sleep", "9"], RunSettings.engine_defaults(), timeout=0.1)
    assert r.timed_out and r.exit_code == 137 and client.last.killed
    assert len(client.removed) == 1


def test_keyboard_interrupt_still_removes():
    client = StubClient(wait_plan=[KeyboardInterrupt()])
    with pytest.raises(KeyboardInterrupt):
        DockerEngine(client).run("img", ["sleep", "9"], RunSettings.engine_defaults(), timeout=5)
    assert len(client.removed) == 1


def test_missing_image_is_engine_error_with_hint():
    client = StubClient()
    with pytest.raises(EngineError) as ei:
        DockerEngine(client).run("missing", ["true"], RunSettings.engine_defaults(), timeout=5)
    assert "envkit build" in ei.value.hint
    assert len(client.removed) == 1  # the finally tries by name; NotFound would be ignored


def test_export_streams_a_created_container_and_removes_it():
    removed, written = [], []

    class Image:
        id, attrs = "sha256:" + "b" * 64, {"Config": {"Env": ["A=1"]}}

    class Container:
        def export(self):
            yield from (b"ab", b"cd")

        def remove(self, force=False):
            removed.append(force)

    class Client:
        class images:
            @staticmethod
            def get(name):
                if name == "missing":
                    raise docker.errors.ImageNotFound("No such image: missing")
                return Image()

        class containers:
            @staticmethod
            def create(image, command, labels):
                assert (image, command, labels) == (Image.id, ["true"], {"k": "v"})  # never started, caller's labels
                return Container()

    eng = DockerEngine(Client())
    assert eng.export_image("img", written.append, labels={"k": "v"}) == (Image.id, ["A=1"])
    assert written == [b"ab", b"cd"] and removed == [True]
    with pytest.raises(EngineError, match="missing") as ei:
        eng.export_image("missing", written.append)
    assert "envkit build --tag missing" in ei.value.hint


def test_build_failure_carries_step_and_log():
    client = StubClient()
    client.build_chunks = [{"stream": "Step 1/2 : FROM base\n"}, {"stream": "Step 2/2 : RUN x\n"},
                           {"stream": "sh: x: not found\n"},
                           {"error": "The command '/bin/sh -c x' returned a non-zero code: 127"}]
    events = []
    with pytest.raises(BuildFailed) as ei:
        DockerEngine(client).build(Path("."), "t:1", labels={"k": "v"}, on_event=events.append)
    assert ei.value.step == "Step 2/2 : RUN x" and "sh: x: not found" in ei.value.log
    assert "non-zero code: 127" in str(ei.value)
    assert client.build_kw["labels"] == {"k": "v", LABEL: "1"} and client.build_kw["forcerm"]
    assert [e.kind for e in events][:2] == ["step", "step"]


def test_build_from_failure_hints_base_image():
    client = StubClient()
    client.build_chunks = [{"stream": "Step 1/2 : FROM envkit/nope:1\n"},
                           {"error": "pull access denied for envkit/nope, repository does not "
                                     "exist or may require 'docker login'"}]
    with pytest.raises(BuildFailed) as ei:
        DockerEngine(client).build(Path("."), "t:1", labels={})
    assert "the base image envkit/nope:1 could not be pulled: the registry registry-1.docker.io has no image" in str(ei.value)
    assert "docker login registry-1.docker.io" in ei.value.hint and "image.base" in ei.value.hint
    assert "envkit build" not in ei.value.hint and ".sh" not in ei.value.hint


@pytest.mark.parametrize(("error", "kind", "remedy"), [
    ("failed to resolve reference: dial tcp: lookup registry-1.docker.io on 127.0.0.53:53: no such host", "DNS",
     "\"dns\" in /etc/docker/daemon.json"),
    ("Get \"https://registry-1.docker.io/v2/\": dial tcp 54.1.2.3:443: i/o timeout", "(network, proxy, TLS or rate limit)",
     "registry-mirrors"),
    ("Head \"https://nvcr.io/v2/nvidia/pytorch/manifests/24.01-py3\": unauthorized: authentication required",
     "refused the engine's credentials", "docker login nvcr.io"),
    ("manifest for nvcr.io/nvidia/pytorch:24.01-py3 not found: manifest unknown", "has no image by that name",
     "check image.base's name and tag"),
])
def test_an_unpullable_base_is_named_and_its_failure_classified(error, kind, remedy):
    client = StubClient()
    client.build_chunks = [{"stream": "Step 1/9 : FROM nvcr.io/nvidia/pytorch:24.01-py3 AS system\n"},
                           {"error": error}]
    with pytest.raises(BuildFailed) as ei:
        DockerEngine(client).build(Path("."), "t:1", labels={})
    assert "the base image nvcr.io/nvidia/pytorch:24.01-py3 could not be pulled" in str(ei.value)
    assert kind in str(ei.value) and error in str(ei.value)
    assert remedy in ei.value.hint and "set image.base to the same image on a registry this engine reaches" in ei.value.hint


# ------------------------------------------------------------------ connect / imports
def test_connect_without_daemon_explains(monkeypatch, tmp_path):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no.sock")
    with pytest.raises(EngineError) as ei:
        DockerEngine.connect()
    assert ei.value.exit_code == 3 and "no.sock" in str(ei.value)
    for word in ("Docker Desktop", "WSL", "systemctl start docker", "DOCKER_HOST"):
        assert word in ei.value.hint


def test_importing_engine_does_not_import_docker():
    code = "import sys, envkit.engine.docker; assert 'docker' not in sys.modules, 'docker imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


# ------------------------------------------------------------------ FakeEngine
def test_fake_engine_records_and_scripts():
    ev = [BuildEvent("step", 1, 1, "FROM x")]
    eng = FakeEngine(build_events=ev, run_results=[RunResult(1, "", "bad", False),
                                                   lambda i, c, r: RunResult(0, i, "", False)],
                     failures={"build": [BuildFailed("x")]})
    seen = []
    with pytest.raises(BuildFailed):
        eng.build(Path("ctx"), "t:1", labels={}, on_event=seen.append)
    assert seen == ev
    assert eng.build(Path("ctx"), "t:1", labels={}) == eng.image_id  # failure list consumed
    assert eng.run("img", ["a"], RunSettings.engine_defaults(), labels={}, timeout=1).stderr == "bad"
    assert eng.run("img", ["a"], RunSettings.engine_defaults(), labels={}, timeout=1).stdout == "img"
    assert eng.run("img", ["a"], RunSettings.engine_defaults(), labels={}, timeout=1).exit_code == 0
    assert [c[0] for c in eng.calls] == ["build", "build", "run", "run", "run"]
    assert eng.calls[2][1]["labels"] == {LABEL: "1"}
    assert eng.ping()["nvidia_runtime"] is False
    eng.containers = [{LABEL: "1"}, {"other": "x"}]
    assert eng.remove_labeled(LABEL) == 1 and eng.containers == [{"other": "x"}]
