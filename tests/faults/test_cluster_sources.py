"""What envkit says about a Slurm job follows the cluster software's own source.

- slurmstepd (``src/slurmd/slurmstepd/ulimits.c``, ``_set_limit``) lowers a propagated soft limit
  above a node's hard limit to that limit without a message; only ``srun --propagate`` reports it.
- root's runc sets a bundle's rlimits itself, holding CAP_SYS_RESOURCE (runc ``setupRlimits``,
  Linux ``do_prlimit``), so slurmd's limits do not bound them.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.conftest import call_envkit


def _profile(tmp_path: Path, runtime: str, run: dict | None = None) -> Path:
    data = {"envkit": 1, "name": "t", "image": {"base": "debian:bookworm"}, "run": run or {},
            "cluster": {"nodes": 2, "image": "reg.example.com/t:1", "entrypoint": ["train.py"],
                        "slurm": {"runtime": runtime, **({"bundle": "/shared/b"} if runtime == "oci" else {})}}}
    path = tmp_path / "envkit.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.mark.parametrize("runtime", ["oci", "pyxis"])
def test_the_ulimit_warning_says_where_a_limit_above_a_hard_limit_stops_the_job(tmp_path, runtime):
    profile = _profile(tmp_path, runtime, {"ulimits": {"nofile": 65536}})
    res = call_envkit("generate", str(profile), "-o", str(tmp_path / "out"), "--target", "slurm")
    assert res.returncode == 0, res.stderr
    line = next(x for x in res.stderr.splitlines() if "run.ulimits.nofile" in x)
    assert "stops the job (naming the limit) above the batch node's hard limit" in line
    assert "another node lowers it to its own hard limit, which the preflight fails" in line
    # A root bundle's rlimits are not bounded by the node's hard limit: root's runc raises them.
    assert "if above the node's hard limit" not in line
    assert ("a root bundle's rlimits also set it in each container" in line) == (runtime == "oci")
    text = (tmp_path / "out" / "slurm.sbatch").read_text()
    assert "silently (slurmstepd's _set_limit)" in text


def _pyxis_mounts(tmp_path: Path, run: dict) -> tuple[list, str]:
    """Run the pyxis script under the fake srun, which reads --container-mounts as pyxis's args.c does."""
    from tests.slurm.test_sbatch import _run_script

    tmp_path.mkdir(exist_ok=True)
    mlog = tmp_path / "mounts.jsonl"
    proc, _ = _run_script(tmp_path, "pyxis", extra={"FAKE_MOUNT_LOG": str(mlog)}, **run)
    assert proc.returncode == 0, proc.stderr
    steps = [json.loads(line) for line in mlog.read_text().splitlines()]
    assert len(steps) == 3  # the preflight, then one step per node: each gets the same mounts
    return steps, proc.stderr


def test_pyxis_sizes_dev_shm_with_a_tmpfs_mount(tmp_path):
    steps, _ = _pyxis_mounts(tmp_path, {"shm_size": "3g"})
    for entries in steps:
        assert entries[0] == ["tmpfs", "/dev/shm", f"nosuid,nodev,noexec,mode=1777,size={3 << 30}"]
    res = call_envkit("generate", str(tmp_path / "envkit.yaml"), "-o", str(tmp_path / "again"), "--target", "slurm")
    assert res.returncode == 0 and "run.shm_size" not in res.stderr, res.stderr


def test_pyxis_without_shm_size_gets_the_sized_tmpfs_and_ipc_host_the_nodes(tmp_path):
    unset, _ = _pyxis_mounts(tmp_path / "a", {"shm_size": None})
    from envkit.plan.loader import loader_plan
    from envkit.profile import load_profile

    sized = loader_plan(load_profile(tmp_path / "a" / "envkit.yaml").profile).shm_bytes
    assert sized is not None and sized > 64 << 20
    for entries in unset:  # the preflight and every node's step: the same size, the plan's
        assert entries[0] == ["tmpfs", "/dev/shm", f"nosuid,nodev,noexec,mode=1777,size={sized}"]
    host, _ = _pyxis_mounts(tmp_path / "b", {"ipc": "host"})
    assert not any(e[1] == "/dev/shm" for entries in host for e in entries)
