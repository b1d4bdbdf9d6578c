"""``envkit lock`` shows uv's progress while it resolves: uv faked at its seam (``uv_command``) by a script that
prints lines and exits. The real-uv runs are in test_lock.py (slow tier)."""

from __future__ import annotations

import io
import os
import sys
import textwrap
import time
from pathlib import Path

import pytest

from envkit.commands import lock
from envkit.errors import ProfileError

PROFILE = "envkit: 1\nname: locked\nimage:\n  base: python:3.11-slim-bookworm\n  pip_packages: [six]\n"
PIN = "six==1.17.0 \\\n    --hash=sha256:" + "0" * 64 + "\n"


class Recorder(io.StringIO):
    """A stream that notes when each write came, and whether it claims to be a terminal."""

    def __init__(self, tty: bool = False, on_write=None) -> None:
        super().__init__()
        self.tty, self.on_write, self.writes = tty, on_write, []

    def isatty(self) -> bool:
        return self.tty

    def write(self, s: str) -> int:
        self.writes.append(s)
        if self.on_write:
            self.on_write(self.getvalue() + s)
        return super().write(s)


def fake_uv(tmp_path: Path, monkeypatch, body: str) -> Path:
    """``uv_command()`` runs this Python ``body``; ``out`` is the ``-o`` path, ``say`` prints a line to stderr."""
    script = tmp_path / "fake-uv.py"
    script.write_text("import os, sys, time\n"
                      "out = sys.argv[sys.argv.index('-o') + 1]\n"
                      "def say(line):\n    print(line, file=sys.stderr, flush=True)\n"
                      + textwrap.dedent(body))
    monkeypatch.setattr(lock, "uv_command", lambda: [sys.executable, str(script)])
    (tmp_path / "envkit.yaml").write_text(PROFILE)
    return tmp_path / "envkit.yaml"


def test_uvs_lines_reach_stderr_while_it_is_still_running(tmp_path, monkeypatch):
    marker = tmp_path / "seen"
    # The fake waits until its first line has been shown: a lock that printed only after uv ended would
    # never show it, and the fake gives up.
    profile = fake_uv(tmp_path, monkeypatch, f"""
        say('Resolving six from the index')
        deadline = time.monotonic() + 20
        while not os.path.exists({str(marker)!r}):
            if time.monotonic() > deadline:
                say('error: nobody showed my first line while I ran')
                sys.exit(7)
            time.sleep(0.05)
        open(out, 'w').write({PIN!r})
        say('Resolved 1 package in 12ms')
    """)
    err = Recorder(on_write=lambda text: "Resolving six" in text and marker.touch())
    assert lock.run(profile, force=False, out=io.StringIO(), err=err) == 0, err.getvalue()
    shown = err.getvalue()
    assert "Resolving six from the index\n" in shown and "Resolved 1 package in 12ms\n" in shown
    assert "\r" not in shown  # a pipe gets plain lines
    assert (tmp_path / "envkit.lock.txt").read_text().endswith(PIN)


def test_a_terminal_gets_one_line_redrawn_in_place(tmp_path, monkeypatch):
    profile = fake_uv(tmp_path, monkeypatch, f"""
        for n in range(3):
            say(f'Resolving step {{n}}')
        say('warning: six is yanked')
        open(out, 'w').write({PIN!r})
    """)
    err = Recorder(tty=True)
    assert lock.run(profile, force=False, out=io.StringIO(), err=err) == 0
    redraws = [w for w in err.writes if w.startswith("\r\033[K") and "Resolving step" in w]
    assert [w.rsplit(": ", 1)[1] for w in redraws] == ["Resolving step 0", "Resolving step 1", "Resolving step 2"]
    assert all("\n" not in w for w in redraws) and redraws[0].startswith("\r\033[Kenvkit: uv (")
    assert "warning: six is yanked\n" in err.getvalue()  # kept on screen, not redrawn over
    # No redrawn line is left standing for envkit's own result to be printed over.
    assert err.getvalue().rsplit("\n", 1)[1] in ("", "\r\033[K")


def test_a_silent_uv_still_shows_that_it_is_resolving(tmp_path, monkeypatch):
    monkeypatch.setattr(lock, "HEARTBEAT", 0.2)
    profile = fake_uv(tmp_path, monkeypatch, f"""
        time.sleep(1.5)
        open(out, 'w').write({PIN!r})
    """)
    err = Recorder()
    assert lock.run(profile, force=False, out=io.StringIO(), err=err) == 0
    assert "envkit: uv still resolving (" in err.getvalue()


def test_network_failures_are_still_told_from_pins_that_do_not_resolve(tmp_path, monkeypatch):
    noise = "for n in range(500):\n    say(f'Fetching metadata {n}')\n"
    profile = fake_uv(tmp_path, monkeypatch, noise + """
        say('error: Request failed after 3 retries')
        say('  Caused by: error sending request for url (https://pypi.org/simple/six/)')
        say('  Caused by: tcp connect error')
        sys.exit(2)
    """.replace("\n        ", "\n"))
    err = Recorder()
    with pytest.raises(lock.NetworkFailed) as caught:
        lock.run(profile, force=False, out=io.StringIO(), err=err)
    assert caught.value.exit_code == 1 and "tcp connect error" in str(caught.value)
    assert "Fetching metadata 499" in err.getvalue()  # streamed as it came

    profile = fake_uv(tmp_path, monkeypatch, """
        say('  x No solution found when resolving dependencies:')
        say('  `-> Because there is no version of six==99 ...')
        sys.exit(1)
    """)
    with pytest.raises(ProfileError, match="do not resolve") as caught:
        lock.run(profile, force=False, out=io.StringIO(), err=Recorder())
    assert "no version of six==99" in str(caught.value)
    assert not (tmp_path / "envkit.lock.txt").exists()


def test_uv_past_its_time_is_killed_and_named(tmp_path, monkeypatch):
    pid_file = tmp_path / "pid"
    fake_uv(tmp_path, monkeypatch, f"""
        open({str(pid_file)!r}, 'w').write(str(os.getpid()))
        say('Resolving')
        time.sleep(60)
    """)
    start = time.monotonic()
    with pytest.raises(lock.UvTimedOut, match="did not finish in 1 s") as caught:
        lock.run_uv(lock.uv_command() + ["-o", str(tmp_path / "x")], dict(os.environ), Recorder(), timeout=1)
    assert time.monotonic() - start < 10 and caught.value.exit_code == 1 and "Resolving" in str(caught.value)
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)
