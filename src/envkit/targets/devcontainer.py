""".devcontainer/devcontainer.json: VS Code / devcontainer CLI, same run settings as run.sh.

The settings travel as ``runArgs`` (the same ``docker run`` flags as run.sh),
because devcontainer.json has no keys of its own for shm, cpuset or ulimits.
The file is JSON with one leading ``//`` comment, which the spec allows.

Example:
    >>> # render(ctx) -> [OutputFile(".devcontainer/devcontainer.json", ...)]
"""

from __future__ import annotations

from envkit.targets.run import docker_flags
from envkit.targets import GenContext, OutputFile
from envkit.targets.dockerfile import build_args

SCHEMA = "https://raw.githubusercontent.com/devcontainers/spec/main/schemas/devContainer.schema.json"


def document(ctx: GenContext) -> dict:
    p = ctx.profile

    def source(v):
        # The workspace folder is the folder holding .devcontainer/, i.e. the output directory.
        return ctx.anchored_source(v, "${localWorkspaceFolder}")

    project = ctx.settings.project_volume
    if project is not None:
        workspace_mount = f"source={source(project)},target={p.image.workdir},type=bind"
    else:
        # No project mount asked for: devcontainer.json still needs a workspace; use its default.
        workspace_mount = f"source=${{localWorkspaceFolder}},target={p.image.workdir},type=bind"
    build: dict = {"dockerfile": "../Dockerfile", "context": ".."}
    args = build_args(ctx)
    if args:
        build["args"] = dict(args)
    doc: dict = {
        "$schema": SCHEMA,
        "name": p.name,
        "build": build,
        # The project mount is workspaceMount below; devcontainer adds its own otherwise.
        "runArgs": docker_flags(ctx.settings, volume_source=source, project=False),
        "workspaceMount": workspace_mount,
        "workspaceFolder": p.image.workdir,
        "containerUser": p.image.user.name,
        "remoteUser": p.image.user.name,
        # Match the container user's uid/gid to the host user's so bind-mounted files keep their owner.
        "updateRemoteUserUID": not p.image.user.is_root,
    }
    if ctx.settings.gpus is not None:
        doc["hostRequirements"] = {"gpu": True}
    return doc


def render(ctx: GenContext) -> list[OutputFile]:
    text = ctx.render("devcontainer.json.j2", header=ctx.header("//"), doc=document(ctx))
    return [OutputFile(".devcontainer/devcontainer.json", text)]
