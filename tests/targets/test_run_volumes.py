"""run.sh makes the bind-mount sources that do not exist yet, as the user who runs it: Docker would make them as root."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.conftest import call_envkit

PROFILE = ("envkit: 1\nname: vols\nimage: {base: debian:bookworm}\n"
           "run:\n  volumes: [\"./data:/data:ro\", \"./out-ckpt/run 1:/ckpt\"]\n")


def _stub_docker(folder: Path) -> Path:
    """A `docker` that records its words: run.sh's own work happens before it execs docker."""
    bin_dir = folder / "bin"
    bin_dir.mkdir()
    stub = bin_dir / "docker"
    stub.write_text('#!/bin/sh\nprintf "%s\\n" "$@" > "$(dirname "$0")/argv"\n')
    stub.chmod(0o755)
    return bin_dir


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root to run run.sh as another user")
def test_a_missing_volume_source_is_made_by_the_user_who_runs_run_sh():
    user = pwd.getpwnam("nobody")
    with tempfile.TemporaryDirectory(prefix="envkit-vols-") as top:  # pytest's folders are root's alone (0700)
        project = Path(top)
        (project / "envkit.yaml").write_text(PROFILE)
        res = call_envkit("generate", "-o", "out", "--target", "run", cwd=project)
        assert res.returncode == 0, res.stderr
        bin_dir = _stub_docker(project)
        os.chmod(bin_dir, 0o777)  # where the stub records its words
        os.chmod(project, 0o777)  # nobody may make ./data in the project, as its owner would
        run = subprocess.run(["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups",
                              str(project / "out" / "run.sh"), "true"], capture_output=True, text=True, timeout=60,
                             env={"PATH": f"{bin_dir}:{os.environ['PATH']}", "ENVKIT_IMAGE": "any:tag"})
        assert run.returncode == 0, run.stderr
        for made in (project / "data", project / "out-ckpt" / "run 1"):
            assert made.is_dir() and made.stat().st_uid == user.pw_uid, made  # Docker would have made it root's
        assert f"--volume={project}/out/../data:/data:ro" in (bin_dir / "argv").read_text()


def test_a_source_that_cannot_be_made_stops_run_sh_naming_it(tmp_path):
    (tmp_path / "envkit.yaml").write_text(PROFILE.replace("./data:/data:ro", "/proc/envkit-no/data:/data:ro"))
    assert call_envkit("generate", "-o", "out", "--target", "run", cwd=tmp_path).returncode == 0
    bin_dir = _stub_docker(tmp_path)
    run = subprocess.run([str(tmp_path / "out" / "run.sh"), "true"], capture_output=True, text=True, timeout=60,
                         env={"PATH": f"{bin_dir}:{os.environ['PATH']}", "ENVKIT_IMAGE": "any:tag"})
    assert run.returncode == 1 and "run.sh: /proc/envkit-no/data (run.volumes) does not exist and cannot be made" in run.stderr
    assert not (bin_dir / "argv").exists()  # docker never ran
