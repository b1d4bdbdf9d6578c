"""The e2e teardown judges only this session's containers: a shared daemon's other containers are left alone."""

from __future__ import annotations

import uuid

import pytest

from envkit.engine import LABEL
from envkit.leftovers import BOOT_LABEL, PID_LABEL, START_LABEL, boot_id, owner_labels
from tests.conftest import SESSION_OWNERS
from tests.dockerutil import base_image, session_containers

pytestmark = [pytest.mark.docker]


def test_session_containers_are_ours_only(engine):
    mark = f"hardening-teardown-{uuid.uuid4().hex[:8]}"
    # Another user's envkit run (a live owner we did not start) and one of this session's.
    foreign = {LABEL: "1", PID_LABEL: "1", START_LABEL: "0", BOOT_LABEL: boot_id() or "", "io.envkit.test": mark}
    ours = {LABEL: "1", **owner_labels(), "io.envkit.test": mark}
    created = [engine.client.containers.create(base_image(), ["true"], labels=labels, name=f"{mark}-{i}")
               for i, labels in enumerate((foreign, ours))]
    try:
        found = {name for _, name in session_containers(engine, SESSION_OWNERS)}
        assert f"{mark}-1" in found, "this process's container must be judged"
        assert f"{mark}-0" not in found, "another owner's container must never be touched"
    finally:
        for c in created:
            c.remove(force=True)
