"""A remedy, followed, ends its warning: the CPU-contention warning over a grid of ranks, CPUs and workers."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from envkit.profile import load_profile_bytes
from tests.conftest import plan_of


def _profile(ranks: int, cpus: int, workers) -> str:
    return ("envkit: 1\nname: r\nimage: {base: debian}\n"
            f"run: {{cpus: {cpus}}}\nloader: {{num_workers: {workers}, batch_size: 4, sample_shape: [3, 8, 8]}}\n"
            f"cluster: {{procs_per_node: {ranks}, gpus_per_node: 0, entrypoint: [t.py]}}\n")


def _contention(text: str):
    plan = plan_of(load_profile_bytes(text.encode(), "p.yaml", Path(".")).profile)
    return [w for w in plan.warnings if "will contend for CPUs" in w]


@pytest.mark.parametrize("ranks", [1, 2, 8])
@pytest.mark.parametrize("cpus", [1, 2, 16])
@pytest.mark.parametrize("workers", [0, 3, "auto"])
def test_following_the_cpu_remedy_ends_the_warning(ranks, cpus, workers):
    text = _profile(ranks, cpus, workers)
    found = _contention(text)
    if not found:
        return
    (w,) = found
    # Before: 8 ranks on 2 CPUs with num_workers: 0 were told "use num_workers: auto (0 per training process)".
    if w.path == "loader.num_workers":
        assert "use num_workers: auto" in w.text
        assert not _contention(_profile(ranks, cpus, "auto"))
    else:
        assert w.path == "cluster.procs_per_node"
        m = re.search(r"run at most (\d+) training process\w* per node .* at least (\d+) CPUs", w.text)
        assert m, w.text
        fewer = "auto" if "with num_workers: auto" in w.text else workers
        assert not _contention(_profile(int(m.group(1)), cpus, fewer))
        assert not _contention(_profile(ranks, int(m.group(2)), workers))
