"""The namespaced two-node Slurm (tests/slurm/netns.py) and its faults (tests/slurm/faults.py).

Each node is a network namespace with its own address, hostname and /etc/hosts, on a bridge that
lives in a namespace of its own; nothing leaves 198.18.0.0/15. Here: the topology is what it says,
a clean 2 nodes x 2 ranks torchrun (gloo, c10d rendezvous) passes on it, each fault reaches one
node and is undone, and plain torchrun meets two representative faults, bounded by the test: one
it fails fast on (a missing interface) and one it hangs on (a rejected rendezvous port). The other
faults' baselines are benchmarks/bench_network_faults.py's: each hang costs its whole bound.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.slurm import netns
from tests.slurm.faults import (
    BlockedPort,
    HostnameToLoopback,
    NeverStarts,
    RdmaDeclared,
    WrongInterface,
    fault,
    injected,
)

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

# Each node's view of the network, as JSON: run on both nodes by one step.
NODE_FACTS = r'''
import json, os, socket, subprocess
peers = json.loads(os.environ["PEERS"])
addrs = {i["ifname"]: [a["local"] for a in i["addr_info"] if a["family"] == "inet"]
         for i in json.loads(subprocess.run(["ip", "-j", "addr"], capture_output=True, text=True).stdout)}
routes = json.loads(subprocess.run(["ip", "-j", "route"], capture_output=True, text=True).stdout)

def reach(addr, port):
    try:
        socket.create_connection((addr, port), timeout=5).close()
        return "connected"
    except OSError as exc:
        return exc.strerror or type(exc).__name__

me = socket.gethostname()
other = next(p for p in peers if p["name"] != me)
print(json.dumps({
    "hostname": me, "addrs": addrs, "routes": sorted(r["dst"] for r in routes),
    "resolves": {p["name"]: socket.gethostbyname(p["name"]) for p in peers},
    "other_slurmd": reach(other["addr"], 6818),
    "other_isolated": reach(other["isolated_addr"], 6818),
    # TEST-NET-1: no route to it, so the kernel refuses before any packet is sent.
    "outside": reach("192.0.2.1", 9),
}))
'''

# n1 listens on the port; each node then connects to n1 by name: n1 through its own loopback, n2
# across the bridge.
PORT_PROBE = r'''
import socket, sys, threading, time
port, me = int(sys.argv[1]), socket.gethostname()
if me == "n1":
    srv = socket.create_server(("", port))
    def serve():
        while True:
            srv.accept()[0].close()
    threading.Thread(target=serve, daemon=True).start()
else:
    time.sleep(1.5)
try:
    socket.create_connection(("n1", port), timeout=3).close()
    print("connected")
except ConnectionRefusedError:
    print("refused")
except (TimeoutError, socket.timeout):
    print("timed out")
if me == "n1":
    time.sleep(4)
'''
PROBE_PORT = 29400


@pytest.fixture
def allreduce(tmp_path) -> Path:
    script = tmp_path / "allreduce.py"
    script.write_text(netns.ALLREDUCE)
    return script


def _results(output: str) -> list[tuple[str, str, str]]:
    return sorted(re.findall(r"allreduce rank=(\d) world=(\d) sum=(\d+)", output))


def _wait_no_torch(cluster: netns.NetnsCluster, timeout: float = 20) -> list[str]:
    deadline = time.monotonic() + timeout
    while True:
        left = [p for n in cluster.nodes for p in cluster.processes(n.name) if "torch" in p or "allreduce" in p]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.5)


def test_each_node_has_its_own_network_hostname_and_hosts_file(netns_cluster):
    c = netns_cluster
    peers = [{"name": n.name, "addr": n.addr, "isolated_addr": n.isolated_addr} for n in c.nodes]
    res = c.step([sys.executable, "-c", NODE_FACTS], env={"PEERS": json.dumps(peers)}, bound=30)
    assert res.returncode == 0, res.text()
    for node in c.nodes:
        facts = json.loads(res.outputs[node.name])
        assert facts["hostname"] == node.name
        assert facts["addrs"] == {"lo": ["127.0.0.1"], netns.CLUSTER_IFACE: [node.addr],
                                  netns.ISOLATED_IFACE: [node.isolated_addr]}
        # Only the two on-link networks: no default route, so nothing leaves the test's range.
        assert facts["routes"] == sorted([node.addr.rsplit(".", 1)[0] + ".0/24",
                                          node.isolated_addr.rsplit(".", 1)[0] + ".0/24"])
        assert facts["outside"] == "Network is unreachable"
        assert facts["resolves"] == {n.name: n.addr for n in c.nodes}
        assert facts["other_slurmd"] == "connected"
        assert facts["other_isolated"] == "No route to host"  # eth1 is up and addressed, and reaches nothing
    # This namespace reaches the nodes only through its own veth; no iptables rule of this namespace
    # names the test's range (the bridge's traffic never meets Docker's FORWARD chain).
    assert c.controller_addr.startswith("198.19.")
    saved = subprocess.run(["iptables-save"], capture_output=True, text=True).stdout
    assert not re.search(r"198\.1[89]\.|envkit", saved)


def test_a_clean_two_by_two_gloo_job_passes(netns_cluster, allreduce):
    res = netns_cluster.step(netns.torchrun(allreduce), bound=120)
    assert res.returncode == 0, res.text()
    ranks = []
    for node in netns_cluster.nodes:
        got = _results(res.outputs[node.name])
        assert len(got) == 2, res.text()  # two ranks on each node, in that node's namespace
        assert all(world == "4" and total == "10" for _, world, total in got)
        ranks += [rank for rank, _, _ in got]
    assert sorted(ranks) == ["0", "1", "2", "3"]


def test_a_variable_fault_reaches_every_task_on_its_node_only(netns_cluster):
    c = netns_cluster
    show = ["sh", "-c", 'echo "gloo=$GLOO_SOCKET_IFNAME nccl=$NCCL_SOCKET_IFNAME hca=$NCCL_IB_HCA"']
    with injected(c, WrongInterface("n2", "ens9"), RdmaDeclared("n2")):
        res = c.step(show, ntasks_per_node=2, bound=30)
        assert c.in_node("n2", "test", "-e", "/dev/infiniband").returncode != 0
    assert res.returncode == 0, res.text()
    assert res.outputs["n2"].splitlines() == ["gloo=ens9 nccl=ens9 hca=mlx5_0"] * 2
    assert res.outputs["n1"].splitlines() == ["gloo= nccl= hca="] * 2
    after = c.step(show, bound=30)
    assert after.outputs["n2"].splitlines() == ["gloo= nccl= hca="]


def test_the_hostname_fault_rewrites_the_nodes_own_hosts_file_in_place(netns_cluster):
    c = netns_cluster
    n2 = c.node("n2")
    inode = n2.hosts.stat().st_ino
    own = [sys.executable, "-c", "import socket; print(socket.gethostbyname(socket.gethostname()))"]
    with injected(c, HostnameToLoopback("n2", "127.0.1.1")):
        assert n2.hosts.stat().st_ino == inode  # the bind mount in n2's mount namespace sees it
        res = c.step(own, bound=30)
        assert c.in_node("n1", "getent", "hosts", "n2").stdout.split()[0] == n2.addr  # the others still know it
    assert res.outputs == {"n1": f"{c.node('n1').addr}\n", "n2": "127.0.1.1\n"}, res.text()
    assert c.in_node("n2", "getent", "hosts", "n2").stdout.split()[0] == n2.addr


@pytest.mark.parametrize("action, seen", [("DROP", "timed out"), ("REJECT", "refused")])
def test_a_blocked_port_stops_the_other_node_only(netns_cluster, action, seen):
    c = netns_cluster
    probe = [sys.executable, "-c", PORT_PROBE, str(PROBE_PORT)]
    with injected(c, BlockedPort("n1", PROBE_PORT, action)):
        rules = c.in_node("n1", "iptables", "-w", "-S", "INPUT").stdout
        assert f"--dport {PROBE_PORT}" in rules and action in rules
        res = c.step(probe, bound=30)
    assert res.outputs == {"n1": "connected\n", "n2": f"{seen}\n"}, res.text()
    clean = c.step(probe, bound=30)
    assert clean.outputs == {"n1": "connected\n", "n2": "connected\n"}, clean.text()


def test_a_node_that_never_starts_runs_nothing(netns_cluster):
    c = netns_cluster
    with injected(c, NeverStarts("n2", "exit")):
        failed = c.step(["echo", "started"], bound=30)
    assert failed.returncode not in (0, None) and "started" not in failed.outputs["n2"], failed.text()
    assert "TaskProlog failed status=1" in failed.outputs["n2"]
    with injected(c, NeverStarts("n2", "sleep")):
        held = c.step(["echo", "started"], bound=5)
    assert held.bounded, held.text()
    assert held.outputs == {"n1": "started\n", "n2": ""}



def test_plain_torchrun_fails_fast_on_a_missing_interface(netns_cluster, allreduce):
    # What a user meets: the node lacking the interface fails within seconds, and
    # --kill-on-bad-exit ends the other (without it, srun waits for the other node's hang).
    with injected(netns_cluster, fault("iface-missing@n2")):
        res = netns_cluster.step(netns.torchrun(allreduce), bound=60)
    assert res.returncode not in (0, None), res.text()
    assert "Unable to find address for: ens9" in res.message("n2"), res.text()
    assert "n2" in res.failed_at
    assert _wait_no_torch(netns_cluster) == []


def test_plain_torchrun_hangs_on_a_rejected_rendezvous_port_until_the_tests_bound(netns_cluster, allreduce):
    # n2's agent is refused at n1's store and keeps retrying: torch's own timeouts do not end the
    # job within the bound (the benchmark's 120 s neither). A DROP ends differently: the store
    # client's 60 s connect timeout fails n2 at about 65 s (benchmarks/bench_network_faults.py).
    # 40 s: twice the preflight's network bound, by which envkit has named the port (test_netns_preflight.py).
    with injected(netns_cluster, fault("port-reject@n1")):
        res = netns_cluster.step(netns.torchrun(allreduce), bound=40)
    assert res.bounded, res.text()
    assert res.seconds >= 40
    assert not any(_results(out) for out in res.outputs.values())
    assert res.failed_at == {}  # no node had given up by then
    assert _wait_no_torch(netns_cluster) == []  # the cancel left no rank behind


def test_a_killed_sessions_cluster_is_removed_by_its_watchdog(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root")
    owner = subprocess.Popen(["sleep", "600"])
    try:
        cluster = netns.start(tmp_path / "cluster", owner=owner.pid)
        names = [cluster.hub, *(n.netns for n in cluster.nodes)]
        veth = f"envkit{cluster.hub.split('-')[1]}"
        pids = [int(p.read_text()) for p in cluster.dir.glob("*.pid")]
        assert len(pids) == 4  # munged, slurmctld, two slurmd
        assert all(Path("/run/netns", name).exists() for name in names)
        owner.kill()
        owner.wait()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if not any(Path("/run/netns", name).exists() for name in names) and not any(map(_alive, pids)):
                break
            time.sleep(0.5)
        assert [name for name in names if Path("/run/netns", name).exists()] == []
        assert [pid for pid in pids if _alive(pid)] == []
        assert subprocess.run(["ip", "link", "show", veth], capture_output=True).returncode != 0
    finally:
        owner.kill()
        owner.wait()
        netns.stop_folder(tmp_path / "cluster")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
