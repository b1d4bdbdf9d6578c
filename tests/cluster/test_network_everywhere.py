"""cluster.network reaches every target with the same values: one profile, every file read back.

The RDMA profile names a fabric, an interface list and HCAs; each target is parsed as its reader would
(YAML, JSON, the shell's words, the OCI config) and must carry the same three variables, the RDMA devices
and unlimited memlock where that target can express them. An Ethernet profile gets none of it.
"""

from __future__ import annotations

import json
import shlex

import pytest
import yaml

from envkit.generation import render_all
from envkit.planner import build_plan
from envkit.targets.oci import RLIM_INFINITY, oci_config
from envkit.profile import load_profile
from tests.cluster.kubeutil import RDMA, manifests

WANT_ENV = {"NCCL_SOCKET_IFNAME": "ib0,ib1", "GLOO_SOCKET_IFNAME": "ib0,ib1", "NCCL_IB_HCA": "mlx5_0:1,mlx5_1:1"}
RDMA_APT = {"libibverbs1", "ibverbs-providers", "librdmacm1"}
RESOURCE = "rdma/hca_shared_devices_a"


def render(text: str, tmp_path, runtime: str = "pyxis") -> tuple[dict[str, str], object]:
    p = tmp_path / f"{runtime}.yaml"
    p.write_text(text.replace("  entrypoint: [train.py]\n", f"  entrypoint: [train.py]\n  slurm: {{runtime: {runtime}}}\n"))
    loaded = load_profile(p)
    files = render_all(loaded, tmp_path / f"out-{runtime}")
    texts = {f.path: f.content.decode() for f in files if f.source is None and not f.path.endswith(".pyz")}
    return texts, build_plan(loaded, tmp_path / "out")


def net_env(pairs) -> dict[str, str]:
    return {k: v for k, v in dict(pairs).items() if k in WANT_ENV}


def slurm_env(script: str, prefix: str = "") -> dict[str, str]:
    body = script.split("job_env=(\n", 1)[1].split("\n)\n", 1)[0]
    words = [shlex.split(line)[0] for line in body.splitlines()]
    return net_env(w[len(prefix):].split("=", 1) for w in words if w.startswith(prefix))


def test_every_target_carries_the_fabric_the_interface_and_the_devices(tmp_path):
    files, plan = render(RDMA, tmp_path)
    # the image: the verbs libraries (the test tier tests/e2e builds one and loads libibverbs in it)
    apt = next(line for line in files["Dockerfile"].splitlines() if "apt-get install" in line)
    assert RDMA_APT <= set(apt.split())
    # docker run, devcontainer, compose
    flags = [shlex.split(line)[0] for line in files["run.sh"].split("flags=(\n", 1)[1].split("\n)\n", 1)[0].splitlines()]
    assert net_env(f[6:].split("=", 1) for f in flags if f.startswith("--env=")) == WANT_ENV
    assert "--device=/dev/infiniband" in flags and "--ulimit=memlock=-1" in flags
    devc = json.loads(files[".devcontainer/devcontainer.json"].split("\n", 1)[1])
    assert [a for a in devc["runArgs"] if a.startswith(("--device", "--ulimit=memlock"))] == \
        ["--ulimit=memlock=-1", "--device=/dev/infiniband"]
    assert net_env(a[6:].split("=", 1) for a in devc["runArgs"] if a.startswith("--env=")) == WANT_ENV
    (svc,) = yaml.safe_load(files["compose.yaml"])["services"].values()
    assert net_env(svc["environment"].items()) == WANT_ENV
    assert svc["devices"] == ["/dev/infiniband:/dev/infiniband"] and svc["ulimits"]["memlock"] == -1
    # Kubernetes: both containers of the Indexed Job, and the TrainJob's trainer
    pod = manifests(files["k8s.yaml"])["Job"]["spec"]["template"]["spec"]
    for c in pod["initContainers"] + pod["containers"]:
        assert net_env((e["name"], e["value"]) for e in c["env"]) == WANT_ENV, c["name"]
        assert c["resources"]["limits"][RESOURCE] == c["resources"]["requests"][RESOURCE] == "1"
        assert c["securityContext"]["capabilities"]["add"] == ["IPC_LOCK"]  # a root pod: the capability lifts memlock
    trainer = manifests(files["trainjob.yaml"])["TrainJob"]["spec"]["trainer"]
    assert net_env((e["name"], e["value"]) for e in trainer["env"]) == WANT_ENV
    assert trainer["resourcesPerNode"]["limits"][RESOURCE] == "1"
    # Slurm through pyxis: the job's environment, kept over the image's, and memlock raised
    sbatch = files["slurm.sbatch"]
    assert slurm_env(sbatch) == WANT_ENV
    names = sbatch.split("--container-env=", 1)[1].split()[0].split(",")
    assert set(WANT_ENV) <= set(names)
    assert "raise_limit memlock l unlimited ''" in sbatch
    # the expectation baked into the image: the harness's network stage reads it
    expect = json.loads(plan.expectation)
    assert expect["run"]["network"] == {"fabric": "infiniband", "interface": "ib0,ib1", "hca": "mlx5_0:1,mlx5_1:1"}


def test_apptainer_and_the_oci_bundle_carry_the_same(tmp_path):
    files, _ = render(RDMA, tmp_path, "apptainer")
    assert slurm_env(files["slurm.sbatch"], "APPTAINERENV_") == WANT_ENV
    _, plan = render(RDMA, tmp_path, "oci")
    cfg = oci_config(plan, user=(0, 0), workdir="/workspace", image_env=["PATH=/usr/bin"], base_dir=tmp_path)
    assert net_env(e.split("=", 1) for e in cfg["process"]["env"]) == WANT_ENV
    assert {"destination": "/dev/infiniband", "type": "bind", "source": "/dev/infiniband",
            "options": ["rbind", "rw"]} in cfg["mounts"]
    assert {"type": "RLIMIT_MEMLOCK", "soft": RLIM_INFINITY, "hard": RLIM_INFINITY} in cfg["process"]["rlimits"]
    assert cfg["linux"]["resources"]["devices"] == [{"allow": True, "type": "c", "major": 231, "access": "rw"}]
    rootless = oci_config(plan, user=(0, 0), workdir="/w", image_env=[], base_dir=tmp_path, submitter=(1234, 1234))
    assert "resources" not in rootless["linux"]  # an unprivileged runc sets no device cgroup


@pytest.mark.parametrize("network", ["", "  network: {fabric: ethernet}\n"])
def test_ethernet_adds_nothing(tmp_path, network):
    text = RDMA.split("  network:")[0] + network
    files, plan = render(text, tmp_path)
    everything = "\n".join(files.values())
    for word in ("infiniband", "NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "NCCL_IB_HCA", *RDMA_APT, RESOURCE):
        assert word not in everything, word
    assert "network" not in json.loads(plan.expectation)["run"]


def test_a_prefix_or_exclusion_keeps_gloo_on_the_host_names_address(tmp_path):
    files, _ = render(RDMA.replace("interface: [ib0, ib1]", "interface: '^docker,lo'"), tmp_path)
    assert slurm_env(files["slurm.sbatch"]) == {"NCCL_SOCKET_IFNAME": "^docker,lo", "NCCL_IB_HCA": "mlx5_0:1,mlx5_1:1"}
