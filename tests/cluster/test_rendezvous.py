"""No node's torchrun decides by host matching whether it hosts the rendezvous store.

torchrun's c10d backend decides it by matching the endpoint against the machine's own names and
addresses (``_matches_machine_hostname``), unless ``--rdzv-conf=is_host=...`` says; the static
backend decides it by node rank (rank 0 hosts). Both Kubernetes targets run the static backend
with each pod's rank, so the store's host is pod index 0, whatever its addresses. Each node's
command is parsed here by torchrun's own parser, after Kubernetes' ``$(VAR)`` expansion with
that node's completion index (k8s) or the PET_* variables Trainer's torch plugin sets (trainjob).
"""

from __future__ import annotations

import inspect

import pytest
from torch.distributed import run as torchrun
from torch.distributed.elastic.rendezvous import c10d_rendezvous_backend, static_tcp_rendezvous

from tests.cluster.kubeutil import expand, manifests, rendered

CASES = ["cluster-2node.yaml", "<tricky>"]


def _launch(argv: list[str], monkeypatch) -> tuple[str, dict]:
    """torchrun's own reading of ``argv``: (rendezvous backend, rendezvous config)."""
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # config_from_args would set it in os.environ
    config, _cmd, _args = torchrun.config_from_args(torchrun.parse_args(argv))
    return config.rdzv_backend, config.rdzv_configs


def test_the_static_backend_hosts_the_store_on_rank_0_without_host_matching():
    """What the targets rely on, in the installed torch: static decides by rank; only c10d matches hosts."""
    assert "is_master = self.rank == 0" in inspect.getsource(static_tcp_rendezvous.StaticTCPRendezvous)
    assert "_matches_machine_hostname" not in inspect.getsource(static_tcp_rendezvous)
    assert "_matches_machine_hostname(host)" in inspect.getsource(c10d_rendezvous_backend._create_tcp_store)
    assert torchrun.parse_args(["t.py"]).rdzv_backend == "static"  # the default, with no PET_RDZV_BACKEND


@pytest.mark.parametrize("case", CASES)
def test_k8s_each_pod_runs_static_rendezvous_with_its_index_as_rank(case, tmp_path, monkeypatch):
    job = manifests(rendered(case, tmp_path, ("k8s",))["k8s.yaml"])["Job"]
    (train,) = job["spec"]["template"]["spec"]["containers"]
    nodes = job["spec"]["completions"]
    hosts = []
    for index in range(nodes):
        argv = [expand(w, {"JOB_COMPLETION_INDEX": str(index)}) for w in train["command"]]
        assert argv[0] == "torchrun"
        backend, conf = _launch(argv[1:], monkeypatch)
        assert backend == "static" and conf["rank"] == index
        hosts.append(conf["rank"] == 0)
    assert hosts == [True] + [False] * (nodes - 1)  # exactly one host: pod index 0


@pytest.mark.parametrize("case", CASES)
def test_trainjob_each_node_runs_static_rendezvous_with_its_pet_rank(case, tmp_path, monkeypatch):
    doc = manifests(rendered(case, tmp_path, ("trainjob",))["trainjob.yaml"])["TrainJob"]
    trainer = doc["spec"]["trainer"]
    command = [expand(w, {}) for w in trainer["command"]]
    assert command[:2] == ["/bin/sh", "-c"] and command[2].endswith('exec torchrun "$@"')
    assert not any(e["name"].startswith("PET_RDZV") for e in trainer.get("env", []))
    name, nodes = doc["metadata"]["name"], trainer["numNodes"]
    for rank in range(nodes):
        # Trainer's torch plugin (kubeflow/trainer@v2.3.0:pkg/runtime/framework/plugins/torch/torch.go:145-166).
        for key, value in {"PET_NNODES": str(nodes), "PET_NPROC_PER_NODE": str(trainer["numProcPerNode"]),
                           "PET_NODE_RANK": str(rank), "PET_MASTER_ADDR": f"{name}-node-0-0.{name}",
                           "PET_MASTER_PORT": "29500"}.items():
            monkeypatch.setenv(key, value)
        backend, conf = _launch(command[4:], monkeypatch)  # "$@": the words after $0 (envkit-preflight)
        assert backend == "static" and conf["rank"] == rank
