"""doctor's ``shm`` is the harness's one check (envkit.harness.checks.shm.check_shm) fed this host's facts:
the same facts give the same words on both sides, and the host's /dev/shm counts only under ``ipc: host``."""

from __future__ import annotations

import json
from pathlib import Path

from envkit.doctor import diagnose
from envkit.doctor.checks import host_plan, shm_facts
from envkit.doctor.host import FIXTURE_DIR, Host
from envkit.harness.checks.shm import check_shm
from envkit import planner
from envkit.profile import load_profile_bytes

GIB = 1 << 30
BASE = "envkit: 1\nname: s\nimage: {base: 'debian:bookworm'}\nloader: {num_workers: 2, batch_size: 64}\n"


def _host(tmp_path: Path, shm_bytes: int | None, cpus: int = 8) -> Host:
    fx = tmp_path / "host" / FIXTURE_DIR
    fx.mkdir(parents=True)
    (fx / "host.json").write_text(json.dumps({"platform": "linux", "cpus": cpus}))
    if shm_bytes is not None:
        (fx / "statvfs.json").write_text(json.dumps({"/dev/shm": {"size_bytes": shm_bytes, "free_bytes": shm_bytes}}))
    return Host(tmp_path / "host", environ={}, cwd="/home/me")


def _shm(tmp_path: Path, run: str, host_shm: int | None) -> tuple[dict, Host, object]:
    loaded = load_profile_bytes((BASE + run).encode(), "s.yaml", tmp_path)
    host = _host(tmp_path, host_shm)
    doc = diagnose(host, loaded, [], [])
    return next(c for c in doc["checks"] if c["name"] == "shm"), host, loaded


def test_a_planned_shm_below_the_need_reads_as_the_harness_says_it(tmp_path):
    check, host, loaded = _shm(tmp_path, "run: {shm_size: 64m}\n", 16 * GIB)
    assert check["status"] == "warn"
    assert check["message"].startswith("/dev/shm is 16.0 GiB here, but the container is planned with 64.0 MiB "
                                       "(run.shm_size), below what the loader (batch 64 x [3, 224, 224] float32, 2 workers")
    assert check["remedy"].startswith("drop run.shm_size (envkit sizes it) or set run.shm_size: ")
    # The same facts in the harness (this /dev/shm is the container's and big enough): the same words.
    plan = host_plan(host, loaded.profile, planner.build_plan(loaded).loader)
    loader, run, stats = shm_facts(host, loaded.profile, plan)
    inside = check_shm(loader, run, stats)
    assert (inside["status"], inside["message"], inside["remedy"]) == (check["status"], check["message"], check["remedy"])


def test_the_hosts_shm_is_not_the_containers_unless_ipc_host(tmp_path):
    sized, _, _ = _shm(tmp_path / "a", "", 64 << 20)  # envkit sizes the container's; the host's 64 MiB is irrelevant
    assert sized["status"] == "pass" and sized["message"].startswith("the container gets 256.0 MiB of /dev/shm (sized by")
    assert sized["message"].endswith("; this host's /dev/shm (64.0 MiB) is not the container's")
    assert sized["measured"] == {"path": "/dev/shm", "size_bytes": 64 << 20, "free_bytes": 64 << 20}
    shared, _, _ = _shm(tmp_path / "b", "run: {ipc: host}\n", 64 << 20)  # under ipc: host it is the container's
    assert shared["status"] == "fail" and shared["message"].startswith("/dev/shm is 64.0 MiB (Docker's default")
    assert shared["remedy"].startswith("use ipc: private (envkit then sizes shm_size: 256m)")
    roomy, _, _ = _shm(tmp_path / "c", "run: {ipc: host}\n", 16 * GIB)
    assert roomy["status"] == "pass" and "(--ipc=host: this is the host's /dev/shm)" in roomy["message"]
    missing, _, _ = _shm(tmp_path / "d", "run: {ipc: host}\n", None)  # the engine may run in a VM: a warning here
    assert missing["status"] == "warn" and missing["message"].startswith("/dev/shm does not exist")


def test_under_ipc_host_the_harness_names_the_ipc_remedy_not_shm_size():
    loader = {"batch_size": 64, "sample_shape": [3, 224, 224], "dtype": "float32", "num_workers": 2, "prefetch_factor": 2}
    c = check_shm(loader, {"ipc": "host"}, stats={"path": "/dev/shm", "size_bytes": 64 << 20, "free_bytes": 64 << 20})
    assert c["status"] == "fail" and c["remedy"].startswith("use ipc: private") and "--shm-size" not in c["remedy"]
    private = check_shm(loader, {}, stats={"path": "/dev/shm", "size_bytes": 64 << 20, "free_bytes": 64 << 20})
    assert private["status"] == "fail" and private["remedy"].startswith("docker run --shm-size=")
