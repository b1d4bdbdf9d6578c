"""envkit's default image is local only: its name is under ``localhost/`` (Docker never looks for it on Docker
Hub, where anyone may publish ``envkit/<name>``), and run.sh stops before ``docker run`` while it is not built."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from envkit.generation import render_all
from envkit.profile import load_profile
from envkit.profile.dockerref import is_local_only

# A `docker` that logs its arguments; `image inspect` answers as the engine does for an image it lacks.
FAKE_DOCKER = """#!/bin/sh
echo "$*" >> "$FAKE_LOG"
if [ "$1 $2" = "image inspect" ] && [ -z "$FAKE_HAS_IMAGE" ]; then
  echo "Error: No such image: $3" >&2; echo "[]"; exit 1
fi
exit 0
"""


def _generate(tmp_path: Path, extra: str = "") -> Path:
    profile = tmp_path / "envkit.yaml"
    profile.write_text(f"envkit: 1\nname: demo\nimage: {{base: 'python:3.11-slim'{extra}}}\n")
    out = tmp_path / "out"
    for f in render_all(load_profile(profile), out, ("run", "compose")):
        path = out / f.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(f.content if isinstance(f.content, bytes) else f.content.encode())
    return out


def _run(tmp_path: Path, out: Path, **env: str) -> tuple[subprocess.CompletedProcess, list[str]]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "docker").write_text(FAKE_DOCKER)
    (bin_dir / "docker").chmod(0o755)
    log = tmp_path / "docker.log"
    log.write_text("")
    full = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "FAKE_LOG": str(log), **env}
    if "ENVKIT_IMAGE" not in env:
        full.pop("ENVKIT_IMAGE", None)
    ran = subprocess.run(["bash", str(out / "run.sh"), "python", "train.py"], capture_output=True, text=True,
                         env=full, stdin=subprocess.DEVNULL, timeout=60)
    return ran, log.read_text().splitlines()


def test_the_default_image_is_local_only(tmp_path):
    profile = load_profile(_generate(tmp_path).parent / "envkit.yaml").profile
    assert profile.image_tag == "localhost/envkit/demo:latest" and is_local_only(profile.image_tag)
    compose = (tmp_path / "out" / "compose.yaml").read_text()
    assert "image: 'localhost/envkit/demo:latest'" in compose and "build:" in compose


def test_run_sh_stops_before_docker_run_when_the_image_is_not_built(tmp_path):
    ran, calls = _run(tmp_path, _generate(tmp_path))
    assert ran.returncode == 1
    assert "localhost/envkit/demo:latest is not built on this machine: run 'envkit build' first" in ran.stderr
    assert calls == ["image inspect localhost/envkit/demo:latest"]  # no run, no pull


def test_run_sh_runs_the_built_image(tmp_path):
    ran, calls = _run(tmp_path, _generate(tmp_path), FAKE_HAS_IMAGE="1")
    assert ran.returncode == 0, ran.stderr
    assert calls[0] == "image inspect localhost/envkit/demo:latest"
    assert calls[1].startswith("run --rm ") and calls[1].endswith("localhost/envkit/demo:latest python train.py")


@pytest.mark.parametrize("how", ["ENVKIT_IMAGE", "image.tag"])
def test_an_image_the_user_names_is_left_to_docker(tmp_path, how):
    extra = ", tag: 'registry.example.com/ml/x:1'" if how == "image.tag" else ""
    env = {"ENVKIT_IMAGE": "registry.example.com/ml/x:1"} if how == "ENVKIT_IMAGE" else {}
    ran, calls = _run(tmp_path, _generate(tmp_path, extra), **env)
    assert ran.returncode == 0, ran.stderr
    assert [c.split()[0] for c in calls] == ["run"] and calls[0].endswith("registry.example.com/ml/x:1 python train.py")


def test_kubernetes_is_told_the_default_image_cannot_be_pulled(tmp_path):
    from envkit.planner import build_plan
    from envkit.targets.kube import kube_warnings

    profile = tmp_path / "envkit.yaml"
    profile.write_text("envkit: 1\nname: demo\nimage: {base: 'python:3.11-slim'}\ncluster: {nodes: 2, entrypoint: [train.py]}\n")
    warnings = kube_warnings(build_plan(load_profile(profile), tmp_path / "out"))
    assert any(w.startswith("image.tag: 'localhost/envkit/demo:latest' is a local-only name") and "cannot pull" in w
               for w in warnings), warnings
