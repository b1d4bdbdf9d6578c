"""Every generated TrainJob passes Kubeflow Trainer's validating webhook, rule by rule, at each supported release.

The rules are tests/cluster/trainer_webhook.py (each cites its Go source); the CRD schema of
both releases is checked beside them. Each rule is shown live: a document that breaks it fails.
"""

from __future__ import annotations

import copy
import functools

import jsonschema
import pytest
import yaml

from envkit.targets.trainjob import PATCH_MANAGER
from tests.cluster import trainer_webhook as wh
from tests.cluster.kubeutil import manifests
from tests.cluster.test_validate import CASES, _closed
from tests.conftest import ROOT, call_envkit, copy_example

CRDS = {"v2.3.0": ROOT / "schemas" / "kubernetes" / "trainer.kubeflow.org_trainjobs.yaml",
        "v2.2.0": ROOT / "schemas" / "kubernetes" / "v2.2.0" / "trainer.kubeflow.org_trainjobs.yaml"}
POD = ("spec", "runtimePatches", 0, "trainingRuntimeSpec", "template", "spec", "replicatedJobs", 0, "template",
       "spec", "template", "spec")


@functools.cache
def _validator(release: str) -> jsonschema.Draft7Validator:
    crd = yaml.safe_load(CRDS[release].read_text())
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1alpha1"]
    return jsonschema.Draft7Validator(_closed(version["schema"]["openAPIV3Schema"]))


@pytest.fixture(scope="module")
def trainjobs(tmp_path_factory) -> dict[str, dict]:
    """``envkit generate --target trainjob`` of every cluster example and the two variants, through the CLI."""
    from tests.cluster.kubeutil import profile_path

    out = {}
    for case in CASES:
        tmp = tmp_path_factory.mktemp("tj")
        path = profile_path(case, tmp) if case.startswith("<") else copy_example(case, tmp)
        res = call_envkit("generate", path.name, "-o", "out", "--target", "trainjob", cwd=tmp)
        assert res.returncode == 0, res.stderr
        out[case] = manifests((tmp / "out" / "trainjob.yaml").read_text())["TrainJob"]
    return out


def test_the_supported_releases_are_the_vendored_crds():
    assert tuple(sorted(CRDS)) == wh.RELEASES


@pytest.mark.parametrize("release", wh.RELEASES)
@pytest.mark.parametrize("case", CASES)
def test_trainjob_passes_the_crd_and_the_webhook(case, release, trainjobs):
    doc = trainjobs[case]
    assert not [e.message for e in _validator(release).iter_errors(doc)]
    assert wh.webhook_errors(doc) == []
    assert all("/" in p["manager"] for p in doc["spec"]["runtimePatches"])


def test_the_manager_is_domain_prefixed():
    assert wh.is_domain_prefixed_path(PATCH_MANAGER) == []
    assert wh.is_domain_prefixed_path("trainer.kubeflow.org/kubeflow-sdk") == []  # Trainer's own, for comparison


def _set(doc: dict, where: tuple, key: str, value) -> dict:
    doc = copy.deepcopy(doc)
    node = doc
    for k in where:
        node = node[k]
    node[key] = value
    return doc


def _break(rule, doc: dict) -> dict:
    """``doc`` changed so that ``rule`` (and only what it checks) fails."""
    name = rule.__name__
    if name == "rule_runtime_exists":
        return _set(doc, ("spec", "runtimeRef"), "name", "torch-distributed-typo")
    if name == "rule_manager_is_domain_prefixed":
        return _set(doc, ("spec", "runtimePatches", 0), "manager", "envkit")
    if name == "rule_patched_jobs_exist":
        return _set(doc, POD[:8], "name", "trainer")
    if name == "rule_patched_init_containers_exist":
        return _set(doc, POD, "initContainers", [{"name": "preflight"}])
    if name == "rule_patched_containers_exist":
        return _set(doc, POD + ("containers", 0), "name", "train")
    if name == "rule_no_env_in_trainer_container_patch":
        return _set(doc, POD + ("containers", 0), "env", [{"name": "A", "value": "1"}])
    if name == "rule_initializers_need_their_jobs":
        return _set(doc, ("spec",), "initializer", {"dataset": {"storageUri": "hf://x"}})
    if name == "rule_no_reserved_torch_env":
        return _set(doc, ("spec", "trainer"), "env", [{"name": "PET_MASTER_ADDR", "value": "x"}])
    if name == "rule_not_torchtune":
        return _set(doc, ("spec", "trainer"), "command", ["tune", "run"])
    raise AssertionError(f"{name}: no violating document for this rule; add one here")


@pytest.mark.parametrize("rule", wh.RULES, ids=lambda r: r.__name__)
def test_each_rule_catches_a_violating_document(rule, trainjobs):
    doc = trainjobs[CASES[0]]
    assert rule(doc, wh.TORCH_DISTRIBUTED) == []
    bad = _break(rule, doc)
    assert rule(bad, wh.TORCH_DISTRIBUTED), f"{rule.__name__} did not catch {bad['spec']}"
    # The CRD alone admits the broken document: only the webhook rule stands between it and the cluster.
    for release in wh.RELEASES:
        assert not [e.message for e in _validator(release).iter_errors(bad)], (rule.__name__, release)


def test_each_rule_cites_its_source_at_every_release():
    for rule in wh.RULES:
        doc = rule.__doc__ or ""
        for release in wh.RELEASES:
            assert f"kubeflow/trainer@{release}:pkg/" in doc, (rule.__name__, release)


@pytest.mark.parametrize("value, ok", [
    ("envkit.io/envkit", True), ("a/b", True), ("acme.io/foo/bar", True),
    ("envkit", False), ("/envkit", False), ("envkit.io/", False), ("Envkit.io/x", False), ("envkit_io/x", False),
    ("envkit.io/a b", False), ("", False),
])
def test_is_domain_prefixed_path(value, ok):
    assert (wh.is_domain_prefixed_path(value) == []) is ok
