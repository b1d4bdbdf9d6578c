"""Generated manifests validate: core objects with kubernetes-validate --strict, TrainJob against its CRD.

kubernetes-validate does not know CRDs: for a TrainJob it warns and exits 0. That
is never counted as a pass here; TrainJob is checked against the vendored
Kubeflow Trainer v2.3.0 CRD (schemas/kubernetes/) with unknown fields rejected.
"""

from __future__ import annotations

import copy
import functools
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

from envkit.targets.kube import object_name
from tests.cluster.kubeutil import cluster_examples, manifests, rendered
from tests.conftest import ROOT

# The Kubernetes versions envkit's manifests are checked against (docs/cluster.md says the same):
# 1.30 (backoffLimitPerIndex on by default since 1.29) and the newest kubernetes-validate bundles.
KUBE_VERSIONS = ("1.30.0", "1.37.0")
CRD = ROOT / "schemas" / "kubernetes" / "trainer.kubeflow.org_trainjobs.yaml"
CASES = cluster_examples() + ["<tricky>", "<bare>"]


def _kubernetes_validate() -> str:
    tool = Path(sys.executable).parent / "kubernetes-validate"
    if not tool.is_file():  # a test dependency ([test] extra): missing means a broken install, never a skip
        pytest.fail("kubernetes-validate is not installed: pip install -e '.[test]'")
    return str(tool)


def _run_validate(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([_kubernetes_validate(), *args], capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def k8s_files(tmp_path_factory) -> dict[str, Path]:
    out = {}
    for case in CASES:
        tmp = tmp_path_factory.mktemp("k8s")
        path = tmp / "k8s.yaml"
        path.write_text(rendered(case, tmp, ("k8s",))["k8s.yaml"])
        out[case] = path
    return out


@pytest.mark.parametrize("version", KUBE_VERSIONS)
def test_k8s_manifests_pass_kubernetes_validate_strict(version, k8s_files):
    res = _run_validate("--strict", "-k", version, *map(str, k8s_files.values()))
    assert res.returncode == 0, res.stdout + res.stderr
    for case, path in k8s_files.items():
        for kind in ("service", "job"):
            assert f"{path} passed for resource {kind}/" in res.stdout, f"{case}: {kind} not validated\n{res.stdout}"
    assert "WARN" not in res.stdout + res.stderr


def test_kubernetes_validate_strict_rejects_a_misspelt_field(tmp_path, k8s_files):
    """The tool is live: an unknown field in the pod spec fails (so the test above can fail)."""
    docs = list(yaml.safe_load_all(k8s_files[CASES[0]].read_text()))
    job = next(d for d in docs if d["kind"] == "Job")
    job["spec"]["template"]["spec"]["containers"][0]["volumeMount"] = []
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump_all(docs))
    res = _run_validate("--strict", str(bad))
    assert res.returncode != 0 and "volumeMount" in res.stdout + res.stderr


def test_kubernetes_validate_does_not_know_trainjob(tmp_path):
    """Why TrainJob needs the CRD check: kubernetes-validate exits 0 with only a warning."""
    path = tmp_path / "trainjob.yaml"
    path.write_text(rendered(CASES[0], tmp_path, ("trainjob",))["trainjob.yaml"])
    res = _run_validate("--strict", str(path))
    assert res.returncode == 0 and "Couldn't find schema for kind TrainJob" in res.stdout + res.stderr


def _closed(schema):
    """The schema with unknown fields rejected wherever the CRD lists properties and keeps no unknowns."""
    if isinstance(schema, dict):
        schema = {k: _closed(v) for k, v in schema.items()}
        if ("properties" in schema and "additionalProperties" not in schema
                and not schema.get("x-kubernetes-preserve-unknown-fields")):
            schema["additionalProperties"] = False
        return schema
    if isinstance(schema, list):
        return [_closed(v) for v in schema]
    return schema


@functools.cache
def trainjob_validator() -> jsonschema.Draft7Validator:
    crd = yaml.safe_load(CRD.read_text())
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1alpha1"]
    schema = _closed(version["schema"]["openAPIV3Schema"])
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


def _errors(doc: dict) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in trainjob_validator().iter_errors(doc)]


@pytest.mark.parametrize("case", CASES)
def test_trainjob_validates_against_the_crd(case, tmp_path):
    doc = manifests(rendered(case, tmp_path, ("trainjob",))["trainjob.yaml"])["TrainJob"]
    assert doc["apiVersion"] == "trainer.kubeflow.org/v1alpha1"
    assert not _errors(doc)


@pytest.mark.parametrize("where, misspell", [
    (("spec", "trainer"), ("numProcPerNode", "numProcsPerNode")),
    (("spec", "runtimePatches", 0, "trainingRuntimeSpec", "template", "spec", "replicatedJobs", 0, "template",
      "spec", "template", "spec"), ("volumes", "volume")),
    (("spec", "runtimePatches", 0, "trainingRuntimeSpec", "template", "spec", "replicatedJobs", 0, "template",
      "spec", "template", "spec", "containers", 0), ("volumeMounts", "volumeMount")),
])
def test_a_misspelt_trainjob_field_fails(where, misspell, tmp_path):
    doc = copy.deepcopy(manifests(rendered(CASES[0], tmp_path, ("trainjob",))["trainjob.yaml"])["TrainJob"])
    node = doc
    for key in where:
        node = node[key]
    old, new = misspell
    node[new] = node.pop(old)
    errors = _errors(doc)
    assert any(f"'{new}' was unexpected" in e for e in errors), errors


def test_trainjob_name_meets_the_crd_rules(tmp_path):
    """The CRD's CEL rules on metadata.name (jsonschema cannot run CEL): the two it states, read from the CRD."""
    crd = yaml.safe_load(CRD.read_text())
    rules = [r["rule"] for r in crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["x-kubernetes-validations"]]
    (pattern,) = [re.search(r"matches\('(.*)'\)", r).group(1) for r in rules if "matches(" in r]
    (limit,) = [int(re.search(r"<= (\d+)", r).group(1)) for r in rules if "size(" in r]
    assert len(rules) == 2, rules  # a new rule in a newer CRD needs a check here
    for case in CASES + ["<odd name>"]:
        if case == "<odd name>":  # a profile name with dots and a leading digit is made a DNS-1035 label
            names = [object_name("3d.Vision_train-" + "x" * 80)]
        else:
            (tmp_path / case.strip("<>")).mkdir()
            names = [manifests(rendered(case, tmp_path / case.strip("<>"), ("trainjob",))["trainjob.yaml"])
                     ["TrainJob"]["metadata"]["name"]]
        for name in names:
            assert re.fullmatch(pattern, name) and len(name) <= limit, name
