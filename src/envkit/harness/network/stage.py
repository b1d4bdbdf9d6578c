"""``run_network_stage``: the static checks, then the live part, as one ``network`` check within a stated bound.

The verdict comes within :data:`NETWORK_BOUND_S` seconds whatever the fault (``--network-timeout`` changes it):
the DNS lookups are bounded, the live part runs in a child killed at the deadline. A job of one node skips the
stage and says why; a node whose own checks fail still meets the others, so that they name it at once instead
of waiting for it.

Example:
    >>> node_route({"GLOO_SOCKET_IFNAME": "eth1"}, {"lo": ["127.0.0.1"], "eth1": ["10.0.0.2"]}, ["127.0.1.1"])
    ('eth1', '10.0.0.2')
    >>> node_route({}, {"lo": ["127.0.0.1"], "eth0": ["10.0.0.2"]}, ["10.0.0.2"])
    ('eth0', '10.0.0.2')
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from typing import Any, TypedDict

from ..rules.network import gloo_names
from ..report import FAIL, PASS, SKIP, WARN, Check, make_check
from .keys import ENV, FABRICS, KEYS
from .compare import Peer, Versions, spread
from .live import ALLREDUCE_BYTES, LiveResult, run_live
from .rendezvous import Rendezvous, read_rendezvous
from .static import Facts, Outcome, check_interfaces, check_own_name, check_rdma, check_rendezvous, is_loopback, nccl_matches

NETWORK_BOUND_S = 30.0
MIN_BOUND_S, MAX_BOUND_S = 10.0, 600.0


class NetworkAsk(TypedDict):
    """what the command line and the expectation ask of the stage"""

    given: dict[str, str]
    hosts: list[str]
    bound_s: float
    fabric: str
    interface: str | None
    hca: str | None


class StaticResult(TypedDict):
    name: str
    status: str
    message: str


def node_route(env: Mapping[str, str], ifaces: dict[str, list[str]], own: list[str]) -> tuple[str | None, str | None]:
    """The interface and address the other nodes reach this one at: the one named, else the host name's."""
    if env.get(ENV["gloo_ifname"]):
        name = env[ENV["gloo_ifname"]].split(",")[0]
        return name, next(iter(ifaces.get(name) or []), None)
    if env.get(ENV["nccl_ifname"]):
        for name in nccl_matches(env[ENV["nccl_ifname"]], sorted(ifaces)):
            if ifaces[name]:
                return name, ifaces[name][0]
    for address in [a for a in own if not is_loopback(a)] + own:
        for name, addrs in sorted(ifaces.items()):
            if address in addrs:
                return name, address
    return None, next(iter(own), None)


def versions() -> Versions:
    """This node's torch, CUDA runtime, NCCL and driver versions (None where there is none)."""
    import torch

    nccl = None
    try:
        if torch.cuda.is_available():
            nccl = ".".join(map(str, torch.cuda.nccl.version()))
    except Exception:  # a build without NCCL: nothing to compare
        nccl = None
    driver = None
    try:
        with open("/proc/driver/nvidia/version", encoding="utf-8", errors="replace") as f:
            words = f.read(4096).split()
        driver = next((w for w in words if w[:1].isdigit() and w.count(".") >= 1), None)
    except OSError:
        pass
    return {"torch": torch.__version__, "cuda": torch.version.cuda, "nccl": nccl, "driver": driver}


def _gpus() -> int:
    import torch

    try:
        return torch.cuda.device_count() if torch.cuda.is_available() else 0
    except Exception:
        return 0


def _is_master(r: Rendezvous, facts: Facts, ifaces: dict[str, list[str]], resolved: list[str]) -> bool:
    """Node index 0 where the launcher gave one; else whether MASTER_ADDR is one of this node's addresses."""
    if r["node_rank"] is not None:
        return r["node_rank"] == 0
    mine = {a for addrs in ifaces.values() for a in addrs}
    names = {facts.hostname(), facts.hostname().split(".")[0]}
    return r["master_addr"] in names or bool(mine & set(resolved))


def run_network_stage(ask: NetworkAsk, *, planned_nodes: int | None, env: Mapping[str, str] | None = None,
                      facts: Facts | None = None, progress: Callable[[str], None] | None = None,
                      live=run_live) -> Check:
    """The ``network`` check of this node: static checks, then the live part with every other node."""
    start = time.monotonic()
    env = _with_profile(dict(os.environ if env is None else env), ask)
    facts = facts or Facts()
    say = progress or (lambda line: None)
    r = read_rendezvous(env, planned_nodes=planned_nodes, hostname=facts.hostname(), given=ask["given"],
                        hosts=ask["hosts"])
    expected = {"nodes": r["nodes"], "fabric": ask["fabric"], "interface": env.get(ENV["nccl_ifname"]),
                "bound_s": ask["bound_s"]}
    addr, port, nodes = r["master_addr"], r["master_port"], r["nodes"]
    if nodes == 1 or (nodes is None and addr is None):
        return make_check("network", SKIP, {"rendezvous": dict(r)}, expected,
                          "a job of one node: no other node to reach, the network stage has nothing to prove "
                          "(a job of several nodes runs it from its preflight, with MASTER_ADDR and the node count)")
    if r["problem"] or addr is None or port is None or nodes is None:
        return make_check("network", FAIL, {"rendezvous": dict(r)}, expected, f"the rendezvous: {r['problem']}",
                          "run the preflight inside the job (envkit's generated files pass the rendezvous), or give "
                          "--rendezvous HOST:PORT and --nodes")
    say("network: this node's checks")
    outcomes, master, node = _static(facts, env, r, addr, port, ask["fabric"])
    failed = [(k, o) for k, o in outcomes.items() if o[0] == FAIL]
    node["verdict"] = FAIL if failed else PASS
    node["problem"] = "; ".join(o[1] for _, o in failed) or None
    node["remedy"] = next((o[2] for _, o in failed if o[2]), None)
    measured: dict[str, Any] = {"node": node, "rendezvous": dict(r), "master": master,
                                "checks": [{"name": k, "status": s, "message": m} for k, (s, m, _) in outcomes.items()]}
    if outcomes["rendezvous"][0] == FAIL:  # this node cannot meet the others: they name it as missing
        return _done(measured, expected, start, failed, None)
    say(f"network: meeting {nodes - 1} other node(s) at {addr}:{port}")
    config = {"master_addr": addr, "master_port": port, "nodes": nodes, "rank": r["node_rank"], "is_master": master,
              "master_guessed": master and r["node_rank"] is None,
              "hosts": ask["hosts"], "payload": node}
    left = ask["bound_s"] - (time.monotonic() - start)
    return _done(measured, expected, start, failed, live(config, deadline_s=max(1.0, left), nccl=node["gpus"] > 0))


def _with_profile(env: dict[str, str], ask: NetworkAsk) -> dict[str, str]:
    """The job's environment, with the profile's interface and HCA where the environment names none (the
    generated files set them; a bare ``envkit harness --network`` takes the profile's)."""
    for var, value in ((ENV["nccl_ifname"], ask["interface"]), (ENV["gloo_ifname"], gloo_names(ask["interface"])),
                       (ENV["hca"], ask["hca"])):
        if value and not env.get(var):
            env[var] = value
    return env


def _static(facts: Facts, env: dict[str, str], r: Rendezvous, addr: str, port: int, fabric: str
            ) -> tuple[dict[str, Outcome], bool, Peer]:
    """This node's own checks, whether it hosts the store, and the facts it will publish (verdict to fill in)."""
    ifaces = facts.interfaces()
    where = r["hostname"]
    rendezvous, local = check_rendezvous(facts, addr, port, r["node_rank"] == 0, where)
    own_outcome, own = check_own_name(facts, env, local, where)
    resolved = facts.resolve(addr)
    # Without a node index the master is a guess from its address: two nodes of one machine both match, so
    # the live part hosts the store where the port is free and joins it where it is not (as torchrun does).
    master = _is_master(r, facts, ifaces, resolved if isinstance(resolved, list) else [])
    outcomes = {"interface": check_interfaces(env, ifaces, where), "own_name": own_outcome,
                "rendezvous": rendezvous, "rdma": check_rdma(facts, fabric, where)}
    interface, address = node_route(env, ifaces, own)
    node: Peer = {"rank": r["node_rank"], "host": where, "address": address, "interface": interface,
                  "versions": versions(), "job": r["job"], "gpus": _gpus(), "verdict": PASS, "problem": None,
                  "remedy": None}
    return outcomes, master, node


def _done(measured: dict[str, Any], expected: dict[str, Any], start: float, failed: list, live: LiveResult | None
          ) -> Check:
    node = measured["node"]
    peers: list[Peer] = live["peers"] if live is not None else []
    if live is not None:
        node["rank"] = live["rank"]
        if live.get("hosted") is not None:
            measured["master"] = live["hosted"]  # the guess from the address, settled by who hosted the store
        measured.update(peers=peers, missing=live["missing"], bandwidth_gbps=live["bandwidth_gbps"],
                        nccl_bandwidth_gbps=live["nccl_bandwidth_gbps"], transport=live["transport"],
                        phase=live["phase"])
    measured["elapsed_s"] = round(time.monotonic() - start, 3)
    who = f"{node['host']} (index {node['rank']})" if node["rank"] is not None else node["host"]
    if failed:
        key, (_, message, remedy) = failed[0]
        more = f" (and {len(failed) - 1} more: {', '.join(k for k, _ in failed[1:])})" if len(failed) > 1 else ""
        return make_check("network", FAIL, measured, expected, f"on {who}: {message}{more}", remedy)
    assert live is not None
    if live["error"] or live["killed"] or live["phase"] != "done":
        message, remedy = explain(live, expected)
        return make_check("network", FAIL, measured, expected, f"on {who}: {message}", remedy)
    return _clean(measured, expected, live, who)


def explain(live: LiveResult, expected: dict[str, Any]) -> tuple[str, str | None]:
    """What the live part's failure means, and what to change."""
    cause, error = live["cause"], live["error"] or "the network child ended without a reason"
    bound = f"{expected['bound_s']:g} s"
    if live["killed"] and cause is None:
        where = {"store": f"connecting to the rendezvous store (the port answered ({live['probe']}) but not as torch's "
                          "TCPStore: another program holds MASTER_PORT on the master node)",
                 "gloo": "forming the gloo group (the nodes reached the rendezvous but not each other)",
                 "nccl": "forming the NCCL group",
                 "start": "starting (importing torch took the whole bound: a loaded node, or a slow file system)"}.get(
            live["phase"], f"the {live['phase']} step")
        said = f" (its last words: {live['error'][:200]})" if live["error"] else ""
        return f"no verdict within the bound ({bound}): stopped while {where}{said}", _fix(live["phase"])
    fixes = {"probe-refused": "start the preflight on every node (the master hosts the rendezvous), and open "
                              "MASTER_PORT between the nodes",
             "probe-timeout": "open MASTER_PORT (TCP) between the nodes in the firewall, and check that MASTER_ADDR is "
                              "the master node's address",
             "probe-unreachable": "give MASTER_ADDR an address the nodes route to",
             "port-in-use": "end what holds the port on the master node, or run the job with another MASTER_PORT",
             "missing": "start every node's preflight (a node that never comes holds the job), and open MASTER_PORT "
                        "between the nodes",
             "other-job": "give each job its own MASTER_PORT (envkit's Slurm script derives it from the job id)",
             "versions": "run every node from one image (one torch, CUDA and NCCL)",
             "node-checks": "fix the node named: its own check says what to change",
             "peer": "fix the node named: its own preflight says what to change",
             "gloo": f"name an interface every node has in {KEYS['interface']} ({ENV['gloo_ifname']}), and map each "
                     "node's host name to its own address",
             "timeout": f"name an interface every node has in {KEYS['interface']}",
             "store": _fix("store")}
    if cause == "node-checks":  # the node at fault published what to change
        told = [p.get("remedy") for p in live["peers"] if p.get("rank") in live["blamed"] and p.get("remedy")]
        if told:
            return error, str(told[0])[:500]
    if cause in ("gloo", "peer") and live["peers"]:
        # The store met, the group did not: what each node advertised is where to look (an interface that
        # exists but reaches no other node passes every static check).
        error += "; the nodes advertised: " + ", ".join(
            f"{p['host']} {p.get('address') or '?'}" + (f" on {p['interface']}" if p.get("interface") else "")
            for p in live["peers"])
    return error, fixes.get(cause or "", _fix(live["phase"]))


def _fix(phase: str) -> str:
    return {"store": "check which program listens on MASTER_PORT on the master node; give the job another port",
            "gloo": f"name an interface every node has in {KEYS['interface']}, and map each node's host name to "
                    "its own address (not 127.0.1.1)",
            "nccl": f"check NCCL_SOCKET_IFNAME and {KEYS['fabric']}"}.get(
        phase, "run the preflight on every node with the same MASTER_ADDR, MASTER_PORT and node count")


def _clean(measured: dict[str, Any], expected: dict[str, Any], live: LiveResult, who: str) -> Check:
    peers, fabric = live["peers"], expected["fabric"]
    transport = live["transport"]
    where = ", ".join(f"{p['host']} (index {p['rank']}) {p.get('address') or '?'}"
                      + (f" on {p['interface']}" if p.get("interface") else "") for p in peers)
    torch_versions = ", ".join(spread(peers, "torch"))
    text = (f"{len(peers)} nodes met at the rendezvous and reduced {ALLREDUCE_BYTES >> 20} MiB over gloo at "
            f"{live['bandwidth_gbps'] or 0:g} GB/s in {measured['elapsed_s']:g} s: {where}; torch {torch_versions} on "
            "every node")
    if live["nccl_bandwidth_gbps"] is not None:
        over = (transport["between"] if transport is not None else None) or "an unnamed transport"
        text += f"; NCCL {live['nccl_bandwidth_gbps']:g} GB/s over {over}"
    if transport is not None and fabric in ("infiniband", "roce") and transport["between"] in ("Socket", None):
        return make_check("network", FAIL, measured, expected,
                          f"on {who}: {KEYS['fabric']} is {fabric}, but NCCL connected the nodes over "
                          f"{transport['between'] or 'no network transport it named'} (its INFO lines: NET/Socket): "
                          "RDMA is not usable in this container, 4-40x slower (dstackai/dstack#2712)",
                          f"give the container the RDMA devices and libraries ({KEYS['rdma_resource']}, "
                          f"{KEYS['fabric']}), and {KEYS['hca']} where the HCA is not found")
    drivers = spread(peers, "driver")
    if len(drivers) > 1:
        spread_text = "; ".join(f"{v} on {', '.join(n)}" for v, n in sorted(drivers.items()))
        return make_check("network", WARN, measured, expected, f"{text}; the drivers differ ({spread_text})",
                          "run every node with one driver where you can: a newer CUDA in the image needs it on all")
    if fabric not in FABRICS:
        return make_check("network", WARN, measured, expected, f"{text}; unknown fabric {fabric!r}", None)
    return make_check("network", PASS, measured, expected, text, None)
