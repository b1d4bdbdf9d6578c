"""envkit build + validate against a real Docker engine, real DataLoaders, real files."""

from __future__ import annotations

import json
import resource

import pytest

from tests.conftest import SESSION_OWNERS, run_envkit, spawn_envkit
from tests.dockerutil import base_image, session_containers
from tests.e2e.conftest import ngc_profile

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def test_validate_compare_default(e2e_image, e2e_dir):
    res = run_envkit("validate", str(e2e_dir / "envkit.yaml"), "--image", e2e_image, "--compare-default", "--json",
                     cwd=e2e_dir, timeout=900)
    assert res.returncode == 0, res.stderr[-4000:]
    doc = json.loads(res.stdout)
    assert doc["image"] == e2e_image and doc["verdict"] in ("pass", "warn")
    gen = {c["name"]: c for c in doc["generated"]["checks"]}
    # Every check that can run without a GPU passes inside the container.
    for name in ("shm", "cpus", "ulimits", "loader"):
        assert gen[name]["status"] == "pass", gen[name]
    assert gen["pinned_transfer"]["status"] == "skip" and "CUDA" in gen["pinned_transfer"]["message"]
    env = doc["generated"]["environment"]
    # Settings read back from inside: user, shm size, CPUs.
    assert env["user"] == "trainer" and env["uid"] == 1234
    assert env["shm"]["size_bytes"] == 512 * 1024 * 1024
    assert env["usable_cpus"] == 2
    assert env["container"]["detected"] is True
    assert gen["loader"]["measured"].get("samples_per_s", gen["loader"]["measured"].get("samples_per_sec", 1)) > 0

    # Docker's defaults: 64 MB /dev/shm cannot hold 2 workers x 2 batches of 19 MB.
    default = {c["name"]: c for c in doc["default"]["checks"]}
    assert doc["default"]["verdict"] == "fail"
    assert default["shm"]["status"] == "fail"
    assert default["loader"]["status"] == "fail"
    assert default["loader"]["measured"]["failure"] == "shm_exhausted", default["loader"]
    assert "--shm-size=" in default["loader"]["remedy"]
    assert doc["default"]["environment"]["shm"]["size_bytes"] == 64 * 1024 * 1024


def test_a_profile_without_shm_size_passes_where_dockers_defaults_fail(e2e_image, e2e_dir):
    """Sized by default: the profile names no shm, the generated settings carry the need, Docker's 64 MB fails."""
    (e2e_dir / "sized.yaml").write_text(ngc_profile(base_image(), shm=None))
    res = run_envkit("validate", str(e2e_dir / "sized.yaml"), "--image", e2e_image, "--compare-default", "--json",
                     cwd=e2e_dir, timeout=900)
    assert res.returncode == 0, res.stderr[-4000:]
    doc = json.loads(res.stdout)
    gen = {c["name"]: c for c in doc["generated"]["checks"]}
    assert gen["shm"]["status"] == "pass" and gen["loader"]["status"] == "pass", (gen["shm"], gen["loader"])
    assert doc["generated"]["environment"]["shm"]["size_bytes"] == 256 * 1024 * 1024  # 2 workers' 115 MiB, rounded
    assert doc["default"]["verdict"] == "fail"
    assert {c["name"]: c for c in doc["default"]["checks"]}["loader"]["measured"]["failure"] == "shm_exhausted"
    table = run_envkit("validate", str(e2e_dir / "sized.yaml"), "--image", e2e_image, "--compare-default", "--quick",
                       cwd=e2e_dir, timeout=900)
    assert "generated settings PASS; Docker defaults: FAIL" in table.stdout, table.stdout[-3000:]


def test_validate_table_output(e2e_image, e2e_dir):
    res = run_envkit("validate", str(e2e_dir / "envkit.yaml"), "--image", e2e_image, "--quick", cwd=e2e_dir, timeout=600)
    assert res.returncode == 0, res.stderr[-4000:]
    assert "verdict: generated settings PASS" in res.stdout or "verdict: generated settings WARN" in res.stdout
    assert "user: trainer (uid 1234)" in res.stdout and "/dev/shm: 512.0 MiB" in res.stdout


def test_memlock_unlimited_is_refused_clearly(e2e_image, e2e_dir, tmp_path):
    hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)[1]
    if hard == resource.RLIM_INFINITY:
        pytest.skip("this host grants unlimited locked memory, so memlock=-1 starts fine here")
    (e2e_dir / "memlock.yaml").write_text(ngc_profile(base_image(), memlock=-1))
    res = run_envkit("validate", str(e2e_dir / "memlock.yaml"), "--image", e2e_image, cwd=e2e_dir, timeout=300)
    # The host checks come first (docs/validate.md): refused in seconds, nothing started, the daemon's limit named.
    assert res.returncode == 1, res.stderr
    assert "Traceback" not in res.stderr and "nothing was built" in res.stderr
    assert "run.ulimits.memlock unlimited" in res.stderr and f"({hard} bytes)" in res.stderr
    assert "LimitMEMLOCK=infinity" in res.stderr and "does not need memlock" in res.stderr


def test_build_failure_names_the_step(engine, e2e_dir):
    bad = ngc_profile(base_image(), tag="envkit/e2e-broken:test",
                      extra_image="  system_packages: [envkit-no-such-package]\n")
    (e2e_dir / "broken.yaml").write_text(bad)
    res = run_envkit("build", str(e2e_dir / "broken.yaml"), cwd=e2e_dir, timeout=900)
    assert res.returncode == 3, res.stderr[-3000:]
    assert "failing step: Step" in res.stderr and "apt-get" in res.stderr
    assert "envkit-no-such-package" in res.stderr and "Traceback" not in res.stderr


def test_no_engine_is_explained(tmp_path):
    # A profile this host can run (the host checks come first): what stops validate is the missing engine.
    (tmp_path / "envkit.yaml").write_text("envkit: 1\nname: n\nimage: {base: 'debian:bookworm'}\n")
    res = run_envkit("validate", "--image", "x", env={"DOCKER_HOST": f"unix://{tmp_path}/none.sock"}, timeout=60,
                     cwd=tmp_path)
    assert res.returncode == 3 and "cannot reach a Docker engine" in res.stderr and "Traceback" not in res.stderr


@pytest.mark.parametrize("sig, code", [("SIGINT", 130), ("SIGTERM", 143)])
def test_interrupting_validate_leaves_no_container(e2e_image, e2e_dir, engine, sig, code):
    """Ctrl-C (or SIGTERM) while the harness runs: the container is removed anyway."""
    import os
    import signal
    import time

    # A CI runner may start us with SIGINT ignored; a user's terminal does not.
    proc = spawn_envkit("validate", str(e2e_dir / "envkit.yaml"), "--image", e2e_image, cwd=e2e_dir,
                        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if session_containers(engine, SESSION_OWNERS):  # ours only: the daemon is shared
                break
            time.sleep(0.1)
        else:
            pytest.fail("validate never started a container")
        proc.send_signal(getattr(signal, sig))
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
    assert proc.returncode == code, err
    assert "interrupted" in err and "Traceback" not in err
    assert session_containers(engine, SESSION_OWNERS) == []
