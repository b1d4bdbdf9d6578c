"""NUMA placement: fixture hosts of 1, 2 and 4 nodes (doctor and the harness), the flags, a real container."""

from __future__ import annotations

import json
import subprocess
import uuid
from dataclasses import replace
from pathlib import Path

import pytest
from tests.conftest import plan_of, profile_warnings_of, run_envkit
from tests.dockerutil import require_base_image, require_docker
from tests.docs.runtime_blocks import check_block

from envkit.doctor.checks import check_numa as doctor_numa
from envkit.doctor.host import Host
from envkit.engine.docker import create_kwargs
from envkit.harness.checks.numa import check_numa
from envkit.harness.probes.numa import read_topology
from envkit.profile import load_profile_bytes
from envkit.targets.compose import compose_service
from envkit.targets.run import docker_flags

# nodes -> their CPUs, and the node of each NVIDIA GPU (PCI address -> numa_node)
HOSTS = {
    1: ({0: "0-7"}, {"0000:01:00.0": 0}),
    2: ({0: "0-15,32-47", 1: "16-31,48-63"}, {"0000:17:00.0": 0, "0000:b1:00.0": 1}),
    4: ({0: "0-7", 1: "8-15", 2: "16-23", 3: "24-31"}, {"0000:c1:00.0": 3, "0000:41:00.0": 1}),
}


def make_host(root: Path, nodes: dict, gpus: dict, status: str = "") -> Path:
    for n, cpus in nodes.items():
        d = root / f"sys/devices/system/node/node{n}"
        d.mkdir(parents=True)
        (d / "cpulist").write_text(cpus + "\n")
    for pci, node in gpus.items():
        d = root / "sys/bus/pci/devices" / pci
        d.mkdir(parents=True)
        (d / "vendor").write_text("0x10de\n")
        (d / "class").write_text("0x030200\n")
        (d / "numa_node").write_text(f"{node}\n")
    other = root / "sys/bus/pci/devices/0000:00:1f.2"  # a SATA controller: not a GPU
    other.mkdir(parents=True, exist_ok=True)
    (other / "vendor").write_text("0x8086\n")
    (other / "class").write_text("0x010601\n")
    if status:
        (root / "proc/self").mkdir(parents=True)
        (root / "proc/self/status").write_text(status)
    return root


def profile(run: str):
    text = f"envkit: 1\nname: p\nimage: {{base: \"debian:12\"}}\nrun:\n{run}"
    return load_profile_bytes(text.encode(), "p.yaml", Path.cwd()).profile


@pytest.mark.parametrize("n", [1, 2, 4])
def test_topology_of_fixture_hosts(tmp_path, n):
    nodes, gpus = HOSTS[n]
    topo = read_topology(make_host(tmp_path, nodes, gpus))
    assert sorted(topo["nodes"]) == list(range(n))
    assert {g["pci"]: g["node"] for g in topo["gpus"]} == gpus  # the SATA controller is not listed


def test_doctor_reports_and_resolves_auto_on_a_4_node_host(tmp_path, golden):
    host = Host(make_host(tmp_path, *HOSTS[4]), environ={})
    c = doctor_numa(host, profile("  numa: auto\n"))
    # sorted PCI order: 0000:41 (node 1) is the first GPU
    assert c["status"] == "pass" and "node 1 (the node of GPU 0000:41:00.0)" in c["message"]
    assert "node 3: CPUs 24-31" in c["message"] and c["measured"]["nodes"]["2"] == "16-23"
    assert c["remedy"] == 'on this host: run.numa: 1 and run.cpuset: "8-15" (docker run --cpuset-cpus=8-15 --cpuset-mems=1)'
    from envkit.doctor import render_table
    host_doc = {"platform": "linux", "wsl": None, "osrelease": None, "distro": None, "cwd": "/", "cpus": 32,
                "memory_bytes": None}
    doc = {"envkit_doctor": 1, "host": host_doc, "verdict": c["status"], "loader": {}, "checks": [c]}
    check_block(golden, "numa-doctor", render_table(doc).split("\n", 1)[1])  # the row, without the host summary


def test_doctor_on_2_nodes_flags_a_cpuset_outside_the_node(tmp_path):
    host = Host(make_host(tmp_path, *HOSTS[2]), environ={})
    c = doctor_numa(host, profile('  numa: 1\n  cpuset: "8-23"\n'))
    assert c["status"] == "warn" and "reaches outside node 1" in c["message"]
    assert c["remedy"].startswith('run.cpuset: "16-31,48-63"')
    assert doctor_numa(host, profile('  numa: 1\n  cpuset: "16-23"\n'))["status"] == "pass"
    assert doctor_numa(host, profile("  numa: 5\n"))["status"] == "fail"
    hint = doctor_numa(host, profile("  numa: none\n"))
    assert hint["status"] == "pass" and "run.numa: 0" in hint["remedy"]


def test_doctor_on_1_node_has_nothing_to_place(tmp_path):
    host = Host(make_host(tmp_path, *HOSTS[1]), environ={})
    c = doctor_numa(host, profile("  numa: none\n"))
    assert c["status"] == "pass" and c["remedy"] is None and "node 0: CPUs 0-7" in c["message"]


@pytest.mark.parametrize("cpus,mems,status", [("16-23", "1", "pass"), ("8-23", "1", "fail"), ("16-23", "0-1", "fail")])
def test_harness_check_reads_the_allowed_lists(tmp_path, cpus, mems, status):
    root = make_host(tmp_path, *HOSTS[2], status=f"Name:\tpython3\nCpus_allowed_list:\t{cpus}\n"
                                                   f"Mems_allowed_list:\t{mems}\n")
    c = check_numa({"numa": 1}, root=root)
    assert c["status"] == status, c
    if status == "fail":
        assert c["remedy"] == "start the container with --cpuset-cpus=16-31,48-63 --cpuset-mems=1"
    assert check_numa({"numa": "none"}, root=root) is None  # no placement asked: no check


def test_flags_and_targets_that_cannot_say_it():
    p = profile('  numa: 1\n  cpuset: "16-23"\n')
    rs = plan_of(p).settings
    flags = docker_flags(rs)
    assert flags[flags.index("--cpuset-cpus=16-23") + 1] == "--cpuset-mems=1"
    assert create_kwargs(replace(rs, volumes=()))["cpuset_mems"] == "1"
    assert "cpuset_mems" not in json.dumps(compose_service(rs))
    assert any(w.startswith("run.numa: compose.yaml cannot express --cpuset-mems=1") for w in profile_warnings_of(p))
    auto = profile("  numa: auto\n")
    assert not any("cpuset-mems" in f for f in docker_flags(plan_of(auto).settings))
    assert any(w.startswith("run.numa: auto is resolved where the host is visible") for w in profile_warnings_of(auto))


def test_flags_output_is_documented(tmp_path, golden):
    (tmp_path / "envkit.yaml").write_text('envkit: 1\nname: p\nimage: {base: "debian:12"}\nrun:\n  numa: 1\n'
                                          '  cpuset: "16-23"\n  shm_size: 1g\n  mount_project: false\n')
    res = run_envkit("flags", "envkit.yaml", cwd=tmp_path)
    assert res.returncode == 0 and "--cpuset-cpus=16-23 --cpuset-mems=1" in res.stdout, res.stderr
    check_block(golden, "numa-flags", f"$ envkit flags envkit.yaml\n{res.stderr}{res.stdout}")


def test_bad_numa_value_is_exit_2(tmp_path):
    (tmp_path / "envkit.yaml").write_text("envkit: 1\nname: p\nimage: {base: \"debian:12\"}\nrun:\n  numa: closest\n")
    res = run_envkit("flags", str(tmp_path / "envkit.yaml"))
    assert res.returncode == 2 and "run.numa" in res.stderr and "Traceback" not in res.stderr


@pytest.mark.docker
def test_cpuset_mems_read_back_from_a_real_container(tmp_path, golden):
    eng = require_docker()
    image = require_base_image(eng)
    from envkit.harness.zipapp import build_zipapp
    build_zipapp(tmp_path)
    rs = plan_of(profile('  numa: 0\n  cpuset: "0"\n')).settings
    flags = [f for f in docker_flags(rs) if not f.startswith("--volume")]
    name = f"envkit-runtime-numa-{uuid.uuid4().hex[:8]}"
    code = ("import json, sys; sys.path.insert(0, '/h/envkit_harness.pyz'); from envkit_harness.checks.numa import "
            "check_numa; print(open('/proc/self/status').read()); print(json.dumps(check_numa({'numa': 0})))")
    try:
        subprocess.run(["docker", "run", "-d", "--name", name, "--label", "envkit-runtime-test=1", *flags,
                        "-v", f"{tmp_path}:/h:ro", image, "sleep", "60"], check=True, capture_output=True)
        mems = subprocess.run(["docker", "inspect", "-f", "{{.HostConfig.CpusetMems}}", name],
                              check=True, capture_output=True, text=True).stdout.strip()
        out = subprocess.run(["docker", "exec", name, "python3", "-c", code], check=True, capture_output=True,
                             text=True).stdout
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True)
    assert mems == "0"
    assert "Mems_allowed_list:\t0\n" in out and "Cpus_allowed_list:\t0\n" in out
    check = json.loads(out.strip().splitlines()[-1])
    assert check["status"] == "pass" and check["measured"]["mems_allowed"] == "0", check
    lines = [x for x in out.splitlines() if x.startswith(("Cpus_allowed_list", "Mems_allowed_list"))]
    check_block(golden, "numa-container", "\n".join([
        "$ docker inspect -f '{{.HostConfig.CpusetMems}}' <container>", mems,
        "$ grep _allowed_list /proc/self/status   # inside", *lines,
        "harness numa check: " + check["status"] + ": " + check["message"]]))


@pytest.mark.slow
def test_harness_report_has_the_numa_check_only_when_asked():
    from envkit.harness.runner import run_checks
    report = run_checks({"envkit_expect": 1, "loader": {"num_workers": 0, "batch_size": 2, "sample_shape": [4]},
                         "run": {"numa": 0}}, quick=True)
    numa = [c for c in report["checks"] if c["name"] == "numa"]
    assert len(numa) == 1 and numa[0]["status"] in ("pass", "warn"), numa  # this host: one node (0)
    plain = run_checks({"envkit_expect": 1, "loader": {"num_workers": 0, "batch_size": 2, "sample_shape": [4]}},
                       quick=True)
    assert "numa" not in [c["name"] for c in plain["checks"]]
