"""The image holds exactly the project as it is now, minus its secrets (real engine, ``envkit build`` twice).

A project without torch (nothing to download but the base's apt packages): a credential file, a file
deleted between the builds and an edit that keeps the file's size and mtime (as ``rsync -a`` and
``tar x`` leave it). After each build, the files under ``/workspace`` are listed in a container.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import run_envkit
from tests.dockerutil import base_image
from tests.e2e.conftest import BUILD_TIMEOUT, HOST_CA

pytestmark = [pytest.mark.docker, pytest.mark.slow]

TAG = "envkit/e2e-context:test"


def _files(engine) -> tuple[set[str], str]:
    """(every file under /workspace, relative; train.py's content), as the image holds them."""
    listing = engine.client.containers.run(TAG, ["find", "/workspace", "-type", "f"], remove=True, user="root",
                                           entrypoint=[]).decode()
    train = engine.client.containers.run(TAG, ["cat", "/workspace/train.py"], remove=True, user="root",
                                         entrypoint=[]).decode()
    return {line.removeprefix("/workspace/") for line in listing.split()}, train


def _replace_keeping_size_and_mtime(path: Path, text: str) -> None:
    before = path.stat()
    tmp = path.with_name(path.name + ".new")
    tmp.write_text(text)
    os.replace(tmp, path)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (before.st_size, before.st_mtime_ns)


def test_the_image_holds_exactly_the_project_minus_secrets_after_an_edit(tmp_path, engine):
    proj = tmp_path / "proj"
    (proj / "certs").mkdir(parents=True)
    shutil.copy(HOST_CA, proj / "certs" / "host-ca.pem")  # the host's CA bundle: this machine's TLS proxy needs it
    (proj / "envkit.yaml").write_text(f"""\
envkit: 1
name: e2e-context
image:
  base: {base_image()}
  tag: {TAG}
  ca_certificates: [certs/host-ca.pem]
  copy_project: true
""")
    for rel, text in {"train.py": "lr = 0.1\n", "pkg/model.py": "x = 1\n", "pkg/old.py": "y = 2\n",
                      ".aws/credentials": "[default]\naws_secret_access_key = s\n"}.items():
        (proj / rel).parent.mkdir(parents=True, exist_ok=True)
        (proj / rel).write_text(text)
    try:
        res = run_envkit("build", "envkit.yaml", cwd=proj, timeout=BUILD_TIMEOUT)
        assert res.returncode == 0, res.stderr[-4000:]
        # certs/host-ca.pem is a *.pem: a secret by name, so it stays out too (it reaches the CA store only).
        assert _files(engine) == ({"envkit.yaml", "train.py", "pkg/model.py", "pkg/old.py"}, "lr = 0.1\n")

        (proj / "pkg" / "old.py").unlink()
        _replace_keeping_size_and_mtime(proj / "train.py", "lr = 0.9\n")
        res = run_envkit("build", "envkit.yaml", cwd=proj, timeout=BUILD_TIMEOUT)
        assert res.returncode == 0, res.stderr[-4000:]
        assert _files(engine) == ({"envkit.yaml", "train.py", "pkg/model.py"}, "lr = 0.9\n")
    finally:
        with contextlib.suppress(Exception):  # docker.errors.ImageNotFound after a failed build
            engine.client.images.remove(TAG, force=True)
