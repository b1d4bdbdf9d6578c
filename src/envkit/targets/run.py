"""run.sh: ``docker run`` with the profile's run settings, every value shell-quoted.

Relative volume sources are resolved against the script's own folder at run
time, so the script works from any current directory. With envkit's local-only default image it stops
before `docker run` when that image is not built yet (nothing is pulled in its name).

This module owns the ``docker run`` spelling of :class:`~envkit.plan.runsettings.RunSettings`
(:func:`docker_flags`); devcontainer's ``runArgs`` and ``envkit flags`` import it from here.

Example:
    >>> from envkit.planner import build_plan
    >>> from envkit.profile import load_profile
    >>> docker_flags(build_plan(load_profile(None)).settings)[:3]
    ['--shm-size=2g', '--ipc=private', '--init']
"""

from __future__ import annotations

import shlex

from envkit.hostpaths import bash_path, is_drive_path
from envkit.findings import Finding
from envkit.plan.envplan import EnvPlan
from envkit.plan.runsettings import REMAP_ENV, RunSettings
from envkit.targets import GenContext, OutputFile
from envkit.units import format_size

_HERE = "\0here\0"  # a marker no profile value can contain (YAML text has no NULs after validation)


def array_word(text: str) -> str:
    """``text`` as one word of a bash array, quoted so that shellcheck accepts it.

    shlex leaves a comma bare, and shellcheck's SC2054 reads a bare comma in an array as a
    mistaken separator; quoting it changes nothing for bash and keeps the script lint-clean.

    >>> print(array_word("--cpuset-cpus=0-3,8-11"), array_word("--init"), array_word("a b"))
    '--cpuset-cpus=0-3,8-11' --init 'a b'
    """
    quoted = shlex.quote(text)
    return f"'{text}'" if quoted == text and "," in text else quoted


def _cpus_text(cpus: float) -> str:
    return f"{cpus:g}"


def gpus_flag_value(gpus) -> str:
    """``--gpus`` value: ``all``, ``2``, or ``"device=0,1"`` (quotes included: Docker parses it as CSV)."""
    if gpus == "all" or isinstance(gpus, int):
        return str(gpus)
    return '"device=' + ",".join(str(g) for g in gpus) + '"'


def docker_flags(rs: RunSettings, volume_source=lambda v: v.source, *, project: bool = True,
                 gpus: bool = True) -> list[str]:
    """``docker run`` flags, one list item per flag (never shell-joined here).

    ``volume_source`` maps a Volume to the host path text to use (callers resolve relative paths);
    ``project=False`` leaves out the project mount (devcontainer.json states it as workspaceMount);
    ``gpus=False`` leaves out ``--gpus`` (devcontainer.json states "all" as hostRequirements.gpu).
    """
    flags: list[str] = []
    if rs.shm_size is not None:
        flags.append(f"--shm-size={format_size(rs.shm_size)}")
    flags.append(f"--ipc={rs.ipc}")
    if rs.init:
        flags.append("--init")
    if rs.start_as_root and project:
        # devcontainer.json (project=False) has containerUser and VS Code's own updateRemoteUserUID.
        flags.extend(["--user=root", f"--env={REMAP_ENV}=1"])
    if rs.cpuset:
        flags.append(f"--cpuset-cpus={rs.cpuset}")
    if rs.cpuset_mems is not None:
        flags.append(f"--cpuset-mems={rs.cpuset_mems}")
    if rs.cpus is not None:
        flags.append(f"--cpus={_cpus_text(rs.cpus)}")
    if rs.memory is not None:
        flags.append(f"--memory={format_size(rs.memory)}")
    if rs.gpus is not None and gpus:
        flags.append(f"--gpus={gpus_flag_value(rs.gpus)}")
    flags.extend(f"--ulimit={u.flag_value}" for u in rs.ulimits)
    flags.extend(f"--device={d}" for d in rs.devices)
    for v in rs.volumes:
        if v.project and not project:
            continue
        flags.append("--volume=" + ":".join([volume_source(v), v.target] + ([v.mode] if v.mode else [])))
    flags.extend(f"--env={k}={val}" for k, val in rs.env)
    return flags

# What run.sh says when the profile's local-only image is not built yet.
BUILD_FIRST = "run 'envkit build' first (or set ENVKIT_IMAGE=name:tag)"


def context(ctx: GenContext) -> dict:
    def source(v):
        # bash (WSL, Git Bash) hands Docker Desktop a drive path as //c/...; C:\... would reach it mangled.
        return bash_path(ctx.anchored_source(v, _HERE))

    items = [_word(flag) for flag in docker_flags(ctx.settings, volume_source=source)]
    # Bind-mount sources that do not exist yet are made by run.sh, as the user who runs it: Docker would make
    # them as root, and the user could not write there. A Windows drive path is Docker Desktop's to resolve.
    sources = [_word(source(v)) for v in ctx.settings.volumes if not (v.project or is_drive_path(v.source))]
    # A profile's `$` is meant literally and single quotes keep it so; shellcheck's SC2016 suspects a
    # forgotten expansion, so say once why it is not one (only where such a value exists).
    # A directive covers the one command after it, so each array gets its own.
    def literal_dollar(words: list[dict]) -> bool:
        return any("$" in str(i.get("text") or f"{i.get('head', '')}{i.get('rest', '')}") for i in words)

    # `here` is defined only where a flag reads it: shellcheck's SC2034 flags an unused variable.
    return {"header": ctx.header("#"), "image": shlex.quote(ctx.plan.image.spec.tag), "flags": items,
            "local_image": ctx.plan.image.spec.tag_is_default, "build_hint": BUILD_FIRST,
            "literal_dollar": literal_dollar(items), "sources_dollar": literal_dollar(sources),
            "uses_here": any(i["here"] for i in items), "sources": sources}


def _word(text: str) -> dict:
    """One word of a bash array: a relative volume's "${here}" expands, the rest stays literal."""
    if _HERE in text:
        head, rest = text.split(_HERE, 1)
        return {"here": True, "head": array_word(head) if head else "", "rest": array_word(rest) if rest else ""}
    return {"here": False, "text": array_word(text)}


def render(ctx: GenContext) -> list[OutputFile]:
    return [OutputFile("run.sh", ctx.render("run.sh.j2", **context(ctx)), mode=0o755)]


def warnings(plan: EnvPlan) -> list[Finding]:
    """What run.sh cannot express: nothing (every run setting is a ``docker run`` flag)."""
    return []
