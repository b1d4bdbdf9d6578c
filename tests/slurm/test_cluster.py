"""The generated sbatch on a real two-node Slurm, oci runtime, bundle from `envkit bundle`.

One cluster and one bundle per session; the small-shm case needs its own config.json, so it gets
its own bundle of the same image.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from tests.conftest import run_envkit
from tests.e2e.conftest import ngc_profile
from tests.dockerutil import base_image
from tests.slurm.conftest import SLURM_TAG, cluster_config

pytestmark = [pytest.mark.slurm, pytest.mark.docker, pytest.mark.slow]


def generate(project: Path, profile: str) -> Path:
    res = run_envkit("generate", profile, "-o", ".", "--target", "slurm", cwd=project)
    assert res.returncode == 0, res.stderr
    return project / "slurm.sbatch"


def submit_and_wait(cluster, project: Path, timeout: float = 300) -> tuple[int, str, float]:
    """sbatch --wait: (the job's exit code, its output, seconds from submit to end)."""
    start = time.monotonic()
    res = cluster.run("sbatch", "--wait", "--parsable", "slurm.sbatch", cwd=project, timeout=timeout)
    took = time.monotonic() - start
    job = res.stdout.strip().split(";")[0]
    assert job.isdigit(), res.stderr
    return res.returncode, (project / f"slurm-{job}.out").read_text(), took


def test_preflight_on_both_nodes_then_allreduce(slurm_cluster, slurm_project):
    generate(slurm_project, "envkit.yaml")
    rc, out, _ = submit_and_wait(slurm_cluster, slurm_project)
    assert rc == 0, out[-3000:]
    # The harness ran on each node (srun --label: task i is node i) and passed.
    for task in (0, 1):
        assert f"{task}: envkit harness: verdict PASS" in out
    assert "envkit: preflight passed on 2 node(s) (n1 n2)" in out
    # Two nodes x --nproc-per-node=2 (gpus_per_node): world 4, and sum(rank + 1) = 10 on every rank.
    results = sorted(re.findall(r"allreduce rank=(\d) world=(\d) sum=(\d+)", out))
    assert results == [(str(r), "4", "10") for r in range(4)], out[-3000:]
    # The bundle sized /dev/shm (the one Slurm path where it can be): the harness saw 512 MiB on both nodes.
    assert out.count("/dev/shm is 512.0 MiB") == 2


def test_small_shm_fails_at_the_preflight_in_seconds(slurm_cluster, slurm_project):
    # The same image, its own bundle: config.json is what sizes /dev/shm.
    (slurm_project / "small-shm.yaml").write_text(
        ngc_profile(base_image(), tag=SLURM_TAG, shm="64m") + cluster_config(bundle=slurm_project / "bundle-small"))
    res = run_envkit("bundle", "small-shm.yaml", "--image", SLURM_TAG, "-o", "bundle-small", cwd=slurm_project,
                     timeout=600)
    assert res.returncode == 0, res.stderr
    generate(slurm_project, "small-shm.yaml")
    rc, out, took = submit_and_wait(slurm_cluster, slurm_project)
    assert rc != 0
    assert "envkit: preflight FAILED on node" in out
    diagnosis = out.split("its diagnosis:\n", 1)[1]
    assert re.search(r"shm\s+fail\s+/dev/shm is 64\.0 MiB", diagnosis), diagnosis
    assert "allreduce" not in out and "rendezvous at" not in out  # training never started
    assert took < 60, f"the job took {took:.0f} s to fail"


def test_scancel_leaves_no_process_or_container(slurm_cluster, slurm_project):
    (slurm_project / "sleepy.yaml").write_text(
        ngc_profile(base_image(), tag=SLURM_TAG) + cluster_config(entrypoint='[allreduce.py, --sleep, "600"]'))
    generate(slurm_project, "sleepy.yaml")
    res = slurm_cluster.run("sbatch", "--parsable", "slurm.sbatch", cwd=slurm_project)
    job = res.stdout.strip().split(";")[0]
    assert job.isdigit(), res.stderr
    log = slurm_project / f"slurm-{job}.out"
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        if log.exists() and log.read_text().count("allreduce rank=") == 4:
            break
        time.sleep(1)
    else:
        pytest.fail(f"the job never reached its sleep: {log.read_text()[-2000:] if log.exists() else 'no output'}")
    assert len(slurm_cluster.containers()) == 2, "one container per node while training"
    assert slurm_cluster.run("scancel", job).returncode == 0
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        gone = not slurm_cluster.run("squeue", "-h", "-j", job).stdout.strip()
        if gone and not slurm_cluster.containers() and not _processes("allreduce.py"):
            break
        time.sleep(0.5)
    assert slurm_cluster.containers() == [], "runc containers left behind"
    assert _processes("allreduce.py") == [], "training processes left behind"


def _processes(needle: str) -> list[str]:
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if needle in cmd:
            out.append(f"{pid}: {cmd}")
    return out
