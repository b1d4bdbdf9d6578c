"""The image holds exactly the project as it is now, minus its secrets (real engine, ``envkit build`` twice).

A project without torch (nothing to download but the base's apt packages): a credential file, a file
deleted between the builds and an edit that keeps the file's size and mtime (as ``rsync -a`` and
``tar x`` leave it). After each build, the files under ``/workspace`` are listed in a container.
A second project holds every secret a repository can carry (a BOM ``.dockerignore`` replaced by
``generate --force``, the ML tools' token files, a credentialed profile and requirements file), and
``/workspace``'s bytes are searched for each token.
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


SECRET_TAG = "envkit/e2e-context-secrets:test"
ML_CREDENTIALS = [".kaggle/kaggle.json", ".huggingface/token", ".cache/huggingface/token", ".databrickscfg",
                  ".s3cfg", ".boto", ".vault-token", ".azure/accessTokens.json", ".config/gh/hosts.yml"]


def _workspace_tar(engine) -> bytes:
    """/workspace as the image holds it, every file's bytes (a tar stream from a container)."""
    return engine.client.containers.run(SECRET_TAG, ["tar", "-C", "/workspace", "-cf", "-", "."], remove=True,
                                        user="root", entrypoint=[])


def test_a_real_build_ships_no_secret_of_the_project_into_workspace(tmp_path, engine):
    proj = tmp_path / "proj"
    (proj / "certs").mkdir(parents=True)
    shutil.copy(HOST_CA, proj / "certs" / "host-ca.pem")
    # A proxy nothing listens on, never asked: no build step here reaches the network.
    (proj / "envkit.yaml").write_text(f"""\
envkit: 1
name: e2e-context-secrets
image:
  base: {base_image()}
  tag: {SECRET_TAG}
  ca_certificates: [certs/host-ca.pem]
  copy_project: true
  proxy:
    http: "http://builder:PROXYPASS-e2e@127.0.0.1:9"
    https: "http://builder:PROXYPASS-e2e@127.0.0.1:9"
    no_proxy: "*"
""")
    files = {"train.py": "lr = 0.1\n", "secret.txt": "BOMSECRET-e2e\n",
             # In the project only (not image.requirements): the build never installs from the index.
             "requirements-dev.txt": "--extra-index-url https://deploy:IDXTOKEN-e2e@pypi.example.com/simple\nnumpy\n",
             **{rel: f"MLTOKEN-e2e-{n}\n" for n, rel in enumerate(ML_CREDENTIALS)}}
    for rel, text in files.items():
        (proj / rel).parent.mkdir(parents=True, exist_ok=True)
        (proj / rel).write_text(text)
    # The user's .dockerignore, saved with a UTF-8 BOM, its first pattern the secret.
    (proj / ".dockerignore").write_bytes(b"\xef\xbb\xbfsecret.txt\r\n*.log\r\n")
    try:
        res = run_envkit("generate", "envkit.yaml", "-o", ".", "--target", "dockerfile", "--force", cwd=proj,
                         timeout=120)
        assert res.returncode == 0, res.stderr[-4000:]
        assert list(proj.glob(".dockerignore.envkit-bak-*")), "the user's .dockerignore was not kept"
        res = run_envkit("build", "envkit.yaml", cwd=proj, timeout=BUILD_TIMEOUT)
        assert res.returncode == 0, res.stderr[-4000:]
        listing = engine.client.containers.run(SECRET_TAG, ["find", "/workspace", "-type", "f"], remove=True,
                                               user="root", entrypoint=[]).decode()
        shipped = {line.removeprefix("/workspace/") for line in listing.split()}
        assert "train.py" in shipped
        assert not shipped & {"secret.txt", *ML_CREDENTIALS}, shipped
        assert not any(name.startswith(".dockerignore") for name in shipped), shipped
        blob = _workspace_tar(engine)
        assert b"BOMSECRET-e2e" not in blob and b"MLTOKEN-e2e" not in blob
        assert b"PROXYPASS-e2e" not in blob, "the profile's proxy password is in /workspace"
        assert b"IDXTOKEN-e2e" not in blob, "the requirements file's index token is in /workspace"
    finally:
        with contextlib.suppress(Exception):  # docker.errors.ImageNotFound after a failed build
            engine.client.images.remove(SECRET_TAG, force=True)
