"""The generated commands run: real torchrun, real gloo rendezvous, two "nodes" as two local processes.

No Kubernetes here, so the pods are played by processes: each runs the k8s.yaml
command after Kubernetes' own $(VAR) expansion (its completion index as
JOB_COMPLETION_INDEX) with the Service name swapped for 127.0.0.1; the
TrainJob command runs with the PET_* variables Trainer's torch plugin sets. The
script all-reduces across both nodes and echoes its arguments, so a wrong flag,
a wrong rank or a mangled argument fails. ``envkit-check`` is a stand-in on PATH
(the real one is the image's; here it records that it ran, or fails).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from envkit.generation import render_all
from envkit.profile import load_profile
from tests.cluster.kubeutil import expand, manifests

PROFILE = """envkit: 1
name: two-nodes
image: {base: debian:bookworm, tag: reg.example.com/two:1}
run: {cpus: 1, memory: 1g, env: {GREETING: "hi $(HOME) $$"}}
cluster: {nodes: 2, entrypoint: [train.py, --tag, "$(HOME) it's #1"]}
"""
TRAIN = """import os, sys
import torch, torch.distributed as dist
dist.init_process_group("gloo")
t = torch.tensor([dist.get_rank() + 1.0])
dist.all_reduce(t)
print(f"rank={dist.get_rank()} world={dist.get_world_size()} sum={t.item():g} args={sys.argv[1:]!r} "
      f"greeting={os.environ['GREETING']!r}", flush=True)
dist.destroy_process_group()
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def project(tmp_path):
    (tmp_path / "p.yaml").write_text(PROFILE)
    (tmp_path / "train.py").write_text(TRAIN)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    torchrun = Path(sys.executable).parent / "torchrun"
    assert torchrun.is_file(), "torchrun is part of torch, a test dependency"
    (bindir / "torchrun").symlink_to(torchrun)
    check = bindir / "envkit-check"
    check.write_text('#!/bin/sh\necho "preflight ran" >> "$CHECK_LOG"\nexit "${CHECK_EXIT:-0}"\n')
    check.chmod(0o755)
    files = {f.path: f.content.decode() for f in render_all(load_profile(tmp_path / "p.yaml"), tmp_path / "out",
                                                            ("k8s", "trainjob"))}
    return tmp_path, bindir, files


def _env(bindir: Path, container: dict, extra: dict) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PET_", "MASTER_", "RANK", "WORLD_"))}
    env["PATH"] = f"{bindir}{os.pathsep}{env['PATH']}"
    env.update({e["name"]: expand(e["value"], {}) for e in container.get("env", [])})
    env.update(extra)
    return env


def _run_nodes(cmds: list[list[str]], envs: list[dict], cwd: Path) -> list[str]:
    procs = [subprocess.Popen(c, cwd=cwd, env=e, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for c, e in zip(cmds, envs, strict=True)]
    outs = []
    for p in procs:
        out, _ = p.communicate(timeout=120)
        assert p.returncode == 0, out[-3000:]
        outs.append(out)
    return outs


@pytest.mark.slow
def test_k8s_command_runs_two_nodes(project):
    tmp, bindir, files = project
    job = manifests(files["k8s.yaml"])["Job"]
    (train,) = job["spec"]["template"]["spec"]["containers"]
    port, cmds, envs = _free_port(), [], []
    for index in range(job["spec"]["completions"]):
        cmd = [expand(w, {"JOB_COMPLETION_INDEX": str(index)}) for w in train["command"]]
        master = next(w for w in cmd if w.startswith("--master-addr="))
        cmd = [w.replace(master, "--master-addr=127.0.0.1").replace("--master-port=29500", f"--master-port={port}")
               for w in cmd]
        cmds.append(cmd)
        envs.append(_env(bindir, train, {}))
    outs = _run_nodes(cmds, envs, tmp)
    text = "".join(outs)
    for rank in (0, 1):
        assert (f"rank={rank} world=2 sum=3 args=['--tag', \"$(HOME) it's #1\"] greeting='hi $(HOME) $$'"
                in text), text[-3000:]


@pytest.mark.slow
def test_trainjob_command_runs_preflight_then_torchrun(project):
    tmp, bindir, files = project
    tj = manifests(files["trainjob.yaml"])["TrainJob"]
    trainer = tj["spec"]["trainer"]
    cmd = [expand(w, {}) for w in trainer["command"]]
    port, log = _free_port(), tmp / "check.log"
    envs = [_env(bindir, trainer, {
        # What Trainer's torch plugin sets (pkg/runtime/framework/plugins/torch): rendezvous for torchrun.
        "PET_NNODES": str(trainer["numNodes"]), "PET_NPROC_PER_NODE": str(trainer["numProcPerNode"]),
        "PET_NODE_RANK": str(rank), "PET_MASTER_ADDR": "127.0.0.1", "PET_MASTER_PORT": str(port),
        "CHECK_LOG": str(log)}) for rank in range(trainer["numNodes"])]
    text = "".join(_run_nodes([cmd] * trainer["numNodes"], envs, tmp))
    assert text.count("world=2 sum=3 args=['--tag', \"$(HOME) it's #1\"]") == 2, text[-3000:]
    assert log.read_text().count("preflight ran") == 2


def test_trainjob_failed_preflight_never_starts_training(project):
    tmp, bindir, files = project
    trainer = manifests(files["trainjob.yaml"])["TrainJob"]["spec"]["trainer"]
    cmd = [expand(w, {}) for w in trainer["command"]]
    env = _env(bindir, trainer, {"CHECK_EXIT": "1", "CHECK_LOG": str(tmp / "check.log"), "PET_NNODES": "1",
                                 "PET_NPROC_PER_NODE": "1", "PET_NODE_RANK": "0", "PET_MASTER_ADDR": "127.0.0.1",
                                 "PET_MASTER_PORT": str(_free_port())})
    res = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True, timeout=60)
    assert res.returncode == 1 and "rank=" not in res.stdout
