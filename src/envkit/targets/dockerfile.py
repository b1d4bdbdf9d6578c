"""Dockerfile (+ .dockerignore, envkit-check, envkit-delta.sh): the build-time half of the profile.

This module gathers what the Dockerfile is decided from (:func:`inputs`, from the image plan) and the
files it copies; :mod:`envkit.targets.dockerfile_steps` turns those inputs into stages of typed steps,
with the texts a failing step prints from :mod:`envkit.targets.dockerfile_messages`, and
templates/Dockerfile.j2 only lays the steps out. The decisions, none of them in the template:
- classic-builder syntax (docker-py builds with it; no RUN --mount, no heredocs), in the layout
  the image plan chose (:class:`envkit.plan.image.Layout`): ``direct``, one chain of layers where
  the venv is installed in place (uv lives in /tmp for the RUN that uses it); or stages: ``system``
  (base, CA, apt packages, user), ``build`` (FROM system: the venv), a ``packages`` stage when the
  profile's own packages sit over torch, and the final stage (FROM system + the venv copied from
  build). Either way wheelhouses, installer caches and uv never ship (``docker history``);
- layer order for caching: CA/proxy, system packages, user, torch, then the profile's packages in
  a layer (direct) or stage (staged) of their own over torch's, the harness, env and the labels
  last, the project's code after them;
- torch first (from the variant's index or the wheelhouse), then numpy (torch warns on every
  import without it) unless the profile's packages or requirement files name it: with torch in the
  staged layout, in the packages' layer in the direct one; every later install is constrained to the torch actually installed, so a
  package pinning another torch fails the build instead of replacing the variant;
- the packages stage's delta is a script of its own (templates/envkit-delta.sh, shellcheck-checked),
  copied into that stage only: the final stage copies the venv and the delta, never the script;
- no placebo lines: nothing about /dev/shm, sysctl or ulimits, which are run-time settings;
- CA certificates land before the first download, and pip/uv/requests/OpenSSL are pointed at the
  system bundle (pip ignores it otherwise: it ships certifi; uv reads SSL_CERT_FILE);
- proxies are build ARGs (Docker's predefined proxy ARGs are not kept in the image history);
- ``python:*`` bases already hold Python: no second Python from apt.

Example:
    >>> is_python_base("python:3.11-slim-bookworm"), is_python_base("ubuntu:24.04")
    (True, False)
"""

from __future__ import annotations

import os

from envkit.plan.paths import (
    CHECK_FILE, CONTEXT_DIR, DELTA_SCRIPT, ENTRYPOINT_FILE, EXPECT_FILE, HARNESS_DIR, HARNESS_FILE,
    LOCK_FILE_NAME, VENV, WHEELS_IN_IMAGE,
)
from envkit.plan.image import BASE_APT, apt_packages, is_python_base  # noqa: F401  (decided in the plan)
from envkit.findings import Finding
from envkit.plan.envplan import EnvPlan
from envkit.targets import GenContext, OutputFile
from envkit.targets.dockerfile_steps import Inputs, TorchInstall, stages

# The folders under .envkit/ that the generated .dockerignore brings back into the context; a file there
# that envkit did not write is the user's, excluded line by line (:func:`ignore_line`).
_REINCLUDED = ("certs", "wheels", "requirements", "project")
# Go's strings.TrimSpace (unicode.IsSpace): what Docker trims from each .dockerignore line's ends.
_GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
    "\u2028\u2029\u202f\u205f\u3000"


def ignore_line(rel: str) -> str:
    r"""The .dockerignore line that excludes the file ``rel``, read the same by both Docker readers.

    The docker CLI's reader (moby/patternmatcher, ignorefile/ignorefile.go ``ReadAll``) splits lines at
    a line break and trims spaces from both ends, and its matcher takes ``\\`` as an escape; docker-py's
    (docker/utils/fnmatch.py) takes ``\\`` as a plain character. So ``*``, ``?``, ``[``, ``\\``, a line
    break and a space at either end become ``?`` (any one character but ``/`` in both): the line may
    then also match a sibling name of the same length that differs only there.

    >>> ignore_line(".envkit/project/a*b[1].txt"), ignore_line(".envkit/project/x\ny ")
    ('.envkit/project/a?b?1].txt', '.envkit/project/x?y?')
    """
    out = []
    for i, ch in enumerate(rel):
        edge = i == 0 or i == len(rel) - 1
        out.append("?" if ch in "*?[\\\n\r" or ch in _GO_SPACE and edge else ch)
    return "".join(out)


def build_args(ctx: GenContext) -> list[tuple[str, str]]:
    """Proxy build arguments. Docker predefines these ARGs and keeps them out of ``docker history``
    when they come as --build-arg, so the Dockerfile does not declare them (a declared default
    would be recorded in the image)."""
    return list(ctx.plan.image.spec.proxy_build_args)


def _torch_install(ctx: GenContext) -> TorchInstall | None:
    ip = ctx.plan.image
    if ip.torch_requirement is None:
        return None
    wheels = tuple(f"{WHEELS_IN_IMAGE}/{os.path.basename(d)}" for _, d in ip.wheel_dirs)
    return TorchInstall(ip.torch_requirement, ip.torch_index_url, wheels, ip.torch_extras)


def inputs(ctx: GenContext) -> Inputs:
    """What :func:`envkit.targets.dockerfile_steps.stages` decides the Dockerfile's steps from."""
    ip = ctx.plan.image
    spec = ip.spec
    return Inputs(
        header=ctx.header("#"),
        spec=spec, layout_direct=ip.direct, packages_stage=ip.packages_stage,
        proxy=bool(spec.proxy_build_args), certs=bool(ip.certs), torch=_torch_install(ctx),
        lock=ip.lock is not None, lock_index_url=ip.torch_index_url,
        requirements=tuple((f.name, f.hashes) for f in ip.requirements),
        entrypoint=spec.user.remapped, project=bool(ip.project),
    )


def context(ctx: GenContext) -> dict:
    """The context of the files beside the Dockerfile (.dockerignore, envkit-check, envkit-entrypoint)."""
    ip = ctx.plan.image
    return {
        "header": ctx.header("#"),
        "context_dir": CONTEXT_DIR,
        "certs": bool(ip.certs),
        "wheels": bool(ip.wheel_dirs),
        "requirements": bool(ip.requirements),
        "lock": {"file": LOCK_FILE_NAME} if ip.lock else None,
        "project": bool(ip.project),
        "delta_script": DELTA_SCRIPT if ip.packages_stage else None,
        "venv": VENV,
        "check_file": CHECK_FILE,
        "entrypoint": {"file": ENTRYPOINT_FILE} if ip.spec.user.remapped else None,
        "user": ip.spec.user,
        "workdir": ip.spec.workdir,
        "harness_dir": HARNESS_DIR,
        "harness_file": HARNESS_FILE,
        "expect_file": EXPECT_FILE,
        "excluded": tuple(ignore_line(rel) for rel in ctx.foreign
                          if any(rel.startswith(f"{CONTEXT_DIR}/{d}/") for d in _REINCLUDED)),
    }


def render(ctx: GenContext) -> list[OutputFile]:
    """The Dockerfile and everything it COPYs: the harness, its expectations, envkit-check,
    certificates, wheels, requirement files, the lock and the project's code, all from the image plan."""
    ip = ctx.plan.image
    c = context(ctx)
    v = inputs(ctx)
    files = [
        OutputFile("Dockerfile", ctx.render("Dockerfile.j2", header=v.header, stages=stages(v))),
        OutputFile(".dockerignore", ctx.render("dockerignore.j2", **c)),
        OutputFile(HARNESS_FILE, ctx.plan.harness_zipapp),
        OutputFile(EXPECT_FILE, ctx.plan.expectation),
        OutputFile(CHECK_FILE, ctx.render("envkit-check.j2", **c), mode=0o755),
    ]
    if c["entrypoint"]:
        files.append(OutputFile(ENTRYPOINT_FILE, ctx.render("entrypoint.sh.j2", **c), mode=0o755))
    if ip.spec.delta_script is not None:
        files.append(OutputFile(DELTA_SCRIPT, ip.spec.delta_script))
    files += [OutputFile(f.context_path, f.data) for f in ip.certs + ip.requirements]
    if ip.lock is not None:
        files.append(OutputFile(ip.lock.context_path, ip.lock.data))
    files += [OutputFile(f.context_path, b"", mode=f.mode, source=f.source) for f in ip.wheels + ip.project]
    return files


def warnings(plan: EnvPlan) -> list[Finding]:
    """What the Dockerfile cannot express: nothing (the image's settings are all build steps; run-time settings are the run targets')."""
    return []
