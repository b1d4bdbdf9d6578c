"""A non-root user for the Slurm tier, created for the session, who builds bundles and submits jobs.

Real sites run Slurm's OCI containers as the submitting user, rootless (SchedMD's containers
guide). The tier needs such a user: ``create_submitter`` adds one (with access to the Docker
socket, so ``envkit bundle`` can export the image) and ``remove`` deletes it again.

The user runs envkit from a copy of envkit and the packages it imports, under an interpreter of
the same version that the user may execute: the test session's own interpreter and virtual
environment may sit under a folder only root can enter (a clone in /root, pyenv in ~/.pyenv).
"""

from __future__ import annotations

import grp
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import ROOT

NAME = "envkit-submit"
DOCKER_SOCKET = Path("/var/run/docker.sock")
# What `envkit bundle` and `envkit generate` import (the user runs nothing else of envkit's).
_IMPORTS = ("envkit.cli", "envkit.commands.bundle", "envkit.commands.generate", "envkit.engine.docker",
            "envkit.generation", "docker", "pydantic", "jinja2", "yaml", "filelock", "shtab", "requests")


class SubmitterUnavailable(RuntimeError):
    """No non-root submitter can be set up here (the message says why)."""


@dataclass(frozen=True)
class Submitter:
    name: str
    uid: int
    gid: int
    home: Path  # a scratch folder the user owns: HOME, the copy of envkit, projects
    python: str
    created: bool  # False: the user existed before the session, so it is left in place

    def env(self, extra: dict | None = None) -> dict:
        path = os.environ.get("PATH", "/usr/bin:/bin")
        return {"PATH": path, "HOME": str(self.home), "USER": self.name, "LOGNAME": self.name,
                "PYTHONPATH": str(self.home / "lib"), "LANG": "C.UTF-8", **(extra or {})}

    def run(self, *args: str, cwd: Path, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
        """``args`` as this user (real and effective ids, its groups), nothing of root's kept."""
        cmd = ["setpriv", f"--reuid={self.uid}", f"--regid={self.gid}", "--init-groups", "--", *args]
        return subprocess.run(cmd, cwd=cwd, env=self.env(env), capture_output=True, text=True, timeout=timeout)

    def envkit(self, *args: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
        return self.run(self.python, "-m", "envkit", *args, cwd=cwd, timeout=timeout)

    def give(self, path: Path) -> None:
        """Hand a file or folder tree to this user."""
        for p in [path, *path.rglob("*")] if path.is_dir() else [path]:
            os.lchown(p, self.uid, self.gid)

    def remove(self) -> None:
        shutil.rmtree(self.home, ignore_errors=True)
        if self.created:
            subprocess.run(["userdel", self.name], capture_output=True, timeout=60)


def _same_python(candidate: str, uid: int, gid: int) -> bool:
    want = "%d.%d" % sys.version_info[:2]
    res = subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--", candidate, "-c",
                          "import sys; print('%d.%d' % sys.version_info[:2])"],
                         capture_output=True, text=True, timeout=30, cwd="/")
    return res.returncode == 0 and res.stdout.strip() == want


def _copy_packages(dest: Path) -> None:
    """envkit (with its templates) and the top-level packages it imports, as plain files under ``dest``."""
    import importlib

    for name in _IMPORTS:
        importlib.import_module(name)
    tops = {name.partition(".")[0] for name in list(sys.modules)}
    for top in sorted(tops):
        mod = sys.modules.get(top)
        file = getattr(mod, "__file__", None)
        if not file or "site-packages" not in file and not file.startswith(str(ROOT / "src")):
            continue  # the standard library and builtins: the user's interpreter has its own
        src = Path(file)
        if src.name == "__init__.py":
            shutil.copytree(src.parent, dest / top, ignore=shutil.ignore_patterns("__pycache__"), dirs_exist_ok=True)
        elif src.parent.name == "site-packages":
            shutil.copy2(src, dest / src.name)
    # A source checkout keeps the templates at the top level; envkit also looks inside its package.
    shutil.copytree(ROOT / "templates", dest / "envkit" / "templates", dirs_exist_ok=True)


def create_submitter() -> Submitter:
    """The session's submitter: created (or reused) with the Docker socket's group, and a scratch home."""
    if os.geteuid() != 0:
        raise SubmitterUnavailable("creating a submitting user needs root")
    try:
        sock_gid = DOCKER_SOCKET.stat().st_gid
    except OSError as exc:
        raise SubmitterUnavailable(f"no Docker socket at {DOCKER_SOCKET}: {exc}") from None
    if sock_gid == 0:
        raise SubmitterUnavailable(f"{DOCKER_SOCKET} belongs to group root: no group to give the submitter")
    group = grp.getgrgid(sock_gid).gr_name
    created = False
    try:
        pw = pwd.getpwnam(NAME)
    except KeyError:
        res = subprocess.run(["useradd", "--no-create-home", "--shell", "/bin/bash", "--user-group",
                              "--groups", group, NAME], capture_output=True, text=True, timeout=60)
        if res.returncode != 0:
            raise SubmitterUnavailable(f"useradd {NAME} failed: {res.stderr.strip()}") from None
        created = True
        pw = pwd.getpwnam(NAME)
    else:
        subprocess.run(["usermod", "--append", "--groups", group, NAME], capture_output=True, timeout=60)
    # Outside pytest's folders, which are root's and 0700.
    home = Path(tempfile.mkdtemp(prefix="envkit-submit-"))
    home.chmod(0o755)
    _copy_packages(home / "lib")
    candidates = [sys.executable, f"/usr/bin/python{sys.version_info[0]}.{sys.version_info[1]}",
                  f"/usr/local/bin/python{sys.version_info[0]}.{sys.version_info[1]}"]
    python = next((c for c in candidates if os.path.exists(c) and _same_python(c, pw.pw_uid, pw.pw_gid)), None)
    sub = Submitter(NAME, pw.pw_uid, pw.pw_gid, home, python or "", created)
    sub.give(home)
    if python is None:
        sub.remove()
        raise SubmitterUnavailable(f"no Python {sys.version_info[0]}.{sys.version_info[1]} that {NAME} may run "
                                   f"(tried {', '.join(candidates)})")
    return sub
