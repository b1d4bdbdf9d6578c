"""compose.yaml: one service that builds the Dockerfile and runs with the profile's settings.

Example:
    >>> # render(ctx) -> [OutputFile("compose.yaml", ...)]
"""

from __future__ import annotations

import re

from envkit.runsettings import compose_escape, compose_service
from envkit.targets import GenContext, OutputFile
from envkit.targets.dockerfile import build_args


def project_name(name: str) -> str:
    """Compose project names allow [a-z0-9_-] only; a profile name may also hold dots."""
    return re.sub(r"[^a-z0-9_-]", "-", name)


def document(ctx: GenContext) -> dict:
    p = ctx.profile
    build: dict = {"context": ".", "dockerfile": "Dockerfile"}
    args = build_args(ctx)
    if args:
        build["args"] = {k: compose_escape(v) for k, v in args}
    service = {"build": build, "image": p.image_tag}
    service.update(compose_service(ctx.settings, volume_source=ctx.relative_source))
    service["stdin_open"] = True
    service["tty"] = True
    name = project_name(p.name)
    return {"name": name, "services": {name: service}}


def render(ctx: GenContext) -> list[OutputFile]:
    return [OutputFile("compose.yaml", ctx.render("compose.yaml.j2", header=ctx.header("#"), doc=document(ctx)))]
