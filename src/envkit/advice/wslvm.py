"""Warnings for the profile's ``wsl`` section: does the WSL2 VM fit the container it must host?

The container runs inside the WSL2 VM, so the VM's ``memory`` and
``processors`` are hard ceilings for ``run.memory``, ``run.shm_size`` (tmpfs
pages count as memory), ``run.cpuset`` and the DataLoader's workers. Each
warning names the values involved and the value to use instead.

Example:
    >>> from envkit.profile.model import Profile
    >>> p = Profile.model_validate({"envkit": 1, "name": "d", "image": {"base": "debian:bookworm"},
    ...                             "run": {"memory": "32g"}, "wsl": {"memory": "16GB"}})
    >>> from envkit.plan.loader import loader_plan
    >>> print(wsl_warnings(p, loader_plan(p))[0])
    wsl.memory is 16GB but the container asks for 32GB (run.memory); the WSL2 VM must hold the container: set wsl.memory to at least 34GB
"""

from __future__ import annotations

import math

from envkit.findings import Finding
from envkit.plan.loader import LoaderPlan
from envkit.harness.rules.sizing import GIB, PROCESS_RSS
from envkit.profile.model import Profile
from envkit.profile.wsl import GRADUAL_RECLAIM_NOTE
from envkit.units import format_wsl_size

# Beyond these, a value is almost certainly a typo: few workstations have more.
TYPICAL_MAX_MEMORY = 256 * GIB
TYPICAL_MAX_PROCESSORS = 128
# What the VM needs besides the container: the kernel, the distribution, dockerd.
VM_HEADROOM = 2 * GIB


def _gb(n: int) -> str:
    return format_wsl_size(n) if n % GIB == 0 else f"{n / GIB:.1f}GB"


def _round_up_gib(n: int) -> int:
    return int(math.ceil(n / GIB)) * GIB


def container_memory_need(profile: Profile, the_plan: LoaderPlan) -> tuple[int, str]:
    """Bytes the container needs in the VM and how that was worked out.

    ``run.memory`` when set (the container may grow to it); otherwise the plan's memory
    need (:func:`envkit.plan.loader.loader_plan`): the loader's /dev/shm need plus
    :data:`~envkit.harness.rules.sizing.PROCESS_RSS` for the training process and each worker.
    ``the_plan``: the run's loader plan (``envkit doctor`` passes the host's).
    """
    if profile.run.memory:
        return profile.run.memory, "run.memory"
    p = the_plan
    shm = p.memory_need - p.processes * PROCESS_RSS
    return p.memory_need, (f"the loaders' shm {_gb(shm)} + ~{_gb(PROCESS_RSS)} for each of "
                           f"{p.processes} processes (training + workers)")


def wsl_warnings(profile: Profile, the_plan: LoaderPlan) -> list[Finding]:
    """Every warning for ``profile.wsl`` (empty when there is no ``wsl`` section or nothing to say);
    ``the_plan``: the run's loader plan."""
    wsl = profile.wsl
    if wsl is None:
        return []
    out: list[Finding] = []
    if wsl.memory is not None:
        if wsl.memory > TYPICAL_MAX_MEMORY:
            out.append(Finding(None, f"wsl.memory is {_gb(wsl.memory)}, which exceeds what most hosts have "
                       f"(> {_gb(TYPICAL_MAX_MEMORY)}); WSL cannot give the VM more than the machine's RAM"))
        need, how = container_memory_need(profile, the_plan)
        if wsl.memory < need:
            out.append(Finding(None, f"wsl.memory is {_gb(wsl.memory)} but the container asks for {_gb(need)} ({how}); "
                       f"the WSL2 VM must hold the container: set wsl.memory to at least "
                       f"{_gb(_round_up_gib(need + VM_HEADROOM))}"))
    if wsl.processors is not None:
        out.extend(_processor_warnings(profile, wsl.processors))
    if wsl.swap == 0:
        out.append(Finding(None, "wsl.swap is 0, so the VM has no swap: when it runs out of memory the Linux OOM killer "
                   "ends processes (a DataLoader worker 'killed by signal: Killed') instead of slowing down; "
                   "keep swap unless you want that"))
    modes = [("wsl.networkingMode", wsl.networkingMode)]
    if wsl.experimental is not None:
        modes.append(("wsl.experimental.networkingMode", wsl.experimental.networkingMode))
    for key, mode in modes:
        if mode == "bridged":
            out.append(Finding(key, "bridged is deprecated by Microsoft; use mirrored (Windows 11 22H2+) or nat"))
    # [wsl2] networkingMode, else the older [experimental] spelling, decides the mode.
    mirrored = next(((key for key, mode in modes if mode is not None)), None)
    mirrored = mirrored if mirrored and dict(modes)[mirrored] == "mirrored" else None
    if mirrored and wsl.localhostForwarding is not None:
        out.append(Finding(None, f"wsl.localhostForwarding is set but {mirrored} is mirrored, and WSL ignores localhostForwarding "
                   "in mirrored mode (Windows and the VM share localhost there already): drop "
                   "wsl.localhostForwarding, or use networkingMode: nat if you rely on it"))
    if wsl.experimental is not None and wsl.experimental.autoMemoryReclaim == "gradual":
        out.append(Finding("wsl.experimental.autoMemoryReclaim", GRADUAL_RECLAIM_NOTE))
    out.extend(_wsl_conf_warnings(profile))
    return out


def _wsl_conf_warnings(profile: Profile) -> list[Finding]:
    conf = profile.wsl.wsl_conf if profile.wsl else None
    default = conf.user.default if conf is not None and conf.user is not None else None
    if not default:
        return []
    container = profile.image.user.name
    same = (f"; it happens to share its name with the container user image.user.name ({container}), but the "
            "image's user does not exist in the distribution" if default == container else
            f", not the container user image.user.name ({container})")
    return [Finding(None, f"wsl.wsl_conf.user.default is {default}: that user must already exist in the distribution (it is "
            f"the user WSL logs in as{same}); create it first (inside the distribution: sudo adduser {default}), "
            "else WSL cannot log in as the default user")]


def _processor_warnings(profile: Profile, processors: int) -> list[Finding]:
    out: list[Finding] = []
    if processors > TYPICAL_MAX_PROCESSORS:
        out.append(Finding(None, f"wsl.processors is {processors}, which exceeds what most hosts have "
                   f"(> {TYPICAL_MAX_PROCESSORS}); WSL cannot give the VM more than the machine's logical processors"))
    cpus = profile.run.cpuset_cpus
    if cpus and (len(cpus) > processors or max(cpus) >= processors):
        out.append(Finding(None, f"wsl.processors is {processors} but run.cpuset {profile.run.cpuset} names {len(cpus)} CPUs "
                   f"(ids up to {max(cpus)}); the VM's CPUs are 0-{processors - 1}, so the container will not "
                   f"start: set wsl.processors to at least {max(len(cpus), max(cpus) + 1)} or shrink run.cpuset"))
    if profile.run.cpus is not None and profile.run.cpus > processors:
        out.append(Finding(None, f"wsl.processors is {processors} but run.cpus is {profile.run.cpus:g}; Docker refuses more "
                   f"CPUs than the VM has: set wsl.processors to at least {math.ceil(profile.run.cpus)}"))
    nw = profile.loader.num_workers
    if isinstance(nw, int) and processors < nw + 1:
        out.append(Finding(None, f"wsl.processors is {processors} but loader.num_workers is {nw}; the workers and the training "
                   f"process would share {processors} CPU(s): set wsl.processors to at least {nw + 1} "
                   f"or lower num_workers to {max(0, processors - 1)}"))
    return out
