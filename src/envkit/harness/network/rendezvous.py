"""The job's rendezvous, read from its environment as the job reads it, each fact with the variable it came from.

The preflight runs once per node, before torchrun: its group has one member per node. The launchers say
the same things under different names, tried in this order:

- the master: ``MASTER_ADDR`` / ``MASTER_PORT`` (torchrun, envkit's Slurm script and Indexed Job), then
  Kubeflow Trainer's ``PET_MASTER_ADDR`` / ``PET_MASTER_PORT`` (kubeflow/trainer pkg/runtime/framework/plugins/torch);
- this node's index: where the nodes are given by name (``--nodes n1,n2``, envkit's Slurm script), this host's
  place in that list, and no variable (inside ``srun --container`` Slurm sets no per-task variables, and the
  batch shell's ``SLURM_NODEID=0`` reaches every container); else ``NODE_RANK`` / ``GROUP_RANK`` (torchrun),
  ``PET_NODE_RANK``, ``JOB_COMPLETION_INDEX`` (an Indexed Job), ``SLURM_NODEID``; none: the node whose address
  MASTER_ADDR is hosts the store, the others take the next free index there, as torchrun's c10d rendezvous does;
- the nodes: ``NNODES``, ``PET_NNODES``, ``SLURM_NNODES``, else the expectation's ``run.nodes``;
- the job: ``SLURM_JOB_ID``, ``TORCHELASTIC_RUN_ID``, ``ENVKIT_JOB_ID``, else the master's address and port:
  a node that answers with another job's id is another job's.

Example:
    >>> r = read_rendezvous({"MASTER_ADDR": "n1", "MASTER_PORT": "29500", "SLURM_NODEID": "1", "SLURM_NNODES": "2",
    ...                      "SLURM_JOB_ID": "42"}, planned_nodes=None, hostname="n2")
    >>> (r["master_addr"], r["master_port"], r["node_rank"], r["nodes"], r["job"], r["sources"]["node_rank"])
    ('n1', 29500, 1, 2, '42', 'SLURM_NODEID')
    >>> named = read_rendezvous({"MASTER_ADDR": "n1", "MASTER_PORT": "29500", "SLURM_NODEID": "0"}, planned_nodes=2,
    ...                         hostname="n2.cluster", hosts=("n1", "n2"))
    >>> named["node_rank"], named["sources"]["node_rank"]
    (1, "this host's place in --nodes")
    >>> read_rendezvous({}, planned_nodes=2, hostname="h")["problem"]
    'no MASTER_ADDR (nor PET_MASTER_ADDR) in the environment: the preflight must run inside the job'
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TypedDict

MASTER_ADDR = ("MASTER_ADDR", "PET_MASTER_ADDR")
MASTER_PORT = ("MASTER_PORT", "PET_MASTER_PORT")
NODE_RANK = ("NODE_RANK", "GROUP_RANK", "PET_NODE_RANK", "JOB_COMPLETION_INDEX", "SLURM_NODEID")
NNODES = ("NNODES", "PET_NNODES", "SLURM_NNODES")
JOB_ID = ("SLURM_JOB_ID", "TORCHELASTIC_RUN_ID", "ENVKIT_JOB_ID")
# A host name or an address as the launchers pass it: no spaces, no control characters, at most 253 characters.
_HOST = re.compile(r"^[A-Za-z0-9._:%\[\]-]{1,253}$")


class Rendezvous(TypedDict):
    """where the nodes meet, who this node is, and which variable said each; ``problem``: why not, or None"""

    master_addr: str | None
    master_port: int | None
    node_rank: int | None
    nodes: int | None
    job: str
    hostname: str
    sources: dict[str, str]
    problem: str | None


def _first(env: Mapping[str, str], names: tuple[str, ...]) -> tuple[str | None, str]:
    for name in names:
        value = env.get(name)
        if value not in (None, ""):
            return value, name
    return None, ""


def _place(hosts: Sequence[str], hostname: str) -> tuple[str | None, str]:
    """This host's index in ``hosts`` (full or short name), where it appears exactly once."""
    short = hostname.split(".")[0]
    places = [i for i, h in enumerate(hosts) if h == hostname or h.split(".")[0] == short]
    return (str(places[0]), "this host's place in --nodes") if len(places) == 1 else (None, "")


def _int(text: str | None, low: int, high: int) -> int | None:
    return int(text) if text is not None and text.isdecimal() and len(text) <= 9 and low <= int(text) <= high else None


def read_rendezvous(env: Mapping[str, str], *, planned_nodes: int | None, hostname: str,
                    given: Mapping[str, str] | None = None, hosts: Sequence[str] = ()) -> Rendezvous:
    """The rendezvous ``env`` describes; ``planned_nodes``: the expectation's ``run.nodes`` (None: not planned);
    ``given``: what the command line says instead (``{"master_addr", "master_port", "nodes", "job"}``, each
    named after its flag in ``sources``); ``hosts``: the nodes by name, in order (``--nodes``)."""
    given = given or {}

    def pick(key: str, names: tuple[str, ...], flag: str) -> tuple[str | None, str]:
        return (given[key], flag) if given.get(key) not in (None, "") else _first(env, names)
    addr, addr_src = pick("master_addr", MASTER_ADDR, "--rendezvous")
    port_text, port_src = pick("master_port", MASTER_PORT, "--rendezvous")
    rank_text, rank_src = _first(env, NODE_RANK) if not hosts else _place(hosts, hostname)
    nodes_text, nodes_src = pick("nodes", NNODES, "--nodes")
    job, job_src = pick("job", JOB_ID, "--job-id")
    nodes = _int(nodes_text, 1, 65536) if nodes_text is not None else planned_nodes
    port = _int(port_text, 1, 65535)
    rank = _int(rank_text, 0, 65535)
    sources = {"master_addr": addr_src, "master_port": port_src, "node_rank": rank_src,
               "nodes": nodes_src or ("the expectation's run.nodes" if planned_nodes else ""), "job": job_src}
    problem = None
    if addr is None:
        problem = "no MASTER_ADDR (nor PET_MASTER_ADDR) in the environment: the preflight must run inside the job"
    elif not _HOST.match(addr):
        problem = f"{addr_src} is not a host name or an address: {addr[:80]!r}"
    elif port is None:
        problem = f"no usable {port_src or 'MASTER_PORT'} (a port from 1 to 65535): {str(port_text)[:20]!r}"
    elif nodes is None:
        problem = "no node count: none of NNODES, PET_NNODES, SLURM_NNODES, and no run.nodes in the expectation"
    elif rank_text is not None and (rank is None or rank >= nodes):
        problem = f"{rank_src}={rank_text[:20]!r} is not a node index from 0 to {nodes - 1}"
    if job is None:
        job = f"{addr}:{port}/{nodes}"
        sources["job"] = "the master's address and port"
    return {"master_addr": addr, "master_port": port, "node_rank": rank, "nodes": nodes, "job": str(job)[:200],
            "hostname": hostname, "sources": sources, "problem": problem}
