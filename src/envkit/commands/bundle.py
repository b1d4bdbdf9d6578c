"""``envkit bundle``: an OCI bundle (rootfs + config.json) of the built image, for Slurm's ``srun --container``.

config.json is the plan's (:func:`envkit.targets.oci.oci_config`): the same run settings as run.sh,
and who the container runs as (:func:`current_submitter`).

The bundle folder gets a marker file; an existing folder without it (or a non-empty one) is
never overwritten. Rebuilding over envkit's own bundle replaces it.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import os
import stat
import sys
from pathlib import Path
from typing import TextIO

from envkit.commands.arguments import profile_argument, resolve_profile
from envkit.errors import EngineError, UsageError
from envkit.profile import load_profile
from envkit.targets.oci import identity, oci_config
from envkit.safeio import FileRefused
from envkit.termtext import neutralise
from envkit.units import format_size

MARKER = ".envkit-bundle"
BUNDLE_LABEL = "io.envkit.bundle"
# The file system refusing the unpack (full, over quota, read-only, not writable) is the user's
# storage, not the engine: docs/cli.md's exit codes give it 1. tar reports most with strerror's text
# (GNU tar ``src/misc.c``, ``open_error``/``write_error`` print ``strerror(errno)``), but a short
# write on a full disk only as "Wrote only N of M bytes" (``write_error_details``), with no errno:
# then a probe written into the same folder asks the file system itself (:func:`_refusal`).
_REFUSALS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES)
_PROBE_BYTES = 64 * 1024  # above tar's 10 KiB record: a short write left less than that free


def _refusal(tar_err: str, folder: Path) -> str | None:
    """The file system's refusal (its strerror) that made tar fail in ``folder``, or None: another cause."""
    for code in _REFUSALS:
        if os.strerror(code) in tar_err:
            return os.strerror(code)
    probe = folder / ".envkit-space-probe"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, b"\0" * _PROBE_BYTES)
            os.fsync(fd)  # delayed allocation reports ENOSPC/EDQUOT only here
        finally:
            os.close(fd)
    except OSError as exc:
        return os.strerror(exc.errno) if exc.errno in _REFUSALS else None
    finally:
        with contextlib.suppress(OSError):
            probe.unlink()
    return None
def current_submitter() -> tuple[int, int] | None:
    """(uid, primary gid) of the user running envkit, who is the one submitting; None for root.

    The primary group from the user database, not the effective gid: under ``sg docker -c ...``
    that is the docker group's. Slurm starts the job with the gid sbatch runs with (slurmctld
    ``proc_req.c`` ``_valid_id`` takes the authenticated gid), which from a login shell is this one.
    """
    import pwd  # here: POSIX only, and building the CLI's parser imports every command module

    euid = os.geteuid()
    if euid == 0:
        return None
    try:
        return euid, pwd.getpwuid(euid).pw_gid
    except KeyError:  # a uid with no passwd entry (some containers): its gid is all there is
        return euid, os.getegid()


def check_destination(out_dir: Path) -> None:
    """Refuse a folder envkit did not write: it must be missing, empty, or carry the marker."""
    if not out_dir.exists():
        return
    if not out_dir.is_dir():
        raise UsageError(f"{out_dir}: exists and is not a folder; choose another -o")
    if any(out_dir.iterdir()) and not (out_dir / MARKER).is_file():
        raise UsageError(f"{out_dir}: not empty and not a bundle envkit wrote (no {MARKER}); "
                         "refusing to overwrite it", hint="choose another -o, or remove that folder yourself")


def export_rootfs(image: str, rootfs: Path, err: TextIO | None = None, *,
                  shown_as: Path | None = None) -> tuple[str, list[str]]:
    """``docker export`` of a (never started) container of ``image`` into ``rootfs``: (image id, its Env).

    With ``err``, the bytes exported so far are shown there (:class:`envkit.progress.StatusLine`: one
    line redrawn on a terminal, a plain line every few seconds on a pipe): a root filesystem is GBs.
    A file system that refuses the unpack (``_REFUSALS``) is FileRefused naming ``shown_as``, the
    bundle folder the user asked for (default: ``rootfs``'s folder).
    """
    import subprocess  # here, not at the top: building the CLI's parser imports every command module

    from envkit.engine import connect
    from envkit.harness.report import human_bytes
    from envkit.progress import StatusLine

    status = StatusLine(err, every=5.0) if err is not None else None
    sent = 0

    engine = connect()
    try:
        rootfs.mkdir(parents=True)
        tar = subprocess.Popen(["tar", "-x", "--numeric-owner", "--preserve-permissions", "--anchored", "--exclude=dev/*",
                                "-C", str(rootfs)], stdin=subprocess.PIPE,
                               stderr=subprocess.PIPE)
        # Both pipes were asked for above; the asserts tell mypy so.
        assert tar.stdin is not None and tar.stderr is not None
        exported: tuple[str, list[str]] | None = None

        def write(chunk: bytes) -> None:
            nonlocal sent
            assert tar.stdin is not None
            tar.stdin.write(chunk)
            sent += len(chunk)
            if status is not None:
                status.show(f"envkit: exporting {image}: {human_bytes(sent)}")

        try:
            exported = engine.export_image(image, write, labels={BUNDLE_LABEL: "1"})
        except BrokenPipeError:  # tar stopped reading: its own message, below, says why
            pass
        finally:
            with contextlib.suppress(BrokenPipeError):
                tar.stdin.close()
            with tar.stderr:
                tar_err = tar.stderr.read().decode(errors="replace")
            code = tar.wait()
        if status is not None:
            status.say(f"envkit: exported {image}: {human_bytes(sent)}")
        refused = _refusal(tar_err, rootfs.parent) if code != 0 else None
        if refused is not None:
            where = neutralise(str(shown_as or rootfs.parent))
            raise FileRefused(f"{where}: the file system refused the bundle ({refused}) while unpacking {image} "
                              f"into {neutralise(str(rootfs))}; nothing of it is left there",
                              hint="free space (or quota) on that file system, make it writable, or choose another -o")
        if code != 0 or exported is None:
            raise EngineError(f"unpacking {image} into {rootfs} failed: {tar_err.strip()[-500:] or f'tar exited {code}'}")
    finally:
        engine.close()
    image_id, env = exported
    return image_id, env


def remove_tree(path: Path) -> None:
    """Remove a bundle folder, also as the non-root user who unpacked it: an image's folders that
    its owner may not write or enter (0555, 0500, even 0000) are opened to the owner first, top
    down, since only root may list or unlink inside them. Links are never followed."""
    import shutil  # here, not at the top: building the CLI's parser imports every command module

    def open_to_owner(folder: str) -> None:
        with contextlib.suppress(OSError):  # not ours (root's bundle as root: nothing to do)
            mode = os.lstat(folder).st_mode
            if stat.S_ISDIR(mode) and stat.S_IMODE(mode) & stat.S_IRWXU != stat.S_IRWXU:
                os.chmod(folder, stat.S_IMODE(mode) | stat.S_IRWXU)

    open_to_owner(str(path))
    for top, folders, _files in os.walk(path):  # top down: each folder is opened before it is entered
        for name in folders:
            open_to_owner(os.path.join(top, name))
    shutil.rmtree(path)


def run(profile_path: Path | None, image: str | None, out_dir: Path, *, out: TextIO, err: TextIO) -> int:
    import tempfile  # here, not at the top: building the CLI's parser imports every command module

    from envkit.planner import build_plan  # here, not at the top: building the CLI's parser imports every command module

    loaded = load_profile(profile_path)
    p = loaded.profile
    image = image or p.image_tag
    check_destination(out_dir)
    plan = build_plan(loaded)
    rs = plan.settings
    # Build next to the destination, then swap: a failed export never leaves half a bundle behind.
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".envkit-bundle-", dir=out_dir.parent))
    submitter = current_submitter()
    who = identity(p.image.user.uid, p.image.user.gid, submitter)
    try:
        image_id, image_env = export_rootfs(image, staging / "rootfs", err, shown_as=out_dir)
        config = oci_config(plan, user=(p.image.user.uid, p.image.user.gid), workdir=p.image.workdir,
                            image_env=image_env, base_dir=loaded.base_dir, submitter=submitter)
        (staging / "config.json").write_text(json.dumps(config, indent=2) + "\n")
        # runs_for_uid: the one uid whose jobs can run it (the batch script checks it before the first step).
        (staging / MARKER).write_text(json.dumps({"image": image, "image_id": image_id,
                                                  "profile_sha256": loaded.sha256,
                                                  "runs_for_uid": submitter[0] if submitter else 0}) + "\n")
        if out_dir.exists():
            remove_tree(out_dir)
        staging.rename(out_dir)
    finally:
        if staging.exists():
            with contextlib.suppress(OSError):
                remove_tree(staging)
    shm = format_size(rs.effective_shm) if rs.effective_shm is not None else "the node's"
    # A rootless bundle sets none: the step's own limits apply (oci_config).
    rlimits = "the step's rlimits" if who.rootless else f"{len(config['process']['rlimits'])} rlimits"
    print(f"wrote {out_dir}: rootfs of {image}, config.json (/dev/shm {shm}, {rlimits}, "
          f"runs as {who.describe()})", file=out)
    return 0


# ---------------------------------------------------------------- command line (envkit.commands' contract)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    profile_argument(parser)
    parser.add_argument("--image", default=None, help="the built image (default: the profile's image tag)")
    parser.add_argument("-o", "--output", type=Path, required=True, help="bundle folder (on storage every node sees)")


def main(args: argparse.Namespace) -> int:
    return run(resolve_profile(args), args.image, args.output, out=sys.stdout, err=sys.stderr)
