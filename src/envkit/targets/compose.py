"""compose.yaml: one service that builds the Dockerfile and runs with the profile's settings.

This module owns the compose spelling of :class:`~envkit.plan.runsettings.RunSettings`
(:func:`compose_service`).

Example:
    >>> from envkit.planner import build_plan
    >>> from envkit.profile import load_profile
    >>> svc = compose_service(build_plan(load_profile(None)).settings)
    >>> svc["shm_size"], svc["ipc"]
    ('2g', 'private')
"""

from __future__ import annotations

import re
from typing import Any

from envkit.plan.runsettings import REMAP_ENV, RunSettings
from envkit.findings import Finding
from envkit.plan.envplan import EnvPlan
from envkit.targets import GenContext, OutputFile
from envkit.targets.dockerfile import build_args
from envkit.units import format_size


def compose_escape(text: str) -> str:
    """Compose interpolates ``$VAR``; ``$$`` is a literal ``$`` (so a proxy password survives)."""
    return text.replace("$", "$$")


def compose_service(rs: RunSettings, volume_source=lambda v: v.source) -> dict:
    """The run-time part of a compose service (keys as the Compose Specification names them).

    Values are escaped for compose's interpolation, so compose passes exactly what run.sh does.
    """
    svc: dict = {}
    if rs.shm_size is not None:
        svc["shm_size"] = format_size(rs.shm_size)
    svc["ipc"] = rs.ipc
    if rs.init:
        svc["init"] = True
    if rs.start_as_root:
        svc["user"] = "root"
    if rs.cpuset:
        svc["cpuset"] = rs.cpuset
    # rs.cpuset_mems has no Compose Specification key: advice.profile warns so (run.numa).
    if rs.cpus is not None:
        svc["cpus"] = rs.cpus
    if rs.memory is not None:
        svc["mem_limit"] = format_size(rs.memory)
    if rs.devices:
        svc["devices"] = [f"{d}:{d}" for d in rs.devices]
    if rs.ulimits:
        svc["ulimits"] = {u.name: (u.soft if u.soft == u.hard else {"soft": u.soft, "hard": u.hard}) for u in rs.ulimits}
    if rs.volumes:
        svc["volumes"] = [compose_escape(":".join([volume_source(v), v.target] + ([v.mode] if v.mode else [])))
                          for v in rs.volumes]
    env = ([(REMAP_ENV, "1")] if rs.start_as_root else []) + [(k, compose_escape(v)) for k, v in rs.env]
    if env:
        svc["environment"] = dict(env)
    if rs.gpus is not None:
        device: dict[str, Any] = {"driver": "nvidia", "capabilities": ["gpu"]}
        if rs.gpus == "all":
            device["count"] = "all"
        elif isinstance(rs.gpus, int):
            device["count"] = rs.gpus
        else:
            device["device_ids"] = [str(g) for g in rs.gpus]
        svc["deploy"] = {"resources": {"reservations": {"devices": [device]}}}
    return svc



def project_name(name: str) -> str:
    """Compose project names allow [a-z0-9_-] only; a profile name may also hold dots."""
    return re.sub(r"[^a-z0-9_-]", "-", name)


def document(ctx: GenContext) -> dict:
    spec = ctx.plan.image.spec
    build: dict = {"context": ".", "dockerfile": "Dockerfile"}
    args = build_args(ctx)
    if args:
        build["args"] = {k: compose_escape(v) for k, v in args}
    service: dict = {"build": build, "image": spec.tag}
    service.update(compose_service(ctx.settings, volume_source=ctx.relative_source))
    service["stdin_open"] = True
    service["tty"] = True
    name = project_name(spec.name)
    return {"name": name, "services": {name: service}}


def render(ctx: GenContext) -> list[OutputFile]:
    return [OutputFile("compose.yaml", ctx.render("compose.yaml.j2", header=ctx.header("#"), doc=document(ctx)))]


def warnings(plan: EnvPlan) -> list[Finding]:
    """What compose.yaml alone cannot express: nothing of its own (``run.numa``'s --cpuset-mems, which no
    Compose key holds, is the plan's warning: :mod:`envkit.advice.profile`)."""
    return []
