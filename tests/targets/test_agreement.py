"""run.sh, compose.yaml, devcontainer.json and the SDK call carry the same run settings.

Each target is parsed back from the rendered text (not from the shared
translation), normalised to one vocabulary, and compared.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shlex
from dataclasses import replace

import pytest
import yaml

from envkit.engine.docker import create_kwargs
from envkit.generation import render_all, render_plan
from envkit.planner import build_plan
from envkit.profile import load_profile
from envkit.units import parse_size
from tests.conftest import copy_example, example_profiles


def _compose_literal(text: str) -> str:
    """What compose passes for a value: ``$$`` is a literal ``$``; a lone ``$`` would be interpolated."""
    assert not re.search(r"(?<!\$)\$(?!\$)", text.replace("$$", "")), f"unescaped $ in compose value {text!r}"
    return text.replace("$$", "$")


def _vol(spec: str, base: str) -> str:
    src, dst = spec.split(":", 2)[:2]
    return os.path.normpath(os.path.join(base, src)) + ":" + dst


def _from_flags(flags: list[str], base: str = "/") -> dict:
    s: dict = {"ulimits": {}, "volumes": [], "env": {}, "devices": []}
    for flag in flags:
        key, _, value = flag.partition("=")
        if key == "--shm-size":
            s["shm"] = parse_size(value)
        elif key == "--ipc":
            s["ipc"] = value
        elif key == "--init":
            s["init"] = True
        elif key == "--cpuset-cpus":
            s["cpuset"] = value
        elif key == "--cpus":
            s["cpus"] = float(value)
        elif key == "--memory":
            s["memory"] = parse_size(value)
        elif key == "--gpus":
            s["gpus"] = value.strip('"').removeprefix("device=")
        elif key == "--ulimit":
            name, _, lim = value.partition("=")
            soft, _, hard = lim.partition(":")
            s["ulimits"][name] = (int(soft), int(hard or soft))
        elif key == "--volume":
            s["volumes"].append(_vol(value, base))
        elif key == "--env":
            k, _, v = value.partition("=")
            s["env"][k] = v
        elif key == "--user":
            s["user"] = value
        elif key == "--device":
            s["devices"].append(value)
        else:
            raise AssertionError(f"unexpected flag {flag}")
    return s


def _from_run_sh(text: str, out_dir: str) -> dict:
    body = text.split("flags=(\n", 1)[1].split("\n)\n", 1)[0]
    # "${here}" is the script's folder, i.e. the output directory. Split on \n only, as bash does
    # (splitlines would also cut at U+2028 or NEL inside a quoted value).
    flags = [shlex.split(line.replace('"${here}"', out_dir))[0] for line in body.split("\n")]
    return _from_flags(flags)


def _from_compose(text: str, out_dir: str) -> dict:
    doc = yaml.safe_load(text)
    (svc,) = doc["services"].values()
    s: dict = {"ulimits": {}, "volumes": [], "env": {k: _compose_literal(v) for k, v in svc.get("environment", {}).items()},
               "devices": [d.split(":")[0] for d in svc.get("devices", [])]}
    if "shm_size" in svc:
        s["shm"] = parse_size(svc["shm_size"])
    s["ipc"] = svc["ipc"]
    if svc.get("init"):
        s["init"] = True
    if "user" in svc:
        s["user"] = svc["user"]
    for src, dst in (("cpuset", "cpuset"), ("cpus", "cpus")):
        if src in svc:
            s[dst] = svc[src]
    if "mem_limit" in svc:
        s["memory"] = parse_size(svc["mem_limit"])
    for name, lim in svc.get("ulimits", {}).items():
        s["ulimits"][name] = (lim, lim) if isinstance(lim, int) else (lim["soft"], lim["hard"])
    s["volumes"] = [_vol(_compose_literal(v), out_dir) for v in svc.get("volumes", [])]
    devices = svc.get("deploy", {}).get("resources", {}).get("reservations", {}).get("devices")
    if devices:
        d = devices[0]
        s["gpus"] = ",".join(d["device_ids"]) if "device_ids" in d else str(d["count"])
    return s


def _from_sdk(kw: dict) -> dict:
    """docker-py's create arguments (its own types: Ulimit and DeviceRequest are dicts of the API's keys)."""
    s: dict = {"ulimits": {u["Name"]: (u["Soft"], u["Hard"]) for u in kw.get("ulimits", [])},
               "volumes": [_vol(f"{src}:{b['bind']}", "/") for src, b in kw.get("volumes", {}).items()],
               "env": kw.get("environment", {}), "ipc": kw["ipc_mode"],
               "devices": [d.split(":")[0] for d in kw.get("devices", [])]}
    if kw.get("init"):
        s["init"] = True
    if "shm_size" in kw:
        s["shm"] = kw["shm_size"]
    if "cpuset_cpus" in kw:
        s["cpuset"] = kw["cpuset_cpus"]
    if "nano_cpus" in kw:
        s["cpus"] = kw["nano_cpus"] / 1e9
    if "mem_limit" in kw:
        s["memory"] = kw["mem_limit"]
    if "device_requests" in kw:
        r = kw["device_requests"][0]
        s["gpus"] = ",".join(r["DeviceIDs"]) if r.get("DeviceIDs") else ("all" if r["Count"] == -1 else str(r["Count"]))
    return s


TRICKY = """envkit: 1
name: tricky
image: {base: debian:bookworm, proxy: {http: "http://u:p$w@proxy:3128"}}
run:
  volumes: ["./da ta:/data:ro", "/abs/$dir:/abs"]
  env: {PRICE: "5$ and $HOME and ${X}", QUOTES: "it's \\"q\\" `id`"}
"""


@pytest.mark.parametrize("example", [p.name for p in example_profiles()] + ["<tricky>"])
def test_targets_agree(example, tmp_path):
    if example == "<tricky>":
        profile_path = tmp_path / "tricky.yaml"
        profile_path.write_text(TRICKY)
    else:
        profile_path = copy_example(example, tmp_path)
    loaded = load_profile(profile_path)
    run = loaded.profile.run
    plan = build_plan(loaded, tmp_path / "out")
    files = {f.path: f.content.decode() for f in render_plan(plan) if f.source is None
             and f.path.endswith((".sh", ".yaml", ".json"))}
    out = str((tmp_path / "out").resolve())
    run_sh = _from_run_sh(files["run.sh"], out)
    compose = _from_compose(files["compose.yaml"], out)
    devc = json.loads(files[".devcontainer/devcontainer.json"].split("\n", 1)[1])
    devcontainer = _from_flags([a.replace("${localWorkspaceFolder}", out) for a in devc["runArgs"]])
    if (devc.get("hostRequirements") or {}).get("gpu") is True:  # the CLI adds --gpus all for it
        assert "gpus" not in devcontainer, "two GPU requests: the CLI's --gpus all would widen the runArgs one"
        devcontainer["gpus"] = "all"
    # Docker reads --mount as one CSV record (the source is a quoted field).
    mount = dict(kv.split("=", 1) for kv in next(csv.reader([devc["workspaceMount"].replace("${localWorkspaceFolder}", out)])))
    devcontainer["volumes"].insert(0, _vol(f"{mount['source']}:{mount['target']}", "/"))
    assert devc["workspaceFolder"] == loaded.profile.image.workdir
    # The engine seam's container (envkit validate), as the image's user (see below).
    sdk = _from_sdk(create_kwargs(replace(plan.settings, start_as_root=False)
                                  .with_sources(lambda src: str(loaded.resolve(src)))))
    # run.sh and compose start as root for envkit-entrypoint's uid remap; devcontainer.json states
    # containerUser (VS Code remaps with updateRemoteUserUID) and validate measures as the image's user.
    user = run_sh.get("user")
    assert user == compose.get("user") == ("root" if plan.image.spec.user.remapped and run.mount_project else None)
    for target in (run_sh, compose):
        target.pop("user", None)
        assert target["env"].pop("ENVKIT_REMAP_USER", None) == ("1" if user else None)
    assert devc["containerUser"] == loaded.profile.image.user.name
    assert run_sh == compose == devcontainer == sdk
    # And they say what the profile says.
    if run.ipc != "host" and run.shm_size:
        assert run_sh["shm"] == run.shm_size
    assert set(run_sh["ulimits"]) == set(run.ulimits) | ({"memlock"} if plan.network.rdma else set())
    assert run_sh["devices"] == list(plan.network.devices)


def test_ipc_host_drops_shm_everywhere(tmp_path):
    p = tmp_path / "p.yaml"
    p.write_text("envkit: 1\nname: h\nimage: {base: debian:bookworm}\nrun: {ipc: host, shm_size: 8g}\n")
    rs = build_plan(load_profile(p)).settings
    assert rs.shm_size is None and "shm_size" not in create_kwargs(replace(rs, volumes=()))
    files = {f.path: f.content.decode() for f in render_all(load_profile(p), tmp_path, ("run", "compose"))}
    assert "--shm-size" not in files["run.sh"] and "shm_size" not in files["compose.yaml"]
    assert "--ipc=host" in files["run.sh"]
