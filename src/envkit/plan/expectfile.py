"""The harness's expectations, derived from the profile (what ``envkit_expect.json`` holds).

The harness is standard library + torch only, so it cannot read YAML profiles;
envkit hands it this JSON instead. Same values as the run settings, so the
harness checks exactly what run.sh / compose / the SDK call asked for.

The planner hands it the run's settings and loader plan, decided once; nothing here plans them again.

Example:
    >>> from envkit.planner import build_plan
    >>> from envkit.profile import load_profile
    >>> loaded = load_profile(None)
    >>> plan = build_plan(loaded)
    >>> e = expectation(loaded.profile, plan.settings, plan.loader)
    >>> e["envkit_expect"], e["run"]["shm_size_bytes"]
    (1, 2147483648)
"""

from __future__ import annotations

import json
from typing import Any

from envkit.harness.expectation import VERSION  # the consumer defines the format's version
from envkit.harness.rules.sizing import NodeLoader
from envkit.plan.network import network_plan
from envkit.profile.model import Profile
from envkit.plan.runsettings import RunSettings


def expectation(profile: Profile, rs: RunSettings, node: NodeLoader) -> dict:
    """The profile's promises as the harness reads them (:func:`envkit.harness.expectation.validate_expect`);
    ``rs``: the run's settings; ``node``: the run's loader plan (ranks, the sources of its facts), so the
    harness resolves the loaders by the same rule over the same facts."""
    loader = profile.loader
    gpus = rs.gpus if rs.gpus is not None else "none"
    doc: dict[str, Any] = {
        "envkit_expect": VERSION,
        "profile": profile.name,
        "loader": {
            "num_workers": loader.num_workers,
            "batch_size": loader.batch_size,
            "sample_shape": list(loader.sample_shape),
            "dtype": loader.dtype,
            "pin_memory": loader.pin_memory,
            "prefetch_factor": loader.prefetch_factor,
            "persistent_workers": loader.persistent_workers,
            "start_method": loader.start_method,
            "sample_cost_ms": loader.sample_cost_ms,
        },
        "run": {
            "shm_size_bytes": rs.effective_shm,
            "ipc": rs.ipc,
            "cpuset": rs.cpuset,
            "cpuset_count": len(profile.run.cpuset_cpus) or None,
            "cpus": rs.cpus,
            "memory_bytes": rs.memory,
            "gpus": list(gpus) if isinstance(gpus, tuple) else gpus,
            "ulimits": {u.name: {"soft": u.soft, "hard": u.hard} for u in rs.ulimits},
            "user": profile.image.user.name,
            "ranks_per_node": node.ranks,
            "nccl": node.nccl,
            "facts": {k: v for k, v in node.facts if k != "cpus"},
        },
    }
    if profile.cluster is not None and profile.cluster.nodes > 1:  # absent on one node: NCCL's proxy pool is per job
        doc["run"]["nodes"] = profile.cluster.nodes
    network = network_plan(profile).expectation
    if network is not None:  # absent where nothing differs from Ethernet's defaults
        doc["run"]["network"] = network
    if profile.run.numa != "none":  # absent when off, so expectations without NUMA stay as they were
        doc["run"]["numa"] = profile.run.numa
    return doc


def expectation_json(profile: Profile, rs: RunSettings, node: NodeLoader) -> bytes:
    return (json.dumps(expectation(profile, rs, node), indent=2, sort_keys=True) + "\n").encode()
