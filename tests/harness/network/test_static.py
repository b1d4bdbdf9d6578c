"""The per-node checks, each on made-up facts: every failure names the node, the cause and the key."""

from __future__ import annotations

from envkit.harness.network.static import check_interfaces, check_own_name, check_rdma, check_rendezvous, nccl_matches
from tests.harness.network.fakes import FakeFacts


def test_nccl_reads_prefixes_exclusions_and_exact_names():
    names = ["lo", "eth0", "eth01", "ib0", "docker0"]
    assert nccl_matches("eth", names) == ["eth0", "eth01"]
    assert nccl_matches("^lo,docker", names) == ["eth0", "eth01", "ib0"]
    assert nccl_matches("=eth0", names) == ["eth0"]
    assert nccl_matches("^=eth0,lo", names) == ["eth01", "ib0", "docker0"]


def test_an_interface_the_node_lacks_fails_naming_the_node_and_the_key():
    f = FakeFacts()
    status, message, remedy = check_interfaces({"GLOO_SOCKET_IFNAME": "eth1"}, f.interfaces(), "n2")
    assert status == "fail" and "eth1" in message and "n2" in message and "Unable to find address for: eth1" in message
    assert "cluster.network.interface" in remedy
    status, message, _ = check_interfaces({"NCCL_SOCKET_IFNAME": "ib"}, f.interfaces(), "n2")
    assert status == "fail" and "NCCL_SOCKET_IFNAME=ib matches no interface" in message
    assert check_interfaces({"NCCL_SOCKET_IFNAME": "eth", "GLOO_SOCKET_IFNAME": "eth0"}, f.interfaces(), "n1")[0] == "pass"
    assert check_interfaces({}, f.interfaces(), "n1")[0] == "skip"


def test_an_interface_without_an_address_is_no_interface_to_talk_over():
    f = FakeFacts(ifaces={"lo": ["127.0.0.1"], "eth0": []})
    assert check_interfaces({"GLOO_SOCKET_IFNAME": "eth0"}, f.interfaces(), "n1")[0] == "fail"


def test_a_host_name_on_loopback_fails_unless_the_whole_job_is_on_this_host():
    f = FakeFacts(names={"n1": ["127.0.1.1"]})
    (status, message, remedy), _ = check_own_name(f, {}, False, "n1")
    assert status == "fail" and "127.0.1.1" in message and "aws-do-eks#69" in message and "/etc/hosts" in remedy
    (status, _, _), _ = check_own_name(f, {}, True, "n1")
    assert status == "pass"
    (status, message, _), _ = check_own_name(f, {"GLOO_SOCKET_IFNAME": "eth0"}, False, "n1")
    assert status == "warn"  # gloo takes the interface's address; the name still misleads other tools


def test_a_name_that_does_not_resolve_fails():
    (status, message, _), _ = check_own_name(FakeFacts(host="n9"), {}, False, "n9")
    assert status == "fail" and "does not resolve" in message


def test_the_rendezvous_host_must_resolve_and_the_master_port_be_free():
    f = FakeFacts(busy={29500: "in use by another process"})
    (status, message, _), local = check_rendezvous(f, "n1", 29500, True, "n1")
    assert status == "fail" and "29500" in message and "in use" in message and local is False
    (status, _, _), _ = check_rendezvous(f, "n1", 29500, False, "n2")
    assert status == "pass"  # only the master binds it
    (status, message, _), _ = check_rendezvous(f, "nowhere", 29500, False, "n2")
    assert status == "fail" and "nowhere" in message


def test_rdma_names_each_missing_piece():
    status, message, remedy = check_rdma(FakeFacts(), "infiniband", "n1")
    assert status == "fail"
    assert "no /dev/infiniband/uverbs*" in message and "libibverbs.so.1 does not load" in message
    assert "memlock is 8388608 bytes" in message and "nccl-tests#206" in message
    assert "cluster.network.rdma_resource" in remedy and "run.ulimits.memlock" in remedy
    ok = FakeFacts(uverbs=["uverbs0"], lib_error=None, devices=1, lock=-1)
    assert check_rdma(ok, "roce", "n1")[0] == "pass"
    assert check_rdma(FakeFacts(), "ethernet", "n1")[0] == "skip"
    none_listed = FakeFacts(uverbs=["uverbs0"], lib_error=None, devices=0, lock=-1)
    assert "lists no verbs device" in check_rdma(none_listed, "infiniband", "n1")[1]


def test_a_port_a_previous_job_left_in_time_wait_is_free_and_a_listener_is_not():
    # The store binds with SO_REUSEADDR; before, the probe did not, and every preflight after a first run
    # on the same node failed "in use by another process" (16 of 20 clean runs, bench_network_faults.py).
    import socket

    from envkit.harness.network.static import Facts

    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    client = socket.create_connection(("127.0.0.1", port))
    conn, _ = server.accept()
    assert Facts().bind_error(port) == "in use by another process"  # listening
    conn.close()  # the side that closes first keeps the port in TIME_WAIT
    client.close()
    server.close()
    assert Facts().bind_error(port) is None


def test_a_name_with_an_empty_label_is_not_a_host_name_and_no_traceback():
    from envkit.harness.network.static import Facts

    said = Facts().resolve("n1..cluster")
    assert isinstance(said, str) and "not a host name" in said
