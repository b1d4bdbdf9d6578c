"""The profile ``envkit init`` writes: the commented default, with its sizes fitted to one machine.

The machine is this host (its CPUs, memory and NVIDIA GPUs, read through doctor's
:class:`~envkit.doctor.host.Host` seam) or a preset (:data:`PRESETS`). The default profile's text
keeps every comment; only these lines change:

- ``run.cpuset``: the CPUs there are; ``loader.num_workers``: one CPU fewer (at most 6), for the
  training process;
- ``run.memory``: the memory less :data:`~envkit.advice.wslvm.VM_HEADROOM` for the OS and Docker, at
  most 32g (what doctor's memory check passes), ``run.shm_size`` at most a quarter of it;
- without a GPU: no ``run.gpus`` and the ``cpu`` torch wheels (a CUDA wheel is gigabytes);
- ``wsl:`` only on native Windows (and in the laptop and workstation presets): ``wsl.memory`` is three
  quarters of the PC's RAM, at most the container's memory plus 8 GB, and ``wsl.processors`` its
  logical CPUs; the container's memory then fits inside the VM;
- ``run.ulimits.memlock`` only in the cluster preset (RDMA between nodes), which adds a two-node
  ``cluster:`` section.

Example:
    >>> text, said = fitted_profile(PRESETS["laptop"])
    >>> [line.split("#")[0].strip() for line in text.splitlines() if line.strip().startswith(("cpuset", "memory", "proc"))]
    ['cpuset: "0-3"', 'memory: 10g', 'memory: 12GB', 'processors: 4']
    >>> said.split(": ")[0]
    'the laptop preset (4 CPUs, 16.0 GiB, no NVIDIA GPU)'
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from envkit.advice.wslvm import VM_HEADROOM
from envkit.harness.probes.cpulist import format_cpulist
from envkit.harness.rules.sizing import GIB, docker_size

MEMORY_CAP = 32 * GIB  # the default profile's container: a bigger one is the user's choice
SHM_CAP = 2 * GIB
WORKERS_CAP = 6
WSL_ROOM = 8 * GIB  # the VM beside the container: page cache, Docker, the distribution
DEFAULT_NOFILE = 65536  # the default profile's run.ulimits.nofile


@dataclass(frozen=True)
class Machine:
    """What a profile is fitted to. ``windows``: write a ``wsl:`` section sized from this PC."""

    what: str
    cpu_ids: tuple[int, ...]
    memory_bytes: int
    gpus: bool
    windows: bool = False
    cluster: bool = False
    memory_cap: int | None = MEMORY_CAP
    nofile_limit: int | None = None  # the engine's hard nofile (the Docker daemon's), where it could be read


PRESETS = {
    "laptop": Machine("the laptop preset", tuple(range(4)), 16 * GIB, gpus=False, windows=True),
    "workstation": Machine("the workstation preset", tuple(range(8)), 64 * GIB, gpus=True, windows=True),
    "cluster": Machine("the cluster preset", tuple(range(32)), 256 * GIB, gpus=True, cluster=True, memory_cap=None),
}

CLUSTER = """
cluster:
  nodes: 2                     # each node runs one torchrun with a process per GPU
  gpus_per_node: 8
  entrypoint: [train.py]
  # image: registry.example.com/ml/vision-train:1.0   # what the nodes pull: push the built image there
"""


def this_machine(host) -> Machine:
    """The host as ``envkit init`` sizes for it (``host``: an :class:`envkit.doctor.host.Host`)."""
    from envkit.doctor.checks import detect_wsl
    from envkit.doctor.gpu import host_smi

    ids = host.cpu_ids() or (0,)
    memory = host.memory_bytes() or 8 * GIB
    smi = host_smi(host)
    # nvidia-smi, where there is one, decides ("No devices were found" is no GPU, whatever /dev holds).
    gpus = bool(smi["gpus"]) if smi["path"] else (host.exists("/dev/nvidia0") or host.exists("/usr/lib/wsl/lib/libcuda.so.1")
                                                   or host.exists("/usr/lib/wsl/lib/libcuda.so"))
    windows = host.platform.startswith("win")
    where = "this PC" if windows else ("this WSL 2 VM" if detect_wsl(host)["version"] == 2 else "this host")
    nofile = (host.daemon().limits or {}).get("nofile")  # what this engine grants a container (its hard limit)
    return Machine(where, tuple(ids), memory, gpus, windows=windows, nofile_limit=nofile[1] if nofile else None)


def _gib(n: int) -> str:
    return f"{n / GIB:.1f} GiB"


def _set(text: str, pattern: str, line: str) -> str:
    new, count = re.subn(pattern, line.replace("\\", "\\\\"), text, count=1, flags=re.M)
    assert count == 1, f"the default profile has no line matching {pattern!r}"  # a test renders every preset
    return new


def fitted_profile(m: Machine, default_text: str | None = None) -> tuple[str, str]:
    """The default profile's text fitted to ``m``, and one line saying what was chosen."""
    if default_text is None:
        from envkit.profile import default_profile_text

        default_text = default_profile_text()
    cpus = len(m.cpu_ids)
    workers = max(0, min(WORKERS_CAP, cpus - 1))
    room = m.memory_bytes
    wsl_memory = None
    if m.windows:  # the VM takes part of the PC; the container lives inside the VM
        wsl_memory = max(2 * GIB, (room * 3 // 4) // GIB * GIB)
        if m.memory_cap is not None:
            wsl_memory = min(wsl_memory, m.memory_cap + WSL_ROOM)
        room = wsl_memory
    memory = max(GIB, (room - VM_HEADROOM) // GIB * GIB)
    if m.memory_cap is not None:
        memory = min(memory, m.memory_cap)
    shm = min(SHM_CAP, max(GIB // 4, memory // 4 // (GIB // 4) * (GIB // 4)))
    cpuset = format_cpulist(m.cpu_ids)
    t = default_text
    if m.cluster:  # nodes schedule a count of CPUs, and have none of this machine's folders
        t = _set(t, r'^  cpuset: "[^"]*"$', f"  cpus: {cpus}                     # a count: Kubernetes and Slurm cannot pin cores")
        t = _set(t, r"^  volumes: .*$", "  volumes: []                 # nodes lack this machine's folders: "
                 "cluster.kubernetes.volumes mounts claims")
    else:
        t = _set(t, r'^  cpuset: "[^"]*"$', f'  cpuset: "{cpuset}"')
    t = _set(t, r"^  memory: \S+$", f"  memory: {docker_size(memory)}")
    t = _set(t, r"^  shm_size: \S+", f"  shm_size: {docker_size(shm)}")
    t = _set(t, r"^  num_workers: \S+$", f"  num_workers: {workers}")
    if m.nofile_limit is not None and m.nofile_limit != -1 and m.nofile_limit < DEFAULT_NOFILE:
        # A container asking above the daemon's hard limit may not start ('error setting rlimit type 7').
        t = _set(t, rf"^    nofile: {DEFAULT_NOFILE}$", f"    nofile: {m.nofile_limit}             # the Docker daemon's "
                 "hard limit here; raise it (LimitNOFILE) for more")
    chosen = [f"run.cpus {cpus}" if m.cluster else f"run.cpuset {cpuset}", f"run.memory {docker_size(memory)}",
              f"run.shm_size {docker_size(shm)}",
              f"loader.num_workers {workers}"]
    if m.nofile_limit is not None and m.nofile_limit != -1 and m.nofile_limit < DEFAULT_NOFILE:
        chosen.append(f"run.ulimits.nofile {m.nofile_limit} (the Docker daemon's hard limit)")
    if not m.gpus:
        t = _set(t, r"^    variant: cu\d+ .*$", "    variant: cpu                # cpu | cuXYZ | rocmX.Y -> the matching "
                 "PyTorch wheel index (no NVIDIA GPU here)")
        t = _set(t, r"^  gpus: all$", "  # gpus: all                  # no NVIDIA GPU was seen: uncomment on a GPU machine "
                 "(and use a cuXYZ variant)")
        t = _set(t, r"^  pin_memory: true$", "  pin_memory: false            # pinned memory only helps copies to a GPU")
        chosen += ["torch cpu", "no GPUs"]
    else:
        chosen += ["torch cu124", "run.gpus all"]
    head, sep, _wsl = t.partition("\nwsl:\n")
    if wsl_memory is not None:
        t = _set(t, r"^  memory: \S+GB( .*)?$", f"  memory: {wsl_memory // GIB}GB                 # the container's "
                 f"{docker_size(memory)} limit (its shm charged inside it) plus room for the VM")
        t = _set(t, r"^  processors: \d+$", f"  processors: {cpus}")
        chosen += [f"wsl.memory {wsl_memory // GIB}GB", f"wsl.processors {cpus}"]
    else:
        assert sep, "the default profile has a wsl: section"
        t = head + "\n"
        chosen.append("no wsl section" + (" (the VM's size is .wslconfig's, set from Windows)"
                                          if "WSL" in m.what else ""))
    if not m.cluster:  # an unlimited memlock is for RDMA between nodes; elsewhere it only risks the start
        t = _set(t, r"^    memlock: -1 .*$", "    # memlock: -1               # RDMA/NCCL over InfiniBand between nodes; "
                 "CUDA pinned memory does not need it")
    if m.cluster:
        t = t.rstrip("\n") + "\n" + CLUSTER
        chosen.append("a 2-node cluster section")
    gpu = "NVIDIA GPU" if m.gpus else "no NVIDIA GPU"
    facts = f"{cpus} CPU{'s' if cpus != 1 else ''}, {_gib(m.memory_bytes)}, {gpu}"
    return t, f"{m.what} ({facts}): " + ", ".join(chosen)
