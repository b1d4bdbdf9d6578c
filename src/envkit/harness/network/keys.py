"""The profile keys and variables the network stage's remedies name: one table, so every message agrees.

Example:
    >>> KEYS["interface"]
    'cluster.network.interface'
"""

from __future__ import annotations

from ..rules.network import FABRICS, RDMA_FABRICS  # noqa: F401 (the stage's words, from the one rule)

KEYS = {
    "interface": "cluster.network.interface",
    "fabric": "cluster.network.fabric",
    "hca": "cluster.network.hca",
    "rdma_resource": "cluster.network.rdma_resource",
    "memlock": "run.ulimits.memlock",
}
# The variables the generated files set from those keys (NCCL's and torch's own names).
ENV = {"nccl_ifname": "NCCL_SOCKET_IFNAME", "gloo_ifname": "GLOO_SOCKET_IFNAME", "hca": "NCCL_IB_HCA"}
