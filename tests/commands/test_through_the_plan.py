"""doctor, bundle, lock and ``wsl apply`` take their decisions from :func:`envkit.planner.build_plan`.

Each test hands the command a plan whose one decision no profile would give (the seam is the
module's ``build_plan``: the real plan, one field replaced) and checks that the command's output
carries it. A command that planned on its own again would report its own value instead.
"""

from __future__ import annotations

import io
import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from envkit.commands import bundle, doctor, lock, wsl_apply
from envkit.doctor.host import Host
from envkit import planner
from envkit.plan.wslconfig import Entry, Section, WslPlan

MIB = 2**20
REAL_BUILD_PLAN = planner.build_plan


def _plan_with(monkeypatch, change) -> list:
    """Make ``build_plan`` return the real plan with ``change(plan)`` applied; the list records each call."""
    calls: list = []

    def fake(loaded, *args, **kwargs):
        calls.append(loaded)
        return change(REAL_BUILD_PLAN(loaded, *args, **kwargs))

    monkeypatch.setattr(planner, "build_plan", fake)
    return calls


def test_doctor_compares_the_host_with_the_plans_loaders(tmp_path, monkeypatch):
    def change(plan):
        facts = tuple((k, "the plan's own" if k == "shm_bytes" else v) for k, v in plan.loader.facts)
        return replace(plan, loader=replace(plan.loader, shm_bytes=777 * MIB, facts=facts))

    calls = _plan_with(monkeypatch, change)
    profile = tmp_path / "envkit.yaml"
    profile.write_text("envkit: 1\nname: d\nimage: {base: 'debian:bookworm'}\nloader: {num_workers: 2}\n")
    out = io.StringIO()
    doctor.run(profile, [], [], True, out, io.StringIO(),
               host=Host(Path("/nonexistent"), environ={}, cwd="/home/me", docker_probe=lambda: None))
    loader = json.loads(out.getvalue())["loader"]
    assert calls and (loader["shm_bytes"], loader["facts"]["shm_bytes"]) == (777 * MIB, "the plan's own")


def test_doctor_without_a_profile_plans_the_host_check_profile(monkeypatch):
    calls = _plan_with(monkeypatch, lambda plan: plan)
    out = io.StringIO()
    doctor.run(None, [], [], True, out, io.StringIO(),
               host=Host(Path("/nonexistent"), environ={}, cwd="/home/me", docker_probe=lambda: None))
    assert [c.profile.name for c in calls] == ["host-check"]


def test_bundle_writes_the_plans_run_settings(tmp_path, monkeypatch):
    calls = _plan_with(monkeypatch, lambda plan: replace(plan, settings=replace(plan.settings, shm_size=333 * MIB)))

    def export(image, rootfs, err=None, *, shown_as=None):
        rootfs.mkdir(parents=True)
        return "sha256:" + "a" * 64, ["PATH=/usr/bin"]

    monkeypatch.setattr(bundle, "export_rootfs", export)
    monkeypatch.setattr(bundle, "current_submitter", lambda: None)
    out = io.StringIO()
    assert bundle.run(None, "img:1", tmp_path / "b", out=out, err=io.StringIO()) == 0
    config = json.loads((tmp_path / "b" / "config.json").read_text())
    shm = next(m for m in config["mounts"] if m["destination"] == "/dev/shm")
    assert calls and shm["options"][-1] == f"size={333 * MIB}"
    assert "/dev/shm 333m" in out.getvalue()


RECORDING_UV = """import json, os, sys
json.dump({"env": {k: v for k, v in os.environ.items() if k.startswith("UV_")}}, open(os.environ["FAKE_UV_LOG"], "w"))
args = sys.argv[1:]
open(args[args.index("-o") + 1], "w").write("torch==2.5.1 \\\\\\n    --hash=sha256:aa\\n")
"""


def test_lock_resolves_from_the_plans_image(tmp_path, monkeypatch):
    index = "https://the-plans-own.invalid/simple"
    calls = _plan_with(monkeypatch, lambda plan: replace(plan, image=replace(plan.image, torch_index_url=index)))
    uv = tmp_path / "uv.py"
    uv.write_text(RECORDING_UV)
    monkeypatch.setattr(lock, "uv_command", lambda: [sys.executable, str(uv)])
    monkeypatch.setenv("FAKE_UV_LOG", str(tmp_path / "uv.json"))
    profile = tmp_path / "envkit.yaml"
    profile.write_text("envkit: 1\nname: t\nimage:\n  base: 'python:3.11-slim'\n  torch: {version: '2.5.1'}\n")
    assert lock.run(profile, force=False, out=io.StringIO(), err=io.StringIO()) == 0
    assert calls and json.loads((tmp_path / "uv.json").read_text())["env"]["UV_INDEX"] == index


@pytest.mark.parametrize("wsl_conf", [False, True])
def test_wsl_apply_merges_the_plans_keys(tmp_path, monkeypatch, wsl_conf):
    planned = (Section("wsl2" if not wsl_conf else "boot", (Entry("planned", "by-the-plan", None),)),)
    calls = _plan_with(monkeypatch, lambda plan: replace(plan, wsl=WslPlan(planned, planned, ())))
    profile = tmp_path / "envkit.yaml"
    profile.write_text("envkit: 1\nname: w\nimage: {base: 'debian:bookworm'}\n"
                       "wsl: {memory: 8GB, wsl_conf: {boot: {systemd: true}}}\n")
    out = io.StringIO()
    target = tmp_path / ("wsl.conf" if wsl_conf else ".wslconfig")
    assert wsl_apply.run(profile, target, dry_run=True, out=out, err=io.StringIO(), wsl_conf=wsl_conf) == 0
    assert calls and "planned" in out.getvalue() and "by-the-plan" in out.getvalue()
    assert "memory" not in out.getvalue() and "systemd" not in out.getvalue()
