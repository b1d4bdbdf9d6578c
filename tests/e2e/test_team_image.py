"""Team-standard images, real engine: a team's hashed requirements file, a lock built twice cold with the same
`pip freeze`, tampered hashes refused, a cluster image holding its code, a code edit rebuilding only the code.

Builds are few (CI budget): the requirements build depends on the session image (``e2e_image``), so its
torch layers come from the cache; the NGC-style profile's lock (torch from the wheelhouse, its dependencies
from the index) is built twice with no cache at all, about 75 s each here; the cluster project has no torch
(six and idna, pinned with hashes), and its tampered and code-edit builds reuse its layers.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from envkit.imagebuild import build_image, planned_build
from envkit.errors import EngineError
from envkit.profile import load_profile
from tests.conftest import run_envkit
from tests.dockerutil import base_image
from tests.e2e.conftest import NEEDS_TORCH, TORCH, ngc_profile

pytestmark = [pytest.mark.docker, pytest.mark.slow]

REQ_TAG = "envkit-team-test:requirements"
LOCK_TAG = "envkit-team-test:lock"


def _project(root: Path, e2e_dir: Path, extra_image: str = "", tail: str = "", tag: str = LOCK_TAG,
             pip: str = NEEDS_TORCH) -> Path:
    """A team repository: the e2e wheelhouse and CA, some code, a secret that must stay out."""
    root.mkdir()
    shutil.copytree(e2e_dir / "wheels", root / "wheels", copy_function=os.link)
    shutil.copytree(e2e_dir / "certs", root / "certs")
    (root / "envkit.yaml").write_text(ngc_profile(base_image(), tag=tag, extra_image=extra_image, pip=pip) + tail)
    return root


def _freeze(engine, tag: str) -> str:
    return engine.client.containers.run(tag, ["python", "-m", "pip", "freeze", "--all"], remove=True).decode()


def _build(proj: Path, engine, tag: str, *, no_cache: bool = False) -> list[str]:
    log = io.StringIO()
    with planned_build(load_profile(proj / "envkit.yaml")) as plan:
        build_image(plan, engine, tag=tag, no_cache=no_cache, err=log)
    return log.getvalue().splitlines()


@pytest.fixture(scope="module")
def hashed_requirements(tmp_path_factory) -> str:
    """A team's requirements.txt with hashes, as `uv pip compile --generate-hashes` writes it."""
    d = tmp_path_factory.mktemp("req")
    (d / "in.txt").write_text("six==1.17.0\n")
    from envkit.commands.lock import uv_command

    res = subprocess.run(uv_command() + ["pip", "compile", str(d / "in.txt"), "--generate-hashes", "--no-header",
                                         "--python-version", "3.11", "--no-cache"],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0 and "--hash=sha256:" in res.stdout, res.stderr
    return res.stdout


def test_a_teams_hashed_requirements_file_installs_and_a_tampered_hash_fails(tmp_path, e2e_dir, e2e_image, engine,
                                                                              hashed_requirements):
    proj = _project(tmp_path / "req", e2e_dir, extra_image="  requirements: [requirements.txt]\n", tag=REQ_TAG)
    (proj / "requirements.txt").write_text(hashed_requirements)
    try:
        _build(proj, engine, REQ_TAG)
        freeze = _freeze(engine, REQ_TAG)
        assert "six==1.17.0" in freeze and f"torch=={TORCH}+cpu" in freeze
        dockerfile = run_envkit("generate", "envkit.yaml", "-o", "out", "--target", "dockerfile", cwd=proj)
        assert dockerfile.returncode == 0
        assert "--require-hashes" in (proj / "out" / "Dockerfile").read_text()

        # One hex digit changed: the installer refuses the file, and envkit says what that means.
        tampered = re.sub(r"(--hash=sha256:[0-9a-f]{63})([0-9a-f])",
                          lambda m: m[1] + ("0" if m[2] != "0" else "1"), hashed_requirements)
        (proj / "requirements.txt").write_text(tampered)
        with pytest.raises(EngineError) as e:
            _build(proj, engine, "envkit-team-test:tampered-req")
        assert "hash" in str(e.value).lower()
        assert "a hash mismatch means a file is not the one the requirements file pinned" in str(e.value)
    finally:
        engine.client.images.remove(REQ_TAG, force=True)


NGC_LOCK_TAG = "envkit-team-test:ngc-lock"


def _norm(text: str) -> dict[str, str]:
    """``{name: version}`` of the ``name==version`` lines of a freeze or a lock, names as PEP 503 normalizes them."""
    return {re.sub(r"[-_.]+", "-", n).lower(): v
            for n, v in re.findall(r"^([A-Za-z0-9_.-]+)==(\S+?)(?: \\)?$", text, re.M)}


def test_the_ngc_style_example_locked_builds_twice_cold_to_the_same_freeze(tmp_path, e2e_dir, engine):
    """The NGC-style profile (torch 2.13.0 CPU from the wheelhouse, a package that needs it) locked with hashes."""
    proj = _project(tmp_path / "ngc", e2e_dir, tag=NGC_LOCK_TAG)
    res = run_envkit("lock", "envkit.yaml", cwd=proj, timeout=600)
    assert res.returncode == 0, res.stderr
    lock = (proj / "envkit.lock.txt").read_text()
    assert f"torch=={TORCH}+cpu" in lock and "--hash=sha256:" in lock
    freezes = []
    try:
        for _ in range(2):
            if freezes:  # the second build starts from nothing of the first
                engine.client.images.remove(NGC_LOCK_TAG, force=True)
            log = _build(proj, engine, NGC_LOCK_TAG, no_cache=True)
            assert any("--require-hashes --no-deps" in line for line in log), "the lock is what gets installed"
            freezes.append(_freeze(engine, NGC_LOCK_TAG))
        assert freezes[0] == freezes[1]
        installed, locked = _norm(freezes[0]), _norm(lock)
        assert len(locked) >= 10 and {n: installed.get(n) for n in locked} == locked
    finally:
        engine.client.images.remove(NGC_LOCK_TAG, force=True)


CLUSTER = "cluster:\n  nodes: 2\n  entrypoint: [train.sh, --epochs, '1']\n"


def _small_project(root: Path, e2e_dir: Path) -> Path:
    """A team repository whose image has no torch: two tiny packages from the index, the host CA, a cluster."""
    root.mkdir()
    shutil.copytree(e2e_dir / "certs", root / "certs")
    (root / "envkit.yaml").write_text(f"""\
envkit: 1
name: team-lock
image:
  base: {base_image()}
  tag: {LOCK_TAG}
  user: {{name: trainer, uid: 1234, gid: 1234}}
  ca_certificates: [certs/host-ca.pem]
  pip_packages: ["six==1.17.0", "idna==3.10"]
run:
  cpus: 1
  memory: 1g
{CLUSTER}""")
    return root


def test_a_locked_cluster_image_holds_its_code_and_a_code_edit_rebuilds_only_the_code(tmp_path, e2e_dir, engine):
    proj = _small_project(tmp_path / "lock", e2e_dir)
    (proj / "train.sh").write_text("#!/bin/sh\nexec python train.py \"$@\"\n")
    (proj / "train.sh").chmod(0o755)
    (proj / "train.py").write_text("print('epoch 1')\n")
    (proj / ".env").write_text("WANDB_API_KEY=secret\n")
    res = run_envkit("lock", "envkit.yaml", cwd=proj, timeout=600)
    assert res.returncode == 0, res.stderr
    lock = (proj / "envkit.lock.txt").read_text()
    try:
        first = _build(proj, engine, LOCK_TAG, no_cache=True)
        assert any("--require-hashes --no-deps" in line for line in first), "the lock is what gets installed"
        freeze1 = _freeze(engine, LOCK_TAG)
        # The cluster's entrypoint script is in the image, executable, owned by the image's user; no secret is.
        ls = engine.client.containers.run(LOCK_TAG, ["sh", "-c", "stat -c '%A %u %n' /workspace/*; ls -A /workspace"],
                                          remove=True).decode()
        assert "-rwxr-xr-x 1234 /workspace/train.sh" in ls and "train.py" in ls
        assert ".env" not in ls and "wheels" not in ls and "Dockerfile" not in ls

        # It is the lock: every pin installed at its version.
        installed = _norm(freeze1)
        assert {n: installed.get(n) for n in _norm(lock)} == _norm(lock)

        # A code edit rebuilds only the code: every step before the project COPY comes from the cache.
        (proj / "train.py").write_text("print('epoch 2')\n")
        steps = _steps(_build(proj, engine, LOCK_TAG))
        code_step = next(i for i, (text, _) in enumerate(steps) if ".envkit/project/" in text)
        rebuilt = [text for text, cached in steps[:code_step] if not cached and not text.startswith(("FROM", "ARG",
                                                                                                      "SHELL", "ENV",
                                                                                                      "LABEL"))]
        assert not rebuilt, f"steps rebuilt by a code edit: {rebuilt}"
        assert not steps[code_step][1], "the project COPY itself is rebuilt"
        out = engine.client.containers.run(LOCK_TAG, ["python", "/workspace/train.py"], remove=True).decode()
        assert out.strip() == "epoch 2"

        # A tampered lock fails the build with the reason.
        # (every hash of six: pip and uv accept a file matching any one of them)
        six = re.search(r"^six==1\.17\.0 \\\n(?:    --hash=sha256:[0-9a-f]{64}(?: \\)?\n)+", lock, re.M)[0]
        bad = re.sub(r"sha256:([0-9a-f])", lambda m: "sha256:" + ("0" if m[1] != "0" else "1"), six)
        (proj / "envkit.lock.txt").write_text(lock.replace(six, bad))
        with pytest.raises(EngineError) as e:
            _build(proj, engine, "envkit-team-test:tampered-lock")
        assert "A hash mismatch means a file is not the one that was locked" in str(e.value)
    finally:
        engine.client.images.remove(LOCK_TAG, force=True)


def _steps(lines: list[str]) -> list[tuple[str, bool]]:
    """(instruction, came from cache) for each build step in `envkit build`'s progress lines."""
    steps: list[tuple[str, bool]] = []
    for line in lines:
        m = re.match(r"\[step \d+/\d+\] (?:Step \d+/\d+ : )?(.*)", line)
        if m:
            steps.append((m[1], False))
        elif steps and "Using cache" in line:
            steps[-1] = (steps[-1][0], True)
    return steps
