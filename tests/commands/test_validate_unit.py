"""build/validate command logic against a fake engine (the real engine is the e2e tier)."""

from __future__ import annotations

import io
import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from envkit.commands import build, validate
from envkit.engine import BuildEvent, BuildFailed, RunResult
from envkit.errors import EngineError
from envkit.planner import build_plan
from envkit.profile import load_profile
from envkit.plan.runsettings import RunSettings, Volume
from tests.fakes import FakeEngine

PROFILE = """envkit: 1
name: unit
image: {base: debian:bookworm, tag: "unit/img:1"}
run:
  shm_size: 1g
  cpuset: "0-1"
  memory: 4g
  ulimits: {nofile: 4096}
  volumes: ["./data:/data:ro", "./missing:/m"]
loader: {num_workers: 1, batch_size: 4, sample_shape: [3, 8, 8]}
"""


def _report(verdict: str, shm_status: str = "pass") -> str:
    return json.dumps({"envkit_harness": 1, "verdict": verdict,
                       "environment": {"user": "dev", "uid": 1000, "shm": {"size_bytes": 1 << 30, "free_bytes": 1 << 30},
                                       "usable_cpus": 2, "cgroup": {"quota_cpus": None}},
                       "checks": [{"name": "shm", "status": shm_status, "measured": {}, "expected": {},
                                   "message": "m", "remedy": "--shm-size=1g" if shm_status == "fail" else None}]})


@pytest.fixture
def profile(tmp_path):
    (tmp_path / "data").mkdir()
    p = tmp_path / "envkit.yaml"
    p.write_text(PROFILE)
    return p


def test_validate_runs_the_harness_with_the_profiles_settings(profile):
    eng = FakeEngine(run_results=[RunResult(0, _report("pass"), ""), RunResult(1, _report("fail", "fail"), "")])
    out, err = io.StringIO(), io.StringIO()
    rc = validate.run(profile, image=None, compare_default=True, as_json=True, timeout=60, quick=True,
                      out=out, err=err, engine=eng)
    assert rc == 0
    calls = [c for c in eng.calls if c[0] != "ping"]  # ping: the daemon's default shm, for the message
    assert [c[0] for c in calls] == ["build", "run", "run"]
    build_call, gen, dflt = (c[1] for c in calls)
    assert build_call["tag"] == "unit/img:1" and build_call["labels"]["io.envkit.managed"] == "1"
    loaded = load_profile(profile)
    rs = build_plan(loaded).settings
    # A missing host path is made, as the user who runs validate (Docker would make it as root), and mounted.
    vols = tuple(Volume(str(loaded.resolve(v.source)), v.target, v.mode, v.project) for v in rs.volumes)
    assert vols[0].target == "/workspace" and vols[0].source == str(profile.parent.resolve()) and len(vols) == 3
    made = profile.parent / "missing"
    assert made.is_dir() and made.stat().st_uid == os.getuid()
    # As the image's user (the harness measures for it), whatever run.sh starts as.
    assert gen["run"] == replace(rs, volumes=vols, start_as_root=False)
    # Docker's defaults: no shm, ipc, init, cpuset, memory, ulimits, volumes; the GPU request and env kept.
    assert dflt["run"] == replace(RunSettings.engine_defaults(), gpus=rs.gpus, env=rs.env)
    assert gen["command"][:4] == ["python3", "/opt/envkit/envkit_harness.pyz", "--expect", "/opt/envkit/envkit_expect.json"]
    assert "--quick" in gen["command"]
    doc = json.loads(out.getvalue())
    assert doc["verdict"] == "pass" and doc["default"]["verdict"] == "fail" and doc["image"] == "unit/img:1"
    assert f"made {made} for the volume {made}:/m, as you" in err.getvalue()


def test_validate_fails_with_exit_1_and_prints_remedies(profile):
    eng = FakeEngine(run_results=[RunResult(1, _report("fail", "fail"), "")])
    out = io.StringIO()
    rc = validate.run(profile, image="given:tag", compare_default=False, as_json=False, timeout=60, quick=False,
                      out=out, err=io.StringIO(), engine=eng)
    assert rc == 1 and [c[0] for c in eng.calls] == ["run"]
    text = out.getvalue()
    assert "verdict: generated settings FAIL" in text and "shm: --shm-size=1g" in text
    assert "user: dev (uid 1000)" in text


@pytest.mark.parametrize("result, needle", [
    (RunResult(137, "", "", timed_out=True), "did not finish within"),
    (RunResult(1, "not json", "Traceback ... ModuleNotFoundError: torch"), "ModuleNotFoundError: torch"),
])
def test_validate_harness_without_report_is_an_engine_error(profile, result, needle):
    eng = FakeEngine(run_results=[result])
    with pytest.raises(EngineError, match=needle):
        validate.run(profile, image="x", compare_default=False, as_json=False, timeout=60, quick=False,
                     out=io.StringIO(), err=io.StringIO(), engine=eng)


def test_build_streams_progress_and_explains_failures(profile):
    events = [BuildEvent("step", 1, 2, "FROM debian:bookworm"), BuildEvent("log", 1, 2, " ---> abc")]
    eng = FakeEngine(build_events=events)
    out, err = io.StringIO(), io.StringIO()
    assert build.run(profile, tag="t:1", no_cache=True, out=out, err=err, engine=eng) == 0
    assert out.getvalue().strip() == "t:1" and "[step 1/2] FROM debian:bookworm" in err.getvalue()
    assert eng.calls[0][1]["nocache"] is True
    # The context held exactly what the Dockerfile copies.
    failing = FakeEngine(failures={"build": BuildFailed("docker build of t:1 failed at Step 2/2 : RUN x",
                                                        step="Step 2/2 : RUN x", log=["E: no such package"])})
    with pytest.raises(EngineError) as exc:
        build.run(profile, tag="t:1", no_cache=False, out=io.StringIO(), err=io.StringIO(), engine=failing)
    assert "failing step: Step 2/2 : RUN x" in str(exc.value) and "E: no such package" in str(exc.value)


def test_build_context_is_removed(profile, monkeypatch):
    seen = {}

    class Spy(FakeEngine):
        def build(self, context_dir, tag, **kw):
            seen["files"] = sorted(p.name for p in context_dir.iterdir())
            seen["dir"] = context_dir
            return super().build(context_dir, tag, **kw)

    build.run(profile, tag=None, no_cache=False, out=io.StringIO(), err=io.StringIO(), engine=Spy())
    assert {"Dockerfile", ".dockerignore", "envkit_harness.pyz", "envkit_expect.json"} <= set(seen["files"])
    assert not seen["dir"].exists()


def test_validate_fails_when_the_images_python_is_not_the_profiles(profile):
    """debian:bookworm implies Python 3.11; a harness reporting 3.9 means another Python is in the image."""
    report = json.loads(_report("pass"))
    report["environment"]["python"] = "3.9.2"
    eng = FakeEngine(run_results=[RunResult(0, json.dumps(report), "")])
    err = io.StringIO()
    rc = validate.run(profile, image="unit/img:1", compare_default=False, as_json=False, timeout=60, quick=True,
                      out=io.StringIO(), err=err, engine=eng)
    assert rc == 1
    assert "the image's Python is 3.9, but the profile expects 3.11 (implied by image.base 'debian:bookworm')" in err.getvalue()
    report["environment"]["python"] = "3.11.2"
    eng = FakeEngine(run_results=[RunResult(0, json.dumps(report), "")])
    assert validate.run(profile, image="unit/img:1", compare_default=False, as_json=False, timeout=60, quick=True,
                        out=io.StringIO(), err=io.StringIO(), engine=eng) == 0


def test_compare_default_names_the_daemons_default_shm(profile):
    # A daemon.json default-shm-size changes what "Docker's defaults" means; validate says which it ran under.
    info = {**FakeEngine().info, "default_shm_size": 1 << 30, "default_shm_source": "/etc/docker/daemon.json"}
    eng = FakeEngine(info=info, run_results=[RunResult(0, _report("pass"), ""), RunResult(0, _report("pass"), "")])
    err = io.StringIO()
    validate.run(profile, image="x:1", compare_default=True, as_json=True, timeout=60, quick=True,
                 out=io.StringIO(), err=err, engine=eng)
    assert "1.0 GiB, set by /etc/docker/daemon.json" in err.getvalue()


def _small_host(tmp_path, cpus: int = 2, mem_gib: int = 24, environ: dict | None = None):
    from envkit.doctor import Host

    root = tmp_path / "host"
    (root / ".envkit-fixture").mkdir(parents=True)
    (root / ".envkit-fixture" / "host.json").write_text(json.dumps({"platform": "linux", "cpus": cpus}))
    (root / "proc").mkdir()
    (root / "proc" / "meminfo").write_text(f"MemTotal:       {mem_gib * 1024 * 1024} kB\n")
    return Host(root, environ=environ or {}, cwd=str(tmp_path), docker_probe=lambda: None)


def test_validate_checks_the_host_before_building(tmp_path):
    from envkit.errors import CheckFailed

    p = tmp_path / "envkit.yaml"
    p.write_text(PROFILE.replace('cpuset: "0-1"', 'cpuset: "0-3"').replace("./missing:/m", "./data:/d"))
    (tmp_path / "data").mkdir()
    eng = FakeEngine()
    with pytest.raises(CheckFailed) as ei:
        validate.run(p, image=None, compare_default=False, as_json=False, timeout=60, quick=True,
                     out=io.StringIO(), err=io.StringIO(), engine=eng, host=_small_host(tmp_path))
    assert eng.calls == []  # nothing built, nothing run: the host said no first
    message = str(ei.value)
    assert "nothing was built" in message and "run.cpuset 0-3 names CPU 3, but this machine has CPUs 0-1" in message
    assert ei.value.exit_code == 1 and "shrink run.cpuset" in ei.value.hint


def test_validate_names_every_host_check_that_fails(tmp_path):
    from envkit.errors import CheckFailed

    p = tmp_path / "envkit.yaml"
    p.write_text(PROFILE.replace("memory: 4g", "memory: 64g\n  gpus: all"))
    with pytest.raises(CheckFailed) as ei:
        validate.run(p, image="given:tag", compare_default=False, as_json=True, timeout=60, quick=True,
                     out=io.StringIO(), err=io.StringIO(), engine=FakeEngine(), host=_small_host(tmp_path))
    assert "memory: 24.0 GiB of memory, but the container needs" in str(ei.value)
    assert "gpu: the profile asks for GPUs but none is visible" in str(ei.value)


def test_a_fitting_profile_goes_on_to_build_and_a_remote_engine_skips_the_host(tmp_path, profile):
    eng = FakeEngine(run_results=[RunResult(0, _report("pass"), "")])
    assert validate.run(profile, image=None, compare_default=False, as_json=True, timeout=60, quick=True,
                        out=io.StringIO(), err=io.StringIO(), engine=eng, host=_small_host(tmp_path)) == 0
    assert [c[0] for c in eng.calls if c[0] != "ping"] == ["build", "run"]
    err = io.StringIO()
    eng = FakeEngine(run_results=[RunResult(0, _report("pass"), "")])
    remote = _small_host(tmp_path / "r", cpus=1, environ={"DOCKER_HOST": "tcp://gpu-box:2376"})
    assert validate.run(profile, image=None, compare_default=False, as_json=True, timeout=60, quick=True,
                        out=io.StringIO(), err=err, engine=eng, host=remote) == 0
    assert "the engine at tcp://gpu-box:2376 runs elsewhere" in err.getvalue()


RECORDED = Path(__file__).resolve().parents[1] / "engine" / "recorded"
# The step as envkit's Dockerfile prints it: one RUN of well over a thousand characters.
LONG_RUN = "Step 7/19 : RUN " + " && ".join(f"uv pip install --python /opt/venv/bin/python pkg{i}==1.0" for i in range(40))


@pytest.mark.parametrize("recording", ["pip-certificate-verify-failed.log", "uv-invalid-peer-certificate.log"])
def test_a_certificate_failure_names_image_ca_certificates_once(profile, recording):
    # Recorded here: pip and uv against an index on 127.0.0.1 with a self-signed certificate, as behind a
    # TLS-intercepting proxy. Before: no hint, the RUN line twice, colour codes printed as text.
    log = ["\x1b[31mERROR:\x1b[0m " + line if line.startswith("ERROR") else line
           for line in (RECORDED / recording).read_text().splitlines()]
    failing = FakeEngine(failures={"build": BuildFailed("docker build of t:1 failed: The command returned a non-zero code: 1",
                                                        step=LONG_RUN, log=log)})
    with pytest.raises(EngineError) as exc:
        build.run(profile, tag="t:1", no_cache=False, out=io.StringIO(), err=io.StringIO(), engine=failing)
    text = str(exc.value)
    assert "image.ca_certificates" in exc.value.hint and exc.value.hint.count("\n") == 0
    assert text.count("Step 7/19") == 1 and "pkg39" not in text and "characters)" in text
    assert "\\x1b" not in text and "\x1b" not in text


@pytest.mark.parametrize("image", [None, "unit/img:1"])
def test_validate_plans_once_for_the_host_check_and_the_run(profile, monkeypatch, image):
    """doctor's host check, the build and the harness run read one plan: validate makes one EnvPlan, with or without
    --image (host_fit takes the run's plan instead of planning on its own)."""
    from envkit.plan.envplan import EnvPlan

    made: list[int] = []
    init = EnvPlan.__init__

    def counted(self, *a, **kw):
        made.append(1)
        init(self, *a, **kw)

    monkeypatch.setattr(EnvPlan, "__init__", counted)
    eng = FakeEngine(run_results=[RunResult(0, _report("pass"), "")])
    rc = validate.run(profile, image=image, compare_default=False, as_json=True, timeout=60, quick=True,
                      out=io.StringIO(), err=io.StringIO(), engine=eng)
    assert rc == 0 and len(made) == 1, f"{len(made)} plans"
