"""run.env reaches the containers of a Slurm job, never the batch shell that starts them.

A ``run.env.PATH`` is meant for the image (its venv first); set in the batch shell it would hide
srun, scontrol and mktemp there, and the preflight would fail before any node reports.
"""
import json

import pytest

from tests.slurm.test_sbatch import _run_script

IMAGE_PATH = "/opt/venv/bin:/usr/local/bin:/usr/bin"  # holds none of the batch shell's fake tools


@pytest.mark.parametrize("runtime", ["pyxis", "apptainer"])
def test_run_env_path_reaches_the_container_and_not_the_batch_shell(runtime, tmp_path):
    envlog = tmp_path / "env.jsonl"
    proc, calls = _run_script(tmp_path, runtime, env={"PATH": IMAGE_PATH, "QUOTED": "x"},
                              extra={"FAKE_ENV_LOG": str(envlog)})
    assert proc.returncode == 0, proc.stderr
    assert "envkit: preflight passed on 2 node(s)" in proc.stdout
    assert len([c for c in calls if c[0] == "srun"]) == 3  # the preflight, then one step per node
    steps = [json.loads(line) for line in envlog.read_text().splitlines()]
    assert len(steps) == 3 and all(seen["PATH"] == IMAGE_PATH for seen in steps)
