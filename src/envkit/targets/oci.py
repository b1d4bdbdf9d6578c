"""The OCI runtime config (config.json) of a bundle, from the plan: ``envkit bundle`` writes it.

Slurm's own OCI support runs a bundle through runc/crun (``oci.conf``). config.json carries the
same run settings as run.sh (the plan's :class:`~envkit.plan.runsettings.RunSettings`):

- ``/dev/shm`` a tmpfs of the planned size (the node's /dev/shm under ``ipc: host``);
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
  from the profile's folder, plus the node's /etc/hosts and /etc/resolv.conf, and on an RDMA fabric the
  node's /dev/infiniband (with the verbs devices allowed in a root bundle's device cgroup);
- namespaces ipc and mount (and user, rootless): the job shares the node's network, host name and process ids, as
  pyxis and Apptainer do. torchrun's c10d rendezvous tells nodes apart by (host name, pid): with
  ``runc spec``'s uts and pid namespaces every node's agent is ("runc", 1) -- on one host even
  with the node's host name it is (host, 1) -- so the nodes count as one and the rendezvous
  times out (docs/slurm.md, "Rendezvous in containers").

Pure: the same plan and arguments give the same document.

Example:
    >>> from envkit.planner import build_plan
    >>> from envkit.profile import load_profile
    >>> plan = build_plan(load_profile(None))
    >>> cfg = oci_config(plan, user=(1000, 1000), workdir="/workspace", image_env=["PATH=/usr/bin"],
    ...                  base_dir=Path("/p"))
    >>> [m["options"][-1] for m in cfg["mounts"] if m["destination"] == "/dev/shm"]
    ['size=2147483648']
    >>> cfg["process"]["user"], cfg["process"]["cwd"], "uidMappings" in cfg["linux"]
    ({'uid': 1000, 'gid': 1000}, '/workspace', False)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from envkit.plan.envplan import EnvPlan
    from envkit.plan.runsettings import RunSettings

UVERBS_MAJOR = 231
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


def _rlimit(value: int) -> int:
    return RLIM_INFINITY if value < 0 else value


def _mounts(rs: RunSettings, base_dir: Path, who: Identity) -> list[dict]:
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
    # The node's RDMA devices (cluster.network on an RDMA fabric), as docker run --device gives them.
    mounts += [{"destination": d, "type": "bind", "source": d, "options": ["rbind", "rw"]} for d in rs.devices]
    return mounts


def oci_config(plan: EnvPlan, *, user: tuple[int, int], workdir: str, image_env: list[str], base_dir: Path,
               submitter: tuple[int, int] | None = None) -> dict:
    """The bundle's config.json (OCI runtime spec 1.0) from the plan's run settings, for a bundle
    run by ``submitter`` ((uid, gid); None: root, see :func:`identity`).

    ``user``: the image's (uid, gid); ``workdir``: its working folder; ``image_env``: the built
    image's ``Env``; ``base_dir``: the folder relative volume sources start in (the profile's)."""
    rs = plan.settings
    who = identity(user[0], user[1], submitter)
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
    if rs.devices and not who.rootless:
        # runc's device cgroup denies what it does not list: the verbs devices are char major 231
        # (Linux include/rdma/ib_user_verbs.h: IB_UVERBS_MAJOR). A rootless runc sets no device cgroup.
        linux["resources"] = {"devices": [{"allow": True, "type": "c", "major": UVERBS_MAJOR, "access": "rw"}]}
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
            "cwd": workdir,
            "capabilities": {k: caps for k in ("bounding", "effective", "permitted")},
            # Rootless: none (module docstring); the step's own limits apply.
            "rlimits": [] if who.rootless else [
                {"type": f"RLIMIT_{u.name.upper()}", "soft": _rlimit(u.soft), "hard": _rlimit(u.hard)}
                for u in rs.ulimits],
            "noNewPrivileges": True,
        },
        "root": {"path": "rootfs", "readonly": False},
        "mounts": _mounts(rs, base_dir, who),
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
