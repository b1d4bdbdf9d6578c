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


def _kube_dumper() -> type:
    """A PyYAML dumper for Kubernetes manifests, in the layout a reader expects of one.

    Text goes out double-quoted in ``_yaml_scalar``'s spelling (JSON, which YAML reads back exactly), so no
    profile value -- quotes, ``$``, ``: ``, ``#``, a leading ``-``, ``yes`` -- can change the structure;
    ``Word`` values and plain ``str`` keys go out plain (PyYAML quotes any that would not read back as
    text), ``DataMap`` keys quoted. Block lists are indented under their key, ``Flow`` lists go on one
    line, a ``Note`` key gets its comment line, and no node is written as an alias.
    """
    import yaml
    from yaml.events import MappingEndEvent, ScalarEvent
    from yaml.nodes import ScalarNode

    str_tag = "tag:yaml.org,2002:str"

    class KubeDumper(yaml.SafeDumper):
        def ignore_aliases(self, data) -> bool:
            return True

        def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
            super().increase_indent(flow, False)

        def write_double_quoted(self, text: str, split: bool = True) -> None:
            self.write_indicator(_yaml_scalar(text), True)

        def serialize_node(self, node, parent, index) -> None:
            comment = getattr(node, "comment", None)
            if comment is None:
                return super().serialize_node(node, parent, index)
            implicit = (node.tag == self.resolve(ScalarNode, node.value, (True, False)),
                        node.tag == self.resolve(ScalarNode, node.value, (False, True)))
            event = ScalarEvent(None, node.tag, implicit, node.value, style=node.style)
            event.comment = comment  # type: ignore[attr-defined]
            self.emit(event)

        def expect_block_mapping_key(self, first: bool = False) -> None:
            comment = getattr(self.event, "comment", None)
            if comment is not None and not isinstance(self.event, MappingEndEvent):
                self.write_indent()
                self.write_indicator("# " + comment, True)
            super().expect_block_mapping_key(first)

    def text(dumper, data: str):
        return dumper.represent_scalar(str_tag, data, style='"')

    def word(dumper, data: str):
        return dumper.represent_scalar(str_tag, str(data))

    def note(dumper, data: Note):
        node = dumper.represent_scalar(str_tag, str(data))
        node.comment = data.comment
        return node

    def mapping(dumper, data: dict):
        return yaml.MappingNode("tag:yaml.org,2002:map", [
            (dumper.represent_data(k) if isinstance(k, Note) else word(dumper, k), dumper.represent_data(v))
            for k, v in data.items()])

    def data_map(dumper, data: DataMap):
        return yaml.MappingNode("tag:yaml.org,2002:map", [
            (text(dumper, k), dumper.represent_data(v)) for k, v in data.items()])

    KubeDumper.add_representer(str, text)
    KubeDumper.add_representer(Word, word)
    KubeDumper.add_representer(Note, note)
    KubeDumper.add_representer(dict, mapping)
    KubeDumper.add_representer(DataMap, data_map)
    KubeDumper.add_representer(Flow, lambda d, data: d.represent_sequence("tag:yaml.org,2002:seq", data,
                                                                          flow_style=True))
    KubeDumper.add_representer(tuple, lambda d, data: d.represent_list(data))
    return KubeDumper


def to_kube_yaml(docs: list) -> str:
    """``docs`` as Kubernetes YAML documents, ``---`` between them (see ``_kube_dumper``).

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
    import yaml

    return yaml.dump_all(docs, Dumper=_kube_dumper(), sort_keys=False, default_flow_style=False,
                         width=2**30, allow_unicode=True)


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
