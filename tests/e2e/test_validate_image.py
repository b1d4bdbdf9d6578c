"""validate --image with another PROFILE than the image's: the PROFILE's expectation is checked."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_envkit
from tests.dockerutil import base_image
from tests.e2e.conftest import ngc_profile

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def test_validate_image_checks_the_given_profile_not_the_baked_one(e2e_image, e2e_dir):
    # Same name, larger shm: the image's baked expectation says 512m, this profile 768m.
    other = e2e_dir / "other.yaml"
    other.write_text(ngc_profile(base_image(), shm="768m"))
    res = run_envkit("validate", str(other), "--image", e2e_image, "--json", "--quick", cwd=e2e_dir, timeout=900)
    assert res.returncode == 0, res.stderr[-4000:]
    assert "another version of profile 'e2e-ngc'" in res.stderr
    gen = {c["name"]: c for c in json.loads(res.stdout)["generated"]["checks"]}
    assert gen["shm"]["status"] == "pass", gen["shm"]
    assert gen["shm"]["expected"]["profile_shm_size_bytes"] == 768 << 20
