"""End-to-end fixtures: a real engine, the local base image, a torch wheelhouse and the host CA bundle.

The project folder (``e2e_dir``) and its image (``e2e_image``) are session fixtures in
tests/conftest.py, so the clients tier starts its containers from the same image: CI builds one.

The profile is "in the spirit of NGC's recommended flags": sized shm, cpuset, memory,
memlock/stack/nofile ulimits, a non-root user, a local base image, an offline torch
wheelhouse and a CA certificate (the host's bundle, which this machine's TLS-inspecting
proxy needs for pip inside the build).
"""

from __future__ import annotations

import base64
import hashlib
import os
import resource
import zipfile
from pathlib import Path

import pytest

from tests.conftest import SESSION_OWNERS
from tests.dockerutil import require_base_image, require_docker, session_containers

TORCH = "2.13.0"
BUILD_TIMEOUT = 1800
HOST_CA = Path("/etc/ssl/certs/ca-certificates.crt")
# Overridable so parallel checkouts sharing one daemon do not build over each other's image.
E2E_TAG = os.environ.get("ENVKIT_E2E_TAG", "envkit/e2e-ngc:test")
# Tiny local wheels in the wheelhouse: one that accepts the profile's torch, one that pins another.
NEEDS_TORCH = "needs-torch"
CONFLICTS_TORCH = "conflicts-torch"


def _fits(resource_id: int, wanted: int) -> int:
    """NGC's values, capped at this host's hard limit: the daemon cannot grant more (see the memlock test)."""
    hard = resource.getrlimit(resource_id)[1]
    return wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)


def make_wheel(folder: Path, name: str, requires: list[str]) -> Path:
    """Write a minimal pure-Python wheel (name 0.1) whose metadata requires ``requires``; offline."""
    dist, ver = name.replace("-", "_"), "0.1"
    info = f"{dist}-{ver}.dist-info"
    files = {
        f"{dist}/__init__.py": b"",
        f"{info}/METADATA": (f"Metadata-Version: 2.1\nName: {name}\nVersion: {ver}\n"
                             + "".join(f"Requires-Dist: {r}\n" for r in requires)).encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: envkit-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = [f"{path},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},"
              f"{len(data)}" for path, data in files.items()] + [f"{info}/RECORD,,"]
    dest = folder / f"{dist}-{ver}-py3-none-any.whl"
    # Fixed timestamps: the same bytes every session, so the wheelhouse COPY stays a cache hit.
    with zipfile.ZipFile(dest, "w") as z:
        for path, data in [*files.items(), (f"{info}/RECORD", ("\n".join(record) + "\n").encode())]:
            z.writestr(zipfile.ZipInfo(path, date_time=(2020, 1, 1, 0, 0, 0)), data)
    return dest


def ngc_profile(base: str, *, memlock: int | str | None = None, tag: str = E2E_TAG, extra_image: str = "",
                shm: str | None = "512m", pip: str = NEEDS_TORCH) -> str:
    if memlock is None:
        memlock = _fits(resource.RLIMIT_MEMLOCK, 64 * 1024 * 1024)
    nofile = _fits(resource.RLIMIT_NOFILE, 65536)
    shm_line = "" if shm is None else f"  shm_size: {shm}\n"  # None: envkit sizes /dev/shm
    return f"""\
envkit: 1
name: e2e-ngc
image:
  base: {base}
  tag: {tag}
  torch: {{version: "{TORCH}", variant: cpu, find_links: [wheels]}}
  user: {{name: trainer, uid: 1234, gid: 1234}}
  ca_certificates: [certs/host-ca.pem]
  pip_packages: [{pip}]
{extra_image}run:
{shm_line}  ipc: private
  cpuset: "0-1"
  memory: 4g
  ulimits:
    memlock: {memlock}
    stack: 67108864
    nofile: {nofile}
loader:
  num_workers: 2
  batch_size: 32
  sample_shape: [3, 224, 224]
  dtype: float32
  prefetch_factor: 2
  persistent_workers: true
  start_method: fork
"""


@pytest.fixture(scope="session")
def engine():
    eng = require_docker()
    require_base_image(eng)
    return eng


@pytest.fixture(autouse=True)
def no_leftover_containers(request):
    """After every test: no container this session's envkit runs created may remain (any state).

    Only containers whose owner labels name this pytest process or an envkit it started
    (SESSION_OWNERS) are judged and removed: another user's or a concurrent session's
    containers on the shared daemon are left alone.
    """
    yield
    if "engine" in request.fixturenames:
        eng = request.getfixturevalue("engine")
        left = session_containers(eng, SESSION_OWNERS)
        if left:
            for cid, _ in left:
                eng.remove_container(cid)
            pytest.fail(f"envkit containers left behind: {[name for _, name in left]}", pytrace=False)
