"""The rendezvous, read from each launcher's variables (or the command line), with where each fact came from."""

from __future__ import annotations

import pytest

from envkit.harness.network.rendezvous import read_rendezvous


@pytest.mark.parametrize("env, source", [
    ({"MASTER_ADDR": "n1", "MASTER_PORT": "29500", "NODE_RANK": "1", "NNODES": "2"}, "NODE_RANK"),
    ({"PET_MASTER_ADDR": "n1", "PET_MASTER_PORT": "29500", "PET_NODE_RANK": "1", "PET_NNODES": "2"}, "PET_NODE_RANK"),
    ({"MASTER_ADDR": "n1", "MASTER_PORT": "29500", "JOB_COMPLETION_INDEX": "1", "NNODES": "2"}, "JOB_COMPLETION_INDEX"),
    ({"MASTER_ADDR": "n1", "MASTER_PORT": "29500", "SLURM_NODEID": "1", "SLURM_NNODES": "2"}, "SLURM_NODEID"),
])
def test_every_launchers_spelling(env, source):
    r = read_rendezvous(env, planned_nodes=None, hostname="n2")
    assert (r["master_addr"], r["master_port"], r["node_rank"], r["nodes"], r["problem"]) == ("n1", 29500, 1, 2, None)
    assert r["sources"]["node_rank"] == source


def test_the_command_line_wins_and_no_index_is_no_problem():
    r = read_rendezvous({"MASTER_ADDR": "x", "MASTER_PORT": "1", "SLURM_JOB_ID": "7"}, planned_nodes=None,
                        hostname="n2", given={"master_addr": "n1", "master_port": "29500", "nodes": "2", "job": "42"})
    assert (r["master_addr"], r["master_port"], r["nodes"], r["job"], r["node_rank"], r["problem"]) == \
        ("n1", 29500, 2, "42", None, None)
    assert r["sources"]["master_addr"] == "--rendezvous" and r["sources"]["job"] == "--job-id"


@pytest.mark.parametrize("env, words", [
    ({}, "no MASTER_ADDR"),
    ({"MASTER_ADDR": "a b", "MASTER_PORT": "1", "NNODES": "2"}, "not a host name"),
    ({"MASTER_ADDR": "n1", "MASTER_PORT": "99999", "NNODES": "2"}, "no usable MASTER_PORT"),
    ({"MASTER_ADDR": "n1", "MASTER_PORT": "29500"}, "no node count"),
    ({"MASTER_ADDR": "n1", "MASTER_PORT": "29500", "NNODES": "2", "NODE_RANK": "2"}, "not a node index from 0 to 1"),
])
def test_what_is_missing_or_wrong_is_said(env, words):
    assert words in read_rendezvous(env, planned_nodes=None, hostname="h")["problem"]


def test_the_expectation_gives_the_count_and_the_job_defaults_to_the_endpoint():
    r = read_rendezvous({"MASTER_ADDR": "n1", "MASTER_PORT": "29500"}, planned_nodes=3, hostname="h")
    assert r["nodes"] == 3 and r["job"] == "n1:29500/3" and r["problem"] is None


def test_nodes_by_name_give_the_index_and_outweigh_a_leaked_slurm_nodeid():
    # Inside srun --container every task sees the batch shell's SLURM_NODEID=0: before, every node of the
    # Slurm test cluster took index 0 and the second failed "port in use on this node (the master)".
    env = {"MASTER_ADDR": "n1", "MASTER_PORT": "29500", "SLURM_NODEID": "0", "SLURM_NNODES": "2"}
    for hostname, rank in (("n1", 0), ("n2", 1), ("n2.cluster.local", 1), ("vm", None)):
        r = read_rendezvous(env, planned_nodes=None, hostname=hostname, hosts=["n1", "n2"])
        assert r["node_rank"] == rank and r["problem"] is None, (hostname, r)
    # Without names the environment's index stands.
    assert read_rendezvous(env, planned_nodes=None, hostname="n2")["node_rank"] == 0


def test_digits_python_would_not_read_as_a_number_are_no_index():
    # "²".isdigit() is True and int("²") raises; a 5000-digit string exceeds int()'s limit: both were tracebacks.
    for text in ("²", "9" * 5000):
        r = read_rendezvous({"MASTER_ADDR": "n1", "MASTER_PORT": "29500", "NODE_RANK": text, "NNODES": "2"},
                            planned_nodes=None, hostname="n1")
        assert r["node_rank"] is None and "is not a node index" in r["problem"]
