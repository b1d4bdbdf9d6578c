"""The preflight's network stage on the namespaced two-node Slurm (tests/slurm/netns.py), fault by fault.

Each node runs the harness as the generated sbatch's preflight does (``--quick --network --rendezvous
--nodes --job-id``), as one srun step with one task per node, each in its own network namespace with its
own hostname and /etc/hosts. Every fault of tests/slurm/faults.py reaches one node; the stage must end
with FAIL on the nodes it concerns, name the node and the key to change, and do so within its bound,
where plain torchrun (tests/slurm/test_netns.py) fails late or hangs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.slurm import netns
from tests.slurm.faults import fault, injected

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

BOUND = netns.NETWORK_BOUND


@pytest.fixture(scope="module")
def expectations(tmp_path_factory) -> dict[str, Path]:
    """The baked expectation of an ethernet and an InfiniBand profile (what `envkit generate` writes)."""
    folder = tmp_path_factory.mktemp("netns-expect")
    return {fabric: netns.preflight_expectation(folder, fabric) for fabric in ("ethernet", "infiniband")}


def preflight(cluster: netns.NetnsCluster, expect: Path, **kw) -> tuple[netns.StepResult, dict[str, dict]]:
    """The preflight on both nodes; each node's network check."""
    res, reports = netns.preflight(cluster, expect, **kw)
    return res, {name: netns.network_check(r) for name, r in reports.items()}


def test_a_clean_two_node_preflight_passes_twice_with_both_nodes_and_a_bandwidth(netns_cluster, expectations):
    # Twice: the first run leaves the rendezvous port in TIME_WAIT on n1, which the store's bind allows
    # (before, every run after the first failed "in use by another process" on n1).
    for _ in range(2):
        res, checks = preflight(netns_cluster, expectations["ethernet"])
        assert res.returncode == 0, res.text()
        assert sorted(checks) == ["n1", "n2"]
        for name, check in checks.items():
            assert check["status"] == "pass", (name, check["message"])
            peers = check["measured"]["peers"]
            assert [(p["rank"], p["host"]) for p in peers] == [(0, "n1"), (1, "n2")]
            # Each node advertises its cluster address, on eth0, as NCCL and gloo would pick it.
            assert {p["address"] for p in peers} == {n.addr for n in netns_cluster.nodes}
            assert check["measured"]["bandwidth_gbps"] > 0


@pytest.mark.parametrize("key, culprit, words", [
    # The interface named does not exist on n2: NCCL and gloo would fail there (or pick another).
    ("iface-missing@n2", "n2", ["ens9", "NCCL_SOCKET_IFNAME"]),
    # n2's own name resolves to loopback: gloo would advertise 127.0.1.1 to the others.
    ("hostname-127.0.1.1@n2", "n2", ["loopback", "/etc/hosts"]),
])
def test_a_node_check_fault_fails_both_nodes_naming_the_culprit(netns_cluster, expectations, key, culprit,
                                                                 words):
    with injected(netns_cluster, fault(key)):
        res, checks = preflight(netns_cluster, expectations["ethernet"])
    assert res.returncode not in (0, None), res.text()
    bad = checks[culprit]
    assert bad["status"] == "fail" and all(w in bad["message"] + (bad["remedy"] or "") for w in words), bad
    other = checks["n1" if culprit == "n2" else "n2"]
    assert other["status"] == "fail" and culprit in other["message"], other  # the healthy node names the culprit
    assert max(c["measured"]["elapsed_s"] for c in checks.values()) < BOUND + 1


@pytest.mark.parametrize("key, n2_words", [
    # A REJECT answers at once ("refused"); a DROP answers nothing until the bound.
    ("port-reject@n1", ["nothing accepts connections", f"n1:{netns.RDZV_PORT}"]),
    ("port-drop@n1", [f"n1:{netns.RDZV_PORT}"]),
])
def test_a_blocked_rendezvous_port_is_named_on_both_sides_within_the_bound(netns_cluster, expectations,
                                                                           key, n2_words):
    with injected(netns_cluster, fault(key)):
        res, checks = preflight(netns_cluster, expectations["ethernet"])
    assert res.returncode not in (0, None), res.text()
    n1, n2 = checks["n1"], checks["n2"]
    assert n2["status"] == "fail" and all(w in n2["message"] for w in n2_words), (n2["message"], n1["message"])
    assert n1["status"] == "fail" and "n2" in n1["message"] and "never arrived" in n1["message"], n1["message"]
    assert max(c["measured"]["elapsed_s"] for c in checks.values()) < BOUND + 2


def test_an_interface_that_reaches_nothing_fails_within_the_bound(netns_cluster, expectations):
    # eth1 exists, is up and addressed on every node, and reaches no other node: no static check can
    # tell; the gloo all_reduce over it cannot form, and the bound ends it with the phase named.
    with injected(netns_cluster, fault("iface-isolated@n2")):
        res, checks = preflight(netns_cluster, expectations["ethernet"])
    assert res.returncode not in (0, None), res.text()
    assert all(c["status"] == "fail" for c in checks.values()), checks
    # What each node advertised, so the odd interface stands out.
    assert all(f"n2 {netns_cluster.node('n2').isolated_addr} on eth1" in c["message"] for c in checks.values()), checks
    assert max(c["measured"]["elapsed_s"] for c in checks.values()) < BOUND + 2


def test_a_node_that_never_starts_is_named_by_the_others_within_the_bound(netns_cluster, expectations):
    with injected(netns_cluster, fault("never-starts-sleep@n2")):
        # As the sbatch runs it: n1's failure ends the step, n2's held task with it.
        res, checks = preflight(netns_cluster, expectations["ethernet"], kill_on_bad_exit=True)
    assert list(checks) == ["n1"], res.text()  # n2 never ran the preflight
    n1 = checks["n1"]
    assert n1["status"] == "fail" and "never arrived" in n1["message"] and "n2" in n1["message"], n1
    assert n1["measured"]["elapsed_s"] < BOUND + 1


def test_rdma_declared_without_devices_fails_the_node_before_any_meeting(netns_cluster, expectations):
    with injected(netns_cluster, fault("rdma-missing@n2")):
        res, checks = preflight(netns_cluster, expectations["infiniband"])
    assert res.returncode not in (0, None), res.text()
    n2 = checks["n2"]
    assert n2["status"] == "fail" and "no /dev/infiniband" in n2["message"] and "infiniband" in n2["message"], n2
    assert "--device=/dev/infiniband" in (n2["remedy"] or "")

