"""One matrix, three advisers: generate's warnings, ``envkit doctor`` and the harness's plan agree.

Hosts (plain Linux, a smaller affinity mask, a cgroup v2 and a v1 CPU quota, the WSL2 and
WSL1 fixtures) x profiles (``auto`` and fixed workers, a cpuset, a ``cpus`` quota,
``ipc: host``, a ``wsl:`` section). For each pair:

- the doctor inspects the host (fixture tree) with the profile;
- the harness runs "in the container" the profile's run settings make on that host: its
  affinity is the cpuset (or the host's CPUs), and its cgroup holds the host's quota as an
  ancestor and the profile's ``cpus`` as its own (so the ancestor-aware reader is exercised);
- generate sees the profile only.

The doctor and the harness must give the same worker count, shm need and memory need in
every case. Generate must give the same wherever the host grants what the profile plans for
(the host is not the tighter limit; a ``wsl:`` section states the VM's CPUs); where the host
is tighter, generate cannot know it, and the doctor is the one that sees it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import loader_plan_of
from tests.conftest import profile_warnings_of
from envkit.doctor import diagnose
from envkit.doctor.host import Host
from tests.conftest import expectation_of
from envkit.harness.probes.env import read_cgroup_cpu_quota
from envkit.harness.expectation import resolve_loader
from envkit.harness.report import human_bytes
from envkit.harness.rules.sizing import AUTO_WORKERS_CAP, cpu_limit
from envkit.profile import load_profile_bytes

FIXTURES = Path(__file__).resolve().parents[1] / "doctor" / "fixtures"

# name -> (fixture to copy or None, usable CPUs, host quota (cgroup version, CPUs) or None, environ)
HOSTS = {
    "linux-16": ("linux", None, None, {}),
    "affinity-6": (None, 6, None, {}),
    "quota-v2-3": (None, 16, (2, 3.0), {}),
    "quota-v1-2.5": (None, 16, (1, 2.5), {}),
    "wsl2": ("wsl2", None, None, {"WSL_DISTRO_NAME": "Ubuntu", "WSL_INTEROP": "/run/WSL/1_interop"}),
    "wsl1": ("wsl1", None, None, {"WSL_DISTRO_NAME": "Ubuntu"}),
}

BASE = "envkit: 1\nname: m\nimage: {base: 'debian:bookworm'}\n"
PROFILES = {
    "auto": "run: {shm_size: 16m, memory: 1g}\nloader: {num_workers: auto}\n",
    "auto-cpuset": "run: {shm_size: 16m, memory: 1g, cpuset: '0-3'}\nloader: {num_workers: auto}\n",
    "auto-cpus": "run: {shm_size: 16m, memory: 1g, cpus: 2}\nloader: {num_workers: auto}\n",
    "fixed-3": "run: {shm_size: 16m, memory: 1g}\nloader: {num_workers: 3}\n",
    "ipc-host": ("run: {ipc: host, shm_size: 8g, memory: 1g}\n"
                 "loader: {num_workers: auto, batch_size: 64, sample_shape: [3, 224, 224]}\n"),
    "wsl": "run: {shm_size: 16m}\nloader: {num_workers: auto}\nwsl: {processors: 8, memory: 1GB}\n",
    "sized": "run: {memory: 1g}\nloader: {num_workers: auto}\n",
    "ranks-2": ("run: {memory: 1g, cpus: 4}\nloader: {num_workers: auto}\n"
                "cluster: {nodes: 1, procs_per_node: 2, entrypoint: [train.py]}\n"),
}


def _put(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _quota_files(root: Path, version: int, cpus: float, rel: str) -> None:
    """Write a CFS quota of ``cpus`` into the cgroup folder ``rel`` (v1 or v2 spelling)."""
    quota = str(int(cpus * 100_000))
    if version == 2:
        _put(root, f"sys/fs/cgroup/{rel}/cpu.max".replace("//", "/"), f"{quota} 100000\n")
    else:
        _put(root, f"sys/fs/cgroup/cpu,cpuacct/{rel}/cpu.cfs_quota_us".replace("//", "/"), quota + "\n")
        _put(root, f"sys/fs/cgroup/cpu,cpuacct/{rel}/cpu.cfs_period_us".replace("//", "/"), "100000\n")


def make_host(name: str, tmp: Path) -> tuple[Host, float | None, int | None]:
    """The doctor's Host for ``name``, its cgroup quota and (when known) its CPU count."""
    fixture, cpus, quota, environ = HOSTS[name]
    root = tmp / "host"
    if fixture:
        shutil.copytree(FIXTURES / fixture, root)
    else:
        _put(root, ".envkit-fixture/host.json", f'{{"platform": "linux", "cpus": {cpus}}}')
        _put(root, "proc/sys/kernel/osrelease", "6.8.0-45-generic\n")
    if quota:
        version, q = quota
        if version == 2:
            _put(root, "sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory pids\n")
            _put(root, "proc/self/cgroup", "0::/user.slice\n")
            _quota_files(root, 2, q, "user.slice")
        else:
            _put(root, "proc/self/cgroup", "4:cpu,cpuacct:/user.slice\n")
            _quota_files(root, 1, q, "user.slice")
    return Host(root, environ=environ), (quota[1] if quota else None), cpus


def container_view(tmp: Path, host: Host, profile) -> tuple[int, dict]:
    """The harness's affinity and cgroup reading inside the container the profile asks for."""
    affinity = len(profile.run.cpuset_cpus) or host.usable_cpus()
    root = tmp / "container"
    host_quota = read_cgroup_cpu_quota(host.root)
    version = host_quota["version"] or 2
    own = "docker/abc"
    if version == 2:
        _put(root, "sys/fs/cgroup/cgroup.controllers", "cpu\n")
        _put(root, "proc/self/cgroup", f"0::/{own}\n")
    else:
        _put(root, "proc/self/cgroup", f"4:cpu,cpuacct:/{own}\n")
    if host_quota["quota_cpus"]:  # the host's limit is an ancestor of the container's cgroup
        _quota_files(root, version, host_quota["quota_cpus"], "docker")
    if profile.run.cpus:  # docker run --cpus writes the container's own quota
        _quota_files(root, version, profile.run.cpus, own)
    return affinity, read_cgroup_cpu_quota(root)


def host_grants_the_plan(host: Host, host_quota: float | None, profile) -> bool:
    """Is this host the machine generate planned for (from the profile alone)?"""
    if profile.loader.num_workers != "auto":
        return True  # a fixed worker count does not depend on the host
    limit = cpu_limit(affinity=host.usable_cpus(), quota=host_quota)
    if profile.wsl is not None and profile.wsl.processors:
        return limit == profile.wsl.processors  # the host is the VM the wsl: section describes
    gen_cpus = loader_plan_of(profile).cpus
    if gen_cpus is None:
        return limit is None or limit > AUTO_WORKERS_CAP
    return limit is None or limit >= gen_cpus


@pytest.mark.parametrize("profile_name", sorted(PROFILES))
@pytest.mark.parametrize("host_name", sorted(HOSTS))
def test_generate_doctor_and_harness_plan_alike(tmp_path, host_name, profile_name):
    loaded = load_profile_bytes((BASE + PROFILES[profile_name]).encode(), "m.yaml", tmp_path)
    profile = loaded.profile
    host, host_quota, _ = make_host(host_name, tmp_path)

    report = diagnose(host, loaded, [], [])
    doc = {c["name"]: c for c in report["checks"]}
    doctor = (report["loader"]["ranks_per_node"], report["loader"]["workers_per_rank"],
              report["loader"]["shm_need_bytes"], report["loader"]["shm_bytes"], doc["memory"]["expected"]["need_bytes"])
    assert doc["cpus"]["expected"]["workers"] == doctor[1]
    # The shm check is the harness's, fed this host's plan: its need and the container's /dev/shm are the plan's.
    assert (doc["shm"]["expected"]["required_bytes"], doc["shm"]["expected"]["profile_shm_size_bytes"]) == doctor[2:4]

    affinity, cgroup = container_view(tmp_path, host, profile)
    settings = resolve_loader(expectation_of(profile), usable=affinity, quota=cgroup["quota_cpus"])
    node = settings["node"]
    harness = (node["ranks_per_node"], node["workers_per_rank"], node["shm_need_bytes"], node["shm_bytes"],
               settings["memory_need_bytes"])
    assert doctor == harness, f"doctor {doctor} != harness {harness}"
    assert settings["num_workers"] == node["workers_per_rank"] and settings["shm_need_bytes"] == node["shm_need_bytes"]

    gen = loader_plan_of(profile)
    assert gen.shm_bytes == doctor[3], "a host's CPUs never resize the container's /dev/shm"
    if not host_grants_the_plan(host, host_quota, profile):
        # Generate planned for a machine the profile describes; this host differs (fewer CPUs, a
        # tighter quota, not the VM of the wsl: section). Only the doctor and the harness see it, and
        # the doctor says so.
        if gen.workers != doctor[1]:
            message = doc["cpus"]["message"]
            worded = f"{gen.workers} {'worker' if gen.workers == 1 else 'workers'}"
            assert f"generate planned {worded} per training process" in message
            assert f"here it is {doctor[1]}, from this host's" in message
            # Each number beside its own fact: never "from not known" in a sentence that states one.
            assert "not known" not in message
            if gen.cpus is not None:
                assert f"for the {gen.cpus} CPUs of" in message
        return
    assert (gen.ranks, gen.workers, gen.shm_need, gen.shm_bytes, gen.memory_need) == doctor
    # ... and generate's warnings speak of exactly these numbers.
    text = "\n".join(profile_warnings_of(profile))
    workers = f"{gen.workers} DataLoader {'worker' if gen.workers == 1 else 'workers'}"
    if profile.run.ipc != "host" and profile.run.shm_size is not None:
        assert f"below the {human_bytes(gen.shm_need)} that {workers}" in text
    if profile.run.memory is not None and profile.run.memory < gen.memory_need:
        assert f"below the {human_bytes(gen.memory_need)} that shm" in text
        assert f"plus {gen.processes} processes" in text
    if profile.wsl is not None:
        assert f"asks for {gen.memory_need / 2**30:.1f}GB" in text and f"{gen.processes} processes" in text


def test_every_host_agrees_with_generate_somewhere(tmp_path):
    """The matrix is not vacuous: each host has profiles where all three are compared."""
    for host_name in HOSTS:
        compared = 0
        for profile_name, text in PROFILES.items():
            profile = load_profile_bytes((BASE + text).encode(), "m.yaml", tmp_path).profile
            host, quota, _ = make_host(host_name, tmp_path / host_name / profile_name)
            compared += host_grants_the_plan(host, quota, profile)
        assert compared >= 2, host_name


def test_fixed_disagreements_stay_fixed():
    """The issue's cases: auto with no cpuset on a 16-CPU host, and auto with cpus: 2."""
    for extra in ("", "wsl: {memory: 64GB}\n", "wsl: {processors: 16}\n"):
        p = load_profile_bytes((BASE + "loader: {num_workers: auto}\n" + extra).encode(), "m.yaml", Path.cwd()).profile
        # Before: the shm warning planned 4 workers, the WSL memory warning 8 processes' worth,
        # and the harness ran 8 workers on a 16-CPU host.
        assert loader_plan_of(p).workers == 8
        assert resolve_loader(expectation_of(p), usable=16)["num_workers"] == 8
    capped = load_profile_bytes((BASE + "run: {cpus: 2}\nloader: {num_workers: auto}\n").encode(), "m.yaml",
                                Path.cwd()).profile
    # Before: generate planned 1 worker, the harness (ignoring the quota) up to 8.
    assert loader_plan_of(capped).workers == 1
    assert resolve_loader(expectation_of(capped), usable=16, quota=2.0)["num_workers"] == 1
