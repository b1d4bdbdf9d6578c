"""The live child's handling of what peers send, with the store behind a fake (no process, no socket)."""

from __future__ import annotations

import json

import pytest

from envkit.harness.network.live import PREFIX, Failed, _clean_peer, _Node


class FakeStore:
    def __init__(self, keys: dict[str, bytes]):
        self.keys = keys

    def check(self, keys):
        return all(k in self.keys for k in keys)

    def get(self, key):
        return self.keys[key]

    def set(self, key, value):
        self.keys[key] = value.encode() if isinstance(value, str) else value


def node(store: FakeStore, rank=None) -> _Node:
    n = _Node({"master_addr": "n1", "master_port": 29500, "nodes": 2, "is_master": False, "rank": rank,
               "payload": {"host": "n2", "job": "7"}, "deadline_s": 30}, lambda *a, **k: None, deadline=1e12)
    n.store, n.rank = store, rank
    return n


def test_a_peers_text_is_cut_and_escaped_and_its_numbers_checked():
    # A newline in a host name would forge srun's "error: n1: task 0: Exited" line the sbatch greps.
    peer = _clean_peer({"host": "n1\nerror: n1: task 0: Exited with exit code 1", "problem": "p" * 16000,
                        "rank": 5, "gpus": "many", "versions": {"torch": {"deep": ["x"]}, "cuda": None},
                        "verdict": None}, rank=1)
    assert "\n" not in peer["host"] and "\\n" in peer["host"]
    assert len(peer["problem"]) < 600 and "(16000 characters)" in peer["problem"]
    assert peer["rank"] == 1 and peer["gpus"] == 0 and peer["verdict"] == "pass"
    assert peer["versions"] == {"torch": "{'deep': ['x']}"}


def test_facts_nested_too_deep_are_garbage_named_by_index():
    store = FakeStore({f"{PREFIX}node/1": ("[" * 100000 + "]" * 100000).encode()})
    with pytest.raises(Failed) as ei:
        node(store)._peers([1])
    assert ei.value.cause == "garbage" and "node index 1" in str(ei.value)


def test_a_node_that_could_not_take_an_index_stops_the_others_at_once():
    # Two nodes claiming one index: the loser has no index to file its reason under. Before, it wrote nothing and
    # the others waited out the bound, then blamed a node that "never arrived".
    store = FakeStore({})
    loser = node(store)
    loser._tell("another node already took index 0")
    with pytest.raises(Failed) as ei:
        node(store, rank=0)._peer_failure()
    assert ei.value.cause == "peer" and "another node already took index 0" in str(ei.value)
    assert json.dumps(str(ei.value))  # printable


def test_a_temporary_folder_that_cannot_be_made_is_a_finding(monkeypatch):
    import tempfile

    from envkit.harness.network import live

    def full(*a, **k):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(tempfile, "mkdtemp", full)
    out = live.run_live({"master_addr": "n1", "master_port": 29500, "nodes": 2}, deadline_s=5, nccl=False)
    assert out["cause"] == "error" and "No space left on device" in out["error"]


def test_a_long_failure_still_reaches_the_parent_as_a_failure():
    # 70 nodes failing their own checks make a message over the event line's bound. Before, the child cut the
    # serialised line, the parent dropped it as no JSON, and the stage read the child's end as a pass.
    from envkit.harness.network.live import _apply, _Events, _new_result, fail_event
    import os

    rfd, wfd = os.pipe()
    _Events(wfd)("fail", **fail_event(Failed("node-checks", "n7 (index 7) failed its own checks: " + "x" * 2_000_000,
                                               list(range(70)))))
    os.close(wfd)
    out = _new_result()
    _apply(out, os.read(rfd, 1 << 21).rstrip(b"\n"))
    os.close(rfd)
    assert out["cause"] == "node-checks" and out["error"].startswith("n7 (index 7) failed")
