"""The run's plan -> rendered files and generate-time warnings, for every command that needs them.

``envkit generate`` writes what :func:`render_owned` returns; ``flags``, ``build`` and
``validate`` borrow the same rendering and warnings from here (commands never import
each other). Each takes the one :class:`~envkit.plan.envplan.EnvPlan` the command built.

Example:
    >>> import io
    >>> from pathlib import Path
    >>> from envkit.planner import build_plan
    >>> from envkit.profile import load_profile
    >>> plan = build_plan(load_profile(None), Path("out"))
    >>> "run.sh" in [f.path for f in render_plan(plan)]
    True
    >>> report_warnings(plan, False, io.StringIO())
    []
"""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

from envkit.errors import ProfileError
from envkit.findings import Finding
from envkit.plan.envplan import EnvPlan
from envkit.planner import build_plan
from envkit.profile import LoadedProfile
from envkit.render import make_env
from envkit.targets import TARGET_NAMES, GenContext, OutputFile, render_targets, target_warnings
from envkit.targets import dockerfile
from envkit.termtext import neutralise_lines


def context(plan: EnvPlan, foreign: tuple[str, ...] = ()) -> GenContext:
    """The frozen context every target renders from; ``foreign``: the user's files under ``.envkit/``."""
    return GenContext(plan=plan, env=make_env(), foreign=foreign)


def render_plan(plan: EnvPlan, targets: tuple[str, ...] = TARGET_NAMES) -> list[OutputFile]:
    """Render ``targets`` of ``plan`` in memory (nothing is written)."""
    return render_targets(context(plan), targets)


def render_all(loaded: LoadedProfile, out_dir: Path, targets: tuple[str, ...] = TARGET_NAMES) -> list[OutputFile]:
    """Plan ``loaded`` for ``out_dir`` and render ``targets`` in memory (nothing is written)."""
    return render_plan(build_plan(loaded, out_dir), targets)


def render_owned(plan: EnvPlan, targets: tuple[str, ...] = TARGET_NAMES,
                 foreign: tuple[str, ...] = ()) -> tuple[list[OutputFile], dict[str, str]]:
    """Render ``targets`` one at a time: the files (sorted by path) and which target owns each path.

    ``foreign`` names the files under the output folder's ``.envkit/`` that envkit did not write
    (:func:`envkit.output.foreign_files`): the generated ``.dockerignore`` keeps them out of the image.

    The owners go into the manifest, so a later run can remove the files of a target the
    profile no longer has (and only those). A path two targets render belongs to the first.

    >>> from envkit.profile import load_profile
    >>> files, owners = render_owned(build_plan(load_profile(None), Path("out")), ("run", "compose"))
    >>> sorted(set(owners.values()))
    ['compose', 'run']
    """
    owners: dict[str, str] = {}
    files: dict[str, OutputFile] = {}
    ctx = context(plan, foreign)  # one context (and one template environment) for every target
    for name in targets:
        for f in render_targets(ctx, (name,)):
            owners.setdefault(f.path, name)
            files.setdefault(f.path, f)
    return sorted(files.values(), key=lambda f: f.path), owners


def render_build_context(plan: EnvPlan) -> list[OutputFile]:
    """What ``docker build`` needs: the Dockerfile target's files only."""
    return sorted(dockerfile.render(context(plan)), key=lambda f: f.path)


def plan_warnings(plan: EnvPlan, targets: tuple[str, ...] = ()) -> list[Finding]:
    """The plan's warnings, then those of ``targets`` (each what its target cannot express, placed in the
    profile by ``plan.locate``), each once.

    Targets sharing a translation, such as the two Kubernetes ones, share their warnings.
    """
    warnings = list(plan.warnings)
    warnings += [w for w in dict.fromkeys(plan.locate(w) for t in targets for w in target_warnings(t, plan))
                 if w not in warnings]
    return warnings


def warning_record(finding: Finding) -> dict[str, object]:
    r"""A warning or note as ``--json`` gives it: key path, line, column and text.

    The line and column are the key's in the profile, or its nearest parent's when the profile does not
    write the key (the embedded default's own lines for the default); ``None`` when the warning names no key.

    >>> from envkit.profile import load_profile_bytes
    >>> plan = build_plan(load_profile_bytes(b"envkit: 1\nname: x\nimage: {base: debian}\nrun:\n  shm_size: 1g\n"
    ...                                      b"  ipc: host\n", "p.yaml", Path(".")))
    >>> warning_record(plan.warnings[0])["path"], warning_record(plan.warnings[0])["line"]
    ('run.shm_size', 5)
    """
    return finding.record()


def report_warnings(plan: EnvPlan, strict: bool, err: TextIO, targets: tuple[str, ...] = ()) -> list[Finding]:
    """Print the plan's warnings (:func:`plan_warnings`) to ``err`` and return them; under ``strict`` they are
    errors (exit 2, nothing written)."""
    warnings = plan_warnings(plan, targets)
    if strict and warnings:
        raise ProfileError("\n".join(f"{w.source}: {w}" for w in warnings),
                           hint="fix the profile, or drop --strict to treat these as warnings")
    for w in warnings:
        print(f"envkit: warning: {neutralise_lines(f'{w.source}: {w}')}", file=err)
    return warnings


def report_notes(plan: EnvPlan, err: TextIO) -> list[Finding]:
    """Print what envkit decided where the profile left it open (``plan.notes``) to ``err``; never an error."""
    for n in plan.notes:
        print(f"envkit: note: {neutralise_lines(f'{n.source}: {n}')}", file=err)
    return list(plan.notes)
