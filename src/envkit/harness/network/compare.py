"""What the nodes' published facts must agree on: one job, one torch, one CUDA, one NCCL, no node already failed.

torch's collectives assume every rank runs the same build: a different NCCL or torch on one node fails at
the first collective or, worse, hangs there (NCCL's own rule: "NCCL version mismatch" in its bootstrap,
src/init.cc). The driver may differ between nodes (CUDA's compatibility is per node), so it only warns.

Example:
    >>> a = {"rank": 0, "host": "n1", "job": "7", "verdict": "pass", "problem": None,
    ...      "versions": {"torch": "2.13.0", "cuda": None, "nccl": None, "driver": None}}
    >>> b = dict(a, rank=1, host="n2", versions=dict(a["versions"], torch="2.12.1"))
    >>> compare_peers([a, b], "7")[0]
    'versions'
    >>> compare_peers([a, dict(a, rank=1, host="n2", job="8")], "7")[1]
    'n2 (index 1) is in job 8, this node in job 7: two jobs share MASTER_ADDR:MASTER_PORT; give each job its own port'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict


class Versions(TypedDict):
    """what each node runs: these must agree across the job (the driver only warns)"""

    torch: str | None
    cuda: str | None
    nccl: str | None
    driver: str | None


class Peer(TypedDict):
    """one node's facts as it publishes them to the others (its own checks' verdict included)"""

    rank: int | None
    host: str
    address: str | None
    interface: str | None
    versions: Versions
    job: str
    gpus: int
    verdict: str
    problem: str | None
    remedy: str | None


MUST_AGREE = ("torch", "cuda", "nccl")


def who(peer: Peer) -> str:
    return f"{peer.get('host')} (index {peer.get('rank')})"


def spread(peers: Sequence[Peer], field: str) -> dict[str, list[str]]:
    """``{version: [nodes]}`` for one field of the peers' versions (nodes that did not say are left out)."""
    out: dict[str, list[str]] = {}
    for p in peers:
        value = p["versions"].get(field)
        if value is not None:
            out.setdefault(str(value), []).append(who(p))
    return out


def compare_peers(peers: Sequence[Peer], job: str) -> tuple[str, str, list[int]] | None:
    """The first disagreement among ``peers`` as ``(cause, message, ranks at fault)``, or None."""
    other = [p for p in peers if str(p.get("job")) != job]
    if other:
        p = other[0]
        return ("other-job", f"{who(p)} is in job {p.get('job')}, this node in job {job}: two jobs share "
                             "MASTER_ADDR:MASTER_PORT; give each job its own port", [int(q["rank"] or 0) for q in other])
    failed = [p for p in peers if p.get("verdict") == "fail"]
    if failed:
        text = "; ".join(f"{who(p)} failed its own network checks: {p.get('problem')}" for p in failed)
        return "node-checks", text, [int(p["rank"] or 0) for p in failed]
    for field in MUST_AGREE:
        seen = spread(peers, field)
        if len(seen) > 1:
            text = "; ".join(f"{v} on {', '.join(n)}" for v, n in sorted(seen.items()))
            return ("versions", f"the nodes run different {field} versions ({text}): every node must run the same "
                                "image", [])
    return None
