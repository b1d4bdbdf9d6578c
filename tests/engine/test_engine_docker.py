"""DockerEngine against a real engine (``-m docker``). Needs the local base image
(docker/base-image.sh; tag from ENVKIT_BASE_IMAGE). Each test runs with the ``docker_engine``
fixture, which fails the test if a container it made is left behind."""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import time
import uuid
from dataclasses import replace
from pathlib import Path

import docker.errors
import pytest

from dockerutil import require_base_image
from envkit.engine import LABEL, BuildFailed
from envkit.errors import EngineError
from envkit.plan.runsettings import RunSettings, Ulimit, Volume

pytestmark = pytest.mark.docker

PY = "python3"


@pytest.fixture
def base(docker_engine):
    return require_base_image(docker_engine)


@pytest.fixture(scope="module")
def built_tags():
    """Tags built by this module; removed at the end."""
    tags: list[str] = []
    yield tags
    for t in tags:
        subprocess.run(["docker", "image", "rm", "-f", t], capture_output=True)


def run_py(engine, image, code, **settings):
    """``code`` under the engine's defaults with ``settings`` (RunSettings fields) changed."""
    return engine.run(image, [PY, "-c", code], replace(RunSettings.engine_defaults(), **settings), labels={},
                      timeout=120)


def test_ping(docker_engine):
    info = docker_engine.ping()
    assert info["os_type"] == "linux" and info["server_version"]
    assert info["cgroup_version"] in ("1", "2")
    assert "runc" in info["runtimes"] and isinstance(info["nvidia_runtime"], bool)
    assert "memlock" in info["host_ulimits"]


def test_build_streams_progress_and_labels(docker_engine, base, tmp_path, built_tags):
    tag = f"envkit/test-engine:{uuid.uuid4().hex[:8]}"
    (tmp_path / "Dockerfile").write_text(
        f"FROM {base}\nRUN echo envkit-build-marker\nCMD [\"python3\", \"-V\"]\n")
    events = []
    image_id = docker_engine.build(tmp_path, tag, labels={"io.envkit.profile": "t"},
                                   on_event=events.append)
    built_tags.append(tag)
    steps = [e for e in events if e.kind == "step"]
    assert steps[0].step == 1 and steps[0].text.startswith("FROM ")
    assert all(e.total == steps[0].total for e in steps) and len(steps) == steps[0].total
    assert any(e.kind == "log" and e.text == "envkit-build-marker" for e in events)
    img = docker_engine.client.images.get(tag)
    assert img.id == image_id
    assert img.labels[LABEL] == "1" and img.labels["io.envkit.profile"] == "t"


def test_run_settings_are_applied(docker_engine, base):
    # Not tmp_path: pytest's base dir is 0700, and the container runs as uid 1000.
    with tempfile.TemporaryDirectory(prefix="envkit-vol-") as d:
        os.chmod(d, 0o755)
        (Path(d) / "hello.txt").write_text("from-host")
        os.chmod(Path(d) / "hello.txt", 0o644)
        _check_run_settings(docker_engine, base, Path(d))


def _check_run_settings(docker_engine, base, data_dir):
    code = ("import os, resource; s = os.statvfs('/dev/shm');"
            "print(s.f_blocks * s.f_frsize);"
            "print(sorted(os.sched_getaffinity(0)));"
            "print(resource.getrlimit(resource.RLIMIT_NOFILE));"
            "print(resource.getrlimit(resource.RLIMIT_MEMLOCK));"
            "print(os.environ['ENVKIT_T']);"
            "print(open('/data/hello.txt').read())")
    r = run_py(docker_engine, base, code, shm_size=256 << 20, cpuset="0", ipc="private",
               ulimits=(Ulimit("nofile", 1024, 2048), Ulimit("memlock", 4 << 20, 4 << 20)),
               env=(("ENVKIT_T", "yes"),), volumes=(Volume(str(data_dir), "/data", "ro"),), cpus=1.0,
               memory=512 << 20)
    assert r.exit_code == 0 and not r.timed_out, r.stderr
    assert r.stdout.splitlines() == ["268435456", "[0]", "(1024, 2048)",
                                     f"({4 << 20}, {4 << 20})", "yes", "from-host"]


def test_default_shm_is_64m_and_stdout_stderr_split(docker_engine, base):
    r = run_py(docker_engine, base, "import os, sys; s = os.statvfs('/dev/shm');"
               "print(s.f_blocks * s.f_frsize); print('oops', file=sys.stderr); sys.exit(3)")
    assert (r.exit_code, r.stdout, r.stderr, r.timed_out) == (3, "67108864\n", "oops\n", False)


def test_memlock_unlimited_applies_or_is_explained(docker_engine, base):
    """Where dockerd may raise memlock (CAP_SYS_RESOURCE) it applies; where it may not (this
    dev host: 8 MiB hard limit) the error names the setting, the value and the host limit."""
    settings = replace(RunSettings.engine_defaults(), ulimits=(Ulimit("memlock", -1, -1),))
    try:
        r = docker_engine.run(base, ["sh", "-c", "ulimit -l"], settings, labels={}, timeout=60)
    except EngineError as exc:
        msg = str(exc)
        host = docker_engine.ping()["host_ulimits"]["memlock"]
        assert "memlock=unlimited" in msg and "rlimit" in msg
        if host["hard"] != -1:
            from envkit.engine.docker import fmt_limit
            assert fmt_limit("memlock", host["hard"]) in msg and host["source"] in msg
        assert "LimitMEMLOCK=infinity" in exc.hint and "default-ulimits" in exc.hint
        assert exc.exit_code == 3
    else:
        assert r.exit_code == 0 and r.stdout.strip() == "unlimited"


def test_start_failure_leaves_no_container(docker_engine, base):
    """A start failure (exec of a missing binary fails in runc, after create) is explained
    and the container is gone; run(remove=True) would have left a 'Created' one."""
    mark = f"io.envkit.test-start={uuid.uuid4().hex[:8]}"
    key, _, val = mark.partition("=")
    with pytest.raises(EngineError, match="could not start"):
        docker_engine.run(base, ["/no/such/binary"], RunSettings.engine_defaults(), labels={key: val},
                          timeout=60)
    out = subprocess.run(["docker", "ps", "-a", "-q", "--filter", f"label={mark}"],
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == ""


def test_timeout_kills_and_removes(docker_engine, base):
    t0 = time.monotonic()
    r = docker_engine.run(base, ["sleep", "60"], RunSettings.engine_defaults(), labels={}, timeout=2)
    assert r.timed_out and r.exit_code != 0
    assert time.monotonic() - t0 < 30


def test_missing_image(docker_engine):
    with pytest.raises(EngineError) as ei:
        docker_engine.run("envkit/does-not-exist:none", ["true"], RunSettings.engine_defaults(), labels={},
                          timeout=30)
    assert "envkit build" in ei.value.hint


def test_gpu_request_without_nvidia_runtime(docker_engine, base):
    if docker_engine.ping()["nvidia_runtime"]:
        pytest.skip("this engine has an nvidia runtime")
    with pytest.raises(EngineError) as ei:
        docker_engine.run(base, ["true"], replace(RunSettings.engine_defaults(), gpus="all"), labels={}, timeout=30)
    assert "nvidia-ctk" in ei.value.hint


def test_build_failure_reports_failing_step(docker_engine, base, tmp_path, built_tags):
    tag = f"envkit/test-engine-fail:{uuid.uuid4().hex[:8]}"
    (tmp_path / "Dockerfile").write_text(
        f"FROM {base}\nRUN echo before-failure\nRUN echo failing-now && exit 7\nRUN echo never\n")
    events = []
    with pytest.raises(BuildFailed) as ei:
        docker_engine.build(tmp_path, tag, labels={}, on_event=events.append)
    built_tags.append(tag)
    err = ei.value
    # classic builder appends one LABEL step per label, so the total varies
    assert re.fullmatch(r"Step 3/\d+ : RUN echo failing-now && exit 7", err.step), err.step
    assert "returned a non-zero code: 7" in str(err) and "failing-now" in err.log
    assert not any(e.text == "never" for e in events)
    # forcerm: the failed step's intermediate container is gone too
    running = [ln.split()[-1] for ln in err.log if ln.strip().startswith("---> Running in")]
    assert running, err.log
    out = subprocess.run(["docker", "ps", "-a", "-q", "--no-trunc"], capture_output=True,
                         text=True, check=True).stdout
    assert not any(cid.startswith(running[-1]) for cid in out.split())


def test_remove_labeled(docker_engine, base):
    mark = f"io.envkit.test-stale={uuid.uuid4().hex[:8]}"
    key, _, val = mark.partition("=")
    c = docker_engine.client.containers.create(base, ["true"], labels={LABEL: "1", key: val})
    assert docker_engine.remove_labeled(mark) == 1
    assert docker_engine.remove_labeled(mark) == 0
    with pytest.raises(docker.errors.NotFound):
        c.reload()


def _over_the_daemons_nofile():
    """A nofile just above the local dockerd's hard limit (None where it is unlimited or unreadable)."""
    from envkit.engine.dockerd import read_daemon

    lim = (read_daemon(Path("/")).limits or {}).get("nofile")
    if not lim or lim[1] == -1 or lim[1] >= int(Path("/proc/sys/fs/nr_open").read_text()):
        return None
    return lim[1] + 1


def test_the_ulimit_probe_says_what_a_real_start_does(docker_engine, base):
    asked = _over_the_daemons_nofile()
    if asked is None:
        pytest.skip("the local dockerd's nofile is unlimited or unreadable: nothing to go above")
    ulimits = (Ulimit("nofile", asked, asked),)
    granted, said = docker_engine.probe_ulimits(ulimits)
    try:
        r = run_py(docker_engine, base, "import resource; print(resource.getrlimit(resource.RLIMIT_NOFILE)[1])",
                   ulimits=ulimits)
        started = r.exit_code == 0 and r.stdout.strip() == str(asked)
    except EngineError as exc:
        started = False
        assert "rlimit" in str(exc)
    assert granted is started, said


def test_doctor_and_validate_refuse_a_nofile_the_engine_will_not_grant_within_seconds(docker_engine, base, tmp_path):
    # The README's Quick start: init wrote nofile 65536, doctor passed, validate built for a minute and failed at
    # container start. Now both answer before any build, naming the key and the daemon's limit.
    asked = _over_the_daemons_nofile()
    if asked is None:
        pytest.skip("the local dockerd's nofile is unlimited or unreadable: nothing to go above")
    if docker_engine.probe_ulimits((Ulimit("nofile", asked, asked),))[0] is not False:
        pytest.skip("this engine raises nofile above the daemon's own limit: nothing to refuse")
    (tmp_path / "envkit.yaml").write_text(f"envkit: 1\nname: nf\nimage: {{base: {base}}}\n"
                                          f"run: {{ulimits: {{nofile: {asked}}}}}\n")
    from envkit.engine.dockerd import read_daemon

    hard = str(read_daemon(Path("/")).limits["nofile"][1])
    for argv in (["doctor"], ["validate", "--quick"]):
        res = subprocess.run([os.path.join(os.path.dirname(os.sys.executable), "envkit"), *argv], cwd=tmp_path,
                             capture_output=True, text=True, timeout=120)
        assert res.returncode == 1, (argv, res.stdout, res.stderr)
        assert f"run.ulimits.nofile {asked}" in res.stdout + res.stderr and hard in res.stdout + res.stderr
    assert "nothing was built" in res.stderr
    assert subprocess.run(["docker", "image", "inspect", "localhost/envkit/nf"], capture_output=True).returncode != 0
