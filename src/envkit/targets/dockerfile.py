"""Dockerfile (+ .dockerignore, envkit-check): the build-time half of the profile.

Decisions made here, not in the template:
- classic-builder syntax (docker-py builds with it; no RUN --mount, no heredocs), and one of two
  layouts (:func:`is_direct`): without a wheelhouse, one chain of layers where the venv is
  installed in place (uv lives in /tmp for the RUN that uses it), so the environment is written
  and committed once; with a wheelhouse (torch ``find_links``), whose ``COPY`` layer would ship
  even if deleted later, stages: ``system`` (base, CA, apt packages, user), ``build`` (FROM
  system: the venv), a ``packages`` stage when the profile's own packages sit over torch
  (:func:`packages_stage`), and the final stage (FROM system + the venv copied from build).
  Either way wheelhouses, installer caches and uv never ship (``docker history``);
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
import re

from envkit import __version__
from envkit.expect import expectation_json
from envkit.runsettings import proxy_build_args, remaps_user
from envkit.targets import GenContext, OutputFile

BASE_APT = ("ca-certificates", "python3", "python3-venv")
VENV = "/opt/venv"
HARNESS_DIR = "/opt/envkit"
HARNESS_FILE = "envkit_harness.pyz"
EXPECT_FILE = "envkit_expect.json"
CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
# Copies of the profile's certificates and wheelhouses go under a folder of envkit's own, so
# generating into the profile's folder never writes into the user's certs/ or wheels/.
CONTEXT_DIR = ".envkit"
TORCH_INDEX = "https://download.pytorch.org/whl/{variant}"
CHECK_FILE = "envkit-check"
CHECK_PATH = f"/usr/local/bin/{CHECK_FILE}"
# The packages stage's delta (see ``packages_stage``): what the profile's packages added over torch's
# environment, as a tree to copy onto the venv, and the paths they removed, deleted in the final stage.
DELTA_DIR = "/opt/envkit-delta"
REMOVED_LIST = ".envkit-removed"
LOCK_FILE_NAME = "envkit.lock.txt"  # envkit.lockfile.LOCK_FILE (that module imports this one)
ENTRYPOINT_FILE = "envkit-entrypoint"
ENTRYPOINT_PATH = f"{os.path.dirname(CHECK_PATH)}/{ENTRYPOINT_FILE}"  # beside envkit-check: one COPY
# uv is installed with pip (same proxy and CA settings) where it is used: in the build stage, or in /tmp
# for the one RUN of the direct layout; pinned, so a rebuild installs the same resolver.
UV_VERSION = "0.13.9"
BUILD_DIR = "/opt/envkit-build"
WHEELS_IN_IMAGE = "/tmp/envkit-wheels"
# The direct layout's uv and torch pin live in /tmp for one RUN each; the requirement files and the
# lock it installs stay beside the harness, a few KB that say what the image was built from.
UV_IN_RUN = "/tmp/envkit-uv"
CONSTRAINTS_IN_RUN = "/tmp/envkit-constraints.txt"
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
SEED_IN_RUN = "/tmp/envkit-seed.txt"


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


def names_numpy(requirements) -> bool:
    """True when a pip requirement installs numpy (then the profile's own numpy pin decides).

    >>> names_numpy(["numpy<2", "pillow"]), names_numpy(["numpy-financial"])
    (True, False)
    """
    return any(re.split(r"[\s\[<>=!~;@(]", r.strip(), maxsplit=1)[0].lower().replace("_", "-") == "numpy"
               for r in requirements)


def cert_names(ctx: GenContext) -> list[tuple[str, str]]:
    """(source path, name in the build context) for each CA file; update-ca-certificates wants *.crt."""
    out = []
    for i, rel in enumerate(ctx.profile.image.ca_certificates):
        stem = os.path.splitext(os.path.basename(rel))[0]
        out.append((rel, f"{CONTEXT_DIR}/certs/{i:02d}-{stem}.crt"))
    return out


def wheel_dirs(ctx: GenContext) -> list[tuple[str, str]]:
    """(source dir, folder in the build context) for each torch find_links wheelhouse."""
    torch = ctx.profile.image.torch
    return [(rel, f"{CONTEXT_DIR}/wheels/{i:02d}") for i, rel in enumerate(torch.find_links if torch else ())]


def build_args(ctx: GenContext) -> list[tuple[str, str]]:
    """Proxy build arguments. Docker predefines these ARGs and keeps them out of ``docker history``
    when they come as --build-arg, so the Dockerfile does not declare them (a declared default
    would be recorded in the image)."""
    return proxy_build_args(ctx.profile)


def _torch_install(ctx: GenContext) -> dict | None:
    torch = ctx.profile.image.torch
    if torch is None:
        return None
    wheels = [f"{WHEELS_IN_IMAGE}/{os.path.basename(d)}" for _, d in wheel_dirs(ctx)]
    spec, index = torch_requirement(torch)
    # numpy goes in with torch only when nothing the profile installs names it: else the profile's pin would
    # replace it in a later layer and torch's layer would keep a dead copy.
    extra = [] if names_numpy(requirement_lines(ctx)) else torch_extras(ctx.profile.image)
    return {"spec": spec, "index_url": index, "find_links": wheels, "extra": extra}


def torch_requirement(torch) -> tuple[str, str | None]:
    """(requirement, index URL) for the profile's torch: the Dockerfile and ``envkit lock`` both use it.

    >>> from envkit.profile.model import Torch
    >>> torch_requirement(Torch(version="2.5.1", variant="cu124"))
    ('torch==2.5.1', 'https://download.pytorch.org/whl/cu124')
    >>> torch_requirement(Torch(version="2.5.1", find_links=("wheels",)))
    ('torch==2.5.1+cpu', None)
    """
    if torch.find_links:
        # A wheelhouse holds local-version wheels (2.5.1+cu124); pin the label so pip cannot
        # prefer an index build, and let the default (or given) index serve the dependencies.
        return f"torch=={torch.version}+{torch.variant}", torch.index_url
    return f"torch=={torch.version}", torch.index_url or TORCH_INDEX.format(variant=torch.variant)


def torch_extras(image) -> list[str]:
    """Packages installed with torch: numpy (torch warns on every import without it), unless the
    profile's pip_packages name numpy, whose own pin then decides in the next step."""
    return [] if names_numpy(image.pip_packages) else ["numpy"]


def requirement_names(ctx: GenContext) -> list[tuple[str, str]]:
    """(source path, name in the build context) for each image.requirements file."""
    return [(rel, f"{CONTEXT_DIR}/requirements/{i:02d}-{os.path.basename(rel)}")
            for i, rel in enumerate(ctx.profile.image.requirements)]


def has_hashes(path) -> bool:
    """True when a requirements file pins with hashes (then pip/uv must check every one: --require-hashes).

    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "r.txt"; _ = f.write_text("a==1 --hash=sha256:00")
    >>> has_hashes(f)
    True
    """
    return any("--hash=" in line for line in requirements_text(path).splitlines() if not line.lstrip().startswith("#"))


def requirements_bytes(path) -> bytes:
    """A requirements file's (or the lock's) bytes, at most ``safeio.REQUIREMENTS_MAX`` of them: read to
    choose the layout and copied into the build context; anything else is bad input (ProfileError, exit 2)."""
    from envkit.safeio import REQUIREMENTS_MAX, read_bounded

    return read_bounded(path, REQUIREMENTS_MAX, "a requirements file")


def requirements_text(path) -> str:
    """A requirements file's text, as pip reads it: UTF-8, past the byte-order mark Windows editors write
    (a BOM before "numpy" hid the name)."""
    return requirements_bytes(path).decode("utf-8-sig", errors="replace")


def requirements_of(text: str) -> list[str]:
    """The requirements a requirements file's text names (comments, options and blank lines left out).

    >>> requirements_of("# pinned\\n--index-url https://x/simple\\nnumpy==1.26.4 \\\\\\n    --hash=sha256:00  # ok\\n")
    ['numpy==1.26.4 \\\\']
    """
    lines = (line.split(" #", 1)[0].strip() for line in text.splitlines())
    return [line for line in lines if line and not line.startswith(("#", "-"))]


def requirement_lines(ctx: GenContext) -> list[str]:
    """The requirements of all the profile's ``requirements`` files."""
    return [line for rel, _ in requirement_names(ctx)
            for line in requirements_of(requirements_text(ctx.loaded.resolve(rel)))]


# A URL with a user or password in it (https://user:token@host/...): a private index's credentials.
_USERINFO = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/\s@]+@")


def has_credentials(ctx: GenContext) -> bool:
    """True when torch's index URL, a requirements file or the lock has a user or password in a URL
    (``https://user:token@host``; pip_packages are names and versions only). A token in a URL's path or query
    (``https://pypi.fury.io/TOKEN/acct/``) is not recognised: keep such a file out of image.requirements.

    In the direct layout the install commands are in the image's history and the requirement files in the
    image; a build stage keeps both out of the shipped image, so such a profile builds in stages.

    >>> bool(_USERINFO.search("https://ci:s3cret@pypi.example.com/simple")), bool(_USERINFO.search("pkg @ https://x/p.whl"))
    (True, False)
    """
    image = ctx.profile.image
    texts = [image.torch.index_url or ""] if image.torch else []
    texts += [requirements_text(ctx.loaded.resolve(rel)) for rel, _ in requirement_names(ctx)]
    lock = lock_source(ctx)
    if lock:
        texts.append(requirements_text(lock))
    return any(_USERINFO.search(text) for text in texts)


def lock_source(ctx: GenContext):
    """The profile's envkit.lock.txt when it exists (then the image installs exactly it), else None."""
    # The name is LOCK_FILE_NAME here (envkit.lockfile imports this module, not the other way round).
    path = ctx.loaded.base_dir / LOCK_FILE_NAME
    return path if path.is_file() else None


def project_sources(ctx: GenContext) -> list[str]:
    """The profile folder's files copied into the image (image.copy_project), relative to it."""
    if not ctx.profile.copies_project:
        return []
    from envkit.project import project_files

    torch = ctx.profile.image.torch
    wheelhouses = tuple(ctx.loaded.resolve(d) for d in (torch.find_links if torch else ()))
    return project_files(ctx.loaded.base_dir, exclude_dirs=wheelhouses + (ctx.out_dir,))


def is_direct(ctx: GenContext) -> bool:
    """Whether the image is one chain of layers with the venv installed in place (no build stage).

    A stage copying the venv into the final image writes and commits it twice (a large share of
    a cold build even for the CPU wheel, far more for CUDA's several GB); only a wheelhouse in
    the build context needs that, since its ``COPY`` layer ships even if a later step deletes it.
    Without one, torch comes from an index and every installer file can be removed in the RUN that
    made it, so nothing is stored dead either way (measured in benchmarks/bench_build.py). Credentials
    in an index URL or a requirements file also take the stages (:func:`has_credentials`).
    """
    return not wheel_dirs(ctx) and not has_credentials(ctx)


def packages_stage(ctx: GenContext) -> bool:
    """Whether the profile's own packages get a stage of their own over torch's (``FROM build AS packages``).

    Without it a change to ``pip_packages`` or a requirements file makes the final stage copy the
    whole environment again, torch's ~1 GB (several GB for CUDA) included; with it the final stage
    copies torch's environment from the untouched ``build`` stage (a cache hit) and then only the
    files the packages' installs added or changed, and deletes what they removed. A lock installs
    everything in one step (it changes as a whole), and without torch there is nothing big to keep.
    """
    image = ctx.profile.image
    return (not is_direct(ctx) and bool(image.torch) and not lock_source(ctx)
            and bool(image.pip_packages or requirement_names(ctx)))


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
    certs = cert_names(ctx)
    direct = is_direct(ctx)
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
        "seed_venv": direct and image.installer == "uv" and bool(image.torch or lock_source(ctx)),
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
        "packages_stage": packages_stage(ctx),
        "delta_dir": DELTA_DIR,
        "removed_list": REMOVED_LIST,
        "requirements": [{"name": os.path.basename(name), "hashes": has_hashes(ctx.loaded.resolve(rel))}
                         for rel, name in requirement_names(ctx)],
        "lock": ({"file": LOCK_FILE_NAME, "index_url": torch_requirement(image.torch)[1] if image.torch else None}
                 if lock_source(ctx) else None),
        "project": ({"install": image.install_project} if project_sources(ctx) else None),
        "pip_packages": list(image.pip_packages),
        "ca_env": ca_env,
        "env": sorted(image.env.items()),
        "user": image.user,
        "workdir": image.workdir,
        "harness_dir": HARNESS_DIR,
        "harness_file": HARNESS_FILE,
        "expect_file": EXPECT_FILE,
    }


def harness_bytes() -> bytes:
    """The harness zipapp, byte-identical for a given harness source tree.

    Built once and then read from envkit's cache, keyed by every harness file's name and bytes
    (hashing them is far cheaper than zipping and compressing them, which was about a tenth of a
    generate run); the entry carries its own hash too.
    """
    import contextlib
    import os
    from pathlib import Path

    from envkit.digest import sha256_hex
    from envkit.render import cache_dir

    here = Path(__file__).resolve().parent.parent / "harness"
    with os.scandir(here) as entries:
        names = sorted(e.name for e in entries if e.name.endswith(".py"))
    sources = b"".join(name.encode() + b"\0" + (here / name).read_bytes() + b"\0" for name in names)
    folder = cache_dir("harness")
    path = folder / f"{sha256_hex(sources)[:32]}.pyz" if folder else None
    if path is not None:
        try:
            stored = path.read_bytes()
        except OSError:
            stored = b""
        # The entry carries its own sha256: a damaged or edited cache file is rebuilt, never shipped.
        if sha256_hex(stored[64:]).encode() == stored[:64]:
            return stored[64:]
    from envkit.harness.zipapp import zip_bytes

    data = zip_bytes()
    if path is not None:
        from envkit.errors import EnvkitError
        from envkit.safeio import replace_file

        # Atomic: a concurrent run reads the whole file or none; a cache that cannot be written is no cache.
        with contextlib.suppress(OSError, EnvkitError):
            replace_file(path, sha256_hex(data).encode() + data)
    return data


def render(ctx: GenContext) -> list[OutputFile]:
    """The Dockerfile and everything it COPYs: the harness, its expectations, envkit-check,
    certificates, wheels."""
    from envkit.safeio import CERT_MAX, read_bounded  # what the profile's loader checked, bounded again here

    c = context(ctx)
    files = [
        OutputFile("Dockerfile", ctx.render("Dockerfile.j2", **c)),
        OutputFile(".dockerignore", ctx.render("dockerignore.j2", **c)),
        OutputFile(HARNESS_FILE, harness_bytes()),
        OutputFile(EXPECT_FILE, expectation_json(ctx.profile)),
        OutputFile(CHECK_FILE, ctx.render("envkit-check.j2", **c), mode=0o755),
    ]
    if c["entrypoint"]:
        files.append(OutputFile(ENTRYPOINT_FILE, ctx.render("entrypoint.sh.j2", **c), mode=0o755))
    for rel, name in cert_names(ctx):
        files.append(OutputFile(name, read_bounded(ctx.loaded.resolve(rel), CERT_MAX, "a PEM certificate file")))
    for rel, folder in wheel_dirs(ctx):
        root = ctx.loaded.resolve(rel)
        for wheel in sorted(root.glob("*.whl")):
            files.append(OutputFile(f"{folder}/{wheel.name}", b"", source=wheel))
    for rel, name in requirement_names(ctx):
        files.append(OutputFile(name, requirements_bytes(ctx.loaded.resolve(rel))))
    lock = lock_source(ctx)
    if lock:
        files.append(OutputFile(f"{CONTEXT_DIR}/{LOCK_FILE_NAME}", requirements_bytes(lock)))
    for rel in project_sources(ctx):
        src = ctx.loaded.base_dir / rel
        files.append(OutputFile(f"{CONTEXT_DIR}/project/{rel}", b"", mode=src.stat().st_mode & 0o777, source=src))
    return files
