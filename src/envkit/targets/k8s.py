"""k8s.yaml: a headless Service and a ``batch/v1`` Indexed Job, one pod per node, a preflight in each.

The pod is ``envkit.targets.kube.pod`` (the same translation as run.sh); this
module adds only what the plain-Job shape needs: torchrun's static rendezvous
at pod index 0 through the Service, with the node rank from the Job's
completion index.

Called as::

    render(ctx) -> [OutputFile("k8s.yaml", ...)] when the profile has a cluster: section, else []
"""

from __future__ import annotations

from envkit.plan.envplan import EnvPlan
from envkit.targets import GenContext, OutputFile
from envkit.targets.kube import kube_warnings, MASTER_PORT, Pod, kube_escape, pod, tidy

# Rendered only for a profile with a cluster: section (its registry line says so); asked for by name
# without one, generate exits 2.


def command(p: Pod) -> tuple[str, ...]:
    """torchrun on every pod; Kubernetes fills ``$(JOB_COMPLETION_INDEX)`` (the Job controller sets it)."""
    plan = p.plan
    return ("torchrun", f"--nnodes={plan.nodes}", f"--nproc-per-node={plan.nproc_per_node}",
            "--node-rank=$(JOB_COMPLETION_INDEX)", f"--master-addr={p.master_addr}",
            f"--master-port={MASTER_PORT}") + tuple(kube_escape(w) for w in plan.entrypoint)


def warnings(plan: EnvPlan) -> list[str]:
    """What the Kubernetes targets cannot express (one line each, naming the profile key)."""
    return kube_warnings(plan)


def render(ctx: GenContext) -> list[OutputFile]:
    if ctx.profile.cluster is None:
        return []
    p = pod(ctx)
    text = ctx.render("k8s.yaml.j2", header=ctx.header("#"), pod=p, command=command(p), master_port=MASTER_PORT)
    return [OutputFile("k8s.yaml", tidy(text))]
