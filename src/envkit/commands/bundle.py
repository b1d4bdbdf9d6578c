"""``envkit bundle``: an OCI bundle (rootfs + config.json) of the built image, for Slurm's ``srun --container``.

Slurm's own OCI support runs a bundle through runc/crun (``oci.conf``). config.json carries the
same run settings as run.sh:

- ``/dev/shm`` a tmpfs of ``run.shm_size`` (Docker's 64 MiB when unset; the node's /dev/shm under
  ``ipc: host``);
- ``process.rlimits`` from ``run.ulimits`` in a root bundle. Root's runc sets them itself, soft and
  hard, whatever slurmd's limits are: it calls prlimit on the container's init holding
  CAP_SYS_RESOURCE (runc ``libcontainer/process_linux.go``, ``setupRlimits``), which lets it raise a
  hard limit (Linux ``kernel/sys.c``, ``do_prlimit``). Only ``nofile`` above the node's
  ``fs.nr_open`` fails ("error setting rlimit type 7"): do_prlimit refuses that for everyone. A
  rootless bundle has none: an unprivileged runtime cannot raise a hard limit, so the container
  keeps the step's limits, which the batch script's ``ulimit -S`` raised;
- who the container runs as (:func:`identity`): built by root, ``image.user`` (uid/gid) with no
  user namespace; built by anyone else, a user namespace mapping the container's root to that
  user, who is the one submitting (Slurm runs the runtime as the job's user, rootless);
- ``process.cwd`` ``image.workdir``;
- ``process.env``: the image's environment, then ``run.env`` (and the proxy);
- mounts: the project folder (``run.mount_project``) and ``run.volumes``, sources made absolute
  from the profile's folder, plus the node's /etc/hosts and /etc/resolv.conf;
- namespaces ipc and mount (and user, rootless): the job shares the node's network, host name and process ids, as
  pyxis and Apptainer do. torchrun's c10d rendezvous tells nodes apart by (host name, pid): with
  ``runc spec``'s uts and pid namespaces every node's agent is ("runc", 1) -- on one host even
  with the node's host name it is (host, 1) -- so the nodes count as one and the rendezvous
  times out (docs/slurm.md, "Rendezvous in containers").

The bundle folder gets a marker file; an existing folder without it (or a non-empty one) is
never overwritten. Rebuilding over envkit's own bundle replaces it.

Example:
    >>> from envkit.profile import load_profile
    >>> from envkit.runsettings import RunSettings
    >>> p = load_profile(None).profile
    >>> cfg = oci_config(p, RunSettings.from_profile(p), image_env=["PATH=/usr/bin"], base_dir=Path("/p"))
    >>> [m["options"][-1] for m in cfg["mounts"] if m["destination"] == "/dev/shm"]
    ['size=2147483648']
    >>> cfg["process"]["user"], "uidMappings" in cfg["linux"]
    ({'uid': 1000, 'gid': 1000}, False)
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import os
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from envkit.commands import profile_argument, resolve_profile
from envkit.errors import EngineError, UsageError
from envkit.profile import load_profile
from envkit.profile.model import Profile
from envkit.runsettings import RunSettings
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
RLIM_INFINITY = 2**64 - 1  # what the OCI spec's uint64 rlimits use for "unlimited"
# Every capability Docker grants by default (runc spec's smaller set breaks apt, chown, ping).
DEFAULT_CAPS = ["CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD", "CAP_NET_RAW",
                "CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE",
                "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE"]


@dataclass(frozen=True)
class Identity:
    """Who the container's process is, and the user namespace that makes it so (None: none)."""

    uid: int
    gid: int
    # (container id, host id) of the one uid and gid mapped, or None without a user namespace.
    uid_map: tuple[int, int] | None
    gid_map: tuple[int, int] | None

    @property
    def rootless(self) -> bool:
        return self.uid_map is not None

    def describe(self) -> str:
        if self.uid_map is None:
            return f"uid {self.uid}"
        return f"root in a user namespace, mapped to uid {self.uid_map[1]} (the submitter)"


def identity(image_uid: int, image_gid: int, submitter: tuple[int, int] | None) -> Identity:
    """The container's user for a bundle that ``submitter`` (uid, gid; None: root) runs.

    Slurm runs the OCI runtime as the job's user, rootless (SchedMD containers guide, "Known
    limitations"; its oci.conf examples pass ``runc --rootless=true``), and rootless runc needs a
    user namespace (runc ``libcontainer/configs/validate/rootless.go``). Without newuidmap and
    subordinate ids an unprivileged runtime can map one uid and one gid: the submitter's own. runc
    also needs the container's root mapped (``HostRootUID``, ``libcontainer/configs/config_linux.go``),
    so the one mapping is root -> submitter and the process is root inside: it owns the root
    filesystem the submitter unpacked, and what it writes to a bind mount is the submitter's.
    ``image.user`` stays the user only where no mapping is needed: a bundle root runs.

    >>> identity(1001, 1001, None)
    Identity(uid=1001, gid=1001, uid_map=None, gid_map=None)
    >>> identity(1001, 1001, (2345, 100)).describe()
    'root in a user namespace, mapped to uid 2345 (the submitter)'
    """
    if submitter is None:
        return Identity(image_uid, image_gid, None, None)
    return Identity(0, 0, (0, submitter[0]), (0, submitter[1]))


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


def _rlimit(value: int) -> int:
    return RLIM_INFINITY if value < 0 else value


def _mounts(p: Profile, rs: RunSettings, base_dir: Path, who: Identity) -> list[dict]:
    shm = rs.effective_shm
    mounts: list[dict] = [
        # A new proc needs a pid namespace owned by the user namespace (mount_too_revealing): a
        # rootless container that keeps the node's pids bind-mounts the node's /proc instead.
        {"destination": "/proc", "type": "bind", "source": "/proc", "options": ["rbind", "nosuid", "noexec", "nodev"]}
        if who.rootless else {"destination": "/proc", "type": "proc", "source": "proc"},
        {"destination": "/dev", "type": "tmpfs", "source": "tmpfs",
         "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
        {"destination": "/dev/pts", "type": "devpts", "source": "devpts",
         "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"]},
        # /dev/shm sized from the workload, like --shm-size.
        {"destination": "/dev/shm", "type": "tmpfs", "source": "shm",
         "options": ["nosuid", "noexec", "nodev", "mode=1777", f"size={shm}"]}
        if shm is not None else
        {"destination": "/dev/shm", "type": "bind", "source": "/dev/shm", "options": ["rbind", "rw"]},
        {"destination": "/dev/mqueue", "type": "mqueue", "source": "mqueue", "options": ["nosuid", "noexec", "nodev"]},
        {"destination": "/sys", "type": "bind", "source": "/sys", "options": ["rbind", "nosuid", "noexec", "nodev", "ro"]},
        # The node's name resolution, so the rendezvous host and the other nodes resolve as on the node.
        {"destination": "/etc/hosts", "type": "bind", "source": "/etc/hosts", "options": ["rbind", "ro"]},
        {"destination": "/etc/resolv.conf", "type": "bind", "source": "/etc/resolv.conf", "options": ["rbind", "ro"]},
    ]
    for v in rs.volumes:
        src = (base_dir / v.source).resolve() if v.is_relative else Path(v.source)
        ro = v.mode is not None and v.mode.startswith("ro")
        mounts.append({"destination": v.target, "type": "bind", "source": str(src),
                       "options": ["rbind", "ro" if ro else "rw"]})
    return mounts


def oci_config(p: Profile, rs: RunSettings, *, image_env: list[str], base_dir: Path,
               submitter: tuple[int, int] | None = None) -> dict:
    """The bundle's config.json (OCI runtime spec 1.0) from the profile's run settings, for a bundle
    run by ``submitter`` ((uid, gid); None: root, see :func:`identity`)."""
    who = identity(p.image.user.uid, p.image.user.gid, submitter)
    env = {}
    for item in image_env:
        key, _, value = item.partition("=")
        env[key] = value
    env.update(dict(rs.env))
    caps = list(DEFAULT_CAPS)
    # Lets mlock go past RLIMIT_MEMLOCK (RDMA registration). The kernel checks it in the initial
    # user namespace, so inside a rootless one it does nothing: there only the node's limit counts.
    if any(u.name == "memlock" for u in rs.ulimits) and not who.rootless:
        caps.append("CAP_IPC_LOCK")
    namespaces = [{"type": "ipc"}, {"type": "mount"}]
    linux: dict = {}
    if who.uid_map is not None and who.gid_map is not None:
        namespaces.append({"type": "user"})
        linux["uidMappings"] = [{"containerID": who.uid_map[0], "hostID": who.uid_map[1], "size": 1}]
        linux["gidMappings"] = [{"containerID": who.gid_map[0], "hostID": who.gid_map[1], "size": 1}]
    return {
        "ociVersion": "1.0.2",
        "process": {
            "terminal": False,
            "user": {"uid": who.uid, "gid": who.gid},
            # Slurm replaces args with the srun command; this is what `runc run` alone would start.
            "args": ["/bin/bash"],
            "env": [f"{k}={v}" for k, v in env.items()],
            "cwd": p.image.workdir,
            "capabilities": {k: caps for k in ("bounding", "effective", "permitted")},
            # Rootless: none (module docstring); the step's own limits apply.
            "rlimits": [] if who.rootless else [
                {"type": f"RLIMIT_{u.name.upper()}", "soft": _rlimit(u.soft), "hard": _rlimit(u.hard)}
                for u in rs.ulimits],
            "noNewPrivileges": True,
        },
        "root": {"path": "rootfs", "readonly": False},
        "mounts": _mounts(p, rs, base_dir, who),
        "linux": {
            # No network, uts or pid namespace: the node's interfaces, host name and pids (module docstring).
            "namespaces": namespaces,
            **linux,
            "maskedPaths": ["/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
                            "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/sys/firmware",
                            "/proc/scsi"],
            "readonlyPaths": ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"],
        },
    }


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

    loaded = load_profile(profile_path)
    p = loaded.profile
    image = image or p.image_tag
    check_destination(out_dir)
    rs = RunSettings.from_profile(p)
    # Build next to the destination, then swap: a failed export never leaves half a bundle behind.
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".envkit-bundle-", dir=out_dir.parent))
    submitter = current_submitter()
    who = identity(p.image.user.uid, p.image.user.gid, submitter)
    try:
        image_id, image_env = export_rootfs(image, staging / "rootfs", err, shown_as=out_dir)
        config = oci_config(p, rs, image_env=image_env, base_dir=loaded.base_dir, submitter=submitter)
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
