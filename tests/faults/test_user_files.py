"""Files that are not envkit's to replace are never replaced.

A device, a FIFO, a socket or a folder where envkit would write is refused with
exit 1 naming what it is; a symlink is followed and the file it names is edited
in place (the link stays a link). Every command that writes is tried: init,
wsl apply and generate. Device files are made with ``mknod`` (the tests run as
root in CI; elsewhere they fail under ENVKIT_REQUIRE_DOCKER=1, else skip).
"""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

from tests.conftest import in_ci, run_envkit

# Slow tier (--run-slow; the README's command runs it): real envkit runs over a user's files, links and backups.
pytestmark = pytest.mark.slow

WSL_PROFILE = "envkit: 1\nname: w\nimage: {base: debian:bookworm}\nwsl: {memory: 8GB, processors: 4}\n"


def _make(kind: str, path: Path) -> None:
    if kind == "device":
        if os.geteuid() != 0:
            (pytest.fail if in_ci() else pytest.skip)("mknod needs root")
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # the same device as /dev/null
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(path))
        s.close()
    elif kind == "folder":
        path.mkdir()


WORDS = {"device": "a character device", "fifo": "a FIFO", "socket": "a socket", "folder": "a folder"}


def _commands(tmp_path: Path, victim: Path) -> dict[str, list[str]]:
    profile = tmp_path / "w.yaml"
    profile.write_text(WSL_PROFILE)
    return {
        "init": ["init", str(victim), "--force"],
        "wsl apply": ["wsl", "apply", str(profile), "--wslconfig", str(victim)],
    }


@pytest.mark.parametrize("kind", ["device", "fifo", "socket"])
@pytest.mark.parametrize("command", ["init", "wsl apply"])
def test_special_files_survive_init_and_wsl_apply(tmp_path, kind, command):
    victim = tmp_path / "victim"
    _make(kind, victim)
    before = os.lstat(victim)
    res = run_envkit(*_commands(tmp_path, victim)[command], timeout=30)
    assert res.returncode == 1, res.stderr
    assert WORDS[kind] in res.stderr and "Traceback" not in res.stderr
    after = os.lstat(victim)
    assert stat.S_IFMT(after.st_mode) == stat.S_IFMT(before.st_mode) and after.st_ino == before.st_ino
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["victim", "w.yaml"]), "no backup, no temp file"


@pytest.mark.parametrize("kind", ["device", "fifo", "socket", "folder"])
def test_special_files_survive_generate(tmp_path, kind):
    out = tmp_path / "out"
    out.mkdir()
    _make(kind, out / "compose.yaml")
    res = run_envkit("generate", "-o", str(out), "--force", timeout=60)
    assert res.returncode == 1, res.stderr
    assert WORDS[kind] in res.stderr and "compose.yaml" in res.stderr and "Traceback" not in res.stderr
    assert sorted(p.name for p in out.iterdir()) == ["compose.yaml"], "nothing written, nothing staged"


def test_dev_null_through_a_symlink_is_refused(tmp_path):
    link = tmp_path / ".wslconfig"
    link.symlink_to("/dev/null")
    profile = tmp_path / "w.yaml"
    profile.write_text(WSL_PROFILE)
    res = run_envkit("wsl", "apply", str(profile), "--wslconfig", str(link))
    assert res.returncode == 1 and "/dev/null" in res.stderr
    assert os.readlink(link) == "/dev/null" and stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_wsl_apply_edits_a_symlinked_wslconfig_in_its_dotfiles_repo(tmp_path):
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    real = dotfiles / "wslconfig"
    real.write_bytes(b"[wsl2]\r\nmemory=4GB\r\n")
    home = tmp_path / "home"
    home.mkdir()
    link = home / ".wslconfig"
    link.symlink_to(real)
    profile = tmp_path / "w.yaml"
    profile.write_text(WSL_PROFILE)
    res = run_envkit("wsl", "apply", str(profile), "--wslconfig", str(link))
    assert res.returncode == 0, res.stderr
    assert link.is_symlink() and os.readlink(link) == str(real), "the link stays a link"
    assert b"memory=8GB" in real.read_bytes()
    assert [p.name for p in home.iterdir()] == [".wslconfig"], "backup beside the real file, not the link"
    (backup,) = dotfiles.glob("wslconfig.envkit-bak-*")
    assert backup.read_bytes() == b"[wsl2]\r\nmemory=4GB\r\n"
    assert not [p for p in dotfiles.iterdir() if "tmp" in p.name]


def test_init_force_edits_a_symlinked_profile(tmp_path):
    real = tmp_path / "real.yaml"
    real.write_text("mine\n")
    link = tmp_path / "envkit.yaml"
    link.symlink_to(real)
    res = run_envkit("init", str(link), "--force", "--preset", "workstation")
    assert res.returncode == 0, res.stderr
    assert run_envkit("init", str(tmp_path / "fresh.yaml"), "--preset", "workstation").returncode == 0
    assert link.is_symlink() and real.read_text() == (tmp_path / "fresh.yaml").read_text()
    (backup,) = tmp_path.glob("real.yaml.envkit-bak-*")
    assert backup.read_text() == "mine\n"


def test_generate_follows_a_symlinked_output(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    out = tmp_path / "out"
    assert run_envkit("generate", "-o", str(out), "--target", "dockerfile").returncode == 0
    dockerfile = (out / "Dockerfile").read_bytes()
    (shared / "Dockerfile").write_bytes(dockerfile)
    (out / "Dockerfile").unlink()
    (out / "Dockerfile").symlink_to(shared / "Dockerfile")
    p = tmp_path / "p.yaml"
    p.write_text("envkit: 1\nname: changed\nimage: {base: debian:bookworm}\n")
    res = run_envkit("generate", str(p), "-o", str(out), "--target", "dockerfile", "--force")
    assert res.returncode == 0, res.stderr
    assert (out / "Dockerfile").is_symlink()
    assert (shared / "Dockerfile").read_bytes() != dockerfile and b"changed" in (shared / "Dockerfile").read_bytes()
    assert not [p for p in shared.iterdir() if "tmp" in p.name]


def test_inputs_that_are_not_regular_files_are_refused_without_hanging(tmp_path):
    fifo = tmp_path / "p.yaml"
    os.mkfifo(fifo)
    res = run_envkit("flags", str(fifo), timeout=20)
    assert res.returncode == 2 and "a FIFO" in res.stderr
    res = run_envkit("flags", "/dev/zero", timeout=20)
    assert res.returncode == 2 and "a character device" in res.stderr
    cfg = tmp_path / ".wslconfig"
    os.mkfifo(cfg)
    prof = tmp_path / "w.yaml"
    prof.write_text(WSL_PROFILE)
    res = run_envkit("wsl", "apply", str(prof), "--wslconfig", str(cfg), "--dry-run", timeout=20)
    assert res.returncode == 1 and "a FIFO" in res.stderr


def test_oversized_inputs_are_refused_before_reading(tmp_path):
    big = tmp_path / "big.yaml"
    with open(big, "wb") as f:
        f.truncate(2 * 1024 * 1024)  # sparse: 2 MiB of size, no disk
    res = run_envkit("flags", str(big))
    assert res.returncode == 2 and "at most 1 MiB" in res.stderr
    cfg = tmp_path / ".wslconfig"
    with open(cfg, "wb") as f:
        f.truncate(2 * 1024 * 1024)
    prof = tmp_path / "w.yaml"
    prof.write_text(WSL_PROFILE)
    res = run_envkit("wsl", "apply", str(prof), "--wslconfig", str(cfg))
    assert res.returncode == 2 and "at most 1 MiB" in res.stderr
    assert cfg.stat().st_size == 2 * 1024 * 1024


def test_oversized_certificate_is_refused_at_load(tmp_path):
    cert = tmp_path / "huge.pem"
    with open(cert, "wb") as f:
        f.write(b"-----BEGIN CERTIFICATE-----\n")
        f.truncate(2 * 1024 * 1024)
    p = tmp_path / "p.yaml"
    p.write_text("envkit: 1\nname: c\nimage:\n  base: debian:bookworm\n  ca_certificates: [huge.pem]\n")
    res = run_envkit("generate", str(p), "-o", str(tmp_path / "out"))
    assert res.returncode == 2 and "p.yaml:5:" in res.stderr and "at most 1 MiB" in res.stderr
    assert not (tmp_path / "out").exists()


def test_oversized_requirements_file_is_refused_at_load(tmp_path):
    """A requirements file is read (to choose the Dockerfile's layout) and copied into the build context:
    bounded like every input, refused at its key's position before anything is written."""
    req = tmp_path / "requirements.txt"
    with open(req, "wb") as f:
        f.write(b"numpy==1.26.4\n")
        f.truncate(5 * 1024 * 1024)  # sparse: 5 MiB of size, no disk
    p = tmp_path / "p.yaml"
    p.write_text("envkit: 1\nname: r\nimage:\n  base: debian:bookworm\n  requirements: [requirements.txt]\n")
    res = run_envkit("generate", str(p), "-o", str(tmp_path / "out"), timeout=60)
    assert res.returncode == 2 and "p.yaml:5:" in res.stderr, res.stderr
    assert "image.requirements[0]" in res.stderr and "at most 4 MiB" in res.stderr, res.stderr
    assert "Traceback" not in res.stderr and not (tmp_path / "out").exists()


def test_requirement_files_and_the_lock_are_read_once_at_load_bounded(tmp_path):
    """The loader reads each requirements file and the lock once, bounded; the build context gets those
    bytes, so a file that grows afterwards is never read again; a lock over the bound is bad input at load."""
    from envkit.errors import ProfileError
    from envkit.generation import render_all
    from envkit.plan.paths import LOCK_FILE_NAME
    from envkit.profile import load_profile

    req = tmp_path / "requirements.txt"
    req.write_text("numpy==1.26.4\n")
    p = tmp_path / "p.yaml"
    p.write_text("envkit: 1\nname: r\nimage:\n  base: debian:bookworm\n  requirements: [requirements.txt]\n")
    loaded = load_profile(p)
    with open(req, "ab") as f:
        f.truncate(5 * 1024 * 1024)
    files = render_all(loaded, tmp_path / "out", ("dockerfile",))
    (copied,) = [f for f in files if f.path.endswith("-requirements.txt")]
    assert copied.content == b"numpy==1.26.4\n"
    req.write_text("numpy==1.26.4\n")
    with open(tmp_path / LOCK_FILE_NAME, "ab") as f:
        f.truncate(5 * 1024 * 1024)
    with pytest.raises(ProfileError, match="at most 4 MiB"):
        load_profile(p)
