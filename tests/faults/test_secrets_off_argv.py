"""An index token never reaches a command line, and no message shows a URL's credentials.

A process's argv is readable by every user of the host (``ps``, /proc/PID/cmdline); its environment
only by its owner. Messages end up in terminals, CI logs and bug reports.
"""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from envkit.commands import lock
from tests.conftest import run_envkit

TOKEN = "S3CRETtok"
INDEX = f"http://deploy:{TOKEN}@127.0.0.1:9/simple"  # port 9 (discard): nothing answers there

RECORDING_UV = """import json, os, sys
json.dump({"argv": sys.argv, "env": {k: v for k, v in os.environ.items() if k.startswith("UV_")}},
          open(os.environ["FAKE_UV_LOG"], "w"))
args = sys.argv[1:]
open(args[args.index("-o") + 1], "w").write("torch==2.5.1 \\\\\\n    --hash=sha256:aa\\n")
"""


def _profile(tmp_path: Path, index: str = INDEX) -> Path:
    p = tmp_path / "envkit.yaml"
    p.write_text(f"envkit: 1\nname: t\nimage:\n  base: 'python:3.11-slim'\n"
                 f"  torch: {{version: '2.5.1', index_url: '{index}'}}\n")
    return p


def test_lock_hands_uv_the_index_token_in_its_environment_not_argv(tmp_path, monkeypatch):
    uv = tmp_path / "uv.py"
    uv.write_text(RECORDING_UV)
    monkeypatch.setattr(lock, "uv_command", lambda: [sys.executable, str(uv)])
    monkeypatch.setenv("FAKE_UV_LOG", str(tmp_path / "uv.json"))
    err = io.StringIO()
    assert lock.run(_profile(tmp_path), force=False, out=io.StringIO(), err=err) == 0
    seen = json.loads((tmp_path / "uv.json").read_text())
    assert not any(TOKEN in a for a in seen["argv"]), seen["argv"]
    assert seen["env"]["UV_INDEX"] == INDEX
    assert TOKEN not in err.getvalue()


@pytest.mark.slow
def test_real_uv_reads_the_index_from_its_environment_and_argv_stays_clean(tmp_path):
    # Real uv, an index that never answers: uv must try that index (it read UV_INDEX), and while it
    # runs no process on the host shows the token in its command line.
    proc = subprocess.Popen([sys.executable, "-m", "envkit", "lock", str(_profile(tmp_path))],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                            env={**os.environ, "UV_HTTP_TIMEOUT": "5", "UV_OFFLINE": "0"})
    leaked = []
    while proc.poll() is None:
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if TOKEN.encode() in cmdline:
                leaked.append(cmdline)
        time.sleep(0.05)
    _, err = proc.communicate(timeout=120)
    assert not leaked, leaked
    assert proc.returncode == 1, err
    assert "127.0.0.1:9" in err and TOKEN not in err, err


@pytest.mark.parametrize("where, text", [
    ("image.torch.index_url", "  torch: {version: '2.5.1', index_url: 'htps://deploy:S3CRETtok@pypi.corp/simple'}\n"),
    ("image.pip_packages", "  pip_packages: ['pkg @ git+htps://deploy:S3CRETtok@git.corp/x.git', 'nump']\n"),
])
def test_no_message_shows_a_urls_credentials(where, text, tmp_path):
    p = tmp_path / "envkit.yaml"
    p.write_text(f"envkit: 1\nname: t\nimage:\n  base: 'python:3.11-slim'\n{text}")
    res = run_envkit("generate", str(p), "-o", str(tmp_path / "out"))
    assert TOKEN not in res.stderr and TOKEN not in res.stdout, res.stderr
    assert "***@" in res.stderr or res.returncode == 0, res.stderr
