"""The transport classifier names the transport of every recorded NCCL log (nccl_logs/SOURCES.md cites each)."""

from __future__ import annotations

from pathlib import Path

import pytest

from envkit.harness.network.nccllog import MAX_LOG_BYTES, classify_lines, read_log

LOGS = Path(__file__).parent / "nccl_logs"
# (between nodes, within a node, GPUDirect RDMA): the SOURCES.md table's columns, read from each thread.
EXPECTED = {
    "hang-roce-mixed-gdrdma_NVIDIA-nccl_429.log": ("RoCE", ["P2P"], True),
    "ib-failing-bootstrap_Lightning-AI-pytorch-lightning_14986.log": (None, [], False),
    "ib-gdrdma-mixed-p2pcumem_NVIDIA-nccl_1189.log": ("IB", ["P2P"], True),
    "ib-k8s-mixed-p2pcumem_Azure-aks-rdma-infiniband_30.log": ("IB", ["P2P"], False),
    "ofi-efa-libfabric_NVIDIA-nccl_1597.log": (None, [], False),
    "ofi-hang-p2p_aws-aws-ofi-nccl_24.log": ("OFI", ["P2P"], False),
    "roce-failing_NVIDIA-nccl-tests_185.log": (None, [], False),
    "roce-ibext-merged_NVIDIA-nccl-tests_373.log": ("RoCE", [], False),
    "roce-mixed-gdrdma_NVIDIA-nccl-tests_133.log": ("RoCE", ["P2P"], True),
    "shm-single-node_NVIDIA-nccl-tests_307.log": (None, ["SHM"], False),
    "shm-socket-timeout_NVIDIA-nccl_1609.log": (None, ["SHM"], False),
    "socket-loopback-noibdevice_NVIDIA-nccl_300.log": (None, [], False),
    "socket-mixed-p2p-failing_NVIDIA-nccl-tests_188.log": ("Socket", ["P2P"], False),
    "socket-mixed-shm-failing_NVIDIA-nccl-tests_166.log": ("Socket", ["SHM"], False),
    "socket-mixed-shm-rankprefix_NVIDIA-nccl_690.log": ("Socket", ["SHM"], False),
    "socket-noibdevice-intranode_NVIDIA-nccl_2057.log": (None, [], False),
    "socket-noibdevice-mixed-p2pipc_NVIDIA-nccl_952.log": ("Socket", ["P2P"], False),
}


def test_every_fixture_has_an_expectation_and_a_source():
    assert sorted(p.name for p in LOGS.glob("*.log")) == sorted(EXPECTED)
    sources = (LOGS / "SOURCES.md").read_text()
    assert all(f"`{name}`" in sources for name in EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_classifier_names_each_recorded_transport(name):
    t = classify_lines(read_log(str(LOGS / name)))
    assert (t["between"], t["within"], t["gdr"]) == EXPECTED[name]


def test_the_link_layer_tells_roce_from_infiniband():
    ib = classify_lines(["h:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.0.1<0>",
                         "h:1:2 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0"])
    roce = classify_lines(["h:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE ; OOB eth0:10.0.0.1<0>",
                           "h:1:2 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0"])
    assert (ib["between"], roce["between"]) == ("IB", "RoCE")


def test_a_socket_connection_names_the_fallback_even_beside_ib():
    t = classify_lines(["h:1:2 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0",
                        "h:1:2 [0] NCCL INFO Channel 01/0 : 1[0] -> 0[0] [receive] via NET/Socket/0"])
    assert t["between"] == "Socket"


def test_a_log_of_megabytes_is_read_up_to_its_bound(tmp_path):
    log = tmp_path / "nccl.log"
    line = b"h:1:2 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/Socket/0\n"
    with open(log, "wb") as f:
        f.write(b"\xff\xfe garbage \x00" * 200_000)  # not UTF-8, no newline for megabytes
        f.write(line * (MAX_LOG_BYTES // len(line) + 10_000))
    lines = read_log(str(log))
    assert sum(len(x) + 1 for x in lines) <= MAX_LOG_BYTES + 1
    assert classify_lines(lines)["between"] == "Socket"
    assert read_log(str(tmp_path / "absent.log")) == []
