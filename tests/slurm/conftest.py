"""A real two-node Slurm for the session (docker/slurm-up.sh), and the e2e image as an OCI bundle.

The cluster starts once per session in a temporary folder (munged, slurmctld, two slurmd, runc
for ``srun --container``) and is stopped at the end by docker/slurm-down.sh, which kills each
daemon by the pid it recorded. Starting needs root (slurmd starts containers); without it, or
when the daemons do not come up, the tests skip -- and FAIL under ``ENVKIT_REQUIRE_SLURM=1``
(.ci/run sets it), so a CI machine cannot pass by skipping them.

The image is the e2e recipe (tests/e2e/conftest.py: local base image, torch CPU wheelhouse,
NGC-style limits) under its own tag; one bundle serves every test that keeps its run settings.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_envkit
from tests.e2e.conftest import engine, ngc_profile  # noqa: F401  (fixture reused; e2e_dir is in tests/conftest.py)
from tests.dockerutil import base_image

SLURM_TAG = "envkit-slurm-e2e:test"
BUILD_TIMEOUT = 1800

# The distributed check every node runs: a gloo all_reduce of (rank + 1) over the whole world.
ALLREDUCE = '''\
import os, sys, time
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
t = torch.tensor([float(rank + 1)])
dist.all_reduce(t)
print(f"allreduce rank={rank} world={world} sum={t.item():g}", flush=True)
if "--sleep" in sys.argv:
    time.sleep(float(sys.argv[sys.argv.index("--sleep") + 1]))
dist.destroy_process_group()
'''


def slurm_required() -> bool:
    return os.environ.get("ENVKIT_REQUIRE_SLURM", "") == "1"


def _unavailable(msg: str):
    if slurm_required():
        pytest.fail(f"{msg} (ENVKIT_REQUIRE_SLURM=1)", pytrace=False)
    pytest.skip(msg)


@dataclass(frozen=True)
class SlurmCluster:
    dir: Path
    env: dict

    def run(self, *args: str, cwd: Path | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
        return subprocess.run(list(args), cwd=cwd, env=self.env, capture_output=True, text=True, timeout=timeout)

    def containers(self) -> list[str]:
        """runc's containers under the cluster's OCI root (what `srun --container` started)."""
        res = subprocess.run(["runc", f"--root={self.dir / 'runc'}", "list", "-q"], capture_output=True, text=True)
        return res.stdout.split()


def cluster_config(*, entrypoint: str = "[allreduce.py]", bundle: Path | None = None) -> str:
    """2 nodes x 2 (fake) GPUs, oci runtime; the bundle defaults to ./bundle beside the script."""
    where = f", bundle: {bundle}" if bundle else ""
    return f"""cluster:
  nodes: 2
  gpus_per_node: 2
  entrypoint: {entrypoint}
  slurm: {{runtime: oci, time: "00:10:00"{where}}}
"""


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory):
    if os.geteuid() != 0:
        _unavailable("a local Slurm needs root (slurmd starts the containers)")
    folder = tmp_path_factory.mktemp("slurm")
    # ENVKIT_SLURM_OWNER: if this session is killed before its teardown, a watchdog stops the daemons.
    up = subprocess.run(["bash", str(ROOT / "docker" / "slurm-up.sh"), str(folder)], capture_output=True,
                        text=True, timeout=900, env={**os.environ, "ENVKIT_SLURM_OWNER": str(os.getpid())})
    try:
        if up.returncode != 0:
            _unavailable(f"the local Slurm did not start: {up.stderr.strip()[-1500:]}")
        yield SlurmCluster(folder, {**os.environ, "SLURM_CONF": str(folder / "slurm.conf")})
    finally:
        subprocess.run(["bash", str(ROOT / "docker" / "slurm-down.sh"), str(folder)], timeout=120)


@pytest.fixture(scope="session")
def slurm_project(e2e_dir, tmp_path_factory) -> Path:
    """A project folder: the e2e image built under SLURM_TAG, its bundle, and allreduce.py."""
    root = tmp_path_factory.mktemp("slurm-project")
    # The bundle mounts this folder at /workspace for the image's user (uid 1234): pytest's 0700
    # folders would hide allreduce.py from it ("Permission denied", exit 2 on every rank).
    root.chmod(0o755)
    for sub in ("wheels", "certs"):
        (root / sub).symlink_to(e2e_dir / sub)
    (root / "allreduce.py").write_text(ALLREDUCE)
    (root / "envkit.yaml").write_text(ngc_profile(base_image(), tag=SLURM_TAG) + cluster_config())
    res = run_envkit("build", "envkit.yaml", cwd=root, timeout=BUILD_TIMEOUT)
    assert res.returncode == 0, res.stderr[-3000:]
    res = run_envkit("bundle", "envkit.yaml", "-o", "bundle", cwd=root, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    return root
