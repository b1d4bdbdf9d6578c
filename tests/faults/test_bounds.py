"""Edges: non-finite and non-positive numbers are refused (exit 2), a missing /dev/shm is named (exit 1), a script
nested past the parser is a failed check, -o at a link loop is exit 1, a UTF-16 .wslconfig without a BOM is read,
and an unreachable package index is a network failure (exit 1), not bad pins."""

from __future__ import annotations

import io

import pytest

from envkit.harness.runtime import shmwatch
from envkit.wslmerge import decode_config, encode_config
from tests.conftest import call_envkit


@pytest.mark.parametrize("args", [["--interval", "nan"], ["--interval", "inf"], ["--interval", "-1"],
                                  ["--count", "0"], ["--count", "-1"], ["--threshold", "nan"]])
def test_watch_refuses_values_that_would_never_end_or_print_nothing(args, capsys):
    assert shmwatch.main([*args, "--count", "1"] if "--count" not in args else args, stream=io.StringIO()) == 2
    assert "envkit watch: --" in capsys.readouterr().err


def test_watch_without_dev_shm_says_so(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(shmwatch, "SHM_PATH", str(tmp_path / "no-shm"))
    out = io.StringIO()
    assert shmwatch.main(["--count", "1", "--interval", "0.01"], stream=out) == 1
    assert out.getvalue() == "" and "cannot read" in capsys.readouterr().err


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "soon"])
def test_a_lock_wait_that_would_wait_forever_is_bad_input(value, tmp_path):
    res = call_envkit("generate", "-o", str(tmp_path / "out"), "--target", "run", env={"ENVKIT_LOCK_WAIT": value})
    assert res.returncode == 2, res.stderr
    assert "ENVKIT_LOCK_WAIT: expected a finite number of seconds >= 0" in res.stderr
    assert "Traceback" not in res.stderr and not (tmp_path / "out" / "run.sh").exists()


@pytest.mark.parametrize("source", ["x = " + "-" * 200_000 + "1\n", "f = " + "lambda: " * 3000 + "1\n"])
def test_doctor_script_nested_past_the_parser_is_a_failed_check_with_json(source, tmp_path):
    import json

    script = tmp_path / "train.py"
    script.write_text(source)
    res = call_envkit("doctor", "--script", str(script), "--json", cwd=tmp_path)
    assert res.returncode == 1, res.stderr
    doc = json.loads(res.stdout)
    (check,) = [c for c in doc["checks"] if c["name"].startswith("script:")]
    assert check["status"] == "fail" and "nested too deeply" in check["message"]


@pytest.mark.parametrize("where", ["loop", "a/x"])
def test_output_at_a_symlink_loop_is_refused_with_exit_1(where, tmp_path):
    (tmp_path / "loop").symlink_to("loop")
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    res = call_envkit("generate", "-o", where, "--target", "run", cwd=tmp_path)
    assert res.returncode == 1, res.stderr
    assert "is a loop of symbolic links" in res.stderr and "Traceback" not in res.stderr


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_utf16_without_a_bom_is_read_even_with_characters_beyond_latin1(encoding):
    text = "[wsl2]\r\nkernel=C:\\\\\u20ac\\\\k\r\nmemory=8GB\r\n"
    decoded = decode_config(text.encode(encoding), ".wslconfig")
    assert decoded.encoding == encoding and decoded.text == text and decoded.bom == b""
    assert encode_config(decoded.text, decoded) == text.encode(encoding)


def test_an_unreachable_index_is_a_network_failure_exit_1_not_bad_pins(tmp_path):
    """Nothing listens on 127.0.0.1:9 (discard): uv's requests are refused, which says nothing of the pins."""
    (tmp_path / "envkit.yaml").write_text(
        "envkit: 1\nname: lk\nimage:\n  base: python:3.11-slim\n  python: '3.11'\n"
        "  torch: {version: '2.5.1', variant: cpu, index_url: 'http://127.0.0.1:9/simple'}\n  pip_packages: [pillow]\n")
    res = call_envkit("lock", "envkit.yaml", cwd=tmp_path, timeout=300,
                     env={"UV_INDEX_URL": "http://127.0.0.1:9/simple", "UV_HTTP_RETRIES": "0"})
    assert res.returncode == 1, res.stderr
    assert "could not reach the package index" in res.stderr and "do not resolve" not in res.stderr
    assert "Connection refused" in res.stderr and "Traceback" not in res.stderr
    assert not (tmp_path / "envkit.lock.txt").exists()


def test_doctor_script_over_the_size_bound_names_the_bound_not_permissions(tmp_path):
    import json

    script = tmp_path / "train.py"
    with open(script, "wb") as f:
        f.truncate(9 * 1024 * 1024)  # sparse: over the 8 MiB bound, no disk
    res = call_envkit("doctor", "--script", str(script), "--json", cwd=tmp_path)
    assert res.returncode == 1, res.stderr
    (check,) = [c for c in json.loads(res.stdout)["checks"] if c["name"].startswith("script:")]
    assert check["status"] == "fail" and "larger than 8 MiB" in check["message"]
    assert "up to 8 MiB" in check["remedy"] and "readable" not in check["remedy"]
