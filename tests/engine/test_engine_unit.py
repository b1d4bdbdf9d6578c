"""Engine seam tests that need no Docker daemon: stream parsing, settings mapping, error
explanations, container lifecycle against a stub docker client, and the FakeEngine."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import docker.errors
import pytest
import requests.exceptions
from docker.types import DeviceRequest, Ulimit

from envkit.leftovers import owner_labels
from envkit.engine import LABEL, BuildEvent, BuildFailed, RunResult
from envkit.engine.docker import (GPU_HINT, BuildStreamParser, DockerEngine, explain_start_error, fmt_limit,
                                  parse_proc_limits, to_create_kwargs)
from envkit.errors import EngineError, EnvkitError
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
def test_ulimits_become_sdk_ulimits():
    kw = to_create_kwargs({"ulimits": [{"name": "memlock", "soft": -1, "hard": -1},
                                       {"name": "stack", "soft": 67108864},
                                       {"name": "nofile", "soft": "unlimited", "hard": 1024}],
                           "shm_size": "256m", "ipc_mode": "private"})
    assert all(isinstance(u, Ulimit) for u in kw["ulimits"])
    assert [(u.name, u.soft, u.hard) for u in kw["ulimits"]] == [
        ("memlock", -1, -1), ("stack", 67108864, 67108864), ("nofile", -1, 1024)]
    assert dict(kw["ulimits"][0]) == {"Name": "memlock", "Soft": -1, "Hard": -1}
    assert kw["shm_size"] == "256m" and kw["ipc_mode"] == "private"


@pytest.mark.parametrize("req, count, ids, caps", [
    ({"count": -1, "capabilities": [["gpu"]]}, -1, [], [["gpu"]]),
    ({"count": 2, "capabilities": ["gpu"]}, 2, [], [["gpu"]]),
    ({"device_ids": ["0", "1"], "capabilities": [["gpu"]]}, 0, ["0", "1"], [["gpu"]]),
    ({}, -1, [], [["gpu"]]),
])
def test_device_requests(req, count, ids, caps):
    (d,) = to_create_kwargs({"device_requests": [req]})["device_requests"]
    assert isinstance(d, DeviceRequest)
    assert (d.count, d.device_ids, d.capabilities, d.driver) == (count, ids, caps, "")


def test_settings_input_is_not_mutated_and_sdk_objects_pass_through():
    u = Ulimit(name="nofile", soft=1, hard=2)
    settings = {"ulimits": [u], "volumes": ["/a:/b"]}
    kw = to_create_kwargs(settings)
    assert kw["ulimits"][0] is u and settings["volumes"] == ["/a:/b"]


@pytest.mark.parametrize("spec, src, bind, mode", [
    ("/data:/data", "/data", "/data", "rw"),
    ("/data:/mnt/data:ro", "/data", "/mnt/data", "ro"),
    ("cache-vol:/root/.cache:rw", "cache-vol", "/root/.cache", "rw"),
    ("/src:/src:ro,Z", "/src", "/src", "ro,Z"),
    ("C:\\Users\\me\\data:/data", "C:\\Users\\me\\data", "/data", "rw"),
    ("C:\\Users\\me\\data:/data:ro", "C:\\Users\\me\\data", "/data", "ro"),
])
def test_volumes_become_binds(spec, src, bind, mode):
    assert to_create_kwargs({"volumes": [spec]})["volumes"] == {src: {"bind": bind, "mode": mode}}


@pytest.mark.parametrize("bad", ["/just-one-path", "/a:relative", ":/x"])
def test_bad_volume_is_engine_error(bad):
    with pytest.raises(EngineError, match="bad volume"):
        to_create_kwargs({"volumes": [bad]})


def test_matches_runsettings_sdk_kwargs_shape():
    """The plain dicts envkit.engine.docker.sdk_kwargs produces are exactly what the seam accepts."""
    kw = to_create_kwargs({"ipc_mode": "private", "shm_size": 2 << 30, "cpuset_cpus": "0-3",
                           "nano_cpus": 4_000_000_000, "mem_limit": 16 << 30,
                           "ulimits": [{"name": "memlock", "soft": -1, "hard": -1}],
                           "device_requests": [{"count": -1, "capabilities": [["gpu"]]}],
                           "volumes": ["/w:/workspace"], "environment": {"A": "1"}})
    assert kw["nano_cpus"] == 4_000_000_000 and kw["environment"] == {"A": "1"}
    assert kw["volumes"] == {"/w": {"bind": "/workspace", "mode": "rw"}}


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
    err = explain_start_error(MEMLOCK_MSG, {"ulimits": [{"name": "memlock", "soft": -1,
                                                         "hard": -1}]}, host8)
    msg = str(err)
    assert isinstance(err, EngineError) and err.exit_code == 3
    assert "memlock=unlimited" in msg
    assert "8 MiB (8388608 bytes)" in msg and "/proc/42/limits of dockerd" in msg
    assert "rlimit type 8" in msg  # the daemon's own words are kept
    assert "LimitMEMLOCK=infinity" in err.hint and "default-ulimits" in err.hint
    assert "run.ulimits.memlock" in err.hint


def test_rlimit_type_number_picks_the_failing_ulimit():
    settings = {"ulimits": [{"name": "nofile", "soft": 1024, "hard": 1024},
                            {"name": "memlock", "soft": -1, "hard": -1}]}
    err = explain_start_error(MEMLOCK_MSG, settings, host8)
    assert "memlock=unlimited" in str(err) and "nofile=" not in str(err)
    # sdk Ulimit objects are understood too
    err = explain_start_error(MEMLOCK_MSG, {"ulimits": [Ulimit(name="memlock", soft=1 << 30,
                                                               hard=1 << 30)]}, lambda n: None)
    assert "memlock=1 GiB" in str(err) and "LimitMEMLOCK" in err.hint


def test_gpu_failure_points_at_nvidia_toolkit():
    err = explain_start_error(GPU_MSG, {"device_requests": [{"count": -1}]}, host8)
    assert err.hint == GPU_HINT and "nvidia-ctk runtime configure" in err.hint
    assert "[[gpu]]" in str(err)


def test_missing_image_and_unknown_errors():
    err = explain_start_error("No such image: envkit/x:1", {}, host8)
    assert "base-image.sh" in err.hint and "envkit build" in err.hint
    err = explain_start_error("something odd", {}, host8)
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
    r = DockerEngine(client).run("img", ["true"], settings={"shm_size": "1g"},
                                 labels={"a": "b"}, timeout=7)
    assert r == RunResult(0, "out\n", "err\n", False)
    kw = client.created[0]
    # The owner labels let a later run sweep the container if this process is killed.
    assert kw["labels"] == {"a": "b", LABEL: "1", **owner_labels()} and kw["shm_size"] == "1g"
    assert client.removed == [(kw["name"], True)] and client.waits == [7]


def test_start_failure_removes_container_and_explains():
    client = StubClient(start_error=api_error(MEMLOCK_MSG))
    eng = DockerEngine(client)
    eng._host_limit = host8
    with pytest.raises(EngineError, match="memlock=unlimited") as ei:
        eng.run("img", ["true"], settings={"ulimits": [{"name": "memlock", "soft": -1,
                                                        "hard": -1}]}, timeout=5)
    assert "8 MiB" in str(ei.value)
    assert client.removed == [(client.created[0]["name"], True)]


def test_timeout_kills_and_removes():
    client = StubClient(wait_plan=[requests.exceptions.ReadTimeout("x"), {"StatusCode": 137}])
    r = DockerEngine(client).run("img", ["sleep", "9"], settings={}, timeout=0.1)
    assert r.timed_out and r.exit_code == 137 and client.last.killed
    assert len(client.removed) == 1


def test_keyboard_interrupt_still_removes():
    client = StubClient(wait_plan=[KeyboardInterrupt()])
    with pytest.raises(KeyboardInterrupt):
        DockerEngine(client).run("img", ["sleep", "9"], settings={}, timeout=5)
    assert len(client.removed) == 1


def test_missing_image_is_engine_error_with_hint():
    client = StubClient()
    with pytest.raises(EngineError) as ei:
        DockerEngine(client).run("missing", ["true"], settings={}, timeout=5)
    assert "base-image.sh" in ei.value.hint
    assert len(client.removed) == 1  # the finally tries by name; NotFound would be ignored


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
    assert "base-image.sh" in ei.value.hint


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
                                                   lambda i, c, s: RunResult(0, i, "", False)],
                     failures={"build": [BuildFailed("x")]})
    seen = []
    with pytest.raises(BuildFailed):
        eng.build(Path("ctx"), "t:1", labels={}, on_event=seen.append)
    assert seen == ev
    assert eng.build(Path("ctx"), "t:1", labels={}) == eng.image_id  # failure list consumed
    assert eng.run("img", ["a"], settings={}, labels={}, timeout=1).stderr == "bad"
    assert eng.run("img", ["a"], settings={}, labels={}, timeout=1).stdout == "img"
    assert eng.run("img", ["a"], settings={}, labels={}, timeout=1).exit_code == 0
    assert [c[0] for c in eng.calls] == ["build", "build", "run", "run", "run"]
    assert eng.calls[2][1]["labels"] == {LABEL: "1"}
    assert eng.ping()["nvidia_runtime"] is False
    eng.containers = [{LABEL: "1"}, {"other": "x"}]
    assert eng.remove_labeled(LABEL) == 1 and eng.containers == [{"other": "x"}]
