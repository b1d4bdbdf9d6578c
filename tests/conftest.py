"""Shared test helpers: repository paths, the official schemas, and CLI runners.

Isolation (pipx's conftest style): every test runs with a clean ENVKIT_* environment
and inside its own temporary directory, so no test sees another's files.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from envkit.leftovers import start_time

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
SCHEMAS = ROOT.parent / "shared" / "schemas"


def in_ci() -> bool:
    return os.environ.get("ENVKIT_REQUIRE_DOCKER") == "1" or os.environ.get("CI") == "true"


@pytest.fixture(autouse=True)
def _isolate(monkeypatch, tmp_path_factory):
    for key in list(os.environ):
        if key.startswith("ENVKIT_") and key not in ("ENVKIT_REQUIRE_DOCKER", "ENVKIT_BASE_IMAGE", "ENVKIT_UPDATE_GOLDEN"):
            monkeypatch.delenv(key, raising=False)
    monkeypatch.chdir(tmp_path_factory.mktemp("cwd"))


@pytest.fixture(scope="session")
def official_schema():
    """Load one of the format owners' schemas from ../shared/schemas (fail, not skip, under CI)."""

    def load(name: str) -> dict:
        path = SCHEMAS / name
        if not path.is_file():
            msg = f"{path} not found (the official schemas live beside the checkout)"
            if in_ci():
                pytest.fail(msg)
            pytest.skip(msg)
        return json.loads(path.read_text())

    return load


def example_profiles() -> list[Path]:
    return sorted(EXAMPLES.glob("*.yaml"))


def copy_example(name: str, dest: Path) -> Path:
    """Copy an example profile and the files it references next to it, so relative paths stay stable."""
    src = EXAMPLES / name
    shutil.copy(src, dest / name)
    for sub in ("certs", "wheels"):
        if (EXAMPLES / sub).is_dir() and not (dest / sub).exists():
            shutil.copytree(EXAMPLES / sub, dest / sub)
    return dest / name


# (pid, start time) of every envkit process this session started. Containers carry their owner's
# (envkit.leftovers), so teardown can tell this session's containers from other runs' on a shared daemon.
SESSION_OWNERS: set[tuple[str, str]] = set()


def spawn_envkit(*args: str, cwd: Path | None = None, env: dict | None = None, **popen_kw) -> subprocess.Popen:
    """Start the real console entry point (stdout/stderr piped, text) and record it in SESSION_OWNERS."""
    full_env = {**os.environ, **(env or {})}
    proc = subprocess.Popen([sys.executable, "-m", "envkit", *args], cwd=cwd, env=full_env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen_kw)
    # Until we wait for it the child is alive or a zombie, so /proc still has its start time.
    start = start_time(proc.pid)
    if start is not None:
        SESSION_OWNERS.add((str(proc.pid), start))
    return proc


def run_envkit(*args: str, cwd: Path | None = None, env: dict | None = None, timeout: float = 120):
    """Run the real console entry point in a subprocess (what a user runs)."""
    proc = spawn_envkit(*args, cwd=cwd, env=env)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
