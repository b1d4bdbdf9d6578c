"""A missing client tool skips locally but fails under ENVKIT_REQUIRE_DOCKER=1 (CI)."""

from __future__ import annotations

import pytest

from tests.clients.conftest import venv_tool


def test_missing_tool_fails_under_ci(monkeypatch):
    monkeypatch.setenv("ENVKIT_REQUIRE_DOCKER", "1")
    with pytest.raises(pytest.fail.Exception, match="client tools are required"):
        venv_tool("envkit-no-such-tool")


def test_missing_tool_skips_locally(monkeypatch):
    monkeypatch.delenv("ENVKIT_REQUIRE_DOCKER", raising=False)
    with pytest.raises(pytest.skip.Exception):
        venv_tool("envkit-no-such-tool")
