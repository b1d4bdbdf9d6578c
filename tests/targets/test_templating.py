"""envkit.templating against Jinja2 itself: the same text for every template generate renders, and for the
whitespace and language corners the templates rely on (Jinja2 configured as envkit's templates need it)."""

from __future__ import annotations

import shutil

import jinja2
import pytest
from hypothesis import given
from hypothesis import strategies as st

from envkit import templating
from envkit.generation import render_all
from envkit.profile import load_profile
from envkit.render import make_env, templates_dir
from envkit.targets import TARGET_NAMES
from envkit.templating import Environment, TemplateError, UndefinedError
from tests.conftest import example_profiles


def _jinja(env: Environment) -> jinja2.Environment:
    j = jinja2.Environment(loader=jinja2.FileSystemLoader(str(templates_dir())), undefined=jinja2.StrictUndefined,
                           autoescape=False, keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True)
    j.filters.update({k: v for k, v in env.filters.items() if k not in ("join", "indent")})
    j.globals.update(env.globals)
    return j


@pytest.fixture
def seen(monkeypatch) -> list[tuple[str, dict, str]]:
    """(template name, context, output) of every template rendered while the test runs."""
    rendered: list[tuple[str, dict, str]] = []
    original = templating.Template.render

    def record(self, **context):
        out = original(self, **context)
        rendered.append((self.name, context, out))
        return out

    monkeypatch.setattr(templating.Template, "render", record)
    return rendered


@pytest.mark.parametrize("profile", [None, *example_profiles()], ids=lambda p: p.stem if p else "default")
def test_every_rendered_template_matches_jinja2(profile, tmp_path, seen):
    """Every template generate renders, with the context it renders it with, gives Jinja2's text byte for byte."""
    loaded = load_profile(profile)
    if profile is not None:
        shutil.copytree(profile.parent, tmp_path / "p", dirs_exist_ok=True)
        loaded = load_profile(tmp_path / "p" / profile.name)
    render_all(loaded, tmp_path / "out", TARGET_NAMES)
    assert seen, "nothing was rendered"
    reference = _jinja(make_env())
    for name, context, out in seen:
        assert out == reference.get_template(name).render(**context), name


# Dockerfile branches no example takes: lock, no torch, hashed requirements, pip, wheelhouse with a lock or files.
BRANCHES = {
    "direct lock": ('torch: {version: "2.5.1", variant: cpu}', True, ""),
    "direct no torch": ("pip_packages: [six]", False, ""),
    "direct requirements pip": ('torch: {version: "2.5.1"}\n  installer: pip\n  requirements: [r.txt]', False, ""),
    "direct lock no torch uv": ("pip_packages: [six]", True, ""),
    "staged lock": ('torch: {version: "2.5.1", find_links: [wheels]}', True, ""),
    "staged requirements": ('torch: {version: "2.5.1", find_links: [wheels]}\n  requirements: [r.txt]', False, ""),
    "credentials": ('torch: {version: "2.5.1"}\n  requirements: [r.txt]', False, "https://u:p@x/simple"),
}


@pytest.mark.parametrize("name", BRANCHES)
def test_dockerfile_branches_match_jinja2(name, tmp_path, seen):
    image, lock, index = BRANCHES[name]
    (tmp_path / "wheels").mkdir()
    (tmp_path / "r.txt").write_text((f"--extra-index-url {index}\n" if index else "")
                                    + "six==1.17.0 --hash=sha256:" + "0" * 64 + "\n")
    if lock:
        (tmp_path / "envkit.lock.txt").write_text("six==1.17.0 \\\n    --hash=sha256:" + "0" * 64 + "\n")
    (tmp_path / "envkit.yaml").write_text(f"envkit: 1\nname: b\nimage:\n  base: debian:bookworm\n  {image}\n")
    render_all(load_profile(tmp_path / "envkit.yaml"), tmp_path / "out", ("dockerfile",))
    reference = _jinja(make_env())
    (context, out), = [(c, o) for n, c, o in seen if n == "Dockerfile.j2"]
    assert out == reference.get_template("Dockerfile.j2").render(**context)


CORNERS = {
    "lstrip and trim": "a\n    {% if x %}\n  b\n    {% endif %}\nc\n",
    "inline blocks": "x{% if x %} y{% endif %}z {% for i in xs %}[{{ i }}]{% endfor %}\n",
    "elif else": "{% if n == 1 %}one{% elif n == 2 %}two{% else %}many{% endif %}\n",
    "nested loops": "{% for a in xs %}{% for b in ys %}{{ a }}{{ b }}{{ ',' if not loop.last }}{% endfor %}"
                    "{{ ';' if not loop.last else '.' }}{% endfor %}\n",
    "loop index and else": "{% for i in [] %}{{ loop.index }}{% else %}empty{% endfor %}"
                           "{% for i in xs %}{{ loop.index }}/{{ loop.length }}{% endfor %}\n",
    "pairs": "{% for k, v in pairs %}  {{ k }}={{ v }}{{ ' \\\\' if not loop.last else '' }}\n{% endfor %}",
    "set in if": "{% if x %}\n{% set w = 'uv' %}\n{% else %}\n{% set w = 'pip' %}\n{% endif %}\n{{ w }} install\n",
    "comments": "{# alone #}\na {# inline #}b\n  {# indented #}\nc\n",
    "whitespace control": "a   {%- if x -%}   b   {%- endif -%}   c\n{{- ' d' }}\n",
    "concat and filters": "{{ ('x' ~ n)|upper }} {{ xs|join(', ') }} {{ 'no' if not x }}{{ 'yes' if x }}\n",
    "string holding comment start": "echo {{ \"${#nodes[@]}\" }}\n",
    "macro and indent": "{% macro m(p, k='key') %}\n{{ k }}:\n  - {{ p }}\n{% endmacro %}\nroot:\n  {{ m(1)|indent(2) }}"
                        "\n  {{ m(2, 'other')|indent(2) }}\n",
    "attributes and items": "{{ d.a }} {{ d['a'] }} {{ s[1:] }} {{ none }} {{ true }}\n",
    "no trailing newline": "{% if x %}a{% endif %}",
}


@pytest.mark.parametrize("name", CORNERS)
def test_language_corners_match_jinja2(name):
    ctx = {"x": True, "n": 2, "xs": [1, 2], "ys": "ab", "pairs": [("A", 1), ("B", 2)], "d": {"a": 5}, "s": "abc"}
    ours = Environment(None, filters={"upper": str.upper}).from_string(CORNERS[name]).render(**ctx)
    j = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, trim_blocks=True,
                           lstrip_blocks=True)
    assert ours == j.from_string(CORNERS[name]).render(**ctx)


def test_import_exposes_macros(tmp_path):
    (tmp_path / "_lib.j2").write_text("{% macro hi(who) %}hi {{ who }}{% endmacro %}\n")
    (tmp_path / "main.j2").write_text('{% import "_lib.j2" as lib %}\n{{ lib.hi(name) }}!\n')
    assert Environment(tmp_path).get_template("main.j2").render(name="you") == "hi you!\n"


def test_strict_names_and_attributes():
    env = Environment(None)
    with pytest.raises(UndefinedError, match="'missing' is undefined"):
        env.from_string("{{ missing }}").render()
    with pytest.raises(UndefinedError, match="no attribute 'b'"):
        env.from_string("{{ d.b }}").render(d={"a": 1})


def test_a_filter_after_arithmetic_needs_parentheses():
    # Jinja2 reads `a + b|f` as a + (b|f); Python as (a + b)|f. Refused rather than read differently.
    with pytest.raises(TemplateError, match="add parentheses"):
        Environment(None, filters={"f": str}).from_string("{{ a + b|f }}")
    assert Environment(None, filters={"f": str}).from_string("{{ (a + b)|f }}").render(a=1, b=2) == "3"


def test_compiled_code_is_cached_and_keyed_by_source(tmp_path):
    (tmp_path / "t.j2").write_text("v1 {{ x }}\n")
    cache = tmp_path / "cache"
    cache.mkdir()
    assert Environment(tmp_path, cache_dir=cache).get_template("t.j2").render(x=1) == "v1 1\n"
    assert len(list(cache.iterdir())) == 1
    (tmp_path / "t.j2").write_text("v2 {{ x }}\n")  # an edited template is never served from the old code
    assert Environment(tmp_path, cache_dir=cache).get_template("t.j2").render(x=1) == "v2 1\n"
    for f in cache.iterdir():  # a damaged cache file is recompiled, not trusted
        f.write_bytes(b"\0garbage")
    assert Environment(tmp_path, cache_dir=cache).get_template("t.j2").render(x=2) == "v2 2\n"


def test_template_names_stay_in_the_folder(tmp_path):
    with pytest.raises(TemplateError):
        Environment(tmp_path).get_template("../etc/passwd")


def test_the_harness_zipapp_is_cached_and_checked(tmp_path, monkeypatch):
    """generate ships the same harness bytes from the cache as a fresh build; a damaged entry is rebuilt."""
    from envkit.harness.zipapp import zip_bytes
    from envkit.targets.dockerfile import harness_bytes

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    fresh = zip_bytes()
    assert harness_bytes() == fresh
    (entry,) = (tmp_path / "envkit").glob("harness-*/*.pyz")
    assert entry.read_bytes()[64:] == fresh
    entry.write_bytes(entry.read_bytes()[:-10])  # truncated
    assert harness_bytes() == fresh
    assert entry.read_bytes()[64:] == fresh


@given(st.text())
def test_yaml_scalar_escapes_exactly_what_yaml_refuses_raw(text):
    """The range table gives what the character-class expression it replaced gave, and reads back."""
    import json
    import re

    import yaml

    from envkit.render import _yaml_scalar

    unsafe = "[^\x09\x0a\x0d\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]"
    want = re.sub(unsafe, lambda m: f"\\u{ord(m.group()):04x}", json.dumps(text, ensure_ascii=False))
    assert _yaml_scalar(text) == want
    if not any(0xD800 <= ord(c) <= 0xDFFF for c in text):  # lone surrogates cannot be written as UTF-8
        assert yaml.safe_load(f"k: {_yaml_scalar(text)}")["k"] == text


def test_compiled_code_is_keyed_by_interpreter_and_compiler(tmp_path, monkeypatch):
    """A cache written by another Python (or another templating.py) is never loaded: marshal'd code from
    another version crashed the interpreter (found in review)."""
    (tmp_path / "t.j2").write_text("{{ x }}\n")
    cache = tmp_path / "cache"
    cache.mkdir()
    Environment(tmp_path, cache_dir=cache).get_template("t.j2")
    (first,) = cache.iterdir()
    monkeypatch.setattr(templating, "_COMPILER_KEY", templating._COMPILER_KEY + "other")
    assert Environment(tmp_path, cache_dir=cache).get_template("t.j2").render(x=1) == "1\n"
    assert len(list(cache.iterdir())) == 2 and first.exists()
    for f in cache.iterdir():  # something that unmarshals but is no code object is recompiled, not run
        import marshal
        f.write_bytes(marshal.dumps(["not", "code"]))
    assert Environment(tmp_path, cache_dir=cache).get_template("t.j2").render(x=2) == "2\n"


def test_compose_keeps_characters_beyond_the_bmp_raw():
    from envkit.render import _to_yaml

    assert _to_yaml({"GREETING": "hi \U0001F600"}) == "GREETING: hi \U0001F600\n"


def test_concatenation_binds_as_in_jinja2_and_unsupported_forms_are_refused():
    j = jinja2.Environment(undefined=jinja2.StrictUndefined)
    src = "{{ a ~ b * c }}|{{ a ~ b + 'z' }}"
    assert Environment(None).from_string(src).render(a="x", b="y", c=2) == j.from_string(src).render(a="x", b="y", c=2)
    with pytest.raises(TemplateError, match="loop filter"):
        Environment(None).from_string("{% for x in xs if x %}{{ x }}{% endfor %}")
