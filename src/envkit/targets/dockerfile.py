"""Dockerfile (+ .dockerignore): the build-time half of the profile.

Decisions made here, not in the template:
- layer order for caching: CA/proxy, system packages, Python venv, torch, pip
  packages, env/user, then the harness (which changes most often);
- no placebo lines: nothing about /dev/shm, sysctl or ulimits, which are run-time settings;
- CA certificates land before the first download, and pip/requests/OpenSSL are
  pointed at the system bundle (pip ignores it otherwise: it ships certifi);
- proxies are build ARGs (Docker's predefined proxy ARGs are not kept in the image history).

Example:
    >>> # render(ctx) -> [OutputFile(".dockerignore", ...), OutputFile("Dockerfile", ...)]
"""

from __future__ import annotations

import os

from envkit import __version__
from envkit.expect import expectation_json
from envkit.runsettings import proxy_build_args
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
    wheels = [f"/tmp/envkit-wheels/{os.path.basename(d)}" for _, d in wheel_dirs(ctx)]
    if wheels:
        # A wheelhouse holds local-version wheels (2.5.1+cu124); pin the label so pip cannot
        # prefer an index build, and let the default (or given) index serve the dependencies.
        spec = f"torch=={torch.version}+{torch.variant}"
        index = torch.index_url
    else:
        spec = f"torch=={torch.version}"
        index = torch.index_url or TORCH_INDEX.format(variant=torch.variant)
    return {"spec": spec, "index_url": index, "find_links": wheels}


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
        "apt_packages": sorted(set(BASE_APT) | set(image.system_packages)),
        "venv": VENV,
        "torch": _torch_install(ctx),
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
    """The harness zipapp, byte-identical for a given envkit version."""
    import tempfile
    from pathlib import Path

    from envkit.harness.zipapp import build_zipapp

    with tempfile.TemporaryDirectory(prefix="envkit-harness-") as tmp:
        dest = Path(tmp) / HARNESS_FILE
        build_zipapp(dest)
        return dest.read_bytes()


def render(ctx: GenContext) -> list[OutputFile]:
    """The Dockerfile and everything it COPYs: the harness, its expectations, certificates, wheels."""
    c = context(ctx)
    files = [
        OutputFile("Dockerfile", ctx.render("Dockerfile.j2", **c)),
        OutputFile(".dockerignore", ctx.render("dockerignore.j2", **c)),
        OutputFile(HARNESS_FILE, harness_bytes()),
        OutputFile(EXPECT_FILE, expectation_json(ctx.profile)),
    ]
    for rel, name in cert_names(ctx):
        files.append(OutputFile(name, ctx.loaded.resolve(rel).read_bytes()))
    for rel, folder in wheel_dirs(ctx):
        root = ctx.loaded.resolve(rel)
        for wheel in sorted(root.glob("*.whl")):
            files.append(OutputFile(f"{folder}/{wheel.name}", b"", source=wheel))
    return files
