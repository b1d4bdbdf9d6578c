"""run.sh: ``docker run`` with the profile's run settings, every value shell-quoted.

Relative volume sources are resolved against the script's own folder at run
time, so the script works from any current directory.

Example:
    >>> # render(ctx) -> [OutputFile("run.sh", ..., mode=0o755)]
"""

from __future__ import annotations

import shlex

from envkit.runsettings import docker_flags
from envkit.targets import GenContext, OutputFile

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


def context(ctx: GenContext) -> dict:
    def source(v):
        return ctx.anchored_source(v, _HERE)

    items = []
    for flag in docker_flags(ctx.settings, volume_source=source):
        # A relative volume becomes "--volume=${here}"'/rest': the variable expands, the rest stays literal.
        if _HERE in flag:
            head, rest = flag.split(_HERE, 1)
            items.append({"here": True, "head": array_word(head) if head else "",
                          "rest": array_word(rest) if rest else ""})
        else:
            items.append({"here": False, "text": array_word(flag)})
    # A profile's `$` is meant literally and single quotes keep it so; shellcheck's SC2016 suspects a
    # forgotten expansion, so say once why it is not one (only where such a value exists).
    literal_dollar = any("$" in (i.get("text") or i.get("head", "") + i.get("rest", "")) for i in items)
    return {"header": ctx.header("#"), "image": shlex.quote(ctx.profile.image_tag), "flags": items,
            "literal_dollar": literal_dollar}


def render(ctx: GenContext) -> list[OutputFile]:
    return [OutputFile("run.sh", ctx.render("run.sh.j2", **context(ctx)), mode=0o755)]
