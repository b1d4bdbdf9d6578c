"""The wsl target: ``.wslconfig``, ``wsl.conf`` and the ``setup-wsl.ps1`` bootstrap.

The run's plan decides every key, value spelling and note (:mod:`envkit.plan.wslconfig`); the templates
only loop.

Example:
    >>> from envkit.planner import build_plan
    >>> from envkit.profile import load_profile
    >>> from envkit.generation import context
    >>> sorted(f.path for f in render(context(build_plan(load_profile(None)))))
    ['.wslconfig', 'setup-wsl.ps1', 'wsl.conf']
"""

from __future__ import annotations

import os

from envkit import DISTRIBUTION
from envkit.findings import Finding
from envkit.plan.envplan import EnvPlan
from envkit.plan.wslconfig import STORE_WSL_MIN, WSL2_BACKPORT_BUILDS, WSL2_MIN_BUILD, WSL2_MIN_UBR, WSL_INSTALL_MIN_BUILD, Section
from envkit.targets import GenContext, OutputFile

# UTF-8 with a BOM: Windows PowerShell 5.1 reads a BOM-less script as the ANSI code page,
# which would garble any non-ASCII path embedded from the profile.
PS1_BOM = b"\xef\xbb\xbf"
DEFAULT_DISTRO = "Ubuntu"


def _flat(sections: tuple[Section, ...]) -> list[tuple[str, str, str]]:
    return [(s.name, e.key, e.value) for s in sections for e in s.entries]


def _profile_path(ctx: GenContext) -> str:
    """The profile as setup-wsl.ps1 finds it: relative to the output folder when inside the profile's
    folder (forward slashes, which Windows reads too), else absolute; empty for the embedded profile."""
    source = ctx.plan.source.source
    if source.startswith("<"):
        return ""
    path = (ctx.plan.source.base_dir / os.path.basename(source)).resolve()
    base, out = ctx.plan.source.base_dir.resolve(), ctx.out_dir.resolve()
    if out != base and base not in out.parents:
        return str(path)
    return os.path.relpath(path, out).replace(os.sep, "/")


def render(ctx: GenContext) -> list[OutputFile]:
    """``.wslconfig`` and ``setup-wsl.ps1`` when the profile has ``wsl``; ``wsl.conf`` when it has ``wsl.wsl_conf``."""
    plan = ctx.plan.wsl
    if plan is None:
        return []
    sections = plan.sections
    conf_sections = plan.conf_sections or ()
    files = [OutputFile(".wslconfig", ctx.render("wslconfig.j2", header=ctx.header("#"), sections=sections))]
    if plan.conf_sections is not None:
        files.append(OutputFile("wsl.conf", ctx.render("wsl.conf.j2", header=ctx.header("#"), sections=conf_sections)))
    script = ctx.render(
        "setup-wsl.ps1.j2",
        header=ctx.header("#"),
        profile_name=ctx.plan.source.name,
        distribution=DISTRIBUTION,
        distro=DEFAULT_DISTRO,
        profile_path=_profile_path(ctx),
        has_wsl_conf=bool(_flat(conf_sections)),
        newer_keys=list(plan.newer_keys),
        store_keys=list(plan.store_keys), store_wsl_min=STORE_WSL_MIN,
        wants_gpus=plan.wants_gpus,
        wsl2_min_build=WSL2_MIN_BUILD, wsl2_min_ubr=WSL2_MIN_UBR, wsl2_backport_builds=WSL2_BACKPORT_BUILDS,
        wsl_install_min_build=WSL_INSTALL_MIN_BUILD,
        # Strings, empty when unset: the script treats '' as "not asserted".
        processors=plan.processors,
        memory_bytes=plan.memory_bytes,
    )
    files.append(OutputFile("setup-wsl.ps1", PS1_BOM + script))
    return files


def warnings(plan: EnvPlan) -> list[Finding]:
    """What the WSL files cannot express: nothing (the ``wsl:`` section's notes are the plan's, :mod:`envkit.plan.wslconfig`)."""
    return []
