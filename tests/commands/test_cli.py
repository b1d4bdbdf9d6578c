"""The CLI as a user runs it: generate, flags, init, schema; and what generate must not import."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import jsonschema
import yaml

from envkit.profile import default_profile_text
from tests.conftest import call_envkit


def test_generate_imports_neither_torch_nor_docker(tmp_path):
    code = ("import sys; from envkit.cli import main; rc = main(['generate', '-o', sys.argv[1]]); "
            "bad = [m for m in ('torch', 'docker') if m in sys.modules]; "
            "print(bad); sys.exit(rc or (1 if bad else 0))")
    res = subprocess.run([sys.executable, "-c", code, str(tmp_path / "o")], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.strip().endswith("[]")


def test_flags_eval_roundtrip(tmp_path):
    """`eval "docker run $(envkit flags) IMAGE"` sees exactly the flags, one argument each."""
    p = tmp_path / "p.yaml"
    p.write_text("envkit: 1\nname: q\nimage: {base: debian:bookworm}\n"
                 "run:\n  shm_size: 1g\n  gpus: [0, 1]\n  volumes: ['./my data:/data:ro']\n"
                 "  env: {MSG: \"it's $(touch pwned) `id` ; rm -rf /\"}\n")
    flags = call_envkit("flags", str(p)).stdout.strip()
    script = f'printf "%s\\n" {flags}'
    out = subprocess.run(["bash", "-c", f"eval '{script}'" if False else script], capture_output=True, text=True,
                         cwd=tmp_path).stdout.splitlines()
    assert out == ["--shm-size=1g", "--ipc=private", "--init", "--user=root", "--env=ENVKIT_REMAP_USER=1", '--gpus="device=0,1"',
                   f"--volume={tmp_path}:/workspace", f"--volume={tmp_path}/my data:/data:ro",
                   "--env=MSG=it's $(touch pwned) `id` ; rm -rf /"]
    assert not (tmp_path / "pwned").exists()


def test_run_sh_never_executes_profile_values(tmp_path):
    p = tmp_path / "p.yaml"
    p.write_text("envkit: 1\nname: q\nimage: {base: debian:bookworm, tag: 'x/y:z'}\n"
                 "run:\n  volumes: ['./data:/data']\n  env: {A: \"$(touch pwned)\", B: \"'; touch pwned2; '\"}\n")
    out = tmp_path / "out"
    assert call_envkit("generate", str(p), "-o", str(out), "--target", "run").returncode == 0
    fake = tmp_path / "bin"
    fake.mkdir()
    docker = fake / "docker"
    docker.write_text('#!/bin/sh\nfor a in "$@"; do printf "%s\\n" "$a"; done\n')
    docker.chmod(docker.stat().st_mode | stat.S_IXUSR)
    res = subprocess.run([str(out / "run.sh"), "python", "-c", "print(1)"], capture_output=True, text=True,
                         cwd=tmp_path, env={**os.environ, "PATH": f"{fake}:{os.environ['PATH']}"})
    assert res.returncode == 0, res.stderr
    args = res.stdout.splitlines()
    assert args[0] == "run" and "--rm" in args
    assert f"--volume={out}/../data:/data" in args
    assert "--env=A=$(touch pwned)" in args and "--env=B='; touch pwned2; '" in args
    assert args[-4:] == ["x/y:z", "python", "-c", "print(1)"]
    assert not (tmp_path / "pwned").exists() and not (tmp_path / "pwned2").exists()


def test_init_writes_default_and_refuses_overwrite(tmp_path):
    target = tmp_path / "envkit.yaml"
    assert call_envkit("init", str(target)).returncode == 0
    from envkit.doctor.host import Host
    from envkit.fitted_profile import fitted_profile, this_machine

    assert target.read_text() == fitted_profile(this_machine(Host()))[0]
    target.write_text(target.read_text() + "# mine\n")
    res = call_envkit("init", str(target))
    assert res.returncode == 1 and "already exists" in res.stderr
    assert call_envkit("init", str(target), "--force").returncode == 0
    (backup,) = tmp_path.glob("envkit.yaml.envkit-bak-*")
    assert backup.read_text().endswith("# mine\n")


def test_schema_validates_examples_and_default():
    schema = json.loads(call_envkit("schema").stdout)
    validator = jsonschema.Draft202012Validator(schema)
    root = Path(__file__).resolve().parents[2]
    docs = [yaml.safe_load(default_profile_text())] + [yaml.safe_load(p.read_text()) for p in (root / "examples").glob("*.yaml")]
    for doc in docs:
        assert not list(validator.iter_errors(doc))
    # It is a real schema: unknown keys and wrong types fail.
    assert list(validator.iter_errors({**docs[0], "run": {"shm_sise": "8g"}}))
    assert list(validator.iter_errors({**docs[0], "run": {"ipc": "hots"}}))


def test_version_and_module_entry():
    res = subprocess.run([sys.executable, "-m", "envkit", "--version"], capture_output=True, text=True)
    assert res.returncode == 0 and res.stdout.startswith("envkit ")


def test_commands_use_envkit_yaml_in_the_current_folder(tmp_path):
    assert call_envkit("init", cwd=tmp_path).returncode == 0
    profile = tmp_path / "envkit.yaml"
    profile.write_text(profile.read_text().replace("shm_size: 2g", "shm_size: 3g"))
    assert call_envkit("flags", cwd=tmp_path).stdout.startswith("--shm-size=3g ")
    # Elsewhere, the embedded default.
    assert call_envkit("flags", cwd=tmp_path.parent).stdout.startswith("--shm-size=2g ")


def test_doctor_without_a_profile_checks_the_host_alone(tmp_path):
    res = call_envkit("doctor", "--json", cwd=tmp_path, timeout=120)
    assert "checking the host alone" in res.stderr
    doc = json.loads(res.stdout)
    checks = {c["name"]: c for c in doc["checks"]}
    # Nothing is compared with the embedded default's 32 GB, 8 CPUs and GPUs.
    assert "run.memory" not in checks["memory"]["message"]
    assert checks["gpu"]["status"] in ("pass", "skip")


def test_raw_argv_commands_get_their_words_untouched():
    """`envkit harness --help` is the harness's own help; `envkit --help` still lists both raw commands."""
    res = call_envkit("harness", "--help")
    assert res.returncode == 0 and "--expect" in res.stdout, res.stderr
    top = call_envkit("--help")
    assert top.returncode == 0 and "harness" in top.stdout and "watch" in top.stdout
    bad = call_envkit("harness", "--profile")
    assert bad.returncode == 2 and "harness: --profile needs a profile file" in bad.stderr
