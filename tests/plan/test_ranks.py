"""A node is sized for every training process torchrun starts on it (cluster.procs_per_node, else one per GPU)."""

from __future__ import annotations

import re

import yaml

from envkit.harness.rules.sizing import GIB, MIB, nccl_shm_per_rank
from envkit.profile import load_profile_bytes
from envkit.units import parse_size
from tests.conftest import call_envkit, plan_of, run_envkit

NODE8 = """envkit: 1
name: node8
image: {base: ubuntu:22.04, tag: registry.example.com/ml/node8:1, torch: {version: "2.5.1", variant: cu124}}
run: {cpus: 16, memory: 64g, gpus: all}
loader: {num_workers: auto, batch_size: 64, sample_shape: [3, 224, 224]}
cluster: {nodes: 2, gpus_per_node: 8, entrypoint: [train.py]}
"""


def _plan(text: str, tmp_path):
    return plan_of(load_profile_bytes(text.encode(), "p.yaml", tmp_path).profile)


def test_eight_gpus_on_sixteen_cpus_get_one_worker_each_and_eight_loaders_of_shm(tmp_path):
    plan = _plan(NODE8, tmp_path)
    lp = plan.loader
    assert (lp.ranks, lp.workers, lp.cpus) == (8, 1, 16)
    assert lp.shm_need >= 8 * lp.rank_need + 8 * nccl_shm_per_rank(8)
    assert plan.settings.shm_size is not None and plan.settings.shm_size >= lp.shm_need
    assert plan.cluster is not None and plan.cluster.nproc_per_node == 8
    assert lp.memory_need == lp.shm_need + 8 * 2 * 512 * MIB
    (tmp_path / "envkit.yaml").write_text(NODE8)
    res = run_envkit("generate", "-o", "out", "--target", "k8s", "--target", "trainjob", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    for name in ("k8s.yaml", "trainjob.yaml"):
        text = (tmp_path / "out" / name).read_text()
        limits = [parse_size(v.lower().replace("i", "")) for v in re.findall(r'sizeLimit: "(\w+)"', text)]
        assert limits and all(v >= lp.shm_need for v in limits), (name, limits)
        assert ("--nproc-per-node=8" if name == "k8s.yaml" else "numProcPerNode: 8") in text
    assert "loader.num_workers" not in res.stderr and "note: envkit.yaml: run.shm_size: not set" in res.stderr


def test_an_explicit_num_workers_that_oversubscribes_the_node_names_the_ranks_and_the_processes(tmp_path):
    plan = _plan(NODE8.replace("num_workers: auto", "num_workers: 8"), tmp_path)
    (w,) = [w for w in plan.warnings if w.startswith("loader.num_workers:")]
    assert "each of the 8 training processes" in w and "72 processes on the 16 CPUs" in w
    assert "num_workers: auto (1 per training process)" in w
    fits = _plan(NODE8.replace("num_workers: auto", "num_workers: 1"), tmp_path)
    assert not any(w.startswith("loader.num_workers:") for w in fits.warnings)


def test_procs_per_node_overrides_the_gpus_and_a_cpu_job_sets_it(tmp_path):
    four = _plan(NODE8.replace("entrypoint: [train.py]", "procs_per_node: 4, entrypoint: [train.py]"), tmp_path)
    assert (four.loader.ranks, four.loader.workers, four.cluster.nproc_per_node) == (4, 3, 4)
    cpu = _plan(NODE8.replace("gpus: all", "gpus: none").replace("gpus_per_node: 8", "procs_per_node: 2")
                .replace("cu124", "cpu"), tmp_path)
    assert (cpu.loader.ranks, cpu.loader.nccl_bytes) == (2, 0)  # gloo on CPUs keeps no NCCL segments
    assert cpu.loader.shm_need == 2 * cpu.loader.rank_need


def test_a_one_node_cluster_sizes_the_workstation_targets_for_its_ranks(tmp_path):
    one = NODE8.replace("nodes: 2", "nodes: 1")
    plan = _plan(one, tmp_path)
    (tmp_path / "envkit.yaml").write_text(one)
    res = run_envkit("generate", "-o", "out", "--target", "run", "--target", "compose", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    size = plan.settings.shm_size
    assert size is not None and size >= plan.loader.shm_need > GIB
    assert f"--shm-size={size // GIB}g" in (tmp_path / "out" / "run.sh").read_text()
    assert yaml.safe_load((tmp_path / "out" / "compose.yaml").read_text())["services"]["node8"]["shm_size"] == f"{size // GIB}g"


def test_profile_docs_worked_example_is_real_output(tmp_path):
    from tests.conftest import ROOT

    text = NODE8.replace("memory: 64g, ", "").replace("nodes: 2", "nodes: 1").replace("num_workers: auto", "num_workers: 8")
    (tmp_path / "node8w.yaml").write_text(text)
    res = run_envkit("generate", "node8w.yaml", "-o", "out", "--target", "k8s", cwd=tmp_path)
    (line,) = [x for x in res.stderr.splitlines() if "loader.num_workers" in x]
    docs = (ROOT / "docs" / "profile.md").read_text()
    assert line in docs
    auto = plan_of(load_profile_bytes(text.replace("num_workers: 8", "num_workers: auto").encode(), "p.yaml",
                                      tmp_path).profile)
    assert (auto.loader.workers, auto.loader.rank_need // MIB, auto.settings.shm_size // GIB) == (1, 138, 3)
    assert 'sizeLimit: "3Gi"' in docs and f"{auto.loader.memory_need / GIB:.1f} GiB" in docs


def test_a_two_node_job_with_one_gpu_per_node_plans_ncclss_proxy_pool(tmp_path):
    # NCCL's network transport maps its proxy-ops pool from /dev/shm on every rank of a multi-node job
    # (NVIDIA/nccl v2.30.7-1 src/proxy.cc:1444-1455): one GPU per node used to get no allowance at all.
    import json

    from envkit.harness.rules.sizing import NCCL_PROXY_POOL_BYTES

    text = ("envkit: 1\nname: one\nimage: {base: 'ubuntu:22.04', torch: {version: '2.5.1', variant: cu124}}\n"
            "run: {cpus: 8, gpus: all}\nloader: {num_workers: 2, batch_size: 8, sample_shape: [3, 64, 64]}\n"
            "cluster: {nodes: 2, gpus_per_node: 1, image: r.example/one:1, entrypoint: [train.py]}\n")
    (tmp_path / "envkit.yaml").write_text(text)
    res = call_envkit("generate", "-o", "out", "--target", "dockerfile", "--json", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    loader = json.loads(res.stdout)["loader"]
    single = plan_of(load_profile_bytes(text.replace("nodes: 2", "nodes: 1").encode(), "p.yaml", tmp_path).profile)
    assert loader["ranks_per_node"] == 1
    assert loader["shm_need_bytes"] - single.loader.shm_need >= NCCL_PROXY_POOL_BYTES
    # The harness reads the same facts: the expectation says the job spans two nodes.
    assert json.loads((tmp_path / "out" / "envkit_expect.json").read_text())["run"]["nodes"] == 2
