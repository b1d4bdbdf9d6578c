""".devcontainer/devcontainer.json: VS Code / devcontainer CLI, same run settings as run.sh.

The settings travel as ``runArgs`` (the same ``docker run`` flags as run.sh),
because devcontainer.json has no keys of its own for shm, cpuset or ulimits.
The file is JSON with one leading ``//`` comment, which the spec allows.

GPUs travel by exactly one mechanism (:func:`gpu_request`). The Dev Containers CLI appends
``--gpus all`` *after* ``runArgs`` whenever ``hostRequirements.gpu`` is true or "optional" and
``docker info`` lists an nvidia runtime (devcontainers/cli ``src/spec-node/singleContainer.ts``,
``extraRunArgs``; read in the 0.89.0 bundle: ``runArgs`` come first, then ``--gpus all``). Docker
keeps both device requests, so ``--gpus "device=0,1"`` plus that would hand the container every GPU.

Called as::

    render(ctx) -> [OutputFile(".devcontainer/devcontainer.json", ...)]
"""

from __future__ import annotations

from envkit.targets.run import docker_flags
from envkit.findings import Finding
from envkit.plan.envplan import EnvPlan
from envkit.targets import GenContext, OutputFile
from envkit.targets.dockerfile import build_args

SCHEMA = "https://raw.githubusercontent.com/devcontainers/spec/main/schemas/devContainer.schema.json"


def mount_spec(source: str, target: str) -> str:
    """A ``--mount`` value (Docker reads it as one CSV record) whose source may hold commas.

    The source is quoted as a CSV field, so a comma in the project's path (known only when the
    CLI expands ``${localWorkspaceFolder}``) stays part of the path instead of starting a new
    mount option. A ``"`` in the expanded path would end the quoting: such a folder name is not
    supported.

    >>> print(mount_spec("${localWorkspaceFolder}/..", "/workspace"))
    "source=${localWorkspaceFolder}/..",target=/workspace,type=bind
    """
    return '"source=' + source.replace('"', '""') + '",target=' + target + ",type=bind"


def gpu_request(gpus) -> str | None:
    """How devcontainer.json asks for the profile's GPUs: "hostRequirements", "runArgs" or None.

    ``all`` is what ``hostRequirements.gpu`` means to the CLI (and it tells VS Code / Codespaces to
    pick a GPU host); a count or a list of ids needs ``--gpus`` in ``runArgs`` and then must not
    have ``hostRequirements.gpu``, or the CLI's own ``--gpus all`` widens it to every GPU.

    >>> gpu_request("all"), gpu_request(2), gpu_request((0, 1)), gpu_request(None)
    ('hostRequirements', 'runArgs', 'runArgs', None)
    """
    if gpus is None:
        return None
    return "hostRequirements" if gpus == "all" else "runArgs"


def document(ctx: GenContext) -> dict:
    spec = ctx.plan.image.spec

    def source(v):
        # The workspace folder is the folder holding .devcontainer/, i.e. the output directory.
        return ctx.anchored_source(v, "${localWorkspaceFolder}")

    project = ctx.settings.project_volume
    # No project mount asked for: devcontainer.json still needs a workspace; use its default.
    workspace_source = source(project) if project is not None else "${localWorkspaceFolder}"
    workspace_mount = mount_spec(workspace_source, spec.workdir)
    build: dict = {"dockerfile": "../Dockerfile", "context": ".."}
    args = build_args(ctx)
    if args:
        build["args"] = dict(args)
    doc: dict = {
        "$schema": SCHEMA,
        "name": spec.name,
        "build": build,
        # The project mount is workspaceMount below; devcontainer adds its own otherwise.
        "runArgs": docker_flags(ctx.settings, volume_source=source, project=False,
                                gpus=gpu_request(ctx.settings.gpus) == "runArgs"),
        "workspaceMount": workspace_mount,
        "workspaceFolder": spec.workdir,
        "containerUser": spec.user.name,
        "remoteUser": spec.user.name,
        # Match the container user's uid/gid to the host user's so bind-mounted files keep their owner.
        "updateRemoteUserUID": not spec.user.is_root,
    }
    if gpu_request(ctx.settings.gpus) == "hostRequirements":
        doc["hostRequirements"] = {"gpu": True}
    return doc


def render(ctx: GenContext) -> list[OutputFile]:
    text = ctx.render("devcontainer.json.j2", header=ctx.header("//"), doc=document(ctx))
    return [OutputFile(".devcontainer/devcontainer.json", text)]


def warnings(plan: EnvPlan) -> list[Finding]:
    """What devcontainer.json cannot express: nothing (its ``runArgs`` are run.sh's flags)."""
    return []
