"""k8s.yaml and trainjob.yaml say what run.sh says: the manifests are parsed back and compared.

run.sh is read with the same parser as tests/targets/test_agreement.py; the
manifests with a YAML reader, with Kubernetes' own $(VAR) expansion applied to
commands and env values. Both sides are normalised to one vocabulary.
"""

from __future__ import annotations

import math

import pytest

from envkit.profile import load_profile
from envkit.plan.runsettings import DEFAULT_SHM, REMAP_ENV
from envkit.units import parse_cpuset
from tests.cluster.kubeutil import cluster_examples, expand, manifests, parse_quantity, profile_path, rendered
from tests.targets.test_agreement import _from_run_sh

CASES = cluster_examples() + ["<tricky>", "<bare>", "<rdma>"]
POD_ENV = {"JOB_COMPLETION_INDEX": "1"}  # what the Job controller sets in the second pod


def _expected(run_sh: dict, profile) -> dict:
    """What a node should get, from run.sh's flags plus the cluster section's own keys."""
    cpus = None
    if "cpuset" in run_sh:
        cpus = len(parse_cpuset(run_sh["cpuset"]))
    if "cpus" in run_sh:
        cpus = min(cpus or math.inf, math.ceil(run_sh["cpus"]))
    gpus = profile.cluster.gpus_per_node
    if gpus is None and "gpus" in run_sh:
        gpus = len(run_sh["gpus"].split(",")) if run_sh["gpus"] != "all" else None
    resources = {}
    if cpus is not None:
        resources["cpu"] = cpus
    if "memory" in run_sh:
        resources["memory"] = run_sh["memory"]
    if gpus:
        resources["nvidia.com/gpu"] = gpus
    if profile.cluster.network.rdma_resource:  # run.sh's --device=/dev/infiniband, as the device plugin gives it
        assert "/dev/infiniband" in run_sh["devices"]
        resources[profile.cluster.network.rdma_resource] = 1
    k = profile.cluster.kubernetes
    mounts = {v.mount: (("pvc", v.claim), v.read_only) for v in k.volumes}
    if k.host_path_volumes:
        for spec in run_sh["volumes"]:
            src, dst = spec.split(":", 1)
            if src in [v.split(":")[0] for v in profile.run.volumes]:  # absolute in the profile: a hostPath
                mode = next(v.split(":")[2:] for v in profile.run.volumes if v.startswith(src + ":"))
                mounts[dst] = (("hostPath", src), mode == ["ro"])
    shm = run_sh.get("shm", DEFAULT_SHM) if run_sh["ipc"] != "host" else None
    mounts["/dev/shm"] = (("shm", shm), False)
    # The uid remap is for a workstation's bind-mounted project; pods run as the image's user (runAsUser).
    env = {k: v for k, v in run_sh["env"].items() if k != REMAP_ENV}
    return {"resources": resources, "env": env, "mounts": mounts,
            # Added capabilities reach a non-root user's effective set nowhere (kubernetes#56374): root only.
            "caps": ["IPC_LOCK"] if "memlock" in run_sh["ulimits"] and profile.image.user.uid == 0 else [],
            "user": (profile.image.user.uid, profile.image.user.gid, profile.image.user.gid)}


def _pod_side(pod: dict, container: dict, resources: dict, env: list) -> dict:
    assert resources["requests"] == resources["limits"], "requests != limits"
    res = {}
    for name, q in resources["limits"].items():
        res[name] = parse_quantity(q) if name == "memory" else int(q)
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = {}
    for m in container["volumeMounts"]:
        v = volumes[m["name"]]
        if "emptyDir" in v:
            assert v["emptyDir"]["medium"] == "Memory"
            size = v["emptyDir"].get("sizeLimit")
            source = ("shm", parse_quantity(size) if size is not None else None)
        elif "persistentVolumeClaim" in v:
            source = ("pvc", v["persistentVolumeClaim"]["claimName"])
            assert v["persistentVolumeClaim"].get("readOnly", False) == m.get("readOnly", False)
        else:
            source = ("hostPath", v["hostPath"]["path"])
        mounts[m["mountPath"]] = (source, m.get("readOnly", False))
    sec = pod["securityContext"]
    return {"resources": res, "env": {e["name"]: expand(e["value"], POD_ENV) for e in env}, "mounts": mounts,
            "caps": container.get("securityContext", {}).get("capabilities", {}).get("add", []),
            "user": (sec["runAsUser"], sec["runAsGroup"], sec["fsGroup"])}


@pytest.mark.parametrize("case", CASES)
def test_manifests_agree_with_run_sh(case, tmp_path):
    profile = load_profile(profile_path(case, tmp_path)).profile
    files = rendered(case, tmp_path)
    run_sh = _from_run_sh(files["run.sh"], str((tmp_path / "out").resolve()))
    want = _expected(run_sh, profile)
    entrypoint = list(profile.cluster.entrypoint)

    k8s = manifests(files["k8s.yaml"])
    pod = k8s["Job"]["spec"]["template"]["spec"]
    (init,), (train,) = pod["initContainers"], pod["containers"]
    for c in (init, train):
        assert _pod_side(pod, c, c["resources"], c.get("env", [])) == want, c["name"]
        assert c["image"] == (profile.cluster.image or profile.image_tag)
    command = [expand(w, POD_ENV) for w in train["command"]]
    nodes, gpus = profile.cluster.nodes, want["resources"].get("nvidia.com/gpu", 0)
    name = k8s["Job"]["metadata"]["name"]
    # The preflight's network stage meets where torchrun does (several nodes only).
    network = ["--network", f"--rendezvous={name}-0.{name}:29500", f"--nodes={nodes}"] if nodes > 1 else []
    assert init["command"] == ["envkit-check", *network]
    assert command == ["torchrun", f"--nnodes={nodes}", f"--nproc-per-node={max(1, gpus)}", "--node-rank=1",
                       f"--master-addr={name}-0.{name}", "--master-port=29500"] + entrypoint
    assert k8s["Job"]["spec"]["completions"] == k8s["Job"]["spec"]["parallelism"] == nodes
    assert k8s["Service"]["spec"]["clusterIP"] == "None" and pod["subdomain"] == k8s["Service"]["metadata"]["name"]

    tj = manifests(files["trainjob.yaml"])["TrainJob"]
    trainer = tj["spec"]["trainer"]
    (patch,) = tj["spec"]["runtimePatches"]
    (rjob,) = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    tpod = rjob["template"]["spec"]["template"]["spec"]
    (node,) = tpod["containers"]
    assert (rjob["name"], node["name"], tj["spec"]["runtimeRef"]["name"]) == ("node", "node", "torch-distributed")
    assert _pod_side(tpod, node, trainer["resourcesPerNode"], trainer.get("env", [])) == want
    assert (trainer["numNodes"], trainer["numProcPerNode"]) == (nodes, max(1, gpus))
    sh, dash_c, script, _name, *args = [expand(w, {}) for w in trainer["command"]]
    check = "envkit-check --network" if nodes > 1 else "envkit-check"  # Trainer's PET_* variables say where
    assert (sh, dash_c, script) == ("/bin/sh", "-c", check + ' && exec torchrun "$@"')
    assert args == entrypoint


def test_gpus_all_without_a_count_is_an_error(tmp_path):
    from tests.conftest import call_envkit

    p = tmp_path / "p.yaml"
    p.write_text("envkit: 1\nname: g\nimage: {base: debian:bookworm}\nrun: {gpus: all}\n"
                 "cluster: {nodes: 2, entrypoint: [train.py]}\n")
    res = call_envkit("generate", str(p), "-o", "out", "--target", "k8s", cwd=tmp_path)
    assert res.returncode == 2 and "run.gpus: 'all'" in res.stderr and "cluster.gpus_per_node" in res.stderr
    assert "Traceback" not in res.stderr and not (tmp_path / "out").exists()
