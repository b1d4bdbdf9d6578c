"""The README's "Offline or behind a proxy" profile, built for real: a local base, a CA bundle and a wheel folder.

The profile is the README's block itself; the test does what the README tells a user to do: it names the
base image that is already local (this machine's, docker/base-image.sh), puts the proxy's CA bundle at
certs/ca.pem (the host's bundle, which this machine's TLS-inspecting proxy needs for pip inside the build)
and torch's wheels in wheels/ (the e2e wheelhouse, downloaded once per session).
"""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from tests.conftest import ROOT, run_envkit
from tests.dockerutil import base_image
from tests.e2e.conftest import BUILD_TIMEOUT, HOST_CA, TORCH

pytestmark = [pytest.mark.docker, pytest.mark.slow]
TAG = "localhost/envkit/offline:latest"


def readme_profile() -> str:
    text = (ROOT / "README.md").read_text()
    m = re.search(r"<!-- envkit:offline -->\n```yaml\n(.*?)```", text, re.S)
    assert m, "the README's offline block is gone"
    return m.group(1)


def test_the_readme_offline_profile_names_a_local_base_a_ca_bundle_and_a_wheel_folder():
    text = readme_profile()
    assert "ca_certificates: [certs/ca.pem]" in text and "find_links: [wheels]" in text
    assert f'version: "{TORCH}"' in text  # the wheel the tests download is the one the README names


def test_the_readme_offline_profile_builds(e2e_dir, tmp_path):
    project = tmp_path / "offline"
    (project / "certs").mkdir(parents=True)
    shutil.copy(HOST_CA, project / "certs" / "ca.pem")
    shutil.copytree(e2e_dir / "wheels", project / "wheels")
    (project / "envkit.yaml").write_text(readme_profile().replace("python:3.11-slim", base_image()))
    try:
        res = run_envkit("build", cwd=project, timeout=BUILD_TIMEOUT)
        assert res.returncode == 0, res.stderr[-4000:]
        assert res.stdout.strip() == TAG
        out = subprocess.run(["docker", "run", "--rm", TAG, "python", "-c", "import torch; print(torch.__version__)"],
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0 and out.stdout.strip() == f"{TORCH}+cpu", out.stderr
    finally:
        subprocess.run(["docker", "image", "rm", "-f", TAG], capture_output=True)
