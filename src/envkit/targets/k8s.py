"""k8s.yaml: a headless Service and a ``batch/v1`` Indexed Job, one pod per node, a preflight in each.

The pod is ``envkit.targets.kube.pod`` (the same translation as run.sh); this
module adds only what the plain-Job shape needs: torchrun's static rendezvous
at pod index 0 through the Service, with the node rank from the Job's
completion index.

Called as::

    render(ctx) -> [OutputFile("k8s.yaml", ...)]   (the registry renders it for a profile with a cluster: section)
"""

from __future__ import annotations

from envkit.findings import Finding
from envkit.plan.envplan import EnvPlan
from envkit.targets import GenContext, OutputFile
from envkit.render import Flow, Note, Word
from envkit.targets import kube
from envkit.targets.kube import kube_warnings, MASTER_PORT, Pod, kube_escape, pod



def command(p: Pod) -> tuple[str, ...]:
    """torchrun on every pod; Kubernetes fills ``$(JOB_COMPLETION_INDEX)`` (the Job controller sets it)."""
    plan = p.plan
    return ("torchrun", f"--nnodes={plan.nodes}", f"--nproc-per-node={plan.nproc_per_node}",
            "--node-rank=$(JOB_COMPLETION_INDEX)", f"--master-addr={p.master_addr}",
            f"--master-port={MASTER_PORT}") + tuple(kube_escape(w) for w in plan.entrypoint)


def preflight(p: Pod) -> tuple[str, ...]:
    """The harness, then (several nodes) the network stage, meeting where torchrun will: pod 0's name and port."""
    net = p.plan.network_check
    where = (f"--rendezvous={p.master_addr}:{MASTER_PORT}", f"--nodes={p.plan.nodes}") if net else ()
    return p.check_command + net + where


def warnings(plan: EnvPlan) -> list[Finding]:
    """What the Kubernetes targets cannot express (one line each, naming the profile key)."""
    return kube_warnings(plan)


def service(p: Pod) -> dict:
    """The headless Service that gives pod index 0 its rendezvous name."""
    return {
        "apiVersion": Word("v1"), "kind": Word("Service"), "metadata": kube.metadata(p),
        "spec": {
            "clusterIP": Word("None"),
            Note("publishNotReadyAddresses", "Rendezvous starts before any pod is Ready: publish the addresses "
                 "of pods that are not Ready yet."): True,
            "selector": {"batch.kubernetes.io/job-name": p.name},
            "ports": [{"name": Word("rendezvous"), "port": MASTER_PORT}],
        },
    }


def container(p: Pod, name: str, argv: tuple[str, ...], ports: list) -> dict:
    """One container of the pod; the preflight and the trainer share the image, env, resources and mounts."""
    return {"name": Word(name), "image": p.image, "command": Flow(argv), "workingDir": p.workdir,
            **({"ports": ports} if ports else {}), **kube.env(p), **kube.container_resources(p),
            **kube.capabilities(p), **kube.mounts(p)}


def job(p: Pod) -> dict:
    """The Indexed Job: one pod per node, each running the preflight, then torchrun."""
    nodes = p.plan.nodes
    return {
        "apiVersion": Word("batch/v1"), "kind": Word("Job"), "metadata": kube.metadata(p),
        "spec": {
            "completionMode": Word("Indexed"), "completions": nodes, "parallelism": nodes,
            Note("backoffLimitPerIndex", "Fail fast: no retry of a failed index, and the first failed index "
                 "fails the Job (its other pods stop)."): 0,
            "maxFailedIndexes": 0,
            "template": {
                "metadata": kube.labels(p),
                "spec": {
                    "restartPolicy": Word("Never"), "subdomain": p.name, **kube.scheduling(p), **kube.pod_security(p),
                    "initContainers": [container(p, "preflight", preflight(p), [])],
                    "containers": [container(p, "train", command(p),
                                             [{"name": Word("rendezvous"), "containerPort": MASTER_PORT}])],
                    **kube.pod_volumes(p),
                },
            },
        },
    }


def render(ctx: GenContext) -> list[OutputFile]:
    p = pod(ctx)
    return [OutputFile("k8s.yaml", ctx.render("k8s.yaml.j2", header=ctx.header("#"), docs=[service(p), job(p)]))]
