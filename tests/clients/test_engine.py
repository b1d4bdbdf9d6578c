"""Compose v2 and the Dev Containers CLI start the generated files on the real engine.

The image is the session's one e2e build (tests/conftest.py ``e2e_image``: local base image,
offline torch wheelhouse, host CA); one `docker compose run`, one `devcontainer up` + `exec`; each container's settings are
read back with `docker inspect`. The project folder's name holds a comma and a space, so the
workspace mount proves a comma in a path adds no mount option; run.env holds `$` text that must
reach the container literally. Everything created is removed at the end.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid

import pytest
import yaml

from tests.clients.conftest import ENVKIT_CHECK, venv_tool
from tests.conftest import run_envkit
from tests.dockerutil import base_image, require_base_image, require_docker
from tests.e2e.conftest import ngc_profile

pytestmark = [pytest.mark.clients, pytest.mark.docker, pytest.mark.slow]

PROJECT = "envkit-clients"  # compose project name (-p), so nothing collides with other runs
ENV = {"PRICE": "5$ and $HOME and ${X} and $$", "QUOTES": "it's \"q\" `id` a,b"}


@pytest.fixture(scope="module")
def project(tmp_path_factory, e2e_dir, e2e_image):
    """A project whose profile builds exactly the e2e image (same image section, same tag), with run
    settings of its own; the image comes from the session's one build (tests/conftest.py e2e_image)."""
    engine = require_docker()
    root = tmp_path_factory.mktemp("clients-e2e") / "proj, one"
    # The same wheelhouse and CA file (hard links: no second download): the Dev Containers CLI's
    # build of this Dockerfile then hits the cache of the e2e build for every layer but the labels.
    shutil.copytree(e2e_dir / "wheels", root / "wheels", copy_function=os.link)
    shutil.copytree(e2e_dir / "certs", root / "certs", copy_function=os.link)
    (root / "da ta, x").mkdir()
    doc = yaml.safe_load(ngc_profile(base_image(), tag=e2e_image))
    doc["run"]["env"] = dict(ENV)
    doc["run"]["volumes"] = ["./da ta, x:/data:ro"]
    (root / "envkit.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    res = run_envkit("generate", "envkit.yaml", "-o", ".", cwd=root)
    assert res.returncode == 0, res.stderr
    yield engine, root, doc
    for c in engine.client.containers.list(all=True, filters={"label": f"io.envkit.clients={root.name}"}):
        c.remove(force=True)


def _remove_new_vsc_images(engine, before: set) -> None:
    """The CLI tags what it builds vsc-<folder>-<hash>[-uid]: remove the ones made since ``before``.

    The -uid image (updateRemoteUserUID) is a child of the other, and the engine refuses to remove a
    parent before its child, whatever the listing's order: each pass removes what it can (CI once
    listed the parent first and failed with 409 "image has dependent child images").
    """
    import docker

    pending = [img.id for img in engine.client.images.list()
               if img.id not in before and any(t.startswith("vsc-") for t in img.tags)]
    for _ in range(len(pending)):
        left = []
        for image_id in pending:
            try:
                engine.client.images.remove(image_id, force=True)
            except docker.errors.NotFound:
                pass
            except docker.errors.APIError as exc:
                if exc.status_code != 409:
                    raise
                left.append(image_id)
        if not left:
            return
        pending = left
    raise AssertionError(f"vsc images the test built could not be removed: {pending}")


def _inspect(engine, container_id: str) -> dict:
    return engine.client.api.inspect_container(container_id)


def _check_settings(info: dict, doc: dict, root) -> None:
    host, run = info["HostConfig"], doc["run"]
    assert host["ShmSize"] == 512 << 20
    assert host["CpusetCpus"] == run["cpuset"]
    assert host["IpcMode"] == "private" and host["Init"] is True
    assert host["Memory"] == 4 << 30
    ulimits = {u["Name"]: (u["Soft"], u["Hard"]) for u in host["Ulimits"] or []}
    for name in ("memlock", "stack", "nofile"):
        value = run["ulimits"][name]
        assert ulimits[name] == (value, value), name
    env = dict(e.split("=", 1) for e in info["Config"]["Env"])
    for key, value in ENV.items():
        assert env[key] == value, key
    mounts = {m["Destination"]: m for m in info["Mounts"]}
    assert mounts["/data"]["Source"] == str(root / "da ta, x") and mounts["/data"]["RW"] is False
    assert mounts["/workspace"]["Source"] == str(root)


def test_compose_run_applies_the_settings(project):
    engine, root, doc = project
    compose = venv_tool("docker-compose")
    name = f"envkit-clients-compose-{uuid.uuid4().hex[:8]}"
    base = [compose, "-p", PROJECT, "-f", str(root / "compose.yaml")]
    try:
        res = subprocess.run([*base, "run", "-d", "--name", name, "--label", f"io.envkit.clients={root.name}",
                              doc["name"], "sleep", "300"], cwd=root, capture_output=True, text=True, timeout=300)
        assert res.returncode == 0, res.stdout + res.stderr
        _check_settings(_inspect(engine, name), doc, root)
    finally:
        subprocess.run([*base, "down", "--remove-orphans", "--timeout", "1"], cwd=root, capture_output=True, timeout=120)
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, timeout=60)


def test_devcontainer_up_exec_check(project, devcontainer_cli):
    engine, root, doc = project
    label = f"io.envkit.clients={root.name}"
    common = ["--workspace-folder", str(root), "--id-label", label]
    container_id = None
    before = {i.id for i in engine.client.images.list()}
    try:
        res = subprocess.run([*devcontainer_cli, "up", *common, "--remove-existing-container"],
                             capture_output=True, text=True, timeout=1800)
        assert res.returncode == 0, res.stderr[-3000:]
        result = json.loads(res.stdout.strip().splitlines()[-1])
        assert result["outcome"] == "success", result
        container_id = result["containerId"]
        info = _inspect(engine, container_id)
        _check_settings(info, doc, root)
        assert info["Config"]["User"] == doc["image"]["user"]["name"]
        # devcontainer.json asks for no GPUs here (none on this machine): no device request at all.
        assert not info["HostConfig"].get("DeviceRequests")
        res = subprocess.run([*devcontainer_cli, "exec", *common, *ENVKIT_CHECK],
                             capture_output=True, text=True, timeout=900)
        assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    finally:
        if container_id:
            subprocess.run(["docker", "rm", "-f", container_id], capture_output=True, timeout=60)
        _remove_new_vsc_images(engine, before)


def _docker_run_line(devcontainer_cli, folder, label: str) -> str:
    """The `docker run` command the CLI issues for ``folder`` (no GPU here: it fails at that run, which is fine)."""
    res = subprocess.run([*devcontainer_cli, "up", "--workspace-folder", str(folder), "--id-label", label,
                          "--gpu-availability", "all", "--log-level", "trace"],
                         capture_output=True, text=True, timeout=300)
    line = next((ln for ln in res.stderr.splitlines() if "Start: Run: docker run" in ln), None)
    assert line, res.stderr[-2000:]
    return line.split("Start: Run: ", 1)[1]


def test_devcontainer_cli_adds_gpus_all_after_runargs(devcontainer_cli, tmp_path):
    # --gpu-availability all: the CLI acts as on a host with the nvidia runtime (none here).
    engine = require_docker()
    image = require_base_image(engine)
    run_id = uuid.uuid4().hex[:8]
    labels = [f"io.envkit.clients=gpu-{run_id}-{n}" for n in ("both", "envkit")]  # one container each
    before = {i.id for i in engine.client.images.list()}
    try:
        both = tmp_path / "both"
        (both / ".devcontainer").mkdir(parents=True)
        (both / ".devcontainer" / "devcontainer.json").write_text(json.dumps(
            {"image": image, "runArgs": ['--gpus="device=0,1"'], "hostRequirements": {"gpu": True}}))
        line = _docker_run_line(devcontainer_cli, both, labels[0])
        # What envkit used to emit: the subset, then the CLI's own --gpus all after it (every GPU).
        assert line.index('--gpus="device=0,1"') < line.index("--gpus all")
        from tests.clients.conftest import generate_text
        out = generate_text(f"envkit: 1\nname: g\nimage: {{base: '{image}'}}\nrun: {{gpus: [0, 1]}}\n",
                            tmp_path / "envkit", out_name="out")
        # envkit's file: the subset only (the build step is skipped by pointing at the image directly).
        conf = json.loads((out / ".devcontainer" / "devcontainer.json").read_text().split("\n", 1)[1])
        conf.pop("build")
        conf["image"] = image
        (out / ".devcontainer" / "devcontainer.json").write_text(json.dumps(conf))
        line = _docker_run_line(devcontainer_cli, out, labels[1])
        assert '--gpus="device=0,1"' in line and "--gpus all" not in line
    finally:
        for label in labels:
            for c in engine.client.containers.list(all=True, filters={"label": label}):
                c.remove(force=True)
        _remove_new_vsc_images(engine, before)
