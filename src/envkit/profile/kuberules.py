"""The Kubernetes API server's own rules on what the cluster section asks for, checked at load.

A manifest the API server refuses fails at ``kubectl apply``, long after generate said it wrote it.
Each rule here is the API server's, from kubernetes/kubernetes pkg/apis/core/validation/validation.go:

- ``ValidateTolerations``: an empty key needs operator ``Exists`` ("operator must be Exists when
  `key` is empty"; an unset operator is ``Equal``); ``tolerationSeconds`` needs effect ``NoExecute``
  ("effect must be 'NoExecute' when `tolerationSeconds` is set"); ``Exists`` takes no value ("value
  must be empty when `operator` is 'Exists'"). Key and value alphabets are the model's patterns
  (envkit.profile.cluster.LabelKey, LabelValue).
- ``ValidateVolumeMounts``: a container's mountPaths "must be unique". The pod mounts its shared
  memory at ``SHM_MOUNT`` (envkit.plan.paths), every claim, and with ``host_path_volumes`` the
  absolute ``run.volumes``; the paths are compared after removing repeated and trailing slashes, since
  the runtime would mount both onto one directory even where the API server's string compare passes.

Each problem is ``(key path, message)``; ``Profile``'s last validator raises them (envkit.profile.rules)
and envkit.profile.load adds the file, line and column.

Example:
    >>> from pydantic import ValidationError
    >>> from envkit.profile.model import Profile
    >>> try: Profile.model_validate({"envkit": 1, "name": "t", "image": {"base": "debian"}, "cluster": {
    ...     "entrypoint": ["t.py"], "kubernetes": {"tolerations": [{"key": "gpu", "operator": "Exists", "value": "x"}]}}})
    ... except ValidationError as e: print(e.errors()[0]["ctx"]["at"], e.errors()[0]["ctx"]["message"].split(";")[0])
    ('cluster', 'kubernetes', 'tolerations', 0, 'value') value must be empty when operator is 'Exists'
"""

from __future__ import annotations

from envkit.hostpaths import is_drive_path, split_volume
from envkit.locations import SHM_MOUNT
from envkit.profile.cluster import Cluster
from envkit.profile.sections import Run

_RULES = "the API server's rule (kubernetes/kubernetes pkg/apis/core/validation/validation.go, {})"
_TOLERATIONS = ("cluster", "kubernetes", "tolerations")
_CLAIMS = ("cluster", "kubernetes", "volumes")


def _mount_key(path: str) -> str:
    return "/" + "/".join(s for s in path.split("/") if s not in ("", "."))


def kubernetes_problems(cluster: Cluster | None, run: Run) -> list[tuple[tuple[str | int, ...], str]]:
    """What the API server would refuse in the pods envkit writes for the ``cluster`` section (and ``run``'s
    volumes), with the key to blame."""
    if cluster is None:
        return []
    out: list[tuple[tuple[str | int, ...], str]] = []
    rule = _RULES.format("ValidateTolerations")
    for i, t in enumerate(cluster.kubernetes.tolerations):
        operator = t.operator or "Equal"
        if not t.key and operator != "Exists":
            out.append((_TOLERATIONS + (i, "operator" if t.operator else "key"),
                        f"operator must be Exists when key is empty (got {operator}{'' if t.operator else ', the default'}); "
                        f"an empty key with Exists tolerates every taint, else name the taint's key: {rule}"))
        if t.tolerationSeconds is not None and t.effect != "NoExecute":
            out.append((_TOLERATIONS + (i, "tolerationSeconds"),
                        f"tolerationSeconds needs effect: NoExecute (got {t.effect or 'no effect'}); only a NoExecute "
                        f"taint evicts a running pod, after that many seconds: {rule}"))
        if operator == "Exists" and t.value:
            out.append((_TOLERATIONS + (i, "value"),
                        f"value must be empty when operator is 'Exists'; drop the value, or use operator: Equal to "
                        f"match that value only: {rule}"))
    rule = _RULES.format("ValidateVolumeMounts: mountPath must be unique")
    owners: dict[str, str] = {SHM_MOUNT: "envkit's own /dev/shm volume (a Memory emptyDir sized by run.shm_size)"}
    claims = [(_CLAIMS + (i, "mount"), v.mount, f"cluster.kubernetes.volumes[{i}]")
              for i, v in enumerate(cluster.kubernetes.volumes)]
    hosts = []
    if cluster.kubernetes.host_path_volumes:
        for i, spec in enumerate(run.volumes):
            source, target = split_volume(spec)[:2]
            if source.startswith("/") and not is_drive_path(source):
                hosts.append((("run", "volumes", i), target, f"run.volumes[{i}] (a hostPath volume)"))
    for key, mount, who in claims + hosts:
        norm = _mount_key(mount)
        if norm in owners:
            hint = "; size /dev/shm with run.shm_size instead" if norm == SHM_MOUNT else "; mount each at its own path"
            out.append((key, f"{mount} is already mounted in the pod by {owners[norm]}{hint}: {rule}"))
        else:
            owners[norm] = who
    return out
