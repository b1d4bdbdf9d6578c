"""compose.yaml keeps every env value as text: Compose (YAML 1.2) reads each back as written.

PyYAML leaves plain what YAML 1.1 reads as text, but Compose's reader (compose-go, go-yaml v3) reads
plain ``2719e14`` as 2.719e+17, ``08`` as 8, ``0o17`` as 15 and ``+.5`` as 0.5. envkit.render writes
every text value quoted. The unit test reads the rendered file's nodes; the clients-tier test asks the
real ``docker compose config``.
"""

from __future__ import annotations

import json
import subprocess

import pytest
import yaml

from envkit.render import _to_yaml
from tests.clients.conftest import venv_tool
from tests.conftest import call_envkit

# Each is text that some YAML reader takes for a number, a boolean, a null, a time or a comment.
VALUES = {
    "SHA": "2719e14", "LEADING_ZERO": "08", "SMALL": "1e-4", "BIG": "1E3", "OCTAL": "0o17", "HALF": "+.5",
    "HEX": "0x1F", "INF": ".inf", "NAN": "-.nan", "TRUE": "true", "YES": "yes", "NO": "no", "NULL": "null",
    "TILDE": "~", "UNDERSCORE": "1_000", "SEXAGESIMAL": "12:30", "EMPTY": "", "HASH": "a #b",
    "HASH_FIRST": "#x", "SPACES": "  lead and trail  ", "COLON": "a: b", "DASH": "- item",
}


def _profile(tmp_path, env: dict[str, str]) -> tuple:
    p = tmp_path / "envkit.yaml"
    lines = "".join(f"    {json.dumps(k)}: {json.dumps(v)}\n" for k, v in env.items())
    p.write_text(f"envkit: 1\nname: c\nimage: {{base: debian:bookworm}}\nrun:\n  env:\n{lines}")
    out = tmp_path / "out"
    res = call_envkit("generate", str(p), "-o", str(out), "--target", "compose")
    assert res.returncode == 0, res.stderr
    return out / "compose.yaml"


def _env_nodes(path) -> dict[str, yaml.ScalarNode]:
    root = yaml.compose(path.read_text())
    services = dict((k.value, v) for k, v in root.value)["services"]
    (service,) = [v for _, v in services.value]
    env = dict((k.value, v) for k, v in service.value)["environment"]
    return {k.value: v for k, v in env.value}


def test_every_env_value_is_written_quoted_and_reads_back_as_written(tmp_path):
    compose = _profile(tmp_path, VALUES)
    nodes = _env_nodes(compose)
    for key, value in VALUES.items():
        assert nodes[key].style in ("'", '"'), f"{key}: {value!r} written plain"
    env = next(iter(yaml.safe_load(compose.read_text())["services"].values()))["environment"]
    assert {k: env[k] for k in VALUES} == VALUES


def test_the_dumper_quotes_text_everywhere_and_keeps_numbers_and_booleans():
    doc = {"a": ["08", 8, True, None], "b": {"c": "line one\nline two", "d": 2.5, "e": "it's"}}
    text = _to_yaml(doc)
    assert yaml.safe_load(text) == doc
    plain = [n.value for n in _scalars(yaml.compose(text)) if n.tag.endswith(":str") and not n.style]
    assert plain == [], plain
    assert "- 8\n" in text and "- true\n" in text and "d: 2.5\n" in text


def _scalars(node):
    if isinstance(node, yaml.MappingNode):
        for _key, v in node.value:
            yield from _scalars(v)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            yield from _scalars(item)
    else:
        yield node


def test_a_newline_in_an_env_value_is_refused_at_load(tmp_path):
    p = tmp_path / "envkit.yaml"
    p.write_text('envkit: 1\nname: c\nimage: {base: debian:bookworm}\nrun:\n  env:\n    TWO: "a\\nb"\n')
    res = call_envkit("generate", str(p), "-o", str(tmp_path / "out"), "--target", "compose")
    assert res.returncode == 2 and "envkit.yaml:6:5: run.env.TWO:" in res.stderr, res.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.clients
def test_docker_compose_config_shows_every_env_value_unchanged(tmp_path):
    compose = _profile(tmp_path, VALUES)
    res = subprocess.run([venv_tool("docker-compose"), "-f", str(compose), "config", "--format", "json"],
                         cwd=compose.parent, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    env = next(iter(json.loads(res.stdout)["services"].values()))["environment"]
    changed = {k: (v, env.get(k)) for k, v in VALUES.items() if env.get(k) != v}
    assert changed == {}, changed


# Keys YAML 1.1 (y/n are booleans in its type repository and in go-yaml v2) or 1.2 would not read as text,
# and values holding every kind of character the emitter escapes, writes raw or quotes (the emitter's contract).
TRICKY_ENV = {
    "y": "1", "Y": "Y", "n": "", "N": "no", "ON": "on", "off": "off", "null": "~", "E1e3": "1e3",
    "CTRL": "a\x01b\x07c\x0bd\x1be\x7f", "C1": "\x85\x8c\xa0\u2028\u2029", "ASTRAL": "hi \U0001F600 \U000E0001",
    "BOM": "\ufeff", "TAB": "a\tb", "QUOTES": "it's \"q\" \\", "LONG": "word " * 300,
}


def _tricky_compose(tmp_path):
    doc = {"name": "c", "services": {"s": {"image": "x", "environment": TRICKY_ENV}}}
    path = tmp_path / "compose.yaml"
    path.write_text(_to_yaml(doc), encoding="utf-8")
    return path


def test_every_key_and_character_reads_back_in_yaml_1_1_and_1_2(tmp_path):
    import io

    from ruamel.yaml import YAML

    text = _tricky_compose(tmp_path).read_text(encoding="utf-8")
    for reader in (yaml.safe_load, lambda t: YAML(typ="safe", pure=True).load(io.StringIO(t))):
        assert reader(text)["services"]["s"]["environment"] == TRICKY_ENV
    for key in ("y", "Y", "n", "N", "ON", "off", "null"):
        assert f"\n      '{key}': " in text, key


@pytest.mark.clients
def test_docker_compose_config_reads_every_key_and_character_as_written(tmp_path):
    compose = _tricky_compose(tmp_path)
    res = subprocess.run([venv_tool("docker-compose"), "-f", str(compose), "config", "--format", "json"],
                         cwd=compose.parent, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    env = json.loads(res.stdout)["services"]["s"]["environment"]
    assert {k: (v, env.get(k)) for k, v in TRICKY_ENV.items() if env.get(k) != v} == {}
