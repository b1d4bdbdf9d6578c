"""The QoS class a pod gets (kubernetes.io's rule) and the memlock a pod can get, with the warnings that say so."""

from __future__ import annotations

import pytest

from envkit.profile import load_profile_bytes
from envkit.targets.kube import QOS_DOC, kube_warnings, qos_class
from tests.cluster.kubeutil import manifests
from tests.conftest import plan_of

GPU = {"nvidia.com/gpu": "8"}
FULL = {"cpu": "4", "memory": "8Gi"}


@pytest.mark.parametrize("containers, qos", [
    ([(FULL, FULL)], "Guaranteed"),
    ([({**FULL, **GPU}, {**FULL, **GPU})] * 2, "Guaranteed"),  # the extended resource does not count
    ([(FULL, FULL), ({"cpu": "4"}, {"cpu": "4"})], "Burstable"),  # one container without memory
    ([({"cpu": "2", "memory": "8Gi"}, FULL)], "Burstable"),  # a request below its limit
    ([({"cpu": "4"}, {"cpu": "4"})], "Burstable"),
    ([({"memory": "8Gi"}, {"memory": "8Gi"})], "Burstable"),
    ([({}, {"memory": "8Gi"})], "Burstable"),  # a limit alone: its request defaults to it, still no cpu
    ([({}, FULL)], "Guaranteed"),  # limits alone: the requests default to them
    ([({}, {})], "BestEffort"),
    ([(GPU, GPU)], "BestEffort"),  # nvidia.com/gpu alone: no cpu or memory request or limit
])
def test_qos_class_by_the_kubernetes_rule(containers, qos):
    assert qos_class(containers) == qos


BASE = ("envkit: 1\nname: t\nimage: {base: debian, tag: reg.io/t:1, user: {name: u, uid: UID, gid: UID}}\n"
        "run: RUN\ncluster: {nodes: 2, gpus_per_node: 1, entrypoint: [t.py], kubernetes: "
        "{volumes: [{claim: code, mount: /workspace}]}}\n")


def _profile(run: str, uid: int = 1000):
    return load_profile_bytes(BASE.replace("UID", str(uid)).replace("RUN", run).encode(), "t.yaml", "/").profile


@pytest.mark.parametrize("run, qos", [
    ("{gpus: 1}", "BestEffort"), ("{}", "BestEffort"), ("{cpus: 4}", "Burstable"), ("{memory: 8g}", "Burstable"),
    ("{cpus: 4, memory: 8g}", None),
])
def test_the_qos_warning_names_the_class_the_pod_gets(run, qos):
    found = [w for w in kube_warnings(plan_of(_profile(run))) if "QoS" in w]
    if qos is None:
        assert found == []
    else:
        (line,) = found
        assert f"pods get {qos} QoS" in line and QOS_DOC in line, line
        assert ("BestEffort" if qos == "Burstable" else "Burstable") not in line


def _pod(profile_text: str, tmp_path):
    from envkit.generation import render_all
    from envkit.profile import load_profile

    (tmp_path / "p.yaml").write_text(profile_text)
    files = {f.path: f.content.decode() for f in render_all(load_profile(tmp_path / "p.yaml"), tmp_path / "out",
                                                            ("k8s", "trainjob"))}
    job = manifests(files["k8s.yaml"])["Job"]["spec"]["template"]["spec"]
    tj = manifests(files["trainjob.yaml"])["TrainJob"]["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]
    tj_pod = tj["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    return [c.get("securityContext", {}) for c in job["initContainers"] + job["containers"] + tj_pod["containers"]]


@pytest.mark.parametrize("uid, caps", [(0, [["IPC_LOCK"]] * 3), (1000, [None] * 3)])
def test_ipc_lock_only_for_a_root_pod(uid, caps, tmp_path):
    text = BASE.replace("UID", str(uid)).replace("RUN", "{cpus: 4, memory: 8g, ulimits: {memlock: -1}}")
    contexts = _pod(text, tmp_path)
    assert [c.get("capabilities", {}).get("add") for c in contexts] == caps
    warned = [w for w in kube_warnings(plan_of(_profile("{cpus: 4, memory: 8g, ulimits: {memlock: -1}}", uid)))
              if w.startswith("run.ulimits.memlock")]
    if uid:
        (line,) = warned
        assert "#56374" in line and "LimitMEMLOCK=infinity" in line and f"uid {uid}" in line
    else:
        assert warned == []
