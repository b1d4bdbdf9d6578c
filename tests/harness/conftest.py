"""Shared fixtures for the harness tests: CLI runner, expectation writer, /proc scans."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[1] / "src"


def harness_env(**extra):
    """Environment for a harness subprocess: src and this directory (broken datasets) importable."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), str(HERE)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env.update(extra)
    return env


@pytest.fixture
def run_cli(tmp_path):
    """Run ``python -m envkit.harness ARGS`` in tmp_path; returns CompletedProcess (text)."""
    def run(*args, timeout=120, prefix=()):
        return subprocess.run([*prefix, sys.executable, "-m", "envkit.harness", *args], cwd=tmp_path,
                              env=harness_env(), capture_output=True, text=True, timeout=timeout)
    return run


@pytest.fixture
def write_expect(tmp_path):
    """Write an expectation dict to tmp_path/envkit_expect.json and return its path as str."""
    def write(loader=None, run=None, name="envkit_expect.json"):
        doc = {"envkit_expect": 1, "profile": "test", "loader": loader or {}, "run": run or {}}
        path = tmp_path / name
        path.write_text(json.dumps(doc))
        return str(path)
    return write


SMALL = {"num_workers": 2, "batch_size": 8, "sample_shape": [3, 16, 16], "dtype": "float32",
         "prefetch_factor": 2}


@pytest.fixture
def small_loader():
    return dict(SMALL)


def _unshare_unavailable():
    if os.geteuid() != 0:
        return "needs root to mount a tmpfs"
    if not shutil.which("unshare"):
        return "unshare(1) is not installed"
    probe = subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=1m tmpfs /dev/shm"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        return f"cannot mount a private tmpfs: {probe.stderr.strip()}"
    return None


@pytest.fixture
def need_unshare():
    """A private mount namespace can put a small tmpfs over /dev/shm: skip where it cannot (fail in CI)."""
    reason = _unshare_unavailable()
    if reason:
        if os.environ.get("ENVKIT_REQUIRE_DOCKER") == "1":
            pytest.fail(f"ENVKIT_REQUIRE_DOCKER=1 but {reason}")
        pytest.skip(reason)


def small_shm(size: str) -> tuple[str, ...]:
    """A command prefix that runs the rest under a private /dev/shm of ``size`` (needs ``need_unshare``)."""
    return ("unshare", "-m", "sh", "-c", f'mount -t tmpfs -o size={size} tmpfs /dev/shm && exec "$@"', "sh")
