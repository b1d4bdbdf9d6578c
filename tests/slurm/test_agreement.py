"""slurm.sbatch says what the run settings say: its #SBATCH lines and the job's environment are parsed back and
compared with the one translation (RunSettings) and the cluster section, as tests/targets/test_agreement.py
does for run.sh, compose and devcontainer and tests/cluster/test_agreement.py for the Kubernetes manifests."""

from __future__ import annotations

import math
import shlex

import pytest

from envkit.generation import render_plan
from envkit.planner import build_plan
from envkit.profile import load_profile
from tests.conftest import copy_example
from tests.slurm.test_sbatch import CLUSTER_EXAMPLES


@pytest.mark.parametrize("example", CLUSTER_EXAMPLES)
def test_sbatch_agrees_with_the_run_settings(example, tmp_path):
    """Parse the #SBATCH lines back and compare with the one translation (RunSettings) and the cluster section."""
    loaded = load_profile(copy_example(example, tmp_path))
    plan = build_plan(loaded, tmp_path / "out")
    p, rs = loaded.profile, plan.settings
    text = {f.path: f.content.decode() for f in render_plan(plan, ("slurm",))}["slurm.sbatch"]
    opts = dict(line.split(None, 1)[1].lstrip("-").split("=", 1) for line in text.splitlines()
                if line.startswith("#SBATCH"))
    assert int(opts["nodes"]) == p.cluster.nodes and opts["ntasks-per-node"] == "1"
    assert int(opts["mem"]) * 2**20 >= rs.memory > (int(opts["mem"]) - 1) * 2**20
    assert int(opts["cpus-per-task"]) == (len(p.run.cpuset_cpus) or math.ceil(rs.cpus))
    assert int(opts["gpus-per-node"]) == p.cluster.gpus_per_node
    assert f"--nproc-per-node={p.cluster.gpus_per_node}" in text
    for u in rs.ulimits:
        assert f"raise_limit {u.name} " in text
    for key, value in rs.env:
        assert f"  {shlex.quote(f'{key}={value}')}\n" in text  # job_env: srun's environment, not the shell's
