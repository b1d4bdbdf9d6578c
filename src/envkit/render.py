"""The one Jinja2 environment factory: StrictUndefined, no autoescape, no bytecode cache, with the
shell, PowerShell, Dockerfile, YAML and JSON quoting filters, and the Kubernetes YAML dumper.

Templates hold syntax only; they loop and branch over contexts that target
modules build from the typed profile. A missing context key is an error, never
an empty string (StrictUndefined).

Example:
    >>> env = make_env()
    >>> print(env.from_string("echo {{ x|shquote }}").render(x="it's"))
    echo 'it'"'"'s'
"""

from __future__ import annotations

import functools
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


def _to_yaml(data) -> str:
    """``data`` as block YAML with every text value quoted (compose.yaml: see :func:`_dump`).

    Compose reads YAML 1.2 (compose-go, through go-yaml v3), whose numbers differ from YAML 1.1's: plain
    ``2719e14`` (a git SHA) is a float there and comes back from ``docker compose config`` as 2.719e+17,
    ``08`` as 8, ``0o17`` as 15, ``+.5`` as 0.5. A quoted scalar is text in every YAML version, so the
    container gets the value as written. Mapping keys (Compose's own names and env names) stay plain
    unless YAML 1.1 or 1.2 would read them as other than text (:func:`_plain`).

    >>> print(_to_yaml({"environment": {"SHA": "2719e14", "N": 3, "ON": True, "WORKERS": 4}}), end="")
    environment:
      SHA: '2719e14'
      'N': 3
      'ON': true
      WORKERS: 4
    """
    # Keys keep the order the contexts were built in: deliberate and stable.
    return _dump([data], quote="'", width=1000, sequence=2, offset=0)


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


class Word(str):
    """A word of envkit's own (a field value such as ``Never`` or ``rendezvous``): written plain in Kubernetes YAML."""


class DataMap(dict):
    """A mapping whose keys are data (labels, resource names, a node selector): its keys quoted like values."""


class Flow(tuple):
    """A list written on one line, ``[a, b]`` (a command's argv)."""


class Note(str):
    """A mapping key written with a comment line above it.

    >>> Note("port", "the rendezvous port").comment
    'the rendezvous port'
    """

    comment: str

    def __new__(cls, key: str, comment: str) -> Note:
        self = super().__new__(cls, key)
        self.comment = comment
        return self


def to_kube_yaml(docs: list) -> str:
    """``docs`` as Kubernetes YAML documents, ``---`` between them, in the layout a reader expects of one.

    Text goes out double-quoted, so no profile value -- quotes, ``$``, ``: ``, ``#``, a leading ``-``,
    ``yes`` -- can change the structure; ``Word`` values and plain ``str`` keys go out plain (quoted
    when YAML 1.1 or 1.2 would read them as other than text), ``DataMap`` keys quoted. Block lists are
    indented under their key, ``Flow`` lists go on one line, a ``Note`` key gets its comment line, and
    no node is written as an alias (each is built afresh).

    >>> print(to_kube_yaml([{"kind": Word("Job"), "metadata": {"labels": DataMap({"app": "a: b"})},
    ...     "command": Flow(["sh", "-c"]), "ports": [{"name": Word("r"), Note("port", "rendezvous"): 29500}]}]), end="")
    kind: Job
    metadata:
      labels:
        "app": "a: b"
    command: ["sh", "-c"]
    ports:
      - name: r
        # rendezvous
        port: 29500
    """
    return _dump(docs, quote='"', width=2**30, sequence=4, offset=2)


STR_TAG = "tag:yaml.org,2002:str"


@functools.cache
def _resolvers() -> tuple:
    """ruamel.yaml's resolvers for YAML 1.1 and 1.2: what each version reads a plain scalar as."""
    from ruamel.yaml.resolver import VersionedResolver

    return VersionedResolver(version=(1, 1)), VersionedResolver(version=(1, 2))


def _plain(text: str) -> str:
    """``text`` to be written plain when YAML 1.1 and 1.2 both read it back as text, else single-quoted.

    YAML 1.1's booleans include ``y`` and ``n`` (its type repository's bool), and go-yaml v2 reads them
    so (resolve.go, ``resolveMapList``), as sigs.k8s.io/yaml's copy of it does for kubectl; PyYAML alone
    left them plain.

    >>> [type(_plain(t)).__name__ for t in ("Never", "yes", "null", "08")]
    ['str', 'SingleQuotedScalarString', 'SingleQuotedScalarString', 'SingleQuotedScalarString']
    """
    return str(text) if _reads_as_text(str(text)) else _quoted(text, "'")


@functools.lru_cache(maxsize=4096)
def _reads_as_text(text: str) -> bool:
    """Whether plain ``text`` reads as text in YAML 1.1 and 1.2 (a manifest repeats its keys: kept)."""
    from ruamel.yaml.nodes import ScalarNode

    return all(r.resolve(ScalarNode, text, (True, False)) == STR_TAG for r in _resolvers())


def _quoted(text: str, quote: str):
    """``text`` marked for the emitter to write in ``quote`` (it picks double quotes where single ones
    cannot carry the text)."""
    from ruamel.yaml.scalarstring import DoubleQuotedScalarString, SingleQuotedScalarString

    return (SingleQuotedScalarString if quote == "'" else DoubleQuotedScalarString)(text)


def _node(value, quote: str, column: int, sequence: int):
    """``value`` as ruamel.yaml's round-trip types, each scalar's quoting and each comment marked.

    ``column`` is where a mapping's keys start (a ``Note``'s comment goes there); a block list's items
    start ``sequence`` columns right of their key.
    """
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    if isinstance(value, dict):
        out = CommentedMap()
        for key, item in value.items():
            name = _quoted(key, quote) if isinstance(value, DataMap) else _plain(key)
            out[name] = _node(item, quote, column + 2 if isinstance(item, dict) else column, sequence)
            if isinstance(key, Note):
                out.yaml_set_comment_before_after_key(name, before=key.comment, indent=column)
        return out
    if isinstance(value, (list, tuple)):
        seq = CommentedSeq(_node(item, quote, column + sequence, sequence) for item in value)
        if isinstance(value, Flow):
            seq.fa.set_flow_style()
        return seq
    if isinstance(value, Word):
        return _plain(value)
    if isinstance(value, str):
        return _quoted(value, quote)
    return value


@functools.cache
def _representer() -> type:
    """ruamel.yaml's round-trip representer, writing ``None`` as ``null`` (its own writes nothing)."""
    from ruamel.yaml.representer import RoundTripRepresenter

    class Representer(RoundTripRepresenter):
        pass

    Representer.add_representer(type(None), lambda r, _: r.represent_scalar("tag:yaml.org,2002:null", "null"))
    return Representer


def _dump(docs: list, *, quote: str, width: int, sequence: int, offset: int) -> str:
    """``docs`` as block YAML 1.2 (no ``%YAML`` directive), through ruamel.yaml's public API only.

    ruamel.yaml rather than PyYAML: PyYAML decides what to leave plain by YAML 1.1's rules and has no
    public way to quote one value, so envkit had to override its emitter's internals, which a PyYAML
    release could change without notice. ruamel.yaml writes YAML 1.2 and takes the quoting of each
    value (``SingleQuotedScalarString``, ``DoubleQuotedScalarString``), flow lists (``fa``), comments
    (``yaml_set_comment_before_after_key``) and the indentation (``indent``) as public API. ``None``
    goes out as ``null``, as PyYAML wrote it.
    """
    import io

    from ruamel.yaml import YAML

    yaml = YAML(typ="rt", pure=True)
    yaml.Representer = _representer()
    yaml.width = width
    yaml.indent(mapping=2, sequence=sequence, offset=offset)
    out = io.StringIO()
    yaml.dump_all([_node(doc, quote, 0, sequence) for doc in docs], out)
    return out.getvalue()


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
    env.filters["to_kube_yaml"] = to_kube_yaml
    env.globals["envkit_version"] = __version__
    return env
