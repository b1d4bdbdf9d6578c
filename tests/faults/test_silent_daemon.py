"""A daemon socket that accepts and never answers is named, with what envkit waited for, within seconds.

docker-py waits 60 s on each request by default; envkit's first contact (API version, then
/_ping) waits ``CONNECT_TIMEOUT_S`` and then fails as an engine problem (exit 3, docs/cli.md).
envkit runs in this process with that wait cut to 1 s (the constant is the seam): the rule is the
same at any length.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from envkit.engine import docker as docker_engine
from tests.conftest import call_envkit

PROFILE = "envkit: 1\nname: demo\nimage: {base: 'debian:bookworm'}\nwsl: {memory: 8GB}\n"


@pytest.fixture(autouse=True)
def _short_wait(monkeypatch):
    monkeypatch.setattr(docker_engine, "CONNECT_TIMEOUT_S", 1)


@pytest.fixture()
def silent_socket(tmp_path: Path) -> Iterator[str]:
    """``unix://PATH`` of a listening socket that accepts every connection and never writes a byte."""
    path = tmp_path / "silent.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except (TimeoutError, OSError):
                continue
            held.append(conn)  # kept open and never answered

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"unix://{path}"
    finally:
        stop.set()
        thread.join(5)
        for conn in held:
            conn.close()
        server.close()
    assert held, "envkit never connected to the socket"


def _says_what_it_waited_for(text: str, host: str) -> None:
    assert f"the Docker daemon at {host} accepted the connection but did not answer /" in text, text
    assert f"within {docker_engine.CONNECT_TIMEOUT_S} s" in text, text


def test_doctor_fails_the_engine_check_naming_the_silent_socket(tmp_path, silent_socket):
    (tmp_path / "envkit.yaml").write_text(PROFILE)
    res = call_envkit("doctor", "--json", cwd=tmp_path, env={"DOCKER_HOST": silent_socket}, timeout=45)
    assert "Traceback" not in res.stderr, res.stderr
    report = json.loads(res.stdout)
    checks = report["checks"] if isinstance(report, dict) else report
    docker = next(c for c in checks if c.get("name") == "docker")
    assert docker["status"] == "fail", docker
    _says_what_it_waited_for(docker["message"], silent_socket)
    assert res.returncode == 1, (res.returncode, res.stderr)


def test_build_exits_3_naming_the_silent_socket(tmp_path, silent_socket):
    (tmp_path / "envkit.yaml").write_text(PROFILE)
    res = call_envkit("build", cwd=tmp_path, env={"DOCKER_HOST": silent_socket}, timeout=45)
    assert res.returncode == 3, (res.returncode, res.stderr)
    assert "Traceback" not in res.stderr, res.stderr
    _says_what_it_waited_for(res.stderr, silent_socket)
