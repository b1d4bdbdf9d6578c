"""Kubeflow Trainer's validating webhook for TrainJob, on create, as rules in Python.

The CRD schema (tests/cluster/test_validate.py) is what the API server checks; the
webhook (``validator.trainjob.trainer.kubeflow.org``, failurePolicy Fail) checks more,
in Go, and a TrainJob that fails it is rejected at ``kubectl apply``. Its path, at each
release envkit supports (``RELEASES``):

- pkg/webhooks/trainjob_webhook.go ``ValidateCreate`` (v2.2.0/v2.3.0 :110-119) looks the
  runtime up by ``runtimeRef`` (apiGroup, kind) and calls its ``ValidateObjects``;
- pkg/runtime/core/clustertrainingruntime.go ``ValidateObjects`` (v2.3.0 :99-123, v2.2.0
  :85-109) needs the ClusterTrainingRuntime to exist, then runs every plugin's ``Validate``
  (pkg/runtime/framework/core/framework.go ``RunCustomValidationPlugins``, :112-125);
- of the plugins, ``jobset`` and ``torch`` check a TrainJob on torch-distributed; mpi, flux,
  xgboost (no policy of theirs), volcano (no podGroupPolicy) and jax (always) return no error.

Each ``rule_*`` takes the TrainJob (a dict, as parsed from YAML) and the runtime it names
(``Runtime``), returns the error messages the webhook would give (empty: admitted), and
cites its source as ``kubeflow/trainer@TAG:PATH:LINE``. Update-only checks (runtimePatches
immutability, jobset.go ``checkRuntimePatchesImmutability``) are out of scope: envkit
creates. ``TORCH_DISTRIBUTED`` is the stock runtime, at both releases
(manifests/base/runtimes/torch_distributed.yaml: replicated job ``node``, container ``node``,
``mlPolicy.torch: {}``, no envInjection, no podGroupPolicy).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

RELEASES = ("v2.2.0", "v2.3.0")
GROUP = "trainer.kubeflow.org"

# pkg/constants/constants.go (v2.3.0 :191-203, :300): TorchRunReservedEnvNames.
TORCH_RESERVED_ENV = frozenset({"PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK", "PET_MASTER_ADDR",
                                "PET_MASTER_PORT"})
# pkg/constants/constants.go: DatasetInitializer, ModelInitializer, Node (container and job names).
DATASET_INITIALIZER, MODEL_INITIALIZER, NODE = "dataset-initializer", "model-initializer", "node"
TORCHTUNE_ENTRYPOINT = ["tune", "run"]  # constants.go TorchTuneEntrypoint


@dataclass(frozen=True)
class Runtime:
    """A (Cluster)TrainingRuntime as the webhook sees it: its kind and name, and replicated job -> containers."""

    kind: str
    name: str
    jobs: dict[str, frozenset[str]] = field(default_factory=dict)
    torch: bool = True


TORCH_DISTRIBUTED = Runtime("ClusterTrainingRuntime", "torch-distributed", {"node": frozenset({"node"})})

# k8s.io/apimachinery pkg/util/validation/validation.go: dns1123SubdomainFmt, DNS1123SubdomainMaxLength, httpPathFmt.
_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN = re.compile(rf"{_DNS1123_LABEL}(\.{_DNS1123_LABEL})*")
_HTTP_PATH = re.compile(r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+")


def is_domain_prefixed_path(value: str) -> list[str]:
    """k8s.io/apimachinery pkg/util/validation/validation.go ``IsDomainPrefixedPath``: before the first
    ``/`` a DNS-1123 subdomain (at most 253 characters), after it a non-empty RFC 3986 path."""
    if not value:
        return ["Required value"]
    host, sep, path = value.partition("/")
    if not sep or not host or not path:
        return [f'{value!r}: must be a domain-prefixed path (such as "acme.io/foo")']
    errors = []
    if len(host) > 253 or not _DNS1123_SUBDOMAIN.fullmatch(host):
        errors.append(f"{host!r}: a lowercase RFC 1123 subdomain")
    if not _HTTP_PATH.fullmatch(path):
        errors.append(f"{path!r}: Invalid path")
    return errors


def _patched_jobs(doc: dict) -> list[tuple[int, dict]]:
    out = []
    for i, patch in enumerate(doc["spec"].get("runtimePatches") or []):
        spec = ((patch.get("trainingRuntimeSpec") or {}).get("template") or {}).get("spec") or {}
        out += [(i, job) for job in spec.get("replicatedJobs") or []]
    return out


def _pod_patch(job: dict) -> dict:
    return (((job.get("template") or {}).get("spec") or {}).get("template") or {}).get("spec") or {}


def rule_runtime_exists(doc: dict, runtime: Runtime) -> list[str]:
    """runtimeRef names a runtime of a kind the webhook knows, and it exists.

    kubeflow/trainer@v2.3.0:pkg/webhooks/trainjob_webhook.go:114-117 ("unsupported runtime"; the CRD defaults
    apiGroup to trainer.kubeflow.org and kind to ClusterTrainingRuntime);
    kubeflow/trainer@v2.3.0:pkg/runtime/core/clustertrainingruntime.go:101-107 ("must be created before the
    TrainJob is created"); kubeflow/trainer@v2.2.0:pkg/webhooks/trainjob_webhook.go:114-117,
    kubeflow/trainer@v2.2.0:pkg/runtime/core/clustertrainingruntime.go:87-93.
    """
    ref = doc["spec"]["runtimeRef"]
    group, kind = ref.get("apiGroup", GROUP), ref.get("kind", "ClusterTrainingRuntime")
    if group != GROUP or kind not in ("ClusterTrainingRuntime", "TrainingRuntime"):
        return [f"unsupported runtime: {kind}.{group}"]
    if (kind, ref["name"]) != (runtime.kind, runtime.name):
        return [f"spec.RuntimeRef: specified {kind} {ref['name']!r} must be created before the TrainJob is created"]
    return []


def rule_manager_is_domain_prefixed(doc: dict, runtime: Runtime) -> list[str]:
    """Every runtimePatches[].manager is a domain-prefixed path (``IsDomainPrefixedPath``).

    kubeflow/trainer@v2.3.0:pkg/runtime/framework/plugins/jobset/jobset.go:176;
    kubeflow/trainer@v2.2.0:pkg/runtime/framework/plugins/jobset/jobset.go:129.
    """
    return [f"spec.runtimePatches.manager: {e}" for patch in doc["spec"].get("runtimePatches") or []
            for e in is_domain_prefixed_path(patch.get("manager", ""))]


def rule_patched_jobs_exist(doc: dict, runtime: Runtime) -> list[str]:
    """A patch names only replicated jobs the runtime's template has.

    kubeflow/trainer@v2.3.0:pkg/runtime/framework/plugins/jobset/jobset.go:182-185;
    kubeflow/trainer@v2.2.0:pkg/runtime/framework/plugins/jobset/jobset.go:136-139.
    """
    return [f"spec.runtimePatches[{i}]: must not have replicated job that doesn't exist in the runtime job "
            f"template ({job.get('name')!r})" for i, job in _patched_jobs(doc) if job.get("name") not in runtime.jobs]


def rule_patched_init_containers_exist(doc: dict, runtime: Runtime) -> list[str]:
    """A pod patch's initContainers[] name only containers its replicated job already has.

    kubeflow/trainer@v2.3.0:pkg/runtime/framework/plugins/jobset/jobset.go:193-197;
    kubeflow/trainer@v2.2.0:pkg/runtime/framework/plugins/jobset/jobset.go:146-150.
    """
    return [f"spec.runtimePatches[{i}]: must not have initContainer that doesn't exist in the runtime job "
            f"{job['name']} ({c.get('name')!r})" for i, job in _patched_jobs(doc) if job.get("name") in runtime.jobs
            for c in _pod_patch(job).get("initContainers") or [] if c.get("name") not in runtime.jobs[job["name"]]]


def rule_patched_containers_exist(doc: dict, runtime: Runtime) -> list[str]:
    """A pod patch's containers[] name only containers its replicated job already has.

    kubeflow/trainer@v2.3.0:pkg/runtime/framework/plugins/jobset/jobset.go:199-202;
    kubeflow/trainer@v2.2.0:pkg/runtime/framework/plugins/jobset/jobset.go:152-155.
    """
    return [f"spec.runtimePatches[{i}]: must not have container that doesn't exist in the runtime job "
            f"{job['name']} ({c.get('name')!r})" for i, job in _patched_jobs(doc) if job.get("name") in runtime.jobs
            for c in _pod_patch(job).get("containers") or [] if c.get("name") not in runtime.jobs[job["name"]]]


def rule_no_env_in_trainer_container_patch(doc: dict, runtime: Runtime) -> list[str]:
    """A container patch of ``node``, ``dataset-initializer`` or ``model-initializer`` carries no env
    (the trainer's env goes in ``spec.trainer.env``).

    kubeflow/trainer@v2.3.0:pkg/runtime/framework/plugins/jobset/jobset.go:203-205;
    kubeflow/trainer@v2.2.0:pkg/runtime/framework/plugins/jobset/jobset.go:156-158.
    """
    return [f"spec.runtimePatches[{i}]: must not have envs for the {DATASET_INITIALIZER}, {MODEL_INITIALIZER}, "
            f"{NODE} containers" for i, job in _patched_jobs(doc) if job.get("name") in runtime.jobs
            for c in _pod_patch(job).get("containers") or []
            if c.get("name") in runtime.jobs[job["name"]] and c.get("env")
            and c["name"] in (DATASET_INITIALIZER, MODEL_INITIALIZER, NODE)]


def rule_initializers_need_their_jobs(doc: dict, runtime: Runtime) -> list[str]:
    """spec.initializer.dataset / .model need the runtime's dataset-initializer / model-initializer job
    (with that container and the initializer volume mount; torch-distributed has neither job).

    kubeflow/trainer@v2.3.0:pkg/runtime/framework/plugins/jobset/jobset.go:112-170;
    kubeflow/trainer@v2.2.0:pkg/runtime/framework/plugins/jobset/jobset.go:108-124.
    """
    init = doc["spec"].get("initializer") or {}
    return [f"spec.runtimeRef: must have {job} job when trainJob is configured with input {key}Config"
            for key, job in (("dataset", DATASET_INITIALIZER), ("model", MODEL_INITIALIZER))
            if init.get(key) is not None and job not in runtime.jobs]


def rule_no_reserved_torch_env(doc: dict, runtime: Runtime) -> list[str]:
    """spec.trainer.env sets none of the PET_* variables the torch plugin sets itself.

    kubeflow/trainer@v2.3.0:pkg/runtime/framework/plugins/torch/torch.go:65-77 (constants.go:300
    TorchRunReservedEnvNames); kubeflow/trainer@v2.2.0:pkg/runtime/framework/plugins/torch/torch.go:64-76.
    """
    if not runtime.torch or doc["spec"].get("trainer") is None:
        return []
    names = sorted({e["name"] for e in doc["spec"]["trainer"].get("env") or []} & TORCH_RESERVED_ENV)
    return [f"spec.trainer.env: must not have reserved envs, invalid envs configured: {names}"] if names else []


def rule_not_torchtune(doc: dict, runtime: Runtime) -> list[str]:
    """The trainer's command is not torchtune's ``tune run``, whose recipe and model checks this module
    does not carry (envkit never writes it).

    kubeflow/trainer@v2.3.0:pkg/runtime/framework/plugins/torch/torch.go:79-84;
    kubeflow/trainer@v2.2.0:pkg/runtime/framework/plugins/torch/torch.go:78-83.
    """
    command = (doc["spec"].get("trainer") or {}).get("command")
    return ["spec.trainer.command: torchtune's checks are not modelled here"] if command == TORCHTUNE_ENTRYPOINT else []


RULES: tuple[Callable[[dict, Runtime], list[str]], ...] = (
    rule_runtime_exists, rule_manager_is_domain_prefixed, rule_patched_jobs_exist,
    rule_patched_init_containers_exist, rule_patched_containers_exist, rule_no_env_in_trainer_container_patch,
    rule_initializers_need_their_jobs, rule_no_reserved_torch_env, rule_not_torchtune,
)


def webhook_errors(doc: dict, runtime: Runtime = TORCH_DISTRIBUTED) -> list[str]:
    """Every rule's errors for ``doc`` (empty: the webhook admits it on create)."""
    return [e for rule in RULES for e in rule(doc, runtime)]
