"""Shared helpers for tests that need a real Docker engine.

``require_docker()`` returns a connected :class:`envkit.engine.docker.DockerEngine`, or skips the
test when no engine is reachable -- except under ``ENVKIT_REQUIRE_DOCKER=1`` (CI), where a
missing engine is a failure, so a broken CI machine cannot pass by skipping everything.

Example (in a test module)::

    from dockerutil import require_docker, base_image
    def test_x():
        eng = require_docker()
        eng.run(base_image(), ["true"], RunSettings.engine_defaults(), labels={}, timeout=60)
"""

from __future__ import annotations

import os

import pytest

from envkit.engine import LABEL
from envkit.engine.docker import DockerEngine
from envkit.errors import EngineError
from envkit.leftovers import BOOT_LABEL, PID_LABEL, START_LABEL, boot_id, start_time

DEFAULT_BASE_IMAGE = "envkit/bookworm-python:local"


def docker_required() -> bool:
    return os.environ.get("ENVKIT_REQUIRE_DOCKER", "") == "1"


def require_docker(labels: dict[str, str] | None = None) -> DockerEngine:
    """A connected DockerEngine (extra ``labels`` go on all it creates), else skip/fail."""
    try:
        return DockerEngine.connect(labels=labels)
    except EngineError as exc:
        msg = f"no Docker engine: {exc}"
        if docker_required():
            pytest.fail(f"{msg} (ENVKIT_REQUIRE_DOCKER=1; hint: {exc.hint})", pytrace=False)
        pytest.skip(msg)


def base_image() -> str:
    """The local base image tag (docker/base-image.sh); skip/fail when it is not built."""
    return os.environ.get("ENVKIT_BASE_IMAGE") or DEFAULT_BASE_IMAGE


def require_base_image(engine: DockerEngine) -> str:
    tag = base_image()
    try:
        engine.client.images.get(tag)
    except Exception as exc:  # docker.errors.ImageNotFound, APIError
        msg = f"base image {tag} missing ({exc}); run `sudo bash docker/base-image.sh`"
        if docker_required():
            pytest.fail(msg, pytrace=False)
        pytest.skip(msg)
    return tag


def session_containers(engine: DockerEngine, owners: set[tuple[str, str]]) -> list[tuple[str, str]]:
    """(id, name) of envkit containers owned by this process or by one of ``owners`` ((pid, start time)).

    Judged by the owner labels every container envkit runs carries (envkit.leftovers), on
    this boot only: other users' and other test sessions' containers are never listed.
    """
    me = os.getpid()
    mine = {(str(me), start_time(me)), *owners}
    boot = boot_id()
    return [(cid, name) for cid, name, labels in engine.list_owned()
            if boot is not None and labels.get(BOOT_LABEL) == boot
            and (labels.get(PID_LABEL), labels.get(START_LABEL)) in mine]


def leftover_containers(engine: DockerEngine, *labels: str) -> list[str]:
    """Names of containers (any state) carrying LABEL and every ``labels`` ("k" or "k=v")."""
    found = engine.client.containers.list(all=True, filters={"label": [LABEL, *labels]})
    return [c.name for c in found]
