"""trainjob.yaml: a Kubeflow Trainer ``TrainJob`` on the stock ``torch-distributed`` runtime.

Needs Kubeflow Trainer >= v2.2.0: ``spec.runtimePatches`` first exists there (v2.0.0 had
``podSpecOverrides``, v2.1.0 ``podTemplateOverrides``; each release's CRD,
charts/kubeflow-trainer/crds/trainer.kubeflow.org_trainjobs.yaml). Checked against v2.2.0
and v2.3.0: the CRD schema and the validating webhook's rules (tests/cluster/trainer_webhook.py).

The trainer sets nodes, processes per node, image, command, env and resources;
the rest of the pod (the /dev/shm volume, PVCs, the user, IPC_LOCK for a root pod,
node selection) goes in through ``spec.runtimePatches`` -- the stock runtime mounts
no /dev/shm. The patch's ``manager`` must be a domain-prefixed path (the webhook runs
``IsDomainPrefixedPath`` on it: kubeflow/trainer v2.3.0
pkg/runtime/framework/plugins/jobset/jobset.go:176, v2.2.0 :129); ``PATCH_MANAGER`` is
``envkit.io/envkit``, in the form of Trainer's own ``trainer.kubeflow.org/kubeflow-sdk`` and
Kueue's ``kueue.x-k8s.io/manager``: a domain naming the tool, a path naming the writer, so
its entry never collides with theirs (each manager owns its entry). The trainer's env goes in
``trainer.env``, never in the patch: the webhook rejects env in a ``node`` container patch
(jobset.go:205 at v2.3.0). Field names are those of the v2.3.0 CRD (schemas/kubernetes/):
``runtimePatches[].trainingRuntimeSpec.template.spec.replicatedJobs[].template
.spec.template.spec`` (pod patch) with ``containers[]`` (env, securityContext,
volumeMounts of a container the runtime already has: ``node``).

The preflight: in v2.3.0 an ``initContainers`` patch can only patch an init
container the runtime already defines (name, env, securityContext,
volumeMounts; no image or command), and torch-distributed has none. So the
trainer's command runs the preflight first, in the same container (same image,
/dev/shm and resources): ``sh -c 'envkit-check && exec torchrun "$@"'``. The
torch plugin hands torchrun its rendezvous through PET_* variables (PET_NNODES,
PET_NPROC_PER_NODE, PET_NODE_RANK, PET_MASTER_ADDR, PET_MASTER_PORT: torch.go
EnforceMLPolicy, v2.3.0 :145-166) and no rendezvous backend, so torchrun runs its
default static backend: the store's host is node rank 0, decided by rank, never
by matching the endpoint against the node's addresses (docs/cluster.md).

Called as::

    render(ctx) -> [OutputFile("trainjob.yaml", ...)]   (the registry renders it for a profile with a cluster: section)
"""

from __future__ import annotations

from envkit.findings import Finding
from envkit.plan.envplan import EnvPlan
from envkit.targets import GenContext, OutputFile
from envkit.render import Flow, Word
from envkit.targets import kube
from envkit.targets.kube import kube_warnings, Pod, kube_escape, pod

RUNTIME = "torch-distributed"
REPLICATED_JOB = CONTAINER = "node"  # the stock runtime's replicated job and trainer container
PATCH_MANAGER = "envkit.io/envkit"  # a domain-prefixed path: the webhook requires one


def command(p: Pod) -> tuple[str, ...]:
    """The preflight, then torchrun with the entrypoint as positional arguments (never shell-parsed)."""
    # Trainer hands the rendezvous to the container as PET_MASTER_ADDR, PET_MASTER_PORT, PET_NNODES and
    # PET_NODE_RANK, which the network stage reads.
    script = " ".join(p.check_command + p.plan.network_check) + ' && exec torchrun "$@"'
    return ("/bin/sh", "-c", kube_escape(script), "envkit-preflight") + tuple(kube_escape(w) for w in p.plan.entrypoint)


def warnings(plan: EnvPlan) -> list[Finding]:
    """What the Kubernetes targets cannot express (one line each, naming the profile key)."""
    return kube_warnings(plan)


def trainjob(p: Pod) -> dict:
    """The TrainJob: the trainer's own fields, then the rest of the pod as a runtime patch."""
    pod_patch = {**kube.scheduling(p), **kube.pod_security(p),
                 "containers": [{"name": CONTAINER, **kube.capabilities(p), **kube.mounts(p)}], **kube.pod_volumes(p)}
    replicated = {"name": REPLICATED_JOB, "template": {"spec": {"template": {"spec": pod_patch}}}}
    return {
        "apiVersion": Word("trainer.kubeflow.org/v1alpha1"), "kind": Word("TrainJob"), "metadata": kube.metadata(p),
        "spec": {
            "runtimeRef": {"name": RUNTIME},
            "trainer": {"image": p.image, "numNodes": p.plan.nodes, "numProcPerNode": p.plan.nproc_per_node,
                        "command": Flow(command(p)), **kube.env(p), **kube.container_resources(p, "resourcesPerNode")},
            "runtimePatches": [{"manager": PATCH_MANAGER,
                                "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [replicated]}}}}],
        },
    }


def render(ctx: GenContext) -> list[OutputFile]:
    text = ctx.render("trainjob.yaml.j2", header=ctx.header("#"), docs=[trainjob(pod(ctx))])
    return [OutputFile("trainjob.yaml", text)]
