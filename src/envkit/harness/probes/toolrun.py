"""Run an external tool and read what it says, bounded in time and size, decoded safely (standard library only).

A tool's output is untrusted input (``nvidia-smi``, ``nvidia-ctk``): a broken driver prints bytes that are not
UTF-8, a wedged one never exits, a hostile binary on PATH prints gigabytes. :func:`run_tool` is the one way
envkit and the harness run such a tool: at most ``limit`` bytes of each stream are kept (the rest is read
and dropped, so the tool cannot block on a full pipe), undecodable bytes become U+FFFD, and a tool still
running at ``timeout`` is killed with its whole process group. A tool that cannot start or exits non-zero
is a failure with its own words (:attr:`ToolResult.error`), never a pass.

Example:
    >>> r = run_tool(["sh", "-c", "printf 'broken \\\\377'; exit 3"], timeout=10)
    >>> r.returncode, r.stdout == "broken \ufffd", r.ok, r.error == "broken \ufffd"
    (3, True, False, True)
    >>> run_tool(["sh", "-c", "exit 4"], timeout=10).error
    'exit status 4'
    >>> run_tool(["/nonexistent/tool"], timeout=10).error
    '/nonexistent/tool could not run: No such file or directory'
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import time
from dataclasses import dataclass

MAX_OUTPUT = 64 * 1024  # bytes kept of each stream: a real nvidia-smi query of 64 GPUs is a few KiB
_CHUNK = 65536


@dataclass(frozen=True)
class ToolResult:
    """What a tool said: ``returncode`` None when it could not run or was killed at its deadline."""

    argv: tuple[str, ...]
    returncode: int | None
    stdout: str
    stderr: str
    error: str | None  # why it is not a success, in words (the tool's own first line where it gave one)
    truncated: bool = False

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and self.error is None


def run_tool(argv: list[str], timeout: float, limit: int = MAX_OUTPUT) -> ToolResult:
    """Run ``argv`` (no shell, no stdin) for at most ``timeout`` seconds; keep at most ``limit`` bytes per stream."""
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)
    except OSError as exc:
        return ToolResult(tuple(argv), None, "", "", f"{argv[0]} could not run: {exc.strerror or exc}")
    kept = {proc.stdout: bytearray(), proc.stderr: bytearray()}
    truncated, timed_out = False, False
    deadline = time.monotonic() + timeout
    try:
        with selectors.DefaultSelector() as sel:
            for stream in kept:
                sel.register(stream, selectors.EVENT_READ)  # type: ignore[arg-type]
            while sel.get_map():
                left = deadline - time.monotonic()
                if left <= 0:
                    timed_out = True
                    break
                for key, _ in sel.select(timeout=left):
                    chunk = os.read(key.fd, _CHUNK)
                    if not chunk:
                        sel.unregister(key.fileobj)
                        continue
                    buf = kept[key.fileobj]  # type: ignore[index]
                    room = max(0, limit - len(buf))
                    buf += chunk[:room]
                    truncated = truncated or len(chunk) > room
        if not timed_out:
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        timed_out = True
    finally:
        if proc.poll() is None:
            _kill_group(proc)
        for stream in kept:
            stream.close()  # type: ignore[union-attr]
    out = kept[proc.stdout].decode("utf-8", "replace")
    err = kept[proc.stderr].decode("utf-8", "replace")
    if timed_out:
        return ToolResult(tuple(argv), None, out, err, f"{argv[0]} did not answer within {timeout:g} s", truncated)
    error = None if proc.returncode == 0 else (_first_line(out + "\n" + err) or f"exit status {proc.returncode}")
    return ToolResult(tuple(argv), proc.returncode, out, err, error, truncated)


def _first_line(text: str) -> str | None:
    """The first non-blank line, at most 300 characters: a failing tool's own reason."""
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:300]
    return None


def _kill_group(proc: subprocess.Popen) -> None:
    """End the tool and anything it started (its own session), then reap it: nothing outlives the caller."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        proc.kill()
    proc.wait()
