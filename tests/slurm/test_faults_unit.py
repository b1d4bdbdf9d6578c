"""The fault helpers' own logic, without a cluster (tests/slurm/faults.py, tests/slurm/netns.py)."""

from __future__ import annotations

import pytest

from tests.slurm import netns
from tests.slurm.faults import FAULTS, BlockedPort, HostnameToLoopback, fault, injected, rewrite_in_place, task_env_lines


def test_the_catalogue_names_each_fault_once_and_covers_issue_38s_kinds():
    keys = [f.key for f in FAULTS]
    assert len(set(keys)) == len(keys)
    assert {k.split("@")[0].rsplit("-", 1)[0] for k in keys} >= {
        "iface", "port", "hostname", "never-starts", "rdma"}
    assert fault("port-drop@n1") == BlockedPort("n1", netns.RDZV_PORT, "DROP")
    with pytest.raises(KeyError, match="no fault 'nope'"):
        fault("nope")


@pytest.mark.parametrize("name, value", [("GLOO_SOCKET_IFNAME", "eth0\nexport X=1"), ("1BAD", "x"),
                                         ("A B", "x"), ("OK", "x\r")])
def test_task_env_refuses_what_slurm_would_misread(name, value):
    with pytest.raises(ValueError, match="not a task environment entry"):
        task_env_lines({name: value})


def test_rewrite_in_place_keeps_the_inode(tmp_path):
    hosts = tmp_path / "hosts"
    hosts.write_text("198.19.0.11 n1\n198.19.0.12 n2\n")
    inode = hosts.stat().st_ino
    rewrite_in_place(hosts, "198.19.0.11 n1\n")  # shorter: truncated, not left with a tail
    assert hosts.stat().st_ino == inode
    assert hosts.read_text() == "198.19.0.11 n1\n"


def test_the_hostname_fault_changes_only_the_nodes_own_line_and_reverts(tmp_path):
    (tmp_path / "n2").mkdir()
    node = netns.Node("n2", "envkit-0-n2", "198.19.0.12", "198.18.0.12", tmp_path / "n2")
    cluster = netns.NetnsCluster(tmp_path, {}, "198.19.0.1", (node,), "envkit-0-hub")
    text = "127.0.0.1 localhost\n198.19.0.11 n1\n198.19.0.12 n2\n"
    node.hosts.write_text(text)
    with injected(cluster, HostnameToLoopback("n2", "127.0.1.1")):
        assert node.hosts.read_text() == "127.0.0.1 localhost\n198.19.0.11 n1\n127.0.1.1 n2\n"
    assert node.hosts.read_text() == text


def test_a_fault_that_fails_to_apply_reverts_the_ones_before_it(tmp_path):
    (tmp_path / "n2").mkdir()
    node = netns.Node("n2", "envkit-0-n2", "198.19.0.12", "198.18.0.12", tmp_path / "n2")
    cluster = netns.NetnsCluster(tmp_path, {}, "198.19.0.1", (node,), "envkit-0-hub")
    text = "198.19.0.12 n2\n"
    node.hosts.write_text(text)
    with pytest.raises(RuntimeError, match="has no line"):
        # The second finds n2 already swapped: it fails, and the first is undone.
        with injected(cluster, HostnameToLoopback("n2", "127.0.1.1"), HostnameToLoopback("n2", "127.0.0.1")):
            pass
    assert node.hosts.read_text() == text


def test_first_error_skips_what_every_run_prints():
    out = ("W1204 torch/distributed/run.py:874] Setting OMP_NUM_THREADS environment variable for each process\n"
           "[W1204 socket.cpp:207] [c10d] The hostname of the client socket cannot be retrieved. err=-3\n"
           "allreduce rank=0 world=4 sum=10\n")
    assert netns.first_error(out) == ""
    assert netns.first_error(out + "torch.distributed.DistNetworkError: connect() timed out.\n") == \
        "torch.distributed.DistNetworkError: connect() timed out."
