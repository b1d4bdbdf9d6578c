"""One image for every member: host users of different uids, and root, write to the project through run.sh.

The image bakes uid/gid 1000; run.sh starts the container as root and envkit-entrypoint gives the image's
user the project folder's owner's ids before dropping to it. Real engine, real host users (useradd),
run.sh run as each of them (setpriv, with the docker group for the socket).
"""

from __future__ import annotations

import grp
import io
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from envkit.imagebuild import build_image, planned_build
from envkit.profile import load_profile
from tests.conftest import run_envkit
from tests.dockerutil import base_image

pytestmark = [pytest.mark.docker, pytest.mark.slow]

TAG = "envkit-team-test:uid"
USERS = {"envkit-team-a": 2001, "envkit-team-b": 2002}


def _host_user(name: str, uid: int) -> tuple[int, int]:
    try:
        pw = pwd.getpwnam(name)
    except KeyError:
        subprocess.run(["useradd", "--uid", str(uid), "--user-group", "--no-create-home", "--groups", "docker", name],
                       check=True, capture_output=True)
        pw = pwd.getpwnam(name)
    assert "docker" in [g.gr_name for g in grp.getgrall() if name in g.gr_mem], "needs the docker group"
    return pw.pw_uid, pw.pw_gid


@pytest.fixture(scope="module")
def image(engine):
    if os.geteuid() != 0:
        pytest.fail("creates host users (useradd) and runs run.sh as them: run as root", pytrace=False)
    root = Path(tempfile.mkdtemp(prefix="envkit-team-uid-"))
    (root / "envkit.yaml").write_text(
        f"envkit: 1\nname: team-uid\nimage:\n  base: {base_image()}\n  tag: {TAG}\n  installer: pip\n")
    with planned_build(load_profile(root / "envkit.yaml")) as plan:
        build_image(plan, engine, tag=TAG, no_cache=False, err=io.StringIO())
    yield root
    shutil.rmtree(root, ignore_errors=True)
    engine.client.images.remove(TAG, force=True)


def _project(image_dir: Path, owner: tuple[int, int]) -> Path:
    """A project folder owned by ``owner`` with run.sh generated into it (others can enter /tmp's folder)."""
    proj = Path(tempfile.mkdtemp(prefix="envkit-team-proj-"))
    shutil.copy(image_dir / "envkit.yaml", proj / "envkit.yaml")
    res = run_envkit("generate", "envkit.yaml", "-o", ".", "--target", "run", cwd=proj)
    assert res.returncode == 0, res.stderr
    os.chmod(proj, 0o755)
    for p in (proj, *proj.iterdir()):
        os.chown(p, *owner)
    return proj


def _as(owner: tuple[int, int] | None, cmd: list[str], cwd: Path) -> subprocess.CompletedProcess:
    prefix = [] if owner is None else ["setpriv", f"--reuid={owner[0]}", f"--regid={owner[1]}", "--init-groups"]
    env = {"PATH": os.environ["PATH"], "HOME": "/tmp"}
    return subprocess.run(prefix + cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("who", [*USERS, "root"])
def test_each_member_writes_to_the_project_through_run_sh(image, who):
    owner = None if who == "root" else _host_user(who, USERS[who])
    proj = _project(image, owner or (0, 0))
    try:
        res = _as(owner, ["./run.sh", "sh", "-c", "touch /workspace/x && id -u && id -un && echo $HOME"], proj)
        assert res.returncode == 0, f"{who}: {res.stderr}"
        uid, name, home = res.stdout.split()
        st = (proj / "x").stat()
        if owner is None:
            # root's own folder: the command stays root, as the folder's files are.
            assert (uid, st.st_uid) == ("0", 0)
        else:
            # the image's user, with the member's uid: files on the host are the member's.
            assert (uid, name, home) == (str(owner[0]), "dev", "/home/dev")
            assert (st.st_uid, st.st_gid) == owner
    finally:
        shutil.rmtree(proj, ignore_errors=True)


def test_root_in_a_members_folder_writes_as_that_member(image):
    owner = _host_user("envkit-team-a", USERS["envkit-team-a"])
    proj = _project(image, owner)
    try:
        res = _as(None, ["./run.sh", "touch", "/workspace/y"], proj)
        assert res.returncode == 0, res.stderr
        assert (proj / "y").stat().st_uid == owner[0]
    finally:
        shutil.rmtree(proj, ignore_errors=True)


def test_without_the_remap_a_member_with_another_uid_cannot_write(image):
    """The failure the entrypoint fixes (so the tests above can fail): the baked uid 1000 meets a 2002 folder."""
    owner = _host_user("envkit-team-b", USERS["envkit-team-b"])
    proj = _project(image, owner)
    try:
        res = _as(owner, ["docker", "run", "--rm", "-v", f"{proj}:/workspace", TAG, "touch", "/workspace/x"], proj)
        assert res.returncode != 0 and "Permission denied" in res.stderr
    finally:
        shutil.rmtree(proj, ignore_errors=True)


def test_without_run_sh_the_entrypoint_changes_nothing(image, engine):
    """A pod's runAsUser, plain docker run, docker run --user root: no ENVKIT_REMAP_USER, no remap."""
    run = engine.client.containers.run
    assert run(TAG, ["id", "-u"], user="1234", remove=True).decode().strip() == "1234"
    assert run(TAG, ["id", "-u"], user="root", remove=True).decode().strip() == "0"
    assert run(TAG, ["id", "-un"], remove=True).decode().strip() == "dev"
