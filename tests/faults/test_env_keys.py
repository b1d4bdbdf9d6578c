"""An invalid env key is blamed on the key: its own position, the rule it breaks, a did-you-mean.

The rule is a POSIX shell name (envkit.profile.types.ENV_NAME): the Slurm script sets run.env with
`export`, which takes nothing else. A value that is fine never appears as the problem.
"""

from __future__ import annotations

import pytest

from tests.conftest import call_envkit

HEAD = "envkit: 1\nname: demo\nimage:\n  base: debian:bookworm\n"


@pytest.mark.parametrize("section, written, shown, suggestion", [
    ("run", "MY-VAR", "MY-VAR", "'MY_VAR'"),
    ("run", "1ABC", "1ABC", "'_1ABC'"),
    ("run", '"A B"', "A B", "'A_B'"),
    ("run", "x.y", "x.y", "'x_y'"),
    ("image", "HTTP-PROXY", "HTTP-PROXY", "'HTTP_PROXY'"),
])
def test_an_invalid_env_key_is_named_at_its_own_position(tmp_path, section, written, shown, suggestion):
    p = tmp_path / "p.yaml"
    env_block = f"  env:\n    GOOD: fine\n    {written}: hello\n"
    p.write_text(HEAD + env_block if section == "image" else HEAD + "run:\n" + env_block)
    res = call_envkit("flags", str(p))
    assert res.returncode == 2, res.stderr
    key_line = 7 if section == "image" else 8
    assert f"p.yaml:{key_line}:5: {section}.env.{shown}: env key '{shown}' is not a valid name" in res.stderr
    assert "an env key must match ^[A-Za-z_][A-Za-z0-9_]*$" in res.stderr
    assert f"(did you mean {suggestion}?)" in res.stderr
    assert "hello" not in res.stderr, "the value is not the problem"
    assert "Traceback" not in res.stderr and res.stderr.count("\n") == 1, res.stderr


@pytest.mark.parametrize("written, message", [
    ("1", "p.yaml:8:5: run.env.1: YAML reads the key 1 as the number 1, not as text, and an env key must match"),
    ("YES", 'p.yaml:8:5: run.env.YES: YAML reads the key YES as the boolean true, not as text; put it in quotes: "YES"'),
    ("null", 'p.yaml:8:5: run.env.null: YAML reads the key null as null, not as text; put it in quotes: "null"'),
    ("Off", 'p.yaml:8:5: run.env.Off: YAML reads the key Off as the boolean false'),
])
def test_a_key_yaml_reads_as_no_text_is_named_as_written(tmp_path, written, message):
    p = tmp_path / "p.yaml"
    p.write_text(HEAD + f"run:\n  env:\n    GOOD: fine\n    {written}: x\n")
    res = call_envkit("flags", str(p))
    assert res.returncode == 2, res.stderr
    assert message in res.stderr, res.stderr
    assert "run.env[" not in res.stderr and "(did you mean 'true'?)" not in res.stderr


def test_quoted_keys_yaml_would_read_as_booleans_load(tmp_path):
    p = tmp_path / "p.yaml"
    p.write_text(HEAD + 'run:\n  env:\n    "YES": a\n    "NULL": b\n')
    res = call_envkit("flags", str(p))
    assert res.returncode == 0, res.stderr
    assert "--env=YES=a" in res.stdout and "--env=NULL=b" in res.stdout


def test_valid_env_keys_still_load(tmp_path):
    p = tmp_path / "p.yaml"
    p.write_text(HEAD + "run:\n  env:\n    _X: a\n    lower_case9: b\n    PATH_EXTRA: c\n")
    res = call_envkit("flags", str(p))
    assert res.returncode == 0, res.stderr
    assert "--env=lower_case9=b" in res.stdout
