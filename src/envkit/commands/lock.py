"""``envkit lock``: resolve the profile's torch and packages for the image's Python and platform into
``envkit.lock.txt`` beside the profile, with hashes, through uv's ``pip compile``.

torch comes from the profile's wheelhouse (``find_links``) or its variant's index, exactly as the
Dockerfile installs it; the rest from the default index. Nothing is written when uv fails.

While uv works, its lines stream to ``err`` as they come (:func:`run_uv`): one line redrawn in place on
a terminal, plain lines on a pipe, and a line every ``HEARTBEAT`` seconds while uv says nothing.

Called as::

    run(Path("envkit.yaml"), force=False, out=sys.stdout, err=sys.stderr) -> 0
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import deque
from pathlib import Path
from typing import TextIO

from envkit import install
from envkit.commands.arguments import profile_argument, resolve_profile
from envkit.errors import EnvkitError, ProfileError, UsageError
from envkit.jsonout import LockDoc, emit
from envkit.output import write_backup
from envkit.safeio import replace_file
from envkit.plan.lockfile import LOCK_FILE, PLATFORM, header, inputs_digest, lock_path, recorded_hash, requirements_in
from envkit.profile import LoadedProfile, load_profile
from envkit.plan.image import ImagePlan
from envkit.pythons import image_python
from envkit.termtext import neutralise

UV_TIMEOUT = 900
# Seconds of silence from uv after which a pipe gets a "still resolving" line (a terminal's line
# shows the seconds as they pass).
HEARTBEAT = 30.0
# uv's last lines kept for the failure message and for telling a network failure from pins that do not resolve.
TAIL_LINES = 200
# Seconds uv has to exit after SIGTERM (envkit stopped, or uv past UV_TIMEOUT) before SIGKILL.
STOP_GRACE = 5.0
# What uv prints when a request to an index never got an answer (DNS, refused or reset connections,
# TLS, time-outs), as opposed to an index that answered that no version fits.
_NETWORK_CAUSES = ("error sending request", "tcp connect error", "dns error", "failed to lookup address",
                   "connection refused", "connection reset", "timed out", "operation timed out",
                   "invalid peer certificate", "network is unreachable")


class NetworkFailed(EnvkitError):
    """The package index could not be reached: the environment's fault, not the profile's (exit 1)."""

    exit_code = 1


def network_failure(stderr: str) -> bool:
    """True when uv's output says a request never got an answer.

    >>> network_failure("  cause: tcp connect error\\n  cause: Connection refused (os error 111)")
    True
    >>> network_failure("No solution found when resolving dependencies: torch==9.9 not found")
    False
    """
    text = stderr.lower()
    return any(cause in text for cause in _NETWORK_CAUSES)


class UvTimedOut(EnvkitError):
    """uv did not finish within UV_TIMEOUT seconds (exit 1: the index or the network is too slow)."""

    exit_code = 1


class _Progress:
    """uv's lines on ``err`` (:class:`envkit.progress.StatusLine`): the latest redrawn in place on a terminal,
    each one plain on a pipe, with a line after ``HEARTBEAT`` seconds of silence; warnings and errors stay."""

    def __init__(self, err: TextIO) -> None:
        from envkit.progress import StatusLine

        self.status = StatusLine(err, every=0)
        self.tty = self.status.tty
        self.start = self.heard = time.monotonic()
        self.latest = "resolving"

    def line(self, text: str) -> None:
        self.latest = text
        self.heard = time.monotonic()
        if not self.tty or text.lower().startswith(("warning", "error")):
            self.status.say(text)
        else:
            self.tick()

    def tick(self) -> None:
        now = time.monotonic()
        if self.tty:
            self.status.show(f"envkit: uv ({now - self.start:.0f} s): {self.latest}")
        elif now - max(self.heard, self.status.said) >= HEARTBEAT:
            self.status.say(f"envkit: uv still resolving ({now - self.start:.0f} s)")

    def done(self) -> None:
        self.status.done()


def run_uv(argv: list[str], env: dict[str, str], err: TextIO, timeout: float | None = None) -> tuple[int, list[str]]:
    """Run ``argv`` (uv), showing each line it writes to stderr on ``err`` as it comes.

    Returns uv's exit code and its last ``TAIL_LINES`` stderr lines. Raises :class:`UvTimedOut` once
    ``timeout`` seconds (default ``UV_TIMEOUT``) have passed; uv is killed then, and on any exception
    (Ctrl-C included).
    """
    timeout = UV_TIMEOUT if timeout is None else timeout
    import selectors
    import subprocess

    progress = _Progress(err)
    tail: deque[str] = deque(maxlen=TAIL_LINES)
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=env)
    assert proc.stderr is not None
    fd = proc.stderr.fileno()
    pending = b""
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while True:
                left = timeout - (time.monotonic() - progress.start)
                if left <= 0:
                    raise _timed_out(timeout, tail)
                if not selector.select(timeout=min(1.0, left)):
                    progress.tick()
                    continue
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                *lines, pending = (pending + chunk).split(b"\n")
                if len(pending) > 65536:  # a line without an end is shown in pieces, never held whole
                    lines.append(pending)
                    pending = b""
                for raw in lines:
                    text = raw.decode("utf-8", "replace").rstrip("\r")
                    if text.strip():
                        tail.append(text)
                        progress.line(text)
        if pending.strip():
            tail.append(pending.decode("utf-8", "replace"))
            progress.line(tail[-1])
        try:  # uv closed its stderr; it has the time left to exit
            code = proc.wait(timeout=max(timeout - (time.monotonic() - progress.start), 0.1))
        except subprocess.TimeoutExpired:
            raise _timed_out(timeout, tail) from None
        return code, list(tail)
    finally:
        progress.done()
        if proc.poll() is None:
            stop(proc)
        proc.stderr.close()


def stop(proc, grace: float = STOP_GRACE) -> None:
    """End ``proc`` as a service manager would: SIGTERM, ``grace`` seconds to exit, then SIGKILL.

    SIGKILL at once would leave whatever uv had not cleaned up yet; uv's temporary folders also lie
    in envkit's own (``TMPDIR`` in :func:`run`), which is removed however uv ended.
    """
    import subprocess

    proc.terminate()
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _timed_out(timeout: float, tail: deque[str]) -> UvTimedOut:
    return UvTimedOut(f"uv did not finish in {timeout:g} s; its last lines:\n"
                      + "\n".join("    " + neutralise(line) for line in list(tail)[-25:]),
                      hint="check the network and the index URLs, then run envkit lock again")


def uv_command() -> list[str]:
    """The uv executable (the ``lock`` extra installs it next to envkit)."""
    try:
        from uv import find_uv_bin
    except ImportError:
        raise UsageError("envkit lock needs uv", hint=f"{install('lock')} (or: pip install uv)") from None
    return [find_uv_bin()]


def compile_args(loaded: LoadedProfile, plan: ImagePlan, python: str, src: Path, dest: Path) -> list[str]:
    image = loaded.profile.image
    args = ["pip", "compile", str(src), "-o", str(dest), "--generate-hashes", "--no-header",
            "--python-version", python, "--python-platform", PLATFORM]
    if image.torch:  # the torch index reaches uv through its environment (index_env), never argv
        for d in image.torch.find_links:
            args += ["--find-links", str(loaded.resolve(d))]
    return args


def index_env(plan: ImagePlan) -> dict[str, str]:
    """uv's environment naming the torch index: ``UV_INDEX`` is ``--index`` (uv's docs, "Environment
    variables"), which uv asks before the default index, so torch (and what that index also serves)
    comes from it. An index URL may carry a token (``https://deploy:TOKEN@mirror/simple``): on argv
    any user could read it (``ps``, /proc/PID/cmdline); a process's environment only its owner can.

    >>> index_env(type("Plan", (), {"torch_index_url": None})())
    {}
    """
    index = plan.torch_index_url
    return {"UV_INDEX": index} if index else {}


def run(profile_path: Path | None, *, force: bool, out: TextIO, err: TextIO, as_json: bool = False) -> int:
    """Lock; with ``as_json`` stdout holds one document (``envkit.jsonout.SCHEMAS["lock"]``)."""
    loaded = load_profile(profile_path)
    python, where = image_python(loaded.profile.image)
    if python is None:
        raise ProfileError(f"{loaded.source}: image.python: needed for a lock, and the base "
                           f"{loaded.profile.image.base!r} does not name its Python",
                           hint="add image.python: '3.Y' (the base's python3 -V)")
    dest = lock_path(loaded.base_dir)
    # The lock was read (bounded) with the profile; anything else at that path is not envkit's.
    foreign = dest.exists() and (loaded.lock is None or recorded_hash(loaded.lock.decode("utf-8", "replace")) is None)
    if foreign and not force:
        raise ProfileError(f"{dest}: exists and was not written by `envkit lock`",
                           hint="move it away, or pass --force to replace it (a backup is kept)")
    from envkit.planner import build_plan  # here, not at the top: building the CLI's parser imports every command module

    plan = build_plan(loaded, loaded.base_dir).image  # the image plan generate's Dockerfile installs
    lines = requirements_in(loaded, plan)
    if not lines:
        raise ProfileError(f"{loaded.source}: nothing to lock (no image.torch, pip_packages or requirements)")
    print(f"envkit: locking {len(lines)} requirement(s) for Python {python} ({where}) on {PLATFORM}",
          file=err, flush=True)
    import tempfile  # here, not at the top: building the CLI's parser imports every command module

    with tempfile.TemporaryDirectory(prefix="envkit-lock-") as tmp:
        src, result = Path(tmp) / "requirements.in", Path(tmp) / LOCK_FILE
        src.write_text("\n".join(lines) + "\n")
        # No cache: it would hide an index that no longer serves a file.
        # uv's own temporary folders go inside this one, which is removed however uv ends.
        (Path(tmp) / "uv-tmp").mkdir()
        env = {**os.environ, "UV_NO_CACHE": "1", "TMPDIR": str(Path(tmp) / "uv-tmp"), **index_env(plan)}
        code, lines = run_uv(uv_command() + compile_args(loaded, plan, python, src, result), env, err)
        if code != 0:
            stderr = "\n".join(lines)
            tail = "\n".join("    " + neutralise(line) for line in lines[-25:])
            if network_failure(stderr):
                raise NetworkFailed(f"{loaded.source}: could not reach the package index, so nothing was locked "
                                    f"(the pins were not checked); uv says:\n{tail}",
                                    hint="check the network, the proxy (image.proxy, HTTPS_PROXY) and the index "
                                         "URLs, then run envkit lock again")
            raise ProfileError(f"{loaded.source}: the profile's packages do not resolve for Python {python} "
                               f"on {PLATFORM}; uv says:\n{tail}",
                               hint="change the pins in image.pip_packages / requirements, or image.torch")
        body = result.read_text()
        # uv names the input file in `# via -r /tmp/...`; the temporary path would differ every run.
        body = body.replace(f"-r {src}", "-r profile")
        backup = write_backup(dest) if foreign else None
        if backup is not None:
            print(f"backed up your file to {backup}", file=err)
        replace_file(dest, (header(loaded.profile.name, inputs_digest(loaded, plan), python) + body).encode())
    pins = sum(1 for line in body.splitlines() if line and not line[0].isspace() and not line.startswith("#"))
    if as_json:
        emit(LockDoc(profile=loaded.source, path=str(dest), packages=pins, python=python, platform=PLATFORM,
                     backup=None if backup is None else str(backup)), out)
        out = err
    print(f"wrote {dest} ({pins} packages, with hashes)", file=out)
    return 0


# ---------------------------------------------------------------- command line (envkit.commands' contract)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    profile_argument(parser)
    parser.add_argument("--force", action="store_true", help="replace an envkit.lock.txt envkit did not write")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON document: the lock's path and package count (docs/cli.md)")


def main(args: argparse.Namespace) -> int:
    return run(resolve_profile(args), force=args.force, out=sys.stdout, err=sys.stderr, as_json=args.json)
