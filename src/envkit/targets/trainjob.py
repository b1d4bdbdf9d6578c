"""trainjob.yaml: a Kubeflow Trainer v2 ``TrainJob`` on the stock ``torch-distributed`` runtime.

The trainer sets nodes, processes per node, image, command, env and resources;
the rest of the pod (the /dev/shm volume, PVCs, the user, IPC_LOCK, node
selection) goes in through ``spec.runtimePatches`` -- the stock runtime mounts
no /dev/shm. Field names are those of the v2.3.0 CRD (schemas/kubernetes/):
``runtimePatches[].trainingRuntimeSpec.template.spec.replicatedJobs[].template
.spec.template.spec`` (pod patch) with ``containers[]`` (env, securityContext,
volumeMounts of a container the runtime already has: ``node``).

The preflight: in v2.3.0 an ``initContainers`` patch can only patch an init
container the runtime already defines (name, env, securityContext,
volumeMounts; no image or command), and torch-distributed has none. So the
trainer's command runs the preflight first, in the same container (same image,
/dev/shm and resources): ``sh -c 'envkit-check && exec torchrun "$@"'``. The
torch plugin hands torchrun its rendezvous through PET_* variables.

Called as::

    render(ctx) -> [OutputFile("trainjob.yaml", ...)] when the profile has a cluster: section, else []
"""

from __future__ import annotations

from envkit.plan.envplan import EnvPlan
from envkit.targets import GenContext, OutputFile
from envkit.targets.kube import kube_warnings, Pod, kube_escape, pod, tidy

RUNTIME = "torch-distributed"
REPLICATED_JOB = CONTAINER = "node"  # the stock runtime's replicated job and trainer container
PATCH_MANAGER = "envkit"
# Rendered only for a profile with a cluster: section (its registry line says so); asked for by name
# without one, generate exits 2.


def command(p: Pod) -> tuple[str, ...]:
    """The preflight, then torchrun with the entrypoint as positional arguments (never shell-parsed)."""
    script = " ".join(p.check_command) + ' && exec torchrun "$@"'
    return ("/bin/sh", "-c", kube_escape(script), "envkit-preflight") + tuple(kube_escape(w) for w in p.plan.entrypoint)


def warnings(plan: EnvPlan) -> list[str]:
    """What the Kubernetes targets cannot express (one line each, naming the profile key)."""
    return kube_warnings(plan)


def render(ctx: GenContext) -> list[OutputFile]:
    if ctx.profile.cluster is None:
        return []
    p = pod(ctx)
    text = ctx.render("trainjob.yaml.j2", header=ctx.header("#"), pod=p, command=command(p), runtime=RUNTIME,
                      replicated_job=REPLICATED_JOB, container=CONTAINER, manager=PATCH_MANAGER)
    return [OutputFile("trainjob.yaml", tidy(text))]
