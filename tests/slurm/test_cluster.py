"""The generated sbatch on a real two-node Slurm, oci runtime, bundle from `envkit bundle`.

Each test runs on both sites (tests/slurm/conftest.py): root submitting to root's runc, and a
non-root user submitting to rootless runc, with a bundle that user wrote. One bundle per site;
the small-shm case needs its own config.json, so it gets its own bundle of the same image.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest

from tests.e2e.conftest import ngc_profile
from tests.dockerutil import base_image
from tests.slurm.conftest import SLURM_TAG, Site, cluster_config

pytestmark = [pytest.mark.slurm, pytest.mark.docker, pytest.mark.slow]


def generate(site: Site, profile: str) -> Path:
    res = site.envkit("generate", profile, "-o", ".", "--target", "slurm")
    assert res.returncode == 0, res.stderr
    return site.project / "slurm.sbatch"


def submit_and_wait(site: Site, timeout: float = 300) -> tuple[int, str, float]:
    """sbatch --wait: (the job's exit code, its output, seconds from submit to end)."""
    start = time.monotonic()
    res = site.submit("--wait", "--parsable", "slurm.sbatch", timeout=timeout)
    took = time.monotonic() - start
    job = res.stdout.strip().split(";")[0]
    assert job.isdigit(), res.stderr
    out = site.project / f"slurm-{job}.out"
    if site.user is not None:  # the job's output is the submitter's
        assert out.stat().st_uid == site.user.uid
    return res.returncode, out.read_text(), took


def test_preflight_on_both_nodes_then_allreduce(site):
    generate(site, "envkit.yaml")
    rc, out, _ = submit_and_wait(site)
    assert rc == 0, out[-3000:]
    # The harness ran on each node (srun --label: task i is node i) and passed.
    for task in (0, 1):
        # Two training processes x (1 + 2 workers) on this machine's 2 CPUs: the cpus check warns, naming
        # them; the rest passes, the two ranks' loaders included, started at once.
        assert re.search(rf"^{task}: envkit harness: verdict (PASS|WARN)", out, re.M), out[-4000:]
        assert f"{task}: loader: pass" in out and f"{task}: shm: pass" in out, out[-4000:]
    assert out.count("2 loaders at once, 2 workers each") >= 2, out[-4000:]  # each node's two ranks at once
    assert "envkit: preflight passed on 2 node(s) (n1 n2)" in out
    # Two nodes x --nproc-per-node=2 (procs_per_node): world 4, and sum(rank + 1) = 10 on every rank.
    results = sorted(re.findall(r"allreduce rank=(\d) world=(\d) sum=(\d+)", out))
    assert results == [(str(r), "4", "10") for r in range(4)], out[-3000:]
    # The bundle sized /dev/shm (the one Slurm path where it can be): the harness saw 512 MiB on both nodes.
    assert out.count("/dev/shm is 512.0 MiB") == 2


def test_the_rootless_bundle_is_the_submitters(rootless_project, submitter):
    bundle = rootless_project / "bundle"
    owners = {p.lstat().st_uid for p in [bundle, bundle / "config.json", *(bundle / "rootfs").rglob("*")]}
    assert owners == {submitter.uid}
    cfg = json.loads((bundle / "config.json").read_text())
    assert cfg["linux"]["uidMappings"] == [{"containerID": 0, "hostID": submitter.uid, "size": 1}]
    assert cfg["linux"]["gidMappings"] == [{"containerID": 0, "hostID": submitter.gid, "size": 1}]
    assert cfg["process"]["user"] == {"uid": 0, "gid": 0}
    # Rebuilding over its own bundle works for the user too (the image's 0555 folders included).
    res = submitter.envkit("bundle", "envkit.yaml", "-o", "bundle", cwd=rootless_project)
    assert res.returncode == 0, res.stderr[-2000:]


def test_small_shm_fails_at_the_preflight_in_seconds(site):
    # The same image, its own bundle: config.json is what sizes /dev/shm.
    profile = site.project / "small-shm.yaml"
    profile.write_text(ngc_profile(base_image(), tag=SLURM_TAG, shm="64m")
                       + cluster_config(bundle=site.project / "bundle-small"))
    if site.user is not None:
        site.user.give(profile)
    res = site.envkit("bundle", "small-shm.yaml", "--image", SLURM_TAG, "-o", "bundle-small")
    assert res.returncode == 0, res.stderr
    generate(site, "small-shm.yaml")
    rc, out, took = submit_and_wait(site)
    assert rc != 0
    assert "envkit: preflight FAILED on node" in out
    diagnosis = out.split("its diagnosis:\n", 1)[1]
    assert re.search(r"shm\s+fail\s+/dev/shm is 64\.0 MiB", diagnosis), diagnosis
    # Training never started (the rendezvous line comes before the preflight: its network stage meets there).
    assert "allreduce" not in out and "torchrun" not in out
    assert took < 60, f"the job took {took:.0f} s to fail"


def test_scancel_leaves_no_process_or_container(site):
    profile = site.project / "sleepy.yaml"
    profile.write_text(ngc_profile(base_image(), tag=SLURM_TAG) + cluster_config(entrypoint='[allreduce.py, --sleep, "600"]'))
    if site.user is not None:
        site.user.give(profile)
    generate(site, "sleepy.yaml")
    res = site.submit("--parsable", "slurm.sbatch")
    job = res.stdout.strip().split(";")[0]
    assert job.isdigit(), res.stderr
    log = site.project / f"slurm-{job}.out"
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        if log.exists() and log.read_text().count("allreduce rank=") == 4:
            break
        time.sleep(1)
    else:
        pytest.fail(f"the job never reached its sleep: {log.read_text()[-2000:] if log.exists() else 'no output'}")
    cluster = site.cluster
    assert len(cluster.containers()) == 2, "one container per node while training"
    if site.user is not None:  # rootless: the training processes are the submitter's, not root's
        owners = {Path(f"/proc/{pid.split(':')[0]}").stat().st_uid for pid in _processes("allreduce.py")}
        assert owners == {site.user.uid}, owners
    assert site.scancel(job).returncode == 0
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        gone = not cluster.run("squeue", "-h", "-j", job).stdout.strip()
        if gone and not cluster.containers() and not _processes("allreduce.py") and not _leftover_state(cluster):
            break
        time.sleep(0.5)
    assert cluster.containers() == [], "runc containers left behind"
    assert _processes("allreduce.py") == [], "training processes left behind"
    assert _leftover_state(cluster) == [], "runc state left behind"


def _leftover_state(cluster) -> list[str]:
    """runc's per-container state folders still present (its state roots themselves may stay)."""
    return [p for p in cluster.runc_state() if not p.endswith(".lock")]


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
