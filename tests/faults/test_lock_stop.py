"""``envkit lock`` stopped by SIGTERM (a CI cancel, ``docker stop``) leaves no uv process and no temporary folder."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path





def _children(pid: int) -> list[int]:
    out = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            out.append(int(entry))
    return out


def test_sigterm_during_lock_leaves_no_uv_and_no_temporary_folder(tmp_path):
    # An index that accepts and never answers: uv waits on it until envkit is stopped.
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []

    def hold() -> None:
        # Closing the server ends accept() with OSError: that is this thread's way out,
        # and it must not surface as an unhandled exception in a later test.
        try:
            for _ in range(16):
                held.append(server.accept()[0])
        except OSError:
            pass

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    port = server.getsockname()[1]
    profile = tmp_path / "envkit.yaml"
    profile.write_text("envkit: 1\nname: t\nimage:\n  base: 'python:3.11-slim'\n"
                       f"  torch: {{version: '2.5.1', index_url: 'http://127.0.0.1:{port}/simple'}}\n")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "envkit", "lock", str(profile)], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "TMPDIR": str(tmp), "UV_HTTP_TIMEOUT": "300"})
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not held:  # uv has asked the index
            time.sleep(0.05)
        assert held, "uv never reached the index"
        uv = _children(proc.pid)
        assert uv, "uv is not running"
        time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        try:  # on Linux, shutdown wakes a blocked accept(); close alone does not
            server.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        server.close()
        holder.join(timeout=10)
        assert not holder.is_alive()
        for s in held:
            s.close()
    assert proc.returncode != 0 and "Traceback" not in err, err
    for pid in uv:
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2], \
            f"uv ({pid}) outlived envkit"
    assert list(tmp.iterdir()) == [], f"left behind: {sorted(p.name for p in tmp.iterdir())}"
