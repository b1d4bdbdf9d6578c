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


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",))))
def test_kube_text_stays_on_its_line_double_quoted_and_reads_back_in_yaml_1_1_and_1_2(text):
    """Any text is one double-quoted scalar on one line (every line break YAML knows escaped), which
    PyYAML (YAML 1.1, as kubernetes-validate reads) and ruamel.yaml (YAML 1.2) read back exactly."""
    import io

    import yaml
    from ruamel.yaml import YAML

    from envkit.render import to_kube_yaml

    out = to_kube_yaml([{"k": text}])
    assert out.startswith('k: "') and out.endswith('"\n') and out.count("\n") == 1, out
    assert not any(c in out[:-1] for c in "\r\x85\u2028\u2029")
    assert yaml.safe_load(out) == {"k": text}
    assert YAML(typ="safe", pure=True).load(io.StringIO(out)) == {"k": text}


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
