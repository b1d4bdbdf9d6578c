"""Malformed input of every kind is exit 2 with one located message, never exit 70."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import pytest

from envkit.doctor.checks import measure_read
from envkit.errors import EngineError
from envkit.plan.runsettings import RunSettings, Volume
from tests.conftest import call_envkit
from tests.dockerutil import require_base_image, require_docker


@pytest.mark.parametrize("char, name", [("\x1b", "U+001B"), ("\x00", "U+0000"), ("\x7f", "U+007F"),
                                        ("\ufffe", "U+FFFE")])
def test_control_characters_in_yaml_are_exit_2_with_line_and_column(tmp_path, char, name):
    p = tmp_path / "p.yaml"
    p.write_bytes(f"envkit: 1\nname: a{char}b\n".encode("utf-8", "surrogatepass"))
    res = call_envkit("generate", str(p), "-o", str(tmp_path / "out"))
    assert res.returncode == 2, res.stderr
    assert f"p.yaml:2:8: control character {name}" in res.stderr and "internal error" not in res.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("body", ["x: " + "[" * 5000 + "]" * 5000,
                                  "x: " + "{a: " * 3000 + "1" + "}" * 3000,
                                  "x:\n" + "".join(" " * i + "a:\n" for i in range(1, 1200))])
def test_nesting_beyond_the_recursion_limit_is_exit_2_and_fast(tmp_path, body):
    p = tmp_path / "p.yaml"
    p.write_text("envkit: 1\n" + body + "\n")
    started = time.monotonic()
    res = call_envkit("flags", str(p))
    assert res.returncode == 2 and "nesting" in res.stderr and "internal error" not in res.stderr, res.stderr
    assert time.monotonic() - started < 30


def test_a_megabyte_of_brackets_is_refused_in_linear_time(tmp_path):
    p = tmp_path / "p.yaml"
    p.write_text("envkit: 1\nx: " + "[" * (1024 * 1024 - 20) + "\n")
    started = time.monotonic()
    res = call_envkit("flags", str(p))
    assert res.returncode == 2 and "nesting deeper than 100 levels" in res.stderr
    assert time.monotonic() - started < 30, "PyYAML's scanner alone would take hours"


def _harness(*args, cwd: Path, timeout=60):
    return subprocess.run([sys.executable, "-m", "envkit", "harness", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.parametrize("doc", ['{"envkit_expect": 1, "loader": ' + "[" * 100_000 + "]" * 100_000 + "}",
                                 '{"envkit_expect": 1, "loader": {"dtype": []}}',
                                 '{"envkit_expect": 1, "loader": {"start_method": {}}}'])
def test_malformed_expectations_are_exit_2(tmp_path, doc):
    e = tmp_path / "e.json"
    e.write_text(doc)
    res = _harness("--expect", str(e), "--quick", cwd=tmp_path)
    assert res.returncode == 2, res.stderr[-2000:]
    assert "Traceback" not in res.stderr and "envkit harness: error:" in res.stderr


def test_expectation_that_is_a_fifo_or_dev_zero_is_refused_without_hanging(tmp_path):
    fifo = tmp_path / "e.json"
    os.mkfifo(fifo)
    for path in (fifo, Path("/dev/zero")):
        res = _harness("--expect", str(path), cwd=tmp_path, timeout=30)
        assert res.returncode == 2 and "not a regular file" in res.stderr


@pytest.mark.slow  # real processes for seconds: CI's slow tier keeps the unit tier under 90 s
def test_batch_larger_than_memory_is_exit_2_before_allocating(tmp_path):
    res = _harness("--batch-size", "100000000", "--quick", cwd=tmp_path, timeout=60)
    assert res.returncode == 2, res.stderr[-2000:]
    from envkit.harness.rules.defaults import LOADER
    from envkit.harness.rules.sizing import batch_bytes
    need = batch_bytes(100000000, LOADER.sample_shape, LOADER.dtype)  # the built-in workload's sample, 10^8 times
    assert f"one batch is {need} bytes" in res.stderr and "of memory available" in res.stderr


def test_wsl_apply_splits_lines_only_at_newlines(tmp_path):
    # WSL reads "# note<U+2028>memory=4GB" as one comment line: memory is not set there.
    cfg = tmp_path / ".wslconfig"
    original = "[wsl2]\n# note\u2028memory=4GB\n# form\x0cprocessors=2\n"
    cfg.write_text(original, encoding="utf-8")
    p = tmp_path / "w.yaml"
    p.write_text("envkit: 1\nname: w\nimage: {base: debian:bookworm}\nwsl: {memory: 8GB, processors: 4}\n")
    res = call_envkit("wsl", "apply", str(p), "--wslconfig", str(cfg))
    assert res.returncode == 0, res.stderr
    text = cfg.read_text(encoding="utf-8")
    assert "# note\u2028memory=4GB\n" in text and "# form\x0cprocessors=2\n" in text, "comments untouched"
    assert "\nmemory=8GB\n" in text and "\nprocessors=4\n" in text, "keys added on their own lines"


def _measure_as_nobody(root: Path) -> dict:
    """measure_read(root) in a forked child that dropped to uid 65534 (root reads every folder)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        try:
            os.close(r)
            if os.geteuid() == 0:
                os.setgid(65534)
                os.setuid(65534)
            os.write(w, json.dumps(measure_read(root)).encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r) as fh:
        out = fh.read()
    os.waitpid(pid, 0)
    return json.loads(out)


def test_doctor_data_walk_skips_unreadable_entries_and_keeps_its_budget():
    root = Path(tempfile.mkdtemp(prefix="envkit-hardening-data-"))
    try:
        os.chmod(root, 0o755)
        (root / "a").mkdir()
        (root / "a" / "x.bin").write_bytes(b"x" * 4096)
        os.mkfifo(root / "a" / "pipe")
        os.chmod(root / "a" / "pipe", 0o666)
        locked = root / "b-locked"
        locked.mkdir(mode=0o700)
        (locked / "y.bin").write_bytes(b"y" * 10)
        (root / "c.bin").write_bytes(b"z" * 10)
        os.chmod(root / "c.bin", 0o600)
        (root / "dangling").symlink_to(root / "nowhere")
        r = _measure_as_nobody(root)
        assert r["bytes"] == 4096, r
        if os.geteuid() == 0:
            assert r["skipped"] == 2, r  # the locked folder and the unreadable file
    finally:
        shutil.rmtree(root)
    started = time.monotonic()
    r = measure_read(Path("/"), budget_s=0.5)
    assert time.monotonic() - started < 5, "listing counts against the budget"


def test_doctor_data_on_root_emits_its_json(tmp_path):
    res = call_envkit("doctor", "--data", "/", "--json", timeout=120)
    assert res.returncode in (0, 1), res.stderr
    doc = json.loads(res.stdout)
    data = [c for c in doc["checks"] if c["name"].startswith("data:")]
    assert data and "read" in data[0]["measured"]


@pytest.mark.parametrize("body, message", [
    ('name: "a."', "cannot be part of an image name"),
    ('name: ok\nimage: {base: "a.:1"}', "image.base"),
    ('name: ok\nimage: {base: debian:bookworm, tag: "team/a..b:1"}', "path component 'a..b'"),
    ("name: ok\nrun: {cpus: 1.0000000001}", "too precise"),
    ("name: ok\nrun: {cpus: 0.001}", "smallest CPU limit, 0.01"),
    ("name: ok\nrun: {memory: 9223372036854775808}", "more than Docker can take"),
    ("name: ok\nrun: {shm_size: 99999999999t}", "more than Docker can take"),
    ('name: ok\nrun: {volumes: ["./d:/"]}', "container's root"),
    ('name: ok\nrun: {volumes: ["./d:/data/../.."]}', "climbs out with '..'"),
    ('name: ok\nrun: {volumes: ["./d:/data", "./e:/data/"]}', "duplicate mount points"),
])
def test_values_docker_rejects_are_refused_at_load_with_their_position(tmp_path, body, message):
    p = tmp_path / "p.yaml"
    text = f"envkit: 1\n{body}\n"
    if "image:" not in body:
        text += "image: {base: debian:bookworm}\n"
    p.write_text(text)
    res = call_envkit("flags", str(p))
    assert res.returncode == 2 and message in res.stderr, res.stderr
    assert re.search(r"p\.yaml:\d+:\d+: ", res.stderr)


def test_a_colon_in_the_profiles_folder_is_refused_clearly(tmp_path):
    folder = tmp_path / "proj:v2"
    folder.mkdir()
    p = folder / "envkit.yaml"
    p.write_text("envkit: 1\nname: ok\nimage: {base: debian:bookworm}\n")
    res = call_envkit("flags", str(p))
    assert res.returncode == 2 and "run.mount_project" in res.stderr and "contains ':'" in res.stderr
    p.write_text("envkit: 1\nname: ok\nimage: {base: debian:bookworm}\nrun: {mount_project: false}\n")
    assert call_envkit("flags", str(p)).returncode == 0


@pytest.mark.docker
def test_the_real_engine_cannot_take_a_colon_in_a_volume_source(tmp_path):
    # Why refusing is right: the --volume form Docker shares across run, compose and the SDK splits at ':'.
    engine = require_docker()
    image = require_base_image(engine)
    src = tmp_path / "proj:v2"
    src.mkdir()
    with pytest.raises(EngineError):
        engine.run(image, ["true"], replace(RunSettings.engine_defaults(), volumes=(Volume(str(src), "/workspace", None),)),
                   labels={}, timeout=60)
