"""Ends of what the generated files can carry: run.env under the kernel's argument limits, and Slurm mount
sources that pyxis's and apptainer's comma-separated mount lists cannot hold."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from envkit.profile.load import ENV_ENTRY_MAX, ENV_TOTAL_MAX
from tests.conftest import run_envkit

# Slow tier (--run-slow; the README's command runs it): real runs of run.sh and the sbatch script under fakes.
pytestmark = pytest.mark.slow

FAKEBIN = Path(__file__).resolve().parent.parent / "slurm" / "fakebin"
HEAD = "envkit: 1\nname: demo\nimage: {base: 'debian:bookworm'}\n"


def _fake_docker(tmp_path: Path) -> Path:
    """A `docker` that reports the longest argument it was given (run.sh execs it)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    docker = bin_dir / "docker"
    docker.write_text("#!/usr/bin/env python3\nimport sys\nprint(max(len(a.encode()) for a in sys.argv))\n")
    docker.chmod(0o755)
    return bin_dir


def test_a_run_env_value_over_one_arguments_limit_is_refused_at_its_line(tmp_path):
    # 150 KB is over Linux's 128 KiB for one argument: run.sh's exec would fail "Argument list too long".
    (tmp_path / "p.yaml").write_text(HEAD + "run:\n  env:\n    SMALL: ok\n    CONFIG: " + "x" * 150_000 + "\n")
    res = run_envkit("generate", "p.yaml", "-o", "out", cwd=tmp_path)
    assert res.returncode == 2, res.stderr
    assert "p.yaml:7:5: run.env.CONFIG: CONFIG=VALUE is 150007 bytes; one run.env entry is at most 64 KiB" in res.stderr
    assert "run.volumes" in res.stderr and not (tmp_path / "out").exists()


def test_a_run_env_entry_at_the_bound_runs(tmp_path):
    value = "x" * (ENV_ENTRY_MAX - len("CONFIG="))
    (tmp_path / "p.yaml").write_text(HEAD + f"run:\n  env:\n    CONFIG: {value}\n")
    res = run_envkit("generate", "p.yaml", "-o", "out", "--target", "run", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    env = {**os.environ, "PATH": f"{_fake_docker(tmp_path)}:{os.environ['PATH']}"}
    ran = subprocess.run(["bash", str(tmp_path / "out" / "run.sh")], capture_output=True, text=True, env=env,
                         stdin=subprocess.DEVNULL, timeout=60)
    assert ran.returncode == 0, ran.stderr
    assert int(ran.stdout) == ENV_ENTRY_MAX + len("--env=")


def test_run_env_entries_over_the_total_bound_are_refused(tmp_path):
    # Aliases make a 1 MiB profile expand past what one command's arguments and environment may hold.
    value = "y" * 60_000
    keys = "".join(f"    K{i}: *v\n" for i in range(ENV_TOTAL_MAX // 60_000 + 1))
    (tmp_path / "p.yaml").write_text(HEAD + f"run:\n  env:\n    K: &v {value}\n" + keys)
    res = run_envkit("generate", "p.yaml", "-o", "out", cwd=tmp_path)
    assert res.returncode == 2, res.stderr
    assert "p.yaml:5:3: run.env: the run's environment is" in res.stderr and "at most 1024 KiB" in res.stderr


def _cluster_profile(tmp_path: Path, runtime: str, volumes: list[str]) -> Path:
    data = {"envkit": 1, "name": "t", "image": {"base": "debian:bookworm"}, "run": {"volumes": volumes},
            "cluster": {"nodes": 2, "image": "reg.example.com/t:1", "entrypoint": ["train.py"],
                        "slurm": {"runtime": runtime, **({"bundle": "/shared/b"} if runtime == "oci" else {})}}}
    path = tmp_path / "envkit.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.mark.parametrize("runtime", ["pyxis", "apptainer"])
@pytest.mark.parametrize("source", ["./data,v2", "/scratch/a,b"])
def test_a_mount_source_with_a_comma_is_refused_at_its_line_for_pyxis_and_apptainer(tmp_path, runtime, source):
    profile = _cluster_profile(tmp_path, runtime, ["./ok:/ok", f"{source}:/data"])
    res = run_envkit("generate", str(profile), "-o", str(tmp_path / "out"))
    assert res.returncode == 2, res.stderr
    line = next(i for i, text in enumerate(profile.read_text().splitlines(), 1) if source in text)
    assert f"envkit.yaml:{line}:" in res.stderr and f"run.volumes[1]: the source {source!r} holds ','" in res.stderr
    assert f"{runtime}'s mount list is comma-separated" in res.stderr and not (tmp_path / "out").exists()


@pytest.mark.parametrize("with_cluster", [True, False])
def test_a_comma_is_fine_where_no_comma_separated_mount_list_is_written(tmp_path, with_cluster):
    # runtime oci mounts through the bundle's config.json; without a cluster, Docker splits only at ':'.
    profile = _cluster_profile(tmp_path, "oci", ["/scratch/a,b:/data"])
    if not with_cluster:
        data = yaml.safe_load(profile.read_text())
        del data["cluster"]
        profile.write_text(yaml.safe_dump(data))
    res = run_envkit("generate", str(profile), "-o", str(tmp_path / "out"))
    assert res.returncode == 0, res.stderr


def _run_sbatch(tmp_path: Path, submit: Path) -> tuple[subprocess.CompletedProcess, list]:
    profile = _cluster_profile(tmp_path, "pyxis", ["./data:/data"])
    out = tmp_path / "out"
    res = run_envkit("generate", str(profile), "-o", str(out), "--target", "slurm")
    assert res.returncode == 0, res.stderr
    submit.mkdir(exist_ok=True)
    log = tmp_path / "calls.jsonl"
    env = {"PATH": f"{FAKEBIN}:/usr/bin:/bin", "FAKE_LOG": str(log), "FAKE_RUNTIME": "pyxis",
           "SLURM_JOB_ID": "4242", "SLURM_JOB_NODELIST": "n[1-2]", "SLURM_JOB_NUM_NODES": "2",
           "SLURM_SUBMIT_DIR": str(submit), "HOME": str(tmp_path)}
    proc = subprocess.run(["bash", str(out / "slurm.sbatch")], cwd=submit, env=env, capture_output=True, text=True,
                          timeout=60)
    calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return proc, calls


@pytest.mark.parametrize("name", ["runs,v2", "host:port"])
def test_the_script_refuses_a_submit_folder_with_a_comma_or_colon_before_the_first_srun(tmp_path, name):
    proc, calls = _run_sbatch(tmp_path, tmp_path / name)
    assert proc.returncode == 1, proc.stderr
    assert f"envkit: the submit folder {tmp_path / name} holds ',' or ':'" in proc.stderr
    assert calls == []  # no srun ran


def test_the_script_mounts_a_plain_submit_folder(tmp_path):
    proc, calls = _run_sbatch(tmp_path, tmp_path / "runs-v2")
    assert proc.returncode == 0, proc.stderr
    here = tmp_path / "runs-v2"  # sources are anchored at it as the output folder is at the profile's
    from envkit.plan.loader import loader_plan
    from envkit.profile import load_profile

    sized = loader_plan(load_profile(next(tmp_path.glob("*.yaml"))).profile).shm_bytes  # no shm_size: sized
    assert (f"--container-mounts=tmpfs:/dev/shm:nosuid+nodev+noexec+mode=1777+size={sized},"
            f"{here}/..:/workspace,{here}/../data:/data") in calls[0]
