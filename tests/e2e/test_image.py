"""The e2e_image image itself, against the real engine: what ships, torch's constraint, envkit-check.

Reuses the session image that tests/e2e/test_validate.py builds (`e2e_image`); the conflict build
reuses its cached layers up to the pip step, so it adds seconds, not a second torch install.
"""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest

from tests.conftest import run_envkit
from tests.dockerutil import base_image
from tests.e2e.conftest import BUILD_TIMEOUT, CONFLICTS_TORCH, TORCH, ngc_profile

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def test_no_layer_holds_the_wheelhouse_or_the_installer(e2e_image, engine):
    history = engine.client.api.history(e2e_image)
    made_by = "\n".join(layer["CreatedBy"] for layer in history)
    assert "envkit-wheels" not in made_by and "uv==" not in made_by and "envkit-build" not in made_by
    # The venv is one COPY from the build stage; nothing else of that stage is in the image.
    out = engine.client.containers.run(e2e_image, ["sh", "-c", "ls /tmp /opt; command -v uv || echo no-uv; "
                                               "python -c 'import numpy, torch; print(torch.__version__)'"],
                                       remove=True, user="root").decode()
    assert "envkit-wheels" not in out and "envkit-build" not in out and "no-uv" in out
    assert f"{TORCH}+cpu" in out  # the wheelhouse's variant, with numpy importable beside it


def test_a_package_pinning_another_torch_fails_the_build_clearly(e2e_image, e2e_dir):
    (e2e_dir / "conflict.yaml").write_text(ngc_profile(base_image(), tag="envkit/e2e-conflict:test",
                                                       pip=CONFLICTS_TORCH))
    res = run_envkit("build", str(e2e_dir / "conflict.yaml"), cwd=e2e_dir, timeout=BUILD_TIMEOUT)
    assert res.returncode == 3, res.stderr[-3000:]
    assert "Traceback" not in res.stderr
    # The resolver names the conflict, and envkit says why the build stops instead of swapping torch.
    assert "torch==2.0.0" in res.stderr and f"torch=={TORCH}+cpu" in res.stderr
    assert "a package that needs another torch fails here instead of replacing it" in res.stderr


def _envkit_check(e2e_image, flags: list[str]) -> tuple[int, dict]:
    res = subprocess.run(["docker", "run", "--rm", *flags, e2e_image, "envkit-check", "--quick", "--json"],
                         capture_output=True, text=True, timeout=600)
    return res.returncode, json.loads(res.stdout)


def test_envkit_check_fails_under_default_shm_and_passes_with_generated_flags(e2e_image, e2e_dir, tmp_path):
    # Docker's defaults: the profile's workload (2 workers x batches of 19 MB) does not fit 64 MB.
    rc, doc = _envkit_check(e2e_image, [])
    assert rc == 1 and doc["verdict"] == "fail"
    assert doc["workload"]["expect_file"] == "/opt/envkit/envkit_expect.json"
    assert doc["workload"]["sample_shape"] == [3, 224, 224] and doc["workload"]["batch_size"] == 32
    loader = {c["name"]: c for c in doc["checks"]}["loader"]
    assert loader["status"] == "fail" and loader["measured"]["failure"] == "shm_exhausted", loader

    # The same command through the generated run.sh (its --shm-size, cpuset, ulimits, user): pass.
    out = tmp_path / "gen"
    gen = run_envkit("generate", str(e2e_dir / "envkit.yaml"), "-o", str(out), "--target", "run", cwd=e2e_dir)
    assert gen.returncode in (0, 1), gen.stderr
    res = subprocess.run([str(out / "run.sh"), "envkit-check", "--quick"], capture_output=True, text=True,
                         timeout=600, env={**os.environ, "ENVKIT_IMAGE": e2e_image})
    assert res.returncode == 0, res.stdout + res.stderr[-3000:]
    assert "workload: synthetic float32[3, 224, 224], batch 32, 2 workers (from /opt/envkit/envkit_expect.json)" \
        in res.stdout
    assert "envkit harness: verdict PASS" in res.stdout or "envkit harness: verdict WARN" in res.stdout


def test_a_package_change_ships_only_its_files_and_an_upgrade_leaves_no_old_files(e2e_image, e2e_dir, engine):
    """The packages stage over torch's: the final stage takes torch's venv from the cached build stage
    and only the packages' delta; a package the torch stage installed, pinned lower here, is replaced, not doubled."""
    tag = "envkit/e2e-delta:test"
    (e2e_dir / "delta.yaml").write_text(ngc_profile(base_image(), tag=tag,
                                                    pip='needs-torch, "typing-extensions==4.12.2"'))
    try:
        res = run_envkit("build", str(e2e_dir / "delta.yaml"), cwd=e2e_dir, timeout=BUILD_TIMEOUT)
        assert res.returncode == 0, res.stderr[-3000:]
        out = engine.client.containers.run(tag, ["sh", "-c", "python -m pip freeze --all; ls -a /opt/venv; "
                                                 "ls /opt/venv/lib/python3*/site-packages | grep -i typing; "
                                                 "python -c 'import torch; print(torch.ones(2).sum().item())'"],
                                           remove=True).decode()
        assert "typing_extensions==4.12.2" in out and f"torch=={TORCH}+cpu" in out and "needs-torch==0.1" in out
        assert re.findall(r"^typing_extensions-[\d.]+\.dist-info$", out, re.M) == ["typing_extensions-4.12.2.dist-info"]
        assert ".envkit-removed" not in out and out.strip().endswith("2.0")
        # The layers: torch's venv once (the build stage's COPY into /opt/venv), the packages' delta (into /opt/venv/)
        # small beside it. (A delta taken by ctime held all of torch again: layers keep mtimes, not ctimes.)
        layers = [(layer["CreatedBy"], layer["Size"]) for layer in engine.client.api.history(tag)]
        venv = [size for made_by, size in layers if re.search(r"COPY dir:\w+ in /opt/venv\s*$", made_by)]
        delta = [size for made_by, size in layers if re.search(r"COPY dir:\w+ in /opt/venv/\s*$", made_by)]
        assert len(venv) == 1 and venv[0] > 500e6 and len(delta) == 1 and delta[0] < 20e6, layers
        assert [size for made_by, size in layers if "COPY" in made_by and size > 100e6] == venv, "torch's files once"
    finally:
        engine.client.images.remove(tag, force=True)
