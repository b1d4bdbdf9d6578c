"""Generation is all or nothing and safe to run twice at once.

Full disk: a small tmpfs mounted by the test (root); read-only: chmod plus a
read-only bind mount. Concurrency: a second run while the output folder's lock
is held. Interruption: SIGINT while the set is being staged.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from envkit.output import STAGING_PREFIX
from tests.faults.smallfs import fill, small_tmpfs
from tests.conftest import copy_example, in_ci, run_envkit

# Slow tier (--run-slow; the README's command runs it): real concurrent envkit runs racing for one output folder.
pytestmark = pytest.mark.slow

PROFILE = "envkit: 1\nname: {name}\nimage: {{base: debian:bookworm}}\nrun: {{shm_size: {shm}}}\n"


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _no_temporaries(root: Path) -> None:
    left = [p for p in root.rglob("*") if STAGING_PREFIX in str(p) or "envkit-tmp" in p.name or p.name.endswith(".tmp")]
    assert not left, left


@pytest.fixture
def small_fs(tmp_path):
    yield from small_tmpfs(tmp_path, "2m")


def test_full_disk_leaves_previous_outputs_intact_and_exits_1(tmp_path, small_fs):
    profile = tmp_path / "p.yaml"
    profile.write_text(PROFILE.format(name="one", shm="1g"))
    out = small_fs / "out"
    assert run_envkit("generate", str(profile), "-o", str(out)).returncode == 0
    before = _tree(out)
    # Fill the disk, leaving a little room so the staging starts and then fails midway.
    fill(small_fs, leave=6 * 1024)
    profile.write_text(PROFILE.format(name="two", shm="2g"))
    res = run_envkit("generate", str(profile), "-o", str(out))
    assert res.returncode == 1, (res.returncode, res.stderr)
    assert "No space left on device" in res.stderr and "Traceback" not in res.stderr
    assert _tree(out) == before, "a full disk must leave the previous outputs exactly as they were"
    _no_temporaries(small_fs)


def test_full_disk_on_first_run_leaves_nothing_half_written(tmp_path, small_fs):
    fill(small_fs, leave=8 * 1024)
    out = small_fs / "out"
    res = run_envkit("generate", "-o", str(out))
    assert res.returncode == 1 and "Traceback" not in res.stderr
    assert not out.exists() or not [p for p in out.rglob("*") if p.is_file()]
    _no_temporaries(small_fs)


def test_read_only_folder_is_exit_1(tmp_path):
    out = tmp_path / "ro"
    out.mkdir()
    ro = tmp_path / "ro-view"
    ro.mkdir()
    res = subprocess.run(["mount", "--bind", "-o", "ro", str(out), str(ro)], capture_output=True, text=True)
    if res.returncode != 0:  # older util-linux: bind, then remount read-only
        subprocess.run(["mount", "--bind", str(out), str(ro)], check=False)
        res = subprocess.run(["mount", "-o", "remount,bind,ro", str(ro)], capture_output=True, text=True)
    if res.returncode != 0:
        (pytest.fail if in_ci() else pytest.skip)(f"cannot bind-mount read-only: {res.stderr.strip()}")
    try:
        res = run_envkit("generate", "-o", str(ro))
        assert res.returncode == 1, res.stderr
        assert "Read-only file system" in res.stderr and "Traceback" not in res.stderr
        assert list(out.iterdir()) == []
    finally:
        subprocess.run(["umount", "-l", str(ro)], check=False)


def test_a_second_concurrent_run_waits_then_stops_with_exit_1(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    from envkit.outputlock import output_lock

    with output_lock(out, wait=5):  # what a running `envkit generate` holds
        started = time.monotonic()
        res = run_envkit("generate", "-o", str(out), env={"ENVKIT_LOCK_WAIT": "1"})
        assert res.returncode == 1, res.stderr
        assert "another envkit is writing into this folder" in res.stderr
        assert time.monotonic() - started >= 1.0, "it waited before giving up"
        assert list(out.iterdir()) == []
    assert run_envkit("generate", "-o", str(out)).returncode == 0


def test_two_runs_at_once_end_with_one_complete_consistent_set(tmp_path):
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.write_text(PROFILE.format(name="alpha", shm="1g"))
    b.write_text(PROFILE.format(name="beta", shm="3g"))
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "envkit", "generate", "-o", str(out), "--force"]
    procs = [subprocess.Popen(cmd + [str(p)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for p in (a, b, a, b)]
    errs = [p.communicate(timeout=60)[1] for p in procs]  # communicate closes the pipes (no ResourceWarning)
    results = [(p.returncode, e) for p, e in zip(procs, errs, strict=True)]
    assert all(rc == 0 for rc, _ in results), results
    files = _tree(out)
    names = {n for n in ("alpha", "beta") if all(n.encode() in files[f] for f in ("run.sh", "compose.yaml"))}
    assert len(names) == 1, "run.sh and compose.yaml come from the same profile"
    # The manifest matches the files: a rerun of the winner's profile changes nothing.
    winner = a if names == {"alpha"} else b
    res = run_envkit("generate", str(winner), "-o", str(out))
    assert res.returncode == 0 and "wrote" not in res.stdout, res.stdout + res.stderr
    _no_temporaries(out)


def test_interrupted_generate_leaves_previous_outputs_and_no_temporary(tmp_path):
    # A large wheel makes the staging slow enough to interrupt midway (the old code left a .whl.tmp);
    # cp312: the Python of the example's ubuntu:24.04 base (a wheelhouse naming another is refused at load).
    profile = copy_example("corporate.yaml", tmp_path)
    wheels = tmp_path / "wheels"
    out = tmp_path / "out"
    assert run_envkit("generate", str(profile), "-o", str(out)).returncode == 0
    before = _tree(out)
    big = wheels / "torch-2.5.1+cu121-cp312-cp312-linux_x86_64.whl"
    chunk = os.urandom(1 << 20)
    with open(big, "wb") as f:
        for _ in range(150):
            f.write(chunk)
    # The output lives on another file system than the wheel, so the wheel is copied (slowly), not hard-linked.
    shm_out = Path("/dev/shm") / f"envkit-hardening-{os.getpid()}"
    if shm_out.exists():
        shutil.rmtree(shm_out)
    shutil.copytree(out, shm_out, symlinks=True)
    try:
        proc = subprocess.Popen([sys.executable, "-m", "envkit", "generate", str(profile), "-o", str(shm_out)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not [p for p in shm_out.rglob("*") if big.name in p.name]:
            time.sleep(0.002)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
        assert _tree(shm_out) == before, "an interrupted run leaves the previous outputs"
        _no_temporaries(shm_out)
    finally:
        shutil.rmtree(shm_out, ignore_errors=True)


def test_stale_staging_folder_of_a_killed_run_is_swept(tmp_path):
    out = tmp_path / "out"
    stale = out / f"{STAGING_PREFIX}killed"
    (stale / ".envkit" / "wheels").mkdir(parents=True)
    (stale / ".envkit" / "wheels" / "x.whl").write_bytes(b"partial")
    assert run_envkit("generate", "-o", str(out)).returncode == 0
    assert not stale.exists()


def test_removing_the_wsl_section_removes_its_unedited_files(tmp_path):
    p = tmp_path / "p.yaml"
    p.write_text("envkit: 1\nname: w\nimage: {base: debian:bookworm}\nwsl: {memory: 8GB}\n")
    out = tmp_path / "out"
    assert run_envkit("generate", str(p), "-o", str(out)).returncode == 0
    wsl_files = sorted(f for f in _tree(out) if "wsl" in f.lower())
    assert wsl_files, _tree(out).keys()
    p.write_text("envkit: 1\nname: w\nimage: {base: debian:bookworm}\n")
    res = run_envkit("generate", str(p), "-o", str(out))
    assert res.returncode == 0, res.stderr
    for f in wsl_files:
        assert not (out / f).exists() and f"removed {out / f}" in res.stdout
    # Another target's files stay, and a --target run never prunes the others.
    assert (out / "Dockerfile").exists()


def test_an_edited_file_of_a_dropped_target_is_kept_and_reported(tmp_path):
    p = tmp_path / "p.yaml"
    p.write_text("envkit: 1\nname: w\nimage: {base: debian:bookworm}\nwsl: {memory: 8GB}\n")
    out = tmp_path / "out"
    assert run_envkit("generate", str(p), "-o", str(out)).returncode == 0
    (ps1,) = [f for f in out.rglob("*.ps1")]
    ps1.write_text(ps1.read_text() + "# mine\n")
    p.write_text("envkit: 1\nname: w\nimage: {base: debian:bookworm}\n")
    res = run_envkit("generate", str(p), "-o", str(out))
    assert res.returncode == 0 and ps1.exists() and "kept" in res.stderr and ps1.name in res.stderr


def test_target_subset_does_not_prune_other_targets(tmp_path):
    p = tmp_path / "p.yaml"
    p.write_text("envkit: 1\nname: w\nimage: {base: debian:bookworm}\nwsl: {memory: 8GB}\n")
    out = tmp_path / "out"
    assert run_envkit("generate", str(p), "-o", str(out)).returncode == 0
    before = set(_tree(out))
    assert run_envkit("generate", str(p), "-o", str(out), "--target", "dockerfile").returncode == 0
    assert set(_tree(out)) == before


# Two accounts of one team (any ids the machine does not use: setpriv takes numbers, no account is added).
TEAM_GID, TEAM_UIDS = 61000, (61001, 61002)


def _as_teammate(uid: int, base: Path, *args: str) -> subprocess.CompletedProcess:
    """``ARGS`` run as ``uid`` in the team's group only, without capabilities, with the umask a team sets (002)."""
    home = base / f"home-{uid}"
    home.mkdir(exist_ok=True)
    os.chown(home, uid, TEAM_GID)
    home.chmod(0o700)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache")}
    cmd = ["setpriv", f"--reuid={uid}", f"--regid={TEAM_GID}", f"--groups={TEAM_GID}", "--", *args]
    return subprocess.run(cmd, cwd=base, env=env, capture_output=True, text=True, timeout=120, umask=0o002)


def test_two_members_of_a_group_generate_into_one_group_writable_folder_in_turn():
    """A shared checkout: one teammate generates, then the other (a changed profile), then the first again.
    Each run takes the folder's lock; none may find it held by a file the other one owns."""
    if os.geteuid() != 0:
        (pytest.fail if in_ci() else pytest.skip)("running envkit as two other accounts needs root")
    if shutil.which("setpriv") is None:
        (pytest.fail if in_ci() else pytest.skip)("setpriv (util-linux) is missing")
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="envkit-team-"))  # beside the other users' files, not in root's 0700 tmp_path
    try:
        base.chmod(0o755)
        shared = base / "shared"
        shared.mkdir()
        os.chown(shared, 0, TEAM_GID)
        shared.chmod(0o2775)  # group-writable, new entries keep the team's group
        probe = _as_teammate(TEAM_UIDS[0], base, sys.executable, "-c", "import envkit.output")
        if probe.returncode != 0:  # e.g. an interpreter under root's 0700 home
            pytest.skip(f"another account cannot run this interpreter ({sys.executable}): {probe.stderr[-300:]}")
        for n, shm in enumerate(("1g", "2g", "1g")):
            profile = base / f"p{n}.yaml"
            profile.write_text(PROFILE.format(name="team", shm=shm))
            profile.chmod(0o644)
            uid = TEAM_UIDS[n % 2]
            res = _as_teammate(uid, base, sys.executable, "-m", "envkit", "generate", str(profile), "-o", str(shared))
            assert res.returncode == 0, (uid, res.stdout, res.stderr)
            assert f"shm_size: '{shm}'" in (shared / "compose.yaml").read_text(), (uid, res.stdout)
            assert (shared / "compose.yaml").stat().st_uid == uid, "the run wrote the changed files"
        _no_temporaries(shared)
    finally:
        shutil.rmtree(base, ignore_errors=True)
