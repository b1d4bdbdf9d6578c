"""slurm.sbatch: the profile's environment on ``cluster.nodes`` Slurm nodes, with a preflight on each.

The per-node counts (nodes, GPUs, processes, whole CPUs) and the image come from
``envkit.plan.cluster.ClusterPlan``, as for the Kubernetes targets; memory, ulimits,
volumes and env from the same ``RunSettings`` as run.sh. This module only decides how Slurm
spells them. The script:

1. asks Slurm for the resources (``#SBATCH`` lines: nodes, one task per node, GPUs per node,
   CPUs per task, memory per node in MiB, partition/account/time);
2. raises the profile's ulimits with ``ulimit -S`` (srun propagates soft limits to every task),
   naming the node's hard limit when a value is above it;
3. runs one step per node with the harness (``preflight_command``) inside the image and stops
   with the failing node's diagnosis if any node fails;
4. runs ``torchrun`` once per node, one step per node, rendezvousing through c10d at the first
   node, which alone is told to host the store (``--rdzv-conf=is_host=1``; ``is_host=0`` on the
   others), so no node has to recognise the endpoint as one of its own addresses.

The container runtime (``cluster.slurm.runtime``) changes only how a step enters the image:
pyxis ``--container-image`` (a registry reference in enroot's ``REGISTRY#IMAGE`` form, see
:func:`enroot_image`), Slurm's own OCI ``--container=BUNDLE`` (a bundle from ``envkit bundle``),
or ``apptainer exec``. ``run.env`` and the proxy reach the container over the image's own values:
named with ``--container-env`` (pyxis), exported as ``APPTAINERENV_NAME`` (Apptainer), in config.json (OCI).
Each runtime's pieces of the script (its image line, its step command, its notes) are a template
of their own, ``TEMPLATES[runtime]``, extending slurm.sbatch.j2, which lays out what they share and
never branches on the runtime; what differs in the shared part (the mount list, the job's env words,
the shellcheck directive over them) is decided here.

Example:
    >>> ulimit_args("memlock", 64 * 1024 * 1024)
    ('l', '65536', ' KiB')
    >>> ulimit_args("nofile", -1)
    ('n', 'unlimited', '')
    >>> enroot_image("registry.example.com/ml/x:1")
    'registry.example.com#ml/x:1'
"""

from __future__ import annotations

import math

from envkit.findings import Finding
from envkit.plan.cluster import ClusterPlan, Pull, registry_host
from envkit.plan.envplan import EnvPlan
from envkit.plan.paths import CHECK_FILE as CHECK_COMMAND
from envkit.targets import GenContext, OutputFile

FILE = "slurm.sbatch"
# The batch script runs outside the container; relative volume sources are anchored at the
# folder sbatch was called from (sbatch copies the script to its spool, so its own path is useless).
_HERE = "\0here\0"

# bash's ulimit option letter and the unit it counts in (Docker's values are bytes for sizes).
_ULIMIT_FLAGS = {
    "core": ("c", 1024), "cpu": ("t", 1), "data": ("d", 1024), "fsize": ("f", 1024), "locks": ("x", 1),
    "memlock": ("l", 1024), "msgqueue": ("q", 1), "nice": ("e", 1), "nofile": ("n", 1), "nproc": ("u", 1),
    "rss": ("m", 1024), "rtprio": ("r", 1), "rttime": ("R", 1), "sigpending": ("i", 1), "stack": ("s", 1024),
}


def preflight_command(network: tuple[str, ...] = ()) -> list[str]:
    """The one place naming the in-image preflight: ``envkit-check``, the harness with the image's baked
    expectation (the profile's workload and run settings), quick mode so every node answers in seconds;
    ``network``: the plan's network stage (several nodes), to which the script adds where the nodes meet.

    >>> preflight_command(), preflight_command(("--network",))
    (['envkit-check', '--quick'], ['envkit-check', '--quick', '--network'])
    """
    return [CHECK_COMMAND, "--quick", *network]


# Docker Hub's names: enroot reaches Docker Hub by default, and given one of these as a registry it
# would ask that host's /v2/ API, which only registry-1.docker.io serves.
_DOCKER_HUB = ("docker.io", "index.docker.io", "registry-1.docker.io")


def enroot_image(ref: str) -> str:
    """``ref`` as enroot's image syntax, ``[USER@][REGISTRY#]IMAGE[:TAG]``, which pyxis passes on.

    enroot before 4.0 does not split a Docker-style ``host/path`` reference: the host becomes part
    of a Docker Hub path and the pull fails with Docker Hub's 401/404 (enroot v3.5.0
    ``src/docker.sh``, the ``docker://`` regex; pyxis README, ``--container-image``). The ``#``
    form is read by every enroot release. Docker Hub references lose their host (enroot's default).

    >>> enroot_image("localhost:5000/x"), enroot_image("team/x:1"), enroot_image("docker.io/library/x:1")
    ('localhost:5000#x', 'team/x:1', 'library/x:1')
    """
    host = registry_host(ref)
    if host is None:
        return ref
    rest = ref[len(host) + 1:]
    return rest if host in _DOCKER_HUB else f"{host}#{rest}"


def ulimit_args(name: str, value: int) -> tuple[str, str, str]:
    """(bash ulimit letter, value in bash's unit, unit text) for a Docker-style ulimit value."""
    letter, unit = _ULIMIT_FLAGS[name]
    if value < 0:
        return letter, "unlimited", ""
    # Round up: the soft limit must be at least what the profile asks for.
    return letter, str(math.ceil(value / unit)), " KiB" if unit == 1024 else ""


# Why nodes cannot pull the image, and what to do: name the pushed reference (cluster.image names an unpullable
# one), or push it and name it (the image's own tag is what nodes get).
_PULL = {Pull.LOCAL_ONLY: "is a local-only name, which nodes cannot pull",
         Pull.DOCKER_HUB: "names no registry host, so nodes look for it on Docker Hub"}
_USE_PUSHED = "use the reference of the registry you pushed it to"
_PUSH = ("push it to a registry the nodes reach and name it in cluster.image (pyxis: or `enroot import dockerd://IMAGE` "
         "to a .sqsh and submit with ENVKIT_IMAGE=FILE.sqsh)")


def warnings(plan: EnvPlan) -> list[Finding]:
    """What the slurm target cannot express, one warning per profile key, each naming the key: the cluster rules
    the plan decides (:class:`~envkit.plan.cluster.ClusterAsk`) in Slurm's words, and the rules of its runtimes.
    Called for a plan with a ``cluster:`` section only (the registry renders this target for no other).

    Slurm schedules counts (CPUs, GPUs, memory per node), not devices or cores, and under
    Apptainer a job gets the node's own /dev/shm. The warnings say what the generated script
    does instead, so nobody believes a setting reached the job when it did not.

    >>> from pathlib import Path
    >>> from envkit.planner import build_plan
    >>> from envkit.profile import load_profile_bytes
    >>> lp = load_profile_bytes(b"envkit: 1\\nname: demo\\nimage: {base: 'debian:bookworm'}\\nrun: {cpuset: '0-3'}\\n"
    ...     b"cluster: {entrypoint: [train.py], image: 'reg.example.com/demo:1'}\\n", "d.yaml", Path("."))
    >>> [w.path for w in warnings(build_plan(lp))]
    ['run.cpuset']
    """
    a = plan.cluster_ask
    assert a is not None, "a cluster target renders only for a profile with a cluster: section"
    runtime = a.runtime
    out: list[Finding] = []
    if a.cpuset:
        out.append(Finding("run.cpuset", f"Slurm cannot request specific cores ({a.cpuset!r}); the job asks for "
                   f"--cpus-per-task={a.cpuset_count} and the node chooses which"))
    if runtime == "apptainer":
        out.append(Finding("run.shm_size", "under apptainer the job uses the node's own /dev/shm, which the script does not "
                   "size; the preflight checks it on every node before training (use runtime: oci or pyxis to size it)"))
    if a.gpu_ids_counted is not None:
        out.append(Finding("run.gpus", f"Slurm schedules a count, not device ids; asking for {a.gpu_ids_counted} per node "
                   "(set cluster.gpus_per_node to say so)"))
    image = a.node_image
    if runtime != "oci" and image.unpullable is not None:  # an OCI bundle is made from the image here
        out.append(Finding(image.key, f"{image.ref} {_PULL[image.unpullable]}; "
                   + (_USE_PUSHED if image.named else _PUSH)))
    if runtime == "pyxis" and image.named and "@" in image.ref:
        out.append(Finding("cluster.image", f"{image.ref} is pinned by digest, which enroot before 4.0 cannot pull (its image "
                   "syntax has no @); on such nodes use a tag, or an enroot .sqsh file with ENVKIT_IMAGE=FILE.sqsh"))
    if runtime == "apptainer" and "HOME" in a.env_names:
        # apptainer internal/pkg/util/env/create.go, alwaysOmitKeys: HOME cannot be overridden.
        out.append(Finding("run.env.HOME", "Apptainer does not let a job set HOME in the container (it ignores "
                   "APPTAINERENV_HOME with a warning); Apptainer's --home sets it"))
    for name in a.ulimit_names:
        # slurmstepd ulimits.c, _set_limit: a propagated soft limit above a node's hard limit is
        # lowered to it without a message (only srun --propagate reports it), so only the batch
        # node's own ulimit -S and the preflight's ulimits check can stop the job.
        root = "; a root bundle's rlimits also set it in each container" if runtime == "oci" else ""
        out.append(Finding(f"run.ulimits.{name}", f"Slurm cannot set ulimits; raised with ulimit -S in the batch script, "
                   "which stops the job (naming the limit) above the batch node's hard limit; another node "
                   f"lowers it to its own hard limit, which the preflight fails{root}"))
    return out


def memory_mib(memory: int | None) -> int | None:
    """``--mem`` is MiB per node; round up so the job gets at least the profile's limit.

    >>> memory_mib(4 * 1024**3), memory_mib(1)
    (4096, 1)
    """
    return None if memory is None else math.ceil(memory / 2**20)


def sbatch_options(ctx: GenContext, plan: ClusterPlan) -> list[str]:
    # One task per node: torchrun in it starts plan.nproc_per_node workers, so the task gets all CPUs.
    opts = [f"--job-name={ctx.plan.source.name}", f"--nodes={plan.nodes}", "--ntasks-per-node=1"]
    if plan.gpus_per_node:
        opts.append(f"--gpus-per-node={plan.gpus_per_node}")
    if plan.cpus:
        opts.append(f"--cpus-per-task={plan.cpus}")
    mem = memory_mib(ctx.settings.memory)
    if mem:
        opts.append(f"--mem={mem}")
    for key in ("partition", "account", "time"):
        value = getattr(plan.slurm, key)
        if value is not None:
            opts.append(f"--{key}={value}")
    return opts


def mounts(ctx: GenContext) -> list[dict]:
    """Bind mounts as ``SRC:DST[:ro]`` pieces (pyxis and apptainer share the syntax); OCI's are in the bundle."""
    items = []
    for v in ctx.settings.volumes:
        src = ctx.anchored_source(v, _HERE)
        # Only read-only carries over: rw is the default, z/Z are Docker's SELinux relabelling.
        rest = ":" + v.target + (":ro" if v.mode and v.mode.startswith("ro") else "")
        if src.startswith(_HERE):
            items.append({"here": True, "rest": src[len(_HERE):] + rest})
        else:
            items.append({"here": False, "text": src + rest})
    return items


def shm_mount(ctx: GenContext) -> str | None:
    """pyxis's ``--container-mounts`` entry that gives the step a /dev/shm of ``run.shm_size`` (Docker's
    64 MiB when unset, as run.sh and the OCI bundle give it); None under ``ipc: host``, the node's own.

    pyxis >= 0.9.0 takes ``tmpfs`` as a mount source and passes the flags after the target to the
    tmpfs mount, ``+`` standing for ``,`` (NVIDIA/pyxis ``args.c``, ``add_mount`` and
    ``parse_mount_option``; ``tests/mounts.bats``, "--container-mounts tmpfs huge pages"). enroot
    makes it a tmpfs mount whose unknown options (``size=``, ``mode=``) go to mount(2) as data
    (NVIDIA/enroot ``bin/enroot-mount.c``, ``parse_mount_opts``), after its own bind of the node's
    /dev/shm (``conf/mounts/10-system.fstab``; user mounts come last, ``src/runtime.sh``
    ``runtime::_do_mounts_fini``), so it covers that bind.
    """
    shm = ctx.settings.effective_shm
    if shm is None:
        return None
    return f"tmpfs:/dev/shm:nosuid+nodev+noexec+mode=1777+size={shm}"


# Each runtime's pieces of the script (its image line, how a step enters the image, its notes): a
# template extending slurm.sbatch.j2, which lays out what every runtime shares.
TEMPLATES = {runtime: f"slurm-{runtime}.sbatch.j2" for runtime in ("pyxis", "oci", "apptainer")}
# The shellcheck directive over job_env when a value holds $ or `: single quotes keep them literal, as the
# profile wrote them, and shellcheck asks why.
LITERAL_ENV_DISABLE = "SC2016  # the profile's values are literal: single quotes keep $ and ` unexpanded on purpose"


def job_env(runtime: str, env: list[tuple[str, str]]) -> list[str]:
    """The ``NAME=VALUE`` words the script hands srun for the containers: Apptainer's as
    ``APPTAINERENV_NAME`` (it sets NAME from them, over the image's value); none for OCI, whose
    bundle's config.json holds the env.

    >>> job_env("apptainer", [("A", "1")]), job_env("pyxis", [("A", "1")]), job_env("oci", [("A", "1")])
    (['APPTAINERENV_A=1'], ['A=1'], [])
    """
    if runtime == "oci":
        return []
    prefix = "APPTAINERENV_" if runtime == "apptainer" else ""
    return [f"{prefix}{key}={value}" for key, value in env]


def context(ctx: GenContext) -> dict:
    plan = ctx.plan.require_cluster()
    runtime = plan.slurm.runtime
    items = mounts(ctx) if runtime != "oci" else []
    shm = shm_mount(ctx) if runtime == "pyxis" else None
    if shm is not None:
        items.insert(0, {"here": False, "text": shm})
    anchored = any(m["here"] for m in items)
    env = list(ctx.settings.env)
    return {
        "header": ctx.header("#"),
        # $here (the submit folder) is only defined when something refers to it: shellcheck flags unused names.
        "needs_here": anchored or (runtime == "oci" and plan.slurm.bundle is None),
        # The submit folder is known only at run time: the script checks it before the first srun.
        "check_here": anchored,
        "sbatch": sbatch_options(ctx, plan),
        "runtime": runtime,
        "image": enroot_image(plan.image) if runtime == "pyxis" else plan.image,
        # A bundle path left unset means "beside the submit directory" (a run-time value).
        "bundle": plan.slurm.bundle,
        "workdir": ctx.plan.image.spec.workdir,
        "job_env": job_env(runtime, env),
        "job_env_disables": [LITERAL_ENV_DISABLE] if any(ch in value for _, value in ctx.settings.env
                                                         for ch in "$`") else [],
        # pyxis: the image's own value of a variable wins over the job's unless it is named here.
        "env_names": ",".join(key for key, _ in env),
        "ulimits": [{"name": u.name, **dict(zip(("letter", "value", "unit"), ulimit_args(u.name, u.soft), strict=True))}
                    for u in ctx.settings.ulimits],
        # pyxis and apptainer take a mount list; an OCI bundle holds its mounts.
        "mount_list": runtime != "oci",
        "mounts": items,
        "gpus": plan.gpus_per_node,
        "nproc": plan.nproc_per_node,
        "preflight": preflight_command(plan.network_check),
        "network_check": bool(plan.network_check),
        "entrypoint": list(plan.entrypoint),
    }


def render(ctx: GenContext) -> list[OutputFile]:
    template = TEMPLATES[ctx.plan.require_cluster().slurm.runtime]
    return [OutputFile(FILE, ctx.render(template, **context(ctx)), mode=0o755)]
