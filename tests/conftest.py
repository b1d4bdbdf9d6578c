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

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
SCHEMAS = ROOT.parent / "shared" / "schemas"


def in_ci() -> bool:
    return os.environ.get("ENVKIT_REQUIRE_DOCKER") == "1" or os.environ.get("CI") == "true"


# Kept through the isolation: how the suite runs (ENVKIT_SESSION: the e2e session's label, which the
# CLI subprocesses must inherit so their containers are found by the leftover check).
KEPT_ENV = ("ENVKIT_REQUIRE_DOCKER", "ENVKIT_BASE_IMAGE", "ENVKIT_UPDATE_GOLDEN", "ENVKIT_SESSION")


@pytest.fixture(autouse=True)
def _isolate(monkeypatch, tmp_path_factory):
    for key in list(os.environ):
        if key.startswith("ENVKIT_") and key not in KEPT_ENV:
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


def run_envkit(*args: str, cwd: Path | None = None, env: dict | None = None, timeout: float = 120):
    """Run the real console entry point in a subprocess (what a user runs)."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, "-m", "envkit", *args], cwd=cwd, env=full_env,
                          capture_output=True, text=True, timeout=timeout)
