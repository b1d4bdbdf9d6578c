"""Leftovers of killed runs are swept, and nothing else is.

Real engine: a process runs a container through ``DockerEngine.run`` and is
SIGKILLed; ``envkit clean`` then removes that container (its owner is gone) and
leaves a container whose owner is alive. The engine is shared: every container
here carries a per-test label and is removed by the test itself.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid

import pytest

from envkit.leftovers import BOOT_LABEL, OWNER_FILE, PID_LABEL, START_LABEL, make_build_dir, owner_labels, \
    sweep_build_dirs
from tests.conftest import ROOT, run_envkit
from tests.dockerutil import leftover_containers, require_base_image, require_docker

RUNNER = """
import sys
from envkit.engine import connect
from envkit.plan.runsettings import RunSettings
eng = connect(labels={"io.envkit.test": sys.argv[2]})
eng.run(sys.argv[1], ["sleep", "600"], RunSettings.engine_defaults(), labels={}, timeout=600)
"""


@pytest.mark.docker
def test_clean_removes_the_container_of_a_killed_run_and_nothing_else():
    engine = require_docker()
    image = require_base_image(engine)
    mark = f"hardening-{uuid.uuid4().hex[:8]}"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    victim = subprocess.Popen([sys.executable, "-c", RUNNER, image, mark], env=env)
    alive = subprocess.Popen([sys.executable, "-c", RUNNER, image, mark + "-alive"], env=env)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (leftover_containers(engine, f"io.envkit.test={mark}")
                                                   and leftover_containers(engine, f"io.envkit.test={mark}-alive")):
            time.sleep(0.2)
        (name,) = leftover_containers(engine, f"io.envkit.test={mark}")
        labels = engine.client.containers.get(name).labels
        assert labels[PID_LABEL] == str(victim.pid) and labels[BOOT_LABEL] and labels[START_LABEL]
        victim.send_signal(signal.SIGKILL)  # no finally runs: the container stays
        victim.wait(30)
        assert leftover_containers(engine, f"io.envkit.test={mark}") == [name]
        res = run_envkit("clean", timeout=120)
        assert res.returncode == 0, res.stderr
        assert f"removed container {name}" in res.stdout
        assert leftover_containers(engine, f"io.envkit.test={mark}") == []
        assert len(leftover_containers(engine, f"io.envkit.test={mark}-alive")) == 1, "a live owner's container stays"
    finally:
        for p in (victim, alive):
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
                p.wait(60)
        engine.remove_labeled(f"io.envkit.test={mark}")
        engine.remove_labeled(f"io.envkit.test={mark}-alive")


def test_build_folder_of_a_killed_process_is_swept_and_others_are_kept(tmp_path):
    # A child makes a build folder and is killed before removing it.
    code = "from envkit.leftovers import make_build_dir; import sys, os; print(make_build_dir(), flush=True); " \
           "os.kill(os.getpid(), 9)"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "TMPDIR": str(tmp_path)})
    dead = tmp_path / os.path.basename(res.stdout.strip())
    assert dead.is_dir() and json.loads((dead / OWNER_FILE).read_text())[PID_LABEL]
    os.environ["TMPDIR"] = str(tmp_path)
    try:
        import tempfile
        tempfile.tempdir = None
        mine = make_build_dir()  # a live owner: this process
    finally:
        del os.environ["TMPDIR"]
        tempfile.tempdir = None
    foreign = tmp_path / "envkit-build-someone-else"  # no owner record: never judged
    foreign.mkdir()
    reused = tmp_path / "envkit-build-reused-pid"  # a live pid, but another start time: the owner is gone
    reused.mkdir()
    (reused / OWNER_FILE).write_text(json.dumps({**owner_labels(), START_LABEL: "1"}))
    removed = sweep_build_dirs(tmp_path)
    assert sorted(removed) == sorted([str(dead), str(reused)])
    assert mine.is_dir() and foreign.is_dir()


def test_envkit_clean_lists_nothing_when_nothing_is_left(tmp_path):
    res = run_envkit("clean", env={"TMPDIR": str(tmp_path)}, timeout=120)
    assert res.returncode in (0, 3), res.stderr  # 3: no engine here; the folders were still swept


@pytest.mark.docker
def test_clean_removes_envkit_images_a_rebuild_left_nameless_and_nothing_else():
    """A rebuild under one tag leaves the previous envkit image nameless (on this machine that filled the disk).

    Kept: the tagged image, a nameless image envkit did not build, a nameless envkit image a container uses.
    """
    import io

    from envkit.engine import LABEL

    engine = require_docker()
    base = require_base_image(engine)
    mark = f"superseded-{uuid.uuid4().hex[:8]}"
    tag, other_tag, used_tag = f"envkit-clean-test:{mark}", f"envkit-clean-other:{mark}", f"envkit-clean-used:{mark}"

    def build(tag: str, n: int, envkit: bool = True) -> str:
        # The tag in a label too: two identical builds would be one image (the builder's cache).
        dockerfile = f"FROM {base}\nLABEL io.envkit.test={mark} n={n} t={tag}\n".encode()
        image, _ = engine.client.images.build(fileobj=io.BytesIO(dockerfile), tag=tag, rm=True,
                                              labels={LABEL: "1", "io.envkit.profile": "clean-test"} if envkit else {})
        return image.id

    ids: list[str] = []
    container = None
    try:
        ids += [build(tag, 1), build(tag, 2)]            # the first is superseded
        ids += [build(other_tag, 1, envkit=False), build(other_tag, 2, envkit=False)]  # not envkit's
        ids += [build(used_tag, 1), build(used_tag, 2)]  # the first is nameless but a container uses it
        container = engine.client.containers.create(ids[4], ["true"])
        res = run_envkit("clean", timeout=120)
        assert res.returncode == 0, res.stderr
        assert f"removed superseded image {ids[0].split(':')[1][:12]} (profile clean-test)" in res.stdout
        present = {i.id for i in engine.client.images.list(all=True, filters={"label": f"io.envkit.test={mark}"})}
        assert ids[0] not in present
        assert {ids[1], ids[2], ids[3], ids[4], ids[5]} <= present, "only the superseded, unused envkit image goes"
    finally:
        if container is not None:
            container.remove(force=True)
        for image_id in reversed(ids):
            with contextlib.suppress(Exception):
                engine.client.images.remove(image_id, force=True)
