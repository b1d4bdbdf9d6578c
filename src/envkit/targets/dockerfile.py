"""Dockerfile (+ .dockerignore, envkit-check): the build-time half of the profile.

Decisions made here, not in the template:
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

from envkit import __version__
from envkit.plan.paths import (
    BUILD_DIR, CA_BUNDLE, CHECK_FILE, CHECK_PATH, CONSTRAINTS_IN_RUN, CONTEXT_DIR, DELTA_DIR, ENTRYPOINT_FILE,
    ENTRYPOINT_PATH, EXPECT_FILE, HARNESS_DIR, HARNESS_FILE, LOCK_FILE_NAME, REMOVED_LIST, SEED_IN_RUN, UV_IN_RUN,
    VENV, WHEELS_IN_IMAGE,
)
from envkit.runsettings import proxy_build_args, remaps_user
from envkit.targets import GenContext, OutputFile

BASE_APT = ("ca-certificates", "python3", "python3-venv")
# uv is installed with pip (same proxy and CA settings) where it is used: in the build stage, or in /tmp
# for the one RUN of the direct layout; pinned, so a rebuild installs the same resolver.
UV_VERSION = "0.13.9"
# With uv, the venv is created --without-pip and seeded by uv from the wheels `python -m venv` would
# install: the same files, compiled by uv's workers instead of by ensurepip's own pip run (2.7 s
# here), and that pip, run from its wheel, installs uv. With argv[1] "pip" this prints that pip
# wheel's path; with "requirements", the packages pinned to those wheels' versions, one per line
# (uv installs them from the wheels' folder with --find-links, so they are recorded as from an index:
# installed from the files' paths, `pip freeze` would print `pip @ file:///usr/share/...`); or
# nothing, and then the Dockerfile runs ensurepip itself. It chooses as ensurepip does (CPython
# 3.10-3.13 ensurepip/__init__.py): the packages are pip, and setuptools before Python 3.12
# (gh-95299); they come from the distribution's folder, sysconfig's WHEEL_PKG_DIR (configure
# --with-wheel-pkg-dir: Debian, Ubuntu and Fedora use /usr/share/python-wheels), if every one is
# there, else from the wheels bundled in ensurepip/_bundled (python.org builds, python:* images);
# of several files for one package, the last in sorted order.
SEED_WHEEL_PY = (
    'import importlib.util, os, sys, sysconfig; n = ["pip"] + (["setuptools"] if sys.version_info < (3, 12) else []); '
    'f = lambda d: {x: os.path.join(d, w) for w in (sorted(os.listdir(d)) if d and os.path.isdir(d) else []) '
    'for x in n if w.startswith(x + "-") and w.endswith(".whl")}; e = importlib.util.find_spec("ensurepip"); '
    'p = f(sysconfig.get_config_var("WHEEL_PKG_DIR")); '
    'p = p if len(p) == len(n) else f(e and e.origin and os.path.join(os.path.dirname(e.origin), "_bundled")); '
    'p = p if len(p) == len(n) else {}; '
    'print(p.get("pip", "") if sys.argv[1] == "pip" else "\\n".join('
    'x + "==" + os.path.basename(w)[len(x) + 1:].partition("-")[0] for x, w in p.items()))'
)


def is_python_base(base: str) -> bool:
    """True for the official ``python`` images (``python:3.11-slim``, ``docker.io/library/python:3.12``),
    which bring their own Python: installing Debian's python3 on top would be a second one.

    >>> is_python_base("docker.io/library/python:3.12"), is_python_base("team/python-tools:1")
    (True, False)
    """
    name = base.split(":", 1)[0].rsplit("/", 1)[-1]
    return name == "python" and base.split(":", 1)[0] in ("python", "library/python", "docker.io/library/python")


def apt_packages(image) -> list[str]:
    """Debian packages the system stage installs: Python and CA tools unless the base has them."""
    base = () if is_python_base(image.base) else BASE_APT
    return sorted(set(base) | set(image.system_packages))


def build_args(ctx: GenContext) -> list[tuple[str, str]]:
    """Proxy build arguments. Docker predefines these ARGs and keeps them out of ``docker history``
    when they come as --build-arg, so the Dockerfile does not declare them (a declared default
    would be recorded in the image)."""
    return proxy_build_args(ctx.profile)


def _torch_install(ctx: GenContext) -> dict | None:
    ip = ctx.plan.image
    if ip.torch_requirement is None:
        return None
    wheels = [f"{WHEELS_IN_IMAGE}/{os.path.basename(d)}" for _, d in ip.wheel_dirs]
    return {"spec": ip.torch_requirement, "index_url": ip.torch_index_url, "find_links": wheels,
            "extra": list(ip.torch_extras)}


def context(ctx: GenContext) -> dict:
    p = ctx.profile
    image = p.image
    labels = {
        "org.opencontainers.image.title": p.name,
        "org.opencontainers.image.base.name": image.base,
        "io.envkit.profile.sha256": ctx.loaded.sha256,
        "io.envkit.version": __version__,
    }
    if image.digest:
        labels["org.opencontainers.image.base.digest"] = image.digest
    ip = ctx.plan.image
    certs = ip.certs
    direct = ip.direct
    # pip ships its own CA list (certifi) and ignores the system store unless told;
    # requests and OpenSSL-based tools likewise. Set before the first pip download.
    ca_env = [(k, CA_BUNDLE) for k in ("CURL_CA_BUNDLE", "PIP_CERT", "REQUESTS_CA_BUNDLE", "SSL_CERT_FILE")
              if certs and k not in image.env]
    return {
        "header": ctx.header("#"),
        "base_ref": f"{image.base}@{image.digest}" if image.digest else image.base,
        "labels": sorted(labels.items()),
        "proxy": bool(build_args(ctx)),
        "context_dir": CONTEXT_DIR,
        "certs": bool(certs),
        "apt_packages": apt_packages(image),
        "venv": VENV,
        "direct": direct,
        "installer": image.installer,
        "install": "uv pip install" if image.installer == "uv" else "pip install",
        "uv_version": UV_VERSION,
        "uv_dir": UV_IN_RUN,
        "seed_wheel_py": SEED_WHEEL_PY,
        # The direct layout's venv is seeded by uv where uv installs in that RUN anyway (torch or the lock).
        "seed_venv": direct and image.installer == "uv" and bool(image.torch or ip.lock),
        "seed_file": SEED_IN_RUN,
        "build_dir": BUILD_DIR,
        "record_dir": HARNESS_DIR,
        "constraints": CONSTRAINTS_IN_RUN,
        "wheels_dir": WHEELS_IN_IMAGE,
        "check_file": CHECK_FILE,
        # One COPY for both scripts (one step fewer to rebuild after every profile edit): one folder.
        "entrypoint": ({"file": ENTRYPOINT_FILE, "path": ENTRYPOINT_PATH, "dir": os.path.dirname(CHECK_PATH)}
                       if remaps_user(p) else None),
        "check_path": CHECK_PATH,
        "torch": _torch_install(ctx),
        "packages_stage": ip.packages_stage,
        "delta_dir": DELTA_DIR,
        "removed_list": REMOVED_LIST,
        "requirements": [{"name": f.name, "hashes": f.hashes} for f in ip.requirements],
        "lock": {"file": LOCK_FILE_NAME, "index_url": ip.torch_index_url} if ip.lock else None,
        "project": {"install": image.install_project} if ip.project else None,
        "pip_packages": list(image.pip_packages),
        "ca_env": ca_env,
        "env": sorted(image.env.items()),
        "user": image.user,
        "workdir": image.workdir,
        "harness_dir": HARNESS_DIR,
        "harness_file": HARNESS_FILE,
        "expect_file": EXPECT_FILE,
    }


def render(ctx: GenContext) -> list[OutputFile]:
    """The Dockerfile and everything it COPYs: the harness, its expectations, envkit-check,
    certificates, wheels, requirement files, the lock and the project's code, all from the image plan."""
    ip = ctx.plan.image
    c = context(ctx)
    files = [
        OutputFile("Dockerfile", ctx.render("Dockerfile.j2", **c)),
        OutputFile(".dockerignore", ctx.render("dockerignore.j2", **c)),
        OutputFile(HARNESS_FILE, ctx.plan.harness_zipapp),
        OutputFile(EXPECT_FILE, ctx.plan.expectation),
        OutputFile(CHECK_FILE, ctx.render("envkit-check.j2", **c), mode=0o755),
    ]
    if c["entrypoint"]:
        files.append(OutputFile(ENTRYPOINT_FILE, ctx.render("entrypoint.sh.j2", **c), mode=0o755))
    files += [OutputFile(f.context_path, f.data) for f in ip.certs + ip.requirements]
    if ip.lock is not None:
        files.append(OutputFile(ip.lock.context_path, ip.lock.data))
    files += [OutputFile(f.context_path, b"", mode=f.mode, source=f.source) for f in ip.wheels + ip.project]
    return files
