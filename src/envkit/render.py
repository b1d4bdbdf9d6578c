"""The one template environment factory (envkit.templating: Jinja2's language, strict, no autoescape),
with the shell, PowerShell, Dockerfile, YAML and JSON quoting filters.

Templates hold syntax only; they loop and branch over contexts that target
modules build from the typed profile. A missing context key is an error, never
an empty string.

Example:
    >>> env = make_env()
    >>> print(env.from_string("echo {{ x|shquote }}").render(x="it's"))
    echo 'it'"'"'s'
"""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path

from envkit import __version__
from envkit.templating import Environment


def templates_dir() -> Path:
    """Templates ship inside the wheel (envkit/templates); a source checkout has them at the top level."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "templates", here.parent.parent / "templates"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("envkit's templates folder is missing from this installation")


def _to_yaml(data) -> str:
    import yaml  # only compose.yaml needs the dumper

    # sort_keys=False: contexts are built in a deliberate, stable order.
    options: dict = {"sort_keys": False, "default_flow_style": False, "width": 1000, "allow_unicode": True}
    text = yaml.dump(data, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), **options)
    if "\\" in text:  # libyaml escapes what PyYAML writes raw (characters beyond the BMP): PyYAML's spelling
        text = yaml.dump(data, Dumper=yaml.SafeDumper, **options)
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
# Ranges, not a regular expression: compiling that character class is start-up time every Kubernetes run would pay.
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


def cache_dir(kind: str) -> Path | None:
    """envkit's cache folder for ``kind`` (compiled templates, the harness zipapp): work a CLI run can skip.

    Entries are keyed by what they are built from, never trusted on name alone. Set ENVKIT_NO_CACHE=1 to
    disable; an unwritable cache folder just means no cache.
    """
    if os.environ.get("ENVKIT_NO_CACHE"):
        return None
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "envkit" / f"{kind}-{__version__}"
    try:
        base.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return base


def make_env(directory: Path | None = None) -> Environment:
    """A fresh environment over ``directory`` (default: envkit's templates)."""
    return Environment(
        directory or templates_dir(),
        cache_dir=cache_dir("templates"),
        filters={"shquote": lambda v: shlex.quote(str(v)), "psquote": _ps_quote, "to_yaml": _to_yaml,
                 "to_json": _to_json, "dockerfile_str": _dockerfile_str, "yamlstr": _yaml_scalar},
        globals={"envkit_version": __version__},
    )
