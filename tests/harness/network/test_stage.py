"""The stage's verdicts from made-up facts and a made-up live part (the seams: ``facts=`` and ``live=``)."""

from __future__ import annotations

from envkit.harness.network.live import _new_result
from envkit.harness.network.stage import run_network_stage
from tests.harness.network.fakes import FakeFacts

ENV = {"MASTER_ADDR": "n1", "MASTER_PORT": "29500", "NNODES": "2", "NODE_RANK": "0", "SLURM_JOB_ID": "7"}
V = {"torch": "2.13.0", "cuda": None, "nccl": None, "driver": None}


def ask(**over):
    return {"given": {}, "hosts": [], "bound_s": 30.0, "fabric": "ethernet", "interface": None, "hca": None, **over}


def peer(rank, host, **over):
    return {"rank": rank, "host": host, "address": f"198.18.0.{rank + 1}", "interface": "eth0", "versions": dict(V),
            "job": "7", "gpus": 0, "verdict": "pass", "problem": None, "remedy": None, **over}


class Live:
    """Records what the stage asked and answers with ``result``."""

    def __init__(self, **result):
        self.result = {**_new_result(), "phase": "done", "rank": 0, **result}
        self.calls = []

    def __call__(self, config, *, deadline_s, nccl):
        self.calls.append((config, deadline_s, nccl))
        return self.result


def stage(env=ENV, facts=None, live=None, **over):
    return run_network_stage(ask(**over), planned_nodes=None, env=env, facts=facts or FakeFacts(), live=live or Live())


def test_one_node_skips_and_says_why():
    c = stage(env={"NNODES": "1", "MASTER_ADDR": "n1", "MASTER_PORT": "1"})
    assert c["status"] == "skip" and "one node" in c["message"]
    assert stage(env={})["status"] == "skip"


def test_a_rendezvous_it_cannot_read_fails_with_what_to_pass():
    c = stage(env={"MASTER_ADDR": "n1", "MASTER_PORT": "29500"})
    assert c["status"] == "fail" and "no node count" in c["message"] and "--nodes" in c["remedy"]


def test_a_clean_job_passes_with_every_node_its_address_and_the_bandwidth():
    live = Live(peers=[peer(0, "n1"), peer(1, "n2")], bandwidth_gbps=1.5)
    c = stage(live=live)
    assert c["status"] == "pass", c["message"]
    assert "2 nodes met" in c["message"] and "n2 (index 1) 198.18.0.2 on eth0" in c["message"] and "1.5 GB/s" in c["message"]
    m = c["measured"]
    assert m["node"]["host"] == "n1" and m["node"]["address"] == "198.18.0.1" and m["node"]["interface"] == "eth0"
    assert m["peers"][1]["host"] == "n2" and m["bandwidth_gbps"] == 1.5 and m["master"] is True
    config, deadline, nccl = live.calls[0]
    assert config["is_master"] and config["nodes"] == 2 and 0 < deadline <= 30 and nccl is False


def test_a_node_whose_own_checks_fail_still_meets_the_others_and_fails_naming_its_cause():
    live = Live(error="x", cause="node-checks")
    facts = FakeFacts(names={"n1": ["127.0.1.1"], "n2": ["198.18.0.2"]})
    c = stage(env={**ENV, "MASTER_ADDR": "n2", "NODE_RANK": "1"}, facts=facts, live=live)
    assert c["status"] == "fail" and "n1's name n1 resolves to loopback" in c["message"] and "/etc/hosts" in c["remedy"]
    payload = live.calls[0][0]["payload"]
    assert payload["verdict"] == "fail" and "loopback" in payload["problem"] and "/etc/hosts" in payload["remedy"]


def test_the_master_whose_port_is_taken_fails_at_once_without_the_live_part():
    live = Live()
    c = stage(facts=FakeFacts(busy={29500: "in use by another process"}), live=live)
    assert c["status"] == "fail" and "29500" in c["message"] and "in use" in c["message"] and not live.calls


def test_the_master_is_found_by_its_address_where_no_index_is_given():
    live = Live(peers=[peer(0, "n1"), peer(1, "n2")])
    env = {k: v for k, v in ENV.items() if k != "NODE_RANK"}
    stage(env=env, live=live)
    assert live.calls[0][0]["is_master"] is True and live.calls[0][0]["rank"] is None
    stage(env=env, facts=FakeFacts(host="n2", ifaces={"eth0": ["198.18.0.2"]}), live=live)
    assert live.calls[1][0]["is_master"] is False


def test_each_live_cause_has_its_remedy():
    missing = Live(error="1 of 2 nodes never arrived at the rendezvous (node(s) n2; ...)", cause="missing", phase="arrive")
    c = stage(live=missing)
    assert c["status"] == "fail" and "never arrived" in c["message"] and "MASTER_PORT" in c["remedy"]
    blamed = Live(error="n2 (index 1) failed its own network checks: ...", cause="node-checks", blamed=[1],
                  peers=[peer(0, "n1"), peer(1, "n2", verdict="fail", remedy="name an interface every node has")])
    assert stage(live=blamed)["remedy"] == "name an interface every node has"
    killed = Live(killed=True, phase="store", probe="connected")
    c = stage(live=killed)
    assert "no verdict within the bound (30 s)" in c["message"] and "another program holds MASTER_PORT" in c["message"]


def test_an_rdma_fabric_on_which_nccl_chose_sockets_fails():
    transport = {"between": "Socket", "within": [], "gdr": False, "link_layers": [], "network": "Socket",
                 "connections": 4}
    live = Live(peers=[peer(0, "n1"), peer(1, "n2")], nccl_bandwidth_gbps=3.0, transport=transport)
    facts = FakeFacts(uverbs=["uverbs0"], lib_error=None, devices=1, lock=-1)
    c = stage(live=live, facts=facts, fabric="infiniband")
    assert c["status"] == "fail" and "NCCL connected the nodes over Socket" in c["message"]
    assert "cluster.network.rdma_resource" in c["remedy"]
    assert stage(live=live, facts=facts)["status"] == "pass"  # Ethernet: sockets are the plan


def test_different_drivers_warn_and_different_torch_is_the_live_parts_failure():
    live = Live(peers=[peer(0, "n1", versions={**V, "driver": "550.54"}), peer(1, "n2", versions={**V, "driver": "560.1"})])
    c = stage(live=live)
    assert c["status"] == "warn" and "550.54 on n1 (index 0)" in c["message"]


def test_the_profile_names_the_interface_where_the_environment_does_not():
    live = Live(peers=[peer(0, "n1"), peer(1, "n2")])
    c = stage(live=live, interface="eth1")
    assert c["status"] == "fail" and "GLOO_SOCKET_IFNAME=eth1" in c["message"]
    assert stage(live=live, interface="eth")["status"] == "fail"  # gloo reads whole names: 'eth' is none
    assert stage(live=live, interface="^lo")["status"] == "pass"


def test_a_gloo_group_that_does_not_form_names_what_each_node_advertised():
    # An interface that exists but reaches no other node passes every static check (the namespaced Slurm's
    # eth1): the failure shows each node's address and interface, so the odd one stands out.
    live = Live(error="Gloo connectFullMesh failed ... SO_ERROR: No route to host", cause="gloo", phase="done",
                peers=[peer(0, "n1", address="198.19.0.11", interface="eth0"),
                       peer(1, "n2", address="198.18.0.12", interface="eth1")])
    c = stage(live=live)
    assert c["status"] == "fail" and "n1 198.19.0.11 on eth0, n2 198.18.0.12 on eth1" in c["message"]
    assert "cluster.network.interface" in c["remedy"]
