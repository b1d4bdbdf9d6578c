"""An RDMA fabric's image loads libibverbs; an Ethernet profile's image has no RDMA package (real builds).

Two images of one small profile (no torch: what is under test is the system stage's packages), built by
``envkit build`` on the real engine from the local base image; apt installs from the base's own mirror.
"""

from __future__ import annotations

import pytest

from tests.conftest import run_envkit
from tests.dockerutil import base_image
from tests.e2e.conftest import BUILD_TIMEOUT

pytestmark = [pytest.mark.docker, pytest.mark.slow]
RDMA_PACKAGES = ("libibverbs1", "ibverbs-providers", "librdmacm1")
# What NCCL does (src/misc/ibvwrap.cc dlopens libibverbs.so.1), then the verbs call the preflight makes; with
# no device, rdma-core's ibv_get_device_list returns NULL (errno ENOSYS), not an empty list.
LOAD = ("import ctypes; lib = ctypes.CDLL('libibverbs.so.1'); n = ctypes.c_int(-1); "
        "lib.ibv_get_device_list.restype = ctypes.c_void_p; lib.ibv_get_device_list(ctypes.byref(n)); "
        "print('loaded', n.value)")


def profile(tag: str, network: str) -> str:
    return (f"envkit: 1\nname: rdma-e2e\nimage: {{base: {base_image()}, tag: {tag}}}\nrun: {{mount_project: false}}\n"
            f"cluster:\n  nodes: 2\n  entrypoint: [train.py]\n  image: {tag}\n{network}")


@pytest.mark.parametrize("fabric", ["infiniband", "ethernet"])
def test_the_fabric_decides_the_rdma_packages(fabric, tmp_path, engine):
    tag = f"envkit/e2e-{fabric}:test"
    (tmp_path / "envkit.yaml").write_text(profile(tag, f"  network: {{fabric: {fabric}, interface: eth0}}\n"))
    res = run_envkit("build", "envkit.yaml", cwd=tmp_path, timeout=BUILD_TIMEOUT)
    assert res.returncode == 0, res.stderr[-3000:]
    try:
        listed = engine.client.containers.run(tag, ["dpkg-query", "-W", "-f", "${Package}\\n"], remove=True,
                                              user="root").decode().split()
        if fabric == "infiniband":
            assert set(RDMA_PACKAGES) <= set(listed)
            out = engine.client.containers.run(tag, ["python3", "-c", LOAD], remove=True).decode()
            assert out.startswith("loaded"), out
        else:
            assert not set(RDMA_PACKAGES) & set(listed)
            assert not [p for p in listed if "ibverbs" in p or "rdma" in p]
    finally:
        engine.client.images.remove(tag, force=True)
