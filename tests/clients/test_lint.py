"""hadolint, shellcheck and a PowerShell grammar accept every generated Dockerfile, run.sh and setup-wsl.ps1."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.clients.conftest import PROFILES, venv_tool

pytestmark = pytest.mark.clients


@pytest.mark.parametrize("profile", PROFILES)
def test_hadolint_accepts_the_dockerfile(generated, profile):
    dockerfile = generated[profile] / "Dockerfile"
    # Default failure threshold (info): any finding fails. Ignores live in the template, each with its reason.
    res = subprocess.run([venv_tool("hadolint"), "--no-color", str(dockerfile)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr


def test_hadolint_is_live(tmp_path):
    # The check can fail: an unpinned apt install without the template's reasoned ignore is flagged.
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM debian:bookworm\nRUN apt-get update && apt-get install -y curl\n")
    res = subprocess.run([venv_tool("hadolint"), "--no-color", str(bad)], capture_output=True, text=True, timeout=60)
    assert res.returncode != 0 and "DL3008" in res.stdout


@pytest.mark.parametrize("profile", PROFILES)
def test_shellcheck_accepts_run_sh(generated, profile):
    res = subprocess.run([venv_tool("shellcheck"), "--severity=style", str(generated[profile] / "run.sh")],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr


def test_shellcheck_accepts_the_repository_scripts():
    from tests.conftest import ROOT
    # templates/envkit-delta.sh: the packages stage's delta, copied into the build context as it is.
    scripts = sorted(str(p) for p in (ROOT / "docker").glob("*.sh")) + [str(ROOT / "schemas" / "update.sh"),
                                                                      str(ROOT / "templates" / "envkit-delta.sh")]
    res = subprocess.run([venv_tool("shellcheck"), "--severity=warning", *scripts], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr


def _ps_problems(npm_tools, files) -> dict:
    from tests.conftest import ROOT
    res = subprocess.run(["node", str(ROOT / "tests" / "clients" / "ps_parse.mjs"), str(npm_tools), *map(str, files)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    return json.loads(res.stdout)


def test_setup_wsl_parses_as_powershell(generated, npm_tools):
    # No PowerShell here (Debian's apt has no pwsh): tree-sitter's PowerShell grammar is the check.
    scripts = [out / "setup-wsl.ps1" for out in generated.values() if (out / "setup-wsl.ps1").exists()]
    assert scripts, "no profile generated setup-wsl.ps1"
    problems = _ps_problems(npm_tools, scripts)
    assert all(not p for p in problems.values()), problems


def test_powershell_grammar_is_live(npm_tools, tmp_path):
    bad = tmp_path / "bad.ps1"
    bad.write_text("if ($x {\n  Write-Host 'unclosed'\n")
    assert _ps_problems(npm_tools, [bad])[str(bad)]


# Shapes and output places the examples do not cover: `here` is defined only where a flag reads it.
SHAPES = {
    # The project's profile folder mounted from an output folder outside it: an absolute path, no `here`.
    "outside": ("envkit: 1\nname: outside\nimage: {base: 'debian:bookworm'}\nrun: {volumes: ['./data:/data:ro']}\n",
                "../elsewhere/out"),
    # No bind mount at all (the profile grammar has no named volumes: a bare name is a relative path).
    "no-mounts": ("envkit: 1\nname: nomounts\nimage: {base: 'debian:bookworm'}\nrun: {mount_project: false}\n", "out"),
    # Docker Desktop's drive forms: run.sh names them //c/... .
    "windows-paths": ("envkit: 1\nname: winpaths\nimage: {base: 'debian:bookworm'}\n"
                      "run: {volumes: ['C:\\data:/data', 'C:/Users/me/My Data:/d2:ro', '//c/x:/x']}\n", "out"),
    "ipc-host": ("envkit: 1\nname: ipchost\nimage: {base: 'debian:bookworm'}\nrun: {ipc: host}\n", "out"),
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_shellcheck_accepts_run_sh_in_every_shape_and_output_place(tmp_path, shape):
    from tests.clients.conftest import generate_text

    text, out_name = SHAPES[shape]
    (tmp_path / "p" / "data").mkdir(parents=True)
    out = generate_text(text, tmp_path / "p", out_name)
    script = (out / "run.sh").read_text()
    assert ("here=" in script) == ('"${here}"' in script)
    res = subprocess.run([venv_tool("shellcheck"), "--severity=style", str(out / "run.sh")],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr
