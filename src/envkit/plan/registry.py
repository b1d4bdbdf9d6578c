"""The target registry as data: one frozen :class:`Target` record per target, all the project knows of it.

A record says where the target's module is (``envkit.targets.<name>``), the profile section it renders from,
what it writes at the top of the output folder, whether it writes the output folder's Dockerfile or
builds from it (and which of its files does), and the folders it fills whole. Nothing else lists target
names, output names or these facts: :mod:`envkit.targets` reads the records to import, render and warn
(its modules hold ``render(ctx)`` and ``warnings(plan)`` only, ``envkit.targets.TargetModule``), generate
reads them for ``--target`` and the output folder, and the image plan (:mod:`envkit.plan.image`) leaves
every name envkit writes out of the project copy when the output folder is the project's own folder. It
is plain data, so the plan reads it without importing a target (targets sit above the plan).

``outputs`` names what a target writes at the top of its output folder: files, or the folder (such as
``.envkit``) everything else it writes lies under. tests/targets/test_registry.py checks that each
target renders nothing outside its own names.

Example:
    >>> REGISTRY["k8s"].section, REGISTRY["k8s"].outputs, REGISTRY["k8s"].module
    ('cluster', ('k8s.yaml',), 'envkit.targets.k8s')
    >>> [t.name for t in REGISTRY.values() if t.builds_from_dockerfile]
    ['compose', 'devcontainer']
    >>> "Dockerfile" in output_names() and MANIFEST in output_names()
    True
"""

from __future__ import annotations

from dataclasses import dataclass

from envkit.plan.paths import (
    CHECK_FILE, CONTEXT_DIR, DELTA_SCRIPT, ENTRYPOINT_FILE, EXPECT_FILE, HARNESS_FILE, MANIFEST,
)


@dataclass(frozen=True)
class Target:
    """One target. ``section``: the profile section it cannot render without (without it the target renders
    nothing and its module is not imported; asked for by name, generate exits 2). ``writes_dockerfile``: it
    writes the output folder's Dockerfile; ``builds_from_dockerfile``: its file that builds from that
    Dockerfile (generate warns when neither it nor a requested target provides one). ``exact_folders``: the
    folders it fills whole, which after a run hold exactly what it rendered there (a copy envkit wrote that
    the plan no longer lists is removed; a file envkit did not write is the user's, kept and excluded)."""

    name: str
    section: str | None
    outputs: tuple[str, ...]
    writes_dockerfile: bool = False
    builds_from_dockerfile: str | None = None
    exact_folders: tuple[str, ...] = ()

    @property
    def module(self) -> str:
        """The module rendering it, named after it (imported on first use)."""
        return f"envkit.targets.{self.name}"


REGISTRY: dict[str, Target] = {target.name: target for target in (
    Target("dockerfile", None, ("Dockerfile", ".dockerignore", CHECK_FILE, ENTRYPOINT_FILE, HARNESS_FILE, EXPECT_FILE,
                                DELTA_SCRIPT, CONTEXT_DIR),
           writes_dockerfile=True, exact_folders=(CONTEXT_DIR,)),
    Target("run", None, ("run.sh",)),
    Target("compose", None, ("compose.yaml",), builds_from_dockerfile="compose.yaml"),
    Target("devcontainer", None, (".devcontainer",), builds_from_dockerfile=".devcontainer/devcontainer.json"),
    Target("wsl", None, (".wslconfig", "wsl.conf", "setup-wsl.ps1")),
    Target("k8s", "cluster", ("k8s.yaml",)),
    Target("trainjob", "cluster", ("trainjob.yaml",)),
    Target("slurm", "cluster", ("slurm.sbatch",)),
)}


def output_names() -> frozenset[str]:
    """Every name envkit may write at the top of an output folder: each target's, and the manifest."""
    return frozenset(name for target in REGISTRY.values() for name in target.outputs) | {MANIFEST}
