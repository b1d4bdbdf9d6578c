"""docs/cli.md's exit-code table, walked against real runs: every documented code has an invocation that
produces it, and permissions and a folder where a file goes are exit 1 in every command."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_envkit, spawn_envkit

# Slow tier (--run-slow; the README's command runs it): one real envkit run per documented exit code, signals included.
pytestmark = pytest.mark.slow

BAD_PROFILE = "envkit: 1\nname: demo\nimage: {base: 'debian:bookworm'}\nrun: {shm_size: 8gg}\n"
PROFILE = "envkit: 1\nname: demo\nimage: {base: 'debian:bookworm'}\nwsl: {memory: 8GB}\n"


def documented_codes() -> set[int]:
    """The codes in the first column of docs/cli.md's "Exit codes" table."""
    text = (ROOT / "docs" / "cli.md").read_text()
    table = text.split("### Exit codes", 1)[1].split("\n\n", 2)[1]
    codes: set[int] = set()
    for row in table.splitlines()[2:]:
        codes.update(int(c) for c in re.findall(r"\d+", row.split("|")[1]))
    return codes


def unprivileged() -> list[str]:
    """A command prefix that makes the file system's permissions apply, even to root.

    Root reads a mode-000 file through CAP_DAC_OVERRIDE; setpriv drops it (and CAP_DAC_READ_SEARCH) from the
    bounding set, so the exec'd envkit has neither. Another user could not read this session's interpreter.
    """
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("root reads any file, and setpriv (util-linux), which drops that capability, is missing")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search", "--"]


def run_unprivileged(*args: str, cwd: Path):
    import subprocess
    import sys

    return subprocess.run([*unprivileged(), sys.executable, "-m", "envkit", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120)


def case_done(tmp_path: Path):
    return run_envkit("flags", cwd=tmp_path)


def case_unreadable_profile(tmp_path: Path):
    profile = tmp_path / "envkit.yaml"
    profile.write_text(PROFILE)
    profile.chmod(0)
    res = run_unprivileged("generate", str(profile), "-o", str(tmp_path / "out"), cwd=tmp_path)
    assert "Permission denied" in res.stderr, res.stderr
    return res


def case_unreadable_expectation(tmp_path: Path):
    expect = tmp_path / "envkit_expect.json"
    expect.write_text("{}")
    expect.chmod(0)
    res = run_unprivileged("harness", "--expect", str(expect), cwd=tmp_path)
    assert "Permission denied" in res.stderr, res.stderr
    return res


def case_init_into_a_folder(tmp_path: Path):
    (tmp_path / "d").mkdir()
    res = run_envkit("init", str(tmp_path / "d"), cwd=tmp_path)
    assert "is a folder" in res.stderr, res.stderr
    return res


def case_wsl_apply_onto_a_folder(tmp_path: Path):
    (tmp_path / "envkit.yaml").write_text(PROFILE)
    (tmp_path / "d").mkdir()
    res = run_envkit("wsl", "apply", str(tmp_path / "envkit.yaml"), "--wslconfig", str(tmp_path / "d"), cwd=tmp_path)
    assert "is a folder" in res.stderr, res.stderr
    return res


def case_bad_profile(tmp_path: Path):
    (tmp_path / "bad.yaml").write_text(BAD_PROFILE)
    res = run_envkit("generate", "bad.yaml", "-o", str(tmp_path / "out"), cwd=tmp_path)
    assert "bad.yaml:4:" in res.stderr and "run.shm_size" in res.stderr, res.stderr
    return res


def case_no_engine(tmp_path: Path):
    sock = tmp_path / "closed.sock"  # a socket nobody listens on: the engine is not running
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(sock))
    s.close()
    (tmp_path / "envkit.yaml").write_text(PROFILE)
    res = run_envkit("build", cwd=tmp_path, env={"DOCKER_HOST": f"unix://{sock}"})
    assert "cannot reach a Docker engine" in res.stderr, res.stderr
    return res


def case_internal_error(tmp_path: Path):
    # A bug planted where every run passes: the console entry point's own handler must turn it into 70.
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(
        "import envkit.commands.flags as f\n"
        "def main(args):\n    raise RuntimeError('planted bug')\n"
        "f.main = main\n")
    path = os.pathsep.join(p for p in (str(hook), os.environ.get("PYTHONPATH", "")) if p)
    res = run_envkit("flags", cwd=tmp_path, env={"PYTHONPATH": path})
    assert "internal error: RuntimeError: planted bug" in res.stderr and "Traceback" not in res.stderr, res.stderr
    return res


def _interrupted(tmp_path: Path, sig: signal.Signals):
    """A generate waiting on the output folder's lock (held here, through envkit's own lock), then sent ``sig``."""
    import subprocess

    from envkit.outputlock import lock_path, output_lock

    out = tmp_path / "out"
    out.mkdir()
    with output_lock(out, wait=5):
        proc = spawn_envkit("generate", "-o", str(out), "--target", "run", cwd=tmp_path,
                            env={"ENVKIT_LOCK_WAIT": "60"})
        deadline = time.monotonic() + 60
        # Waiting on the lock, it polls: it opens the lock file between sleeps (the kernel shows the sleep).
        while not (_holds(proc.pid, lock_path(out)) or _sleeping(proc.pid)):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)
        proc.send_signal(sig)
        try:
            stdout, stderr = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    assert "interrupted" in stderr, stderr
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def _sleeping(pid: int) -> bool:
    """True while ``pid`` sleeps in a timed wait (``time.sleep``); nothing before the lock's wait sleeps."""
    try:
        return "nanosleep" in Path(f"/proc/{pid}/wchan").read_text()
    except OSError:
        return False


def _holds(pid: int, folder: Path) -> bool:
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == str(folder):
                return True
        except OSError:
            continue
    return False


def case_ctrl_c(tmp_path: Path):
    return _interrupted(tmp_path, signal.SIGINT)


def case_sigterm(tmp_path: Path):
    return _interrupted(tmp_path, signal.SIGTERM)


# Each documented code, with real invocations that produce it.
CASES = {
    0: [case_done],
    1: [case_unreadable_profile, case_unreadable_expectation, case_init_into_a_folder, case_wsl_apply_onto_a_folder],
    2: [case_bad_profile],
    3: [case_no_engine],
    70: [case_internal_error],
    130: [case_ctrl_c],
    143: [case_sigterm],
}


def test_every_documented_exit_code_has_a_real_run_here():
    assert set(CASES) == documented_codes()


@pytest.mark.parametrize("code, case", [(code, case) for code, cases in CASES.items() for case in cases],
                         ids=lambda v: v.__name__.removeprefix("case_") if callable(v) else str(v))
def test_the_documented_exit_code_is_what_a_real_run_gives(code, case, tmp_path):
    res = case(tmp_path)
    assert res.returncode == code, res.stderr
    assert "Traceback" not in res.stderr
