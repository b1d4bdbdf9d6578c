"""One answer: generate, flags, doctor and ``harness --profile`` print the same ``loader`` object on one host.

Each resolves the node's loaders by the one rule (``envkit.harness.rules.sizing.size_node``); where the
profile's CPU limit fits the host, their ranks, workers per rank and shm need are identical.
"""

from __future__ import annotations

import json
import os

import jsonschema
import pytest

from envkit.jsonout import loader_schema
from tests.conftest import call_envkit, run_envkit

PROFILE = ("envkit: 1\nname: one\nimage: {base: 'debian:bookworm'}\nrun: {cpus: 2, memory: 2g}\n"
           "loader: {num_workers: auto, batch_size: 8, sample_shape: [3, 32, 32]}\n")
SAME = ("ranks_per_node", "workers_per_rank", "shm_need_bytes", "shm_bytes", "cpus")


def _loader(args, cwd, docs: dict | None = None) -> dict:
    # The harness starts real DataLoader workers, so it runs as its own process; the rest only print.
    res = (run_envkit if args[0] == "harness" else call_envkit)(*args, cwd=cwd)
    assert res.returncode in (0, 1), res.stderr  # doctor fails without a Docker engine; its loader stands
    doc = json.loads(res.stdout)
    jsonschema.Draft202012Validator(loader_schema()).validate(doc["loader"])
    if docs is not None:
        docs[args[0]] = doc
    return doc["loader"]


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="the profile's cpus: 2 must fit this host")
@pytest.mark.parametrize("cluster", ["", "cluster: {nodes: 1, procs_per_node: 2, entrypoint: [train.py]}\n"])
@pytest.mark.slow  # real DataLoader workers (or a whole script) run: the slow tier, which CI runs
def test_generate_flags_doctor_and_the_harness_state_one_loader(tmp_path, cluster):
    (tmp_path / "envkit.yaml").write_text(PROFILE + cluster)
    objects = {
        "generate": _loader(("generate", "--json", "-o", "out", "--target", "run"), tmp_path),
        "flags": _loader(("flags", "--json"), tmp_path),
        "doctor": _loader(("doctor", "envkit.yaml", "--json"), tmp_path),
        "harness": _loader(("harness", "--profile", "envkit.yaml", "--json", "--quick"), tmp_path, docs := {}),
    }
    first = {k: objects["generate"][k] for k in SAME}
    for name, obj in objects.items():
        assert {k: obj[k] for k in SAME} == first, f"{name} says {obj}, generate {objects['generate']}"
        assert set(obj["facts"]) >= {"cpus", "ranks_per_node", "shm_bytes"}
    ranks = 2 if cluster else 1
    assert first["ranks_per_node"] == ranks and first["workers_per_rank"] == max(0, 2 // ranks - 1)
    assert objects["harness"]["facts"]["shm_bytes"] == objects["generate"]["facts"]["shm_bytes"]
    loader_check = next(c for c in docs["harness"]["checks"] if c["name"] == "loader")
    assert loader_check["measured"]["concurrent_loaders"] == ranks  # the node's loaders, all at once
