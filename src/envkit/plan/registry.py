"""The target registry as data: each target's module, the profile section it renders from, and what it writes.

One line per target, and no other list of target names or output names: :mod:`envkit.targets` reads it
to import and render a target, the image plan (:mod:`envkit.plan.image`) to leave every file envkit
writes out of the project copy when the output folder is the project's own folder. It is plain data, so
the plan reads it without importing a target (targets sit above the plan).

``outputs`` names what a target writes at the top of its output folder: files, or the folder (such as
``.envkit``) everything else it writes lies under. tests/targets/test_registry.py checks that each
target renders nothing outside its own names.

Example:
    >>> REGISTRY["k8s"].section, REGISTRY["k8s"].outputs
    ('cluster', ('k8s.yaml',))
    >>> "Dockerfile" in output_names() and MANIFEST in output_names()
    True
"""

from __future__ import annotations

from typing import NamedTuple

from envkit.plan.paths import (
    CHECK_FILE, CONTEXT_DIR, DELTA_SCRIPT, ENTRYPOINT_FILE, EXPECT_FILE, HARNESS_FILE, MANIFEST,
)


class Target(NamedTuple):
    module: str  # the module rendering it (imported on first use)
    section: str | None  # the profile section it cannot render without, if any
    outputs: tuple[str, ...]  # what it writes at the top of the output folder


REGISTRY: dict[str, Target] = {
    "dockerfile": Target("envkit.targets.dockerfile", None,
                         ("Dockerfile", ".dockerignore", CHECK_FILE, ENTRYPOINT_FILE, HARNESS_FILE, EXPECT_FILE,
                          DELTA_SCRIPT, CONTEXT_DIR)),
    "run": Target("envkit.targets.run", None, ("run.sh",)),
    "compose": Target("envkit.targets.compose", None, ("compose.yaml",)),
    "devcontainer": Target("envkit.targets.devcontainer", None, (".devcontainer",)),
    "wsl": Target("envkit.targets.wsl", None, (".wslconfig", "wsl.conf", "setup-wsl.ps1")),
    "k8s": Target("envkit.targets.k8s", "cluster", ("k8s.yaml",)),
    "trainjob": Target("envkit.targets.trainjob", "cluster", ("trainjob.yaml",)),
    "slurm": Target("envkit.targets.slurm", "cluster", ("slurm.sbatch",)),
}


def output_names() -> frozenset[str]:
    """Every name envkit may write at the top of an output folder: each target's, and the manifest."""
    return frozenset(name for target in REGISTRY.values() for name in target.outputs) | {MANIFEST}
