"""Fixtures for engine tests. ``docker_engine``: a real engine, checked for leaks after use."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import pytest

# tests/ holds shared helpers (dockerutil, fakes); tests/engine has no __init__.py, so
# pytest only puts this directory on sys.path.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dockerutil import leftover_containers, require_docker  # noqa: E402


@pytest.fixture
def docker_engine():
    """A connected DockerEngine; after the test no envkit container of this test may remain.

    Each test gets its own ``io.envkit.test=<id>`` label, so engineers sharing one daemon
    do not see each other's containers as leaks.
    """
    test_label = f"io.envkit.test={uuid.uuid4().hex[:12]}"
    key, _, value = test_label.partition("=")
    engine = require_docker(labels={key: value})
    engine.test_label = test_label
    yield engine
    left = leftover_containers(engine, test_label)
    if left:
        engine.remove_labeled(test_label)
        pytest.fail(f"containers left behind: {left}", pytrace=False)
