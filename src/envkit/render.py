"""The one Jinja2 environment factory: StrictUndefined, no autoescape, no bytecode cache, with the
shell, PowerShell, Dockerfile, YAML and JSON quoting filters.

Templates hold syntax only; they loop and branch over contexts that target
modules build from the typed profile. A missing context key is an error, never
an empty string (StrictUndefined).

Example:
    >>> env = make_env()
    >>> print(env.from_string("echo {{ x|shquote }}").render(x="it's"))
    echo 'it'"'"'s'
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import jinja2

from envkit import __version__


def templates_dir() -> Path:
    """Templates ship inside the wheel (envkit/templates); a source checkout has them at the top level."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "templates", here.parent.parent / "templates"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("envkit's templates folder is missing from this installation")


def _quote_text(node) -> None:
    """Every text value under ``node`` quoted (mapping keys left plain), in place."""
    import yaml

    if isinstance(node, yaml.MappingNode):
        for _, value in node.value:
            _quote_text(value)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            _quote_text(item)
    elif node.tag == "tag:yaml.org,2002:str" and not node.style:
        node.style = "'"  # the emitter picks double quotes where single ones cannot carry the text


def _quoting_dumper(base: type) -> type:
    """``base`` (a PyYAML dumper) writing every text value quoted.

    PyYAML decides what to leave plain by YAML 1.1's rules; Compose reads YAML 1.2 (compose-go, through
    go-yaml v3), whose numbers differ: plain ``2719e14`` (a git SHA) is a float there and comes back from
    ``docker compose config`` as 2.719e+17, ``08`` as 8, ``0o17`` as 15, ``+.5`` as 0.5. A quoted scalar is
    text in every YAML version, so the container gets the value as written. Mapping keys are left to PyYAML:
    they are Compose's own names and env names (envkit.profile.types.ENV_NAME), and the only such names
    YAML 1.2 reads as other than text (null, true, false in their spellings) are YAML 1.1 booleans or
    nulls too, which PyYAML quotes.
    """

    class QuotingDumper(base):
        def represent(self, data) -> None:  # BaseRepresenter.represent, with the quoting pass between
            node = self.represent_data(data)
            _quote_text(node)
            self.serialize(node)
            self.represented_objects: dict = {}
            self.object_keeper: list = []
            self.alias_key = None

    return QuotingDumper


def _to_yaml(data) -> str:
    """``data`` as block YAML with every text value quoted (see ``_quoting_dumper``).

    >>> print(_to_yaml({"environment": {"SHA": "2719e14", "N": 3, "ON": True}}), end="")
    environment:
      SHA: '2719e14'
      N: 3
      'ON': true
    """
    import yaml  # only compose.yaml needs the dumper

    # sort_keys=False: contexts are built in a deliberate, stable order.
    options: dict = {"sort_keys": False, "default_flow_style": False, "width": 1000, "allow_unicode": True}
    text = yaml.dump(data, Dumper=_quoting_dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)), **options)
    if "\\" in text:  # libyaml escapes what PyYAML writes raw (characters beyond the BMP): PyYAML's spelling
        text = yaml.dump(data, Dumper=_quoting_dumper(yaml.SafeDumper), **options)
    return text


def _to_json(data) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False)


# PowerShell reads the typographic single quotes as quotes too; each is escaped by doubling.
_PS_QUOTES = "(['\u2018\u2019\u201a\u201b])"


def _ps_quote(value: object) -> str:
    """A PowerShell single-quoted string literal: every kind of single quote is doubled.

    >>> _ps_quote("it's \u2019x\u2019")
    "'it''s \u2019\u2019x\u2019\u2019'"
    """
    return "'" + re.sub(_PS_QUOTES, r"\1\1", str(value)) + "'"


def _dockerfile_str(value: object) -> str:
    """A double-quoted Dockerfile word (ENV, ARG, LABEL) in which ``$`` stays literal.

    >>> print(_dockerfile_str('a "b" $HOME'))
    "a \\"b\\" \\$HOME"
    """
    return json.dumps(str(value), ensure_ascii=False).replace("$", "\\$")


# What a YAML reader takes raw (its printable set, less what it reads as a line break or byte-order mark:
# NEL, U+2028, U+2029, U+FEFF); JSON with ensure_ascii=False leaves the rest raw, so they are escaped here.
YAML_RAW_SAFE = ((0x09, 0x0A), (0x0D, 0x0D), (0x20, 0x7E), (0xA0, 0x2027), (0x202A, 0xD7FF), (0xE000, 0xFEFE),
                 (0xFF00, 0xFFFD), (0x10000, 0x10FFFF))


def _yaml_safe(ch: str) -> bool:
    o = ord(ch)
    return any(lo <= o <= hi for lo, hi in YAML_RAW_SAFE)


def _yaml_scalar(value: object) -> str:
    """A YAML flow scalar that reads back as exactly ``value``: JSON spelling (JSON is YAML), with the
    characters YAML will not take raw escaped as ``\\uXXXX``.

    >>> print(_yaml_scalar('a: "b" #c $d\u2028'), _yaml_scalar(3), _yaml_scalar(True))
    "a: \\"b\\" #c $d\\u2028" 3 true
    """
    text = json.dumps(value, ensure_ascii=False)
    if text.isascii() and "\x7f" not in text:  # the usual case: JSON has escaped every control character
        return text
    return "".join(ch if _yaml_safe(ch) else f"\\u{ord(ch):04x}" for ch in text)


def make_env(directory: Path | None = None) -> jinja2.Environment:
    """A fresh environment over ``directory`` (default: envkit's templates).

    No bytecode cache: every template is compiled from its source in this process.
    """
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(directory or templates_dir())),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["shquote"] = lambda v: shlex.quote(str(v))
    env.filters["psquote"] = _ps_quote
    env.filters["to_yaml"] = _to_yaml
    env.filters["to_json"] = _to_json
    env.filters["dockerfile_str"] = _dockerfile_str
    env.filters["yamlstr"] = _yaml_scalar
    env.globals["envkit_version"] = __version__
    return env
