"""Which transport NCCL chose, read from its own ``NCCL_DEBUG=INFO`` lines (a bounded read: a log can be megabytes).

Only lines holding `` via `` name a connection (NVIDIA/nccl v2.30.7-1): ``via P2P/...`` (src/transport/p2p.cc:416-437)
and ``via SHM/...`` (src/transport/shm.cc:116) inside a node, ``[send|receive] via NET/<plugin>/<nic>[/GDRDMA]``
(src/transport/net.cc:324, 328, 377) and ``via COLLNET/...`` (src/transport/coll_net.cc:187, 214) across nodes.
``<plugin>`` is the net plugin's name: ``IB`` (src/transport/net_ib/common.cc:193-194), ``Socket``
(src/transport/net_socket.cc:803-804) or an external plugin's (``IBext_v8``, ``AWS Libfabric``). Whether IB runs
over InfiniBand or RoCE is the link layer of ``NET/IB : Using [0]mlx5_0:1/IB`` (or ``/RoCE``). Lines that only
look like connections (``Ring 00 : 0 -> 1 -> 0``, ``Channel 00/02 :    0   1``) and ``Using network IB`` (printed
even when every peer is on one node) decide nothing. Launcher prefixes (``[1,26]<stdout>:``) are ignored.

Example:
    >>> classify_lines([
    ...     "n1:7:9 [0] NCCL INFO NET/IB : Using [0]mlx5_6:1/RoCE ; OOB eth0:10.0.0.1<0>",
    ...     "n1:7:9 [1] NCCL INFO Channel 01 : 1[1] -> 0[0] via P2P/IPC/read",
    ...     "n1:7:9 [0] NCCL INFO Channel 00/0 : 8[0] -> 0[0] [receive] via NET/IB/0/GDRDMA"])["between"]
    'RoCE'
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import TypedDict

MAX_LOG_BYTES = 4 * 1024 * 1024  # read of an NCCL_DEBUG_FILE: the tail beyond it is what matters less
MAX_LINES = 200_000
_NET = re.compile(r" via NET/(?P<name>.+?)/\d+(?P<rest>\S*)")
_LINK = re.compile(r"NET/IB\w* ?: Using (?P<devs>.*?)(?: ;|$)")
_LINK_LAYER = re.compile(r":\d+/(IB|RoCE)\b")


class Transport(TypedDict):
    """what NCCL's INFO lines say it used: ``between`` nodes (None: no such line), ``within`` a node, GPUDirect RDMA"""

    between: str | None
    within: list[str]
    gdr: bool
    link_layers: list[str]
    network: str | None
    connections: int


def _family(name: str) -> str:
    """An NCCL net plugin's name as the transport family it is: IB, Socket, OFI, or the name itself.

    >>> _family("IBext_v8"), _family("Socket"), _family("AWS Libfabric"), _family("FastSocket")
    ('IB', 'Socket', 'OFI', 'FastSocket')
    """
    if name.startswith("IB"):
        return "IB"
    if name == "Socket":
        return "Socket"
    if "libfabric" in name.lower() or "ofi" in name.lower():
        return "OFI"
    return name


def classify_lines(lines: Iterable[str]) -> Transport:
    """The transport the connection lines among ``lines`` name (at most :data:`MAX_LINES` read)."""
    families: set[str] = set()
    within: set[str] = set()
    links: set[str] = set()
    gdr, network, count = False, None, 0
    for i, line in enumerate(lines):
        if i >= MAX_LINES:
            break
        if "Using network " in line and "NCCL INFO" in line:
            network = line.split("Using network ", 1)[1].strip()[:40] or network
        m = _LINK.search(line)
        if m and "NCCL INFO" in line:
            links.update(_LINK_LAYER.findall(m.group("devs")))
        if " via " not in line or "NCCL INFO" not in line:
            continue
        count += 1
        net = _NET.search(line)
        if net:
            families.add(_family(net.group("name")))
            gdr = gdr or "/GDRDMA" in net.group("rest")
        elif " via COLLNET/" in line:
            families.add("CollNet")
        elif " via P2P/" in line:
            within.add("P2P")
        elif " via SHM/" in line or " via direct shared memory" in line:
            within.add("SHM")
    between = None
    if families:
        # IB over an Ethernet link layer is RoCE; the socket fallback wins the name when both show up.
        named = sorted(families, key=lambda f: (f != "Socket", f))[0]
        between = "RoCE" if named == "IB" and links == {"RoCE"} else named
    return {"between": between, "within": sorted(within), "gdr": gdr, "link_layers": sorted(links),
            "network": network, "connections": count}


def read_log(path: str, limit: int = MAX_LOG_BYTES) -> list[str]:
    """The last ``limit`` bytes of an NCCL debug file as lines, decoded with U+FFFD for what is not UTF-8."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - limit))
            data = f.read(limit)
    except OSError:
        return []
    return data.decode("utf-8", "replace").splitlines()
