"""What the Kubernetes API server refuses is refused at load, at the profile's line (exit 2, nothing written).

The rules are the API server's own (kubernetes/kubernetes pkg/apis/core/validation/validation.go,
ValidateTolerations and ValidateVolumeMounts; envkit.profile.kuberules). Object names cut to fit
never collide: a long name keeps a prefix and a hash of the whole name, with a warning naming both.
"""

from __future__ import annotations

import pytest

from tests.cluster.kubeutil import manifests
from tests.conftest import call_envkit

HEAD = ("envkit: 1\nname: NAME\nimage: {base: debian:bookworm, tag: reg.io/t:1}\nRUN"
        "cluster:\n  nodes: 2\n  entrypoint: [train.py]\n  kubernetes:\n")
RULES = "kubernetes/kubernetes pkg/apis/core/validation/validation.go"


def _generate(tmp_path, kubernetes: str, name: str = "demo", run: str = "", targets=("k8s", "trainjob")):
    p = tmp_path / "p.yaml"
    p.write_text(HEAD.replace("NAME", name).replace("RUN", run) + kubernetes)
    out = tmp_path / "out"
    res = call_envkit("generate", str(p), "-o", str(out), *[a for t in targets for a in ("--target", t)])
    return res, out


@pytest.mark.parametrize("tolerations, where, what", [
    ("    - {key: gpu, operator: Exists, value: \"yes\"}\n",
     "p.yaml:9:36: cluster.kubernetes.tolerations[0].value", "value must be empty when operator is 'Exists'"),
    ("    - key: gpu\n      effect: NoSchedule\n      tolerationSeconds: 30\n",
     "p.yaml:11:7: cluster.kubernetes.tolerations[0].tolerationSeconds",
     "tolerationSeconds needs effect: NoExecute (got NoSchedule)"),
    ("    - {key: gpu, operator: Exists, tolerationSeconds: 30}\n",
     "p.yaml:9:36: cluster.kubernetes.tolerations[0].tolerationSeconds", "tolerationSeconds needs effect: NoExecute (got no effect)"),
    ("    - {operator: Equal, value: x}\n",
     "p.yaml:9:8: cluster.kubernetes.tolerations[0].operator", "operator must be Exists when key is empty (got Equal)"),
    ("    - {effect: NoSchedule}\n",
     "p.yaml:9:7: cluster.kubernetes.tolerations[0].key", "operator must be Exists when key is empty (got Equal, the default)"),
])
def test_a_toleration_the_api_server_refuses_is_refused_at_its_line(tmp_path, tolerations, where, what):
    res, out = _generate(tmp_path, "    tolerations:\n" + tolerations)
    assert res.returncode == 2, res.stderr
    assert f"{where}: {what}" in res.stderr, res.stderr
    assert f"{RULES}, ValidateTolerations" in res.stderr and "Traceback" not in res.stderr
    assert not out.exists(), "nothing written"


def test_tolerations_the_api_server_accepts_still_load(tmp_path):
    res, out = _generate(tmp_path, "    tolerations:\n"
                         "      - {operator: Exists}\n"
                         "      - {key: gpu, operator: Exists, effect: NoSchedule}\n"
                         "      - {key: gpu, operator: Equal, value: a100}\n"
                         "      - {key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute, "
                         "tolerationSeconds: 30}\n")
    assert res.returncode == 0, res.stderr
    job = manifests((out / "k8s.yaml").read_text())["Job"]
    assert len(job["spec"]["template"]["spec"]["tolerations"]) == 4


@pytest.mark.parametrize("kubernetes, where, what", [
    ("    volumes:\n      - {claim: shm, mount: /dev/shm}\n",
     "p.yaml:11:22: cluster.kubernetes.volumes[0].mount", "/dev/shm is already mounted in the pod by envkit's own"),
    ("    volumes:\n      - {claim: code, mount: /workspace}\n      - {claim: data, mount: /workspace}\n",
     "p.yaml:12:23: cluster.kubernetes.volumes[1].mount",
     "/workspace is already mounted in the pod by cluster.kubernetes.volumes[0]"),
    ("    volumes:\n      - {claim: code, mount: /data}\n      - {claim: data, mount: //data/}\n",
     "p.yaml:12:23: cluster.kubernetes.volumes[1].mount", "//data/ is already mounted in the pod by"),
    ("    host_path_volumes: true\n    volumes:\n      - {claim: data, mount: /scratch}\n",
     "p.yaml:5:13: run.volumes[0]", "/scratch is already mounted in the pod by cluster.kubernetes.volumes[0]"),
])
def test_a_mount_path_used_twice_in_the_pod_is_refused_at_its_line(tmp_path, kubernetes, where, what):
    res, out = _generate(tmp_path, kubernetes, run="run:\n  volumes: [\"/scratch:/scratch\"]\n")
    assert res.returncode == 2, res.stderr
    assert f"{where}: {what}" in res.stderr, res.stderr
    assert f"{RULES}, ValidateVolumeMounts: mountPath must be unique" in res.stderr
    assert not out.exists(), "nothing written"


def test_one_claim_at_the_workdir_still_loads_and_mount_paths_are_unique(tmp_path):
    res, out = _generate(tmp_path, "    host_path_volumes: true\n    volumes:\n"
                         "      - {claim: code, mount: /workspace}\n      - {claim: data, mount: /data}\n",
                         run="run:\n  volumes: [\"/scratch:/scratch\"]\n")
    assert res.returncode == 0, res.stderr
    for name in ("k8s.yaml", "trainjob.yaml"):
        for doc in manifests((out / name).read_text()).values():
            text = repr(doc)
            assert text.count("'mountPath': '/workspace'") <= 2 and text.count("'mountPath': '/dev/shm'") <= 2
    pod = manifests((out / "k8s.yaml").read_text())["Job"]["spec"]["template"]["spec"]
    for container in pod["containers"] + pod.get("initContainers", []):
        paths = [m["mountPath"] for m in container["volumeMounts"]]
        assert len(paths) == len(set(paths)) and {"/dev/shm", "/workspace", "/data", "/scratch"} <= set(paths)


def test_long_names_cut_to_fit_never_collide(tmp_path):
    names = {}
    for run_name in ("imagenet-resnet50-ablation-study-baseline-lr3e4", "imagenet-resnet50-ablation-study-baseline-lr1e3"):
        folder = tmp_path / run_name
        folder.mkdir()
        res, out = _generate(folder, "    namespace: default\n", name=run_name)
        assert res.returncode == 0, res.stderr
        job = manifests((out / "k8s.yaml").read_text())["Job"]["metadata"]["name"]
        train = manifests((out / "trainjob.yaml").read_text())["TrainJob"]["metadata"]["name"]
        assert job == train and len(job) <= 40 and job.startswith("imagenet-resnet50-ablation-stud"), job
        assert f"name: the Kubernetes objects are named '{job}', not '{run_name}'" in res.stderr, res.stderr
        names[run_name] = job
    assert len(set(names.values())) == 2, names


def test_a_name_that_fits_is_kept_without_a_warning(tmp_path):
    res, out = _generate(tmp_path, "    namespace: default\n", name="vision-train")
    assert res.returncode == 0, res.stderr
    assert manifests((out / "k8s.yaml").read_text())["Job"]["metadata"]["name"] == "vision-train"
    assert "the Kubernetes objects are named" not in res.stderr
