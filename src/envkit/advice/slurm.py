"""What the ``slurm`` target cannot express: one warning per profile key, each naming the key.

Read through ``envkit.targets.slurm.warnings`` (the registry's ``target_warnings``). Per-node
counts, and the error for ``run.gpus: all`` without ``cluster.gpus_per_node``, are
``envkit.advice.clusterplan``'s, as for the Kubernetes targets.

Slurm schedules counts (CPUs, GPUs, memory per node), not devices or cores, and under pyxis
and Apptainer a job gets the node's own /dev/shm. The warnings say what the generated script
does instead, so nobody believes a setting reached the job when it did not.

Example:
    >>> from envkit.profile.model import Profile
    >>> p = Profile.model_validate({"envkit": 1, "name": "demo", "image": {"base": "debian:bookworm"},
    ...     "run": {"cpuset": "0-3"}, "cluster": {"entrypoint": ["train.py"], "image": "reg.example.com/demo:1"}})
    >>> [w.split(":")[0] for w in slurm_warnings(p)]
    ['run.cpuset', 'run.shm_size']
"""

from __future__ import annotations

from envkit.advice.cluster import registry_host
from envkit.profile.model import Profile


def slurm_warnings(profile: Profile) -> list[str]:
    """Warnings for the slurm target ([] without a ``cluster`` section)."""
    c = profile.cluster
    if c is None:
        return []
    run, runtime = profile.run, c.slurm.runtime
    out: list[str] = []
    if run.cpuset:
        out.append(f"run.cpuset: Slurm cannot request specific cores ({run.cpuset!r}); the job asks for "
                   f"--cpus-per-task={len(run.cpuset_cpus)} and the node chooses which")
    if runtime in ("pyxis", "apptainer"):
        out.append(f"run.shm_size: under {runtime} the job uses the node's own /dev/shm, which no job can size; "
                   "the preflight checks it on every node before training (use runtime: oci to size it)")
    if isinstance(run.gpus, tuple) and c.gpus_per_node is None:
        out.append(f"run.gpus: Slurm schedules a count, not device ids; asking for {len(run.gpus)} per node "
                   "(set cluster.gpus_per_node to say so)")
    if runtime != "oci":
        if c.image is None:
            out.append(f"cluster.image: not set, so nodes are told to run {profile.image_tag}, a tag that exists "
                       "only where it was built; push it to a registry the nodes reach and name it here "
                       "(pyxis: or `enroot import dockerd://IMAGE` to a .sqsh and submit with ENVKIT_IMAGE=FILE.sqsh)")
        elif registry_host(c.image) is None:
            out.append(f"cluster.image: {c.image} names no registry host, so nodes look for it on Docker Hub; "
                       "use the reference of the registry you pushed it to")
    for name in sorted(run.ulimits):
        where = "ulimit -S in the batch script" + (" and set in the bundle's rlimits" if runtime == "oci" else "")
        out.append(f"run.ulimits.{name}: Slurm cannot set ulimits; raised with {where}, which fails "
                   "(naming the limit) if above the node's hard limit")
    return out
