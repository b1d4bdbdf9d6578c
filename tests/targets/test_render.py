"""envkit's template environment (envkit.render.make_env): its settings, whitespace rules and own filters."""

from __future__ import annotations

import jinja2
import pytest
from hypothesis import given
from hypothesis import strategies as st

from envkit.render import make_env, templates_dir


def test_environment_settings():
    env = make_env()
    assert isinstance(env.loader, jinja2.FileSystemLoader) and env.loader.searchpath == [str(templates_dir())]
    assert env.undefined is jinja2.StrictUndefined and env.bytecode_cache is None
    assert (env.autoescape, env.keep_trailing_newline, env.trim_blocks, env.lstrip_blocks) == (False, True, True, True)
    assert {"shquote", "psquote", "to_yaml", "to_json", "dockerfile_str", "to_kube_yaml"} <= set(env.filters)
    assert env.globals["envkit_version"]


@pytest.mark.parametrize(("src", "want"), [
    ("a\n    {% if x %}\n  b\n    {% endif %}\nc\n", "a\n  b\nc\n"),  # lstrip_blocks and trim_blocks
    ("{# alone #}\na {# inline #}b\n  {# indented #}\nc\n", "a b\nc\n"),
    ("{% if x %}\n{% set w = 'uv' %}\n{% else %}\n{% set w = 'pip' %}\n{% endif %}\n{{ w }} install\n", "uv install\n"),
    ("{% if x %}a{% endif %}", "a"),  # no newline added
    ("a\n\n", "a\n\n"),  # keep_trailing_newline
])
def test_whitespace_rules(src, want):
    assert make_env().from_string(src).render(x=True) == want


def test_missing_names_and_attributes_are_errors():
    env = make_env()
    with pytest.raises(jinja2.UndefinedError, match="'missing' is undefined"):
        env.from_string("{{ missing }}").render()
    with pytest.raises(jinja2.UndefinedError, match="no attribute 'b'"):
        env.from_string("{{ d.b }}").render(d={"a": 1})


def test_no_autoescape():
    assert make_env().from_string("{{ x }}").render(x="<a & 'b'>") == "<a & 'b'>"


@given(st.text())
def test_yaml_scalar_escapes_exactly_what_yaml_refuses_raw(text):
    """The range table escapes what this character class matches, and the scalar reads back."""
    import json
    import re

    import yaml

    from envkit.render import _yaml_scalar

    unsafe = "[^\x09\x0a\x0d\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]"
    want = re.sub(unsafe, lambda m: f"\\u{ord(m.group()):04x}", json.dumps(text, ensure_ascii=False))
    assert _yaml_scalar(text) == want
    if not any(0xD800 <= ord(c) <= 0xDFFF for c in text):  # lone surrogates cannot be written as UTF-8
        assert yaml.safe_load(f"k: {_yaml_scalar(text)}")["k"] == text


def test_compose_keeps_characters_beyond_the_bmp_raw():
    from envkit.render import _to_yaml

    assert _to_yaml({"GREETING": "hi \U0001F600"}) == "GREETING: 'hi \U0001F600'\n"


def test_kubernetes_templates_only_add_the_header():
    """The manifests are data dumped by to_kube_yaml: no macro library, no macro, at most 30 lines each."""
    assert not (templates_dir() / "_kube.j2").exists()
    for name in ("k8s.yaml.j2", "trainjob.yaml.j2"):
        text = (templates_dir() / name).read_text()
        assert "{% macro" not in text and "{% import" not in text and len(text.splitlines()) <= 30, name
        assert "to_kube_yaml" in text, name


def test_the_sbatch_template_does_not_branch_on_the_runtime():
    """Each runtime's pieces are a template of their own that targets/slurm.py picks; the shellcheck
    directive over job_env is decided in Python."""
    import re

    from envkit.targets.slurm import TEMPLATES

    base = (templates_dir() / "slurm.sbatch.j2").read_text()
    assert len(re.findall(r"runtime\s*[!=]=", base)) <= 1 and "SC2016" not in base
    for runtime, name in TEMPLATES.items():
        piece = (templates_dir() / name).read_text()
        assert '{% extends "slurm.sbatch.j2" %}' in piece and not re.search(r"runtime\s*[!=]=", piece), runtime
