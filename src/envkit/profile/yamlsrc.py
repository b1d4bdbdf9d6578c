"""Safe YAML reading that remembers where every key came from.

``read_yaml`` returns plain data plus a map from key paths to (line, column),
so validation errors can point into the file. It refuses what a profile never
needs and an attacker might send: non-UTF-8 bytes, huge files, duplicate keys,
and alias expansion beyond a node budget (the "billion laughs" anchor bomb).

Example:
    >>> data, pos = read_yaml(b"run:\\n  shm_size: 8g\\n", "p.yaml")
    >>> data["run"]["shm_size"], pos[("run", "shm_size")]
    ('8g', (2, 3))
"""

from __future__ import annotations

import re

import yaml

from envkit.errors import ProfileError
from envkit.termtext import neutralise

MAX_BYTES = 1024 * 1024
MAX_NODES = 50_000  # after alias expansion; a real profile has a few hundred
MAX_DEPTH = 100
# What YAML forbids in a stream (PyYAML's reader check), found here so the message has a line and column.
_NON_PRINTABLE = re.compile("[^\x09\x0A\x0D\x20-\x7E\x85\xA0-\uD7FF\uE000-\uFFFD\U00010000-\U0010ffff]")

Position = tuple[int, int]
# The tags a profile's values may carry: JSON's kinds, as YAML resolves them (plus the merge key <<).
# Anything else (!!set, !!binary, !!timestamp, !!omap, !!pairs, !!python/..., local !tags) would reach the
# models as a Python set, bytes or date that pydantic turns into text or a list without a word.
_JSON_TAGS = frozenset(f"tag:yaml.org,2002:{t}" for t in ("str", "int", "float", "bool", "null", "seq", "map", "merge"))
_TAG_HINTS = {
    "tag:yaml.org,2002:timestamp": "YAML reads {text} as a date; put it in quotes (\"{text}\") where text is meant",
    "tag:yaml.org,2002:set": "a set has no order (a different file on each run); write a list: [a, b]",
    "tag:yaml.org,2002:binary": "write the text itself",
}
_FAST_LOADER: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_yaml(raw: bytes, source: str, numbers: dict[tuple, tuple[Position, str, object]] | None = None
              ) -> tuple[dict, dict[tuple, Position]]:
    """Parse ``raw`` as one YAML document; raise ``ProfileError`` with file:line:col on any problem.

    ``numbers``, when given, receives the key path, position, text and value of every number written in a
    form only YAML 1.1 reads as one (``010``: octal 8, ``1:30``: 90), for the caller to refuse where
    nothing more precise was said.
    """
    if len(raw) > MAX_BYTES:
        raise ProfileError(f"{source}: file is {len(raw)} bytes; a profile is at most {MAX_BYTES} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise ProfileError(
            f"{source}:{line}: not UTF-8 text (byte 0x{raw[e.start]:02x} at offset {e.start}); save the profile as UTF-8"
        ) from None
    text = text.removeprefix("\ufeff")
    _check_characters(text, source)
    _check_flow_depth(text, source)
    try:
        # libyaml's parser (when PyYAML has it) is several times faster on the valid profiles of every run; a
        # problem is reported by the pure-Python parser again, so messages never depend on which one is built.
        # libyaml also takes tabs where PyYAML refuses them: a text with a tab is read by PyYAML alone, so
        # what is valid never depends on whether PyYAML was built with libyaml.
        data, positions, node = _parse(text, source, yaml.SafeLoader if "\t" in text else _FAST_LOADER, numbers)
    except ProfileError:
        if _FAST_LOADER is yaml.SafeLoader:
            raise
        data, positions, node = _parse(text, source, yaml.SafeLoader, numbers)
    if not isinstance(data, dict):
        kind = type(data).__name__ if data is not None else "null"
        raise ProfileError(
            f"{source}:{node.start_mark.line + 1}:{node.start_mark.column + 1}: "
            f"expected a mapping (key: value lines) at the top level, got a {kind}"
        )
    return data, positions


def _parse(text: str, source: str, loader_cls: type, numbers: dict | None = None
           ) -> tuple[object, dict[tuple, Position], yaml.Node]:
    """One document with ``loader_cls``: data, key positions and the root node; ProfileError on any problem."""
    try:
        loader = loader_cls(text)
    except yaml.YAMLError as e:  # the reader's own character check (belt and braces)
        raise ProfileError(f"{source}: invalid YAML: {e}") from None
    try:
        node = loader.get_single_node()
        if node is None:
            raise ProfileError(f"{source}: the profile is empty; expected a mapping that starts with 'envkit: 1'")
        _check_size(node, source)
        _resolve_merges(node, source, set())
        positions: dict[tuple, Position] = {}
        found: dict[tuple, tuple[Position, str, object]] = {}
        _walk(node, (), positions, source, found)
        if numbers is not None:
            numbers.clear()
            numbers.update(found)
        data = loader.construct_document(node)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark else source
        problem = e.problem or e.context or "invalid YAML"
        raise ProfileError(f"{where}: invalid YAML: {problem}") from None
    except yaml.YAMLError as e:
        raise ProfileError(f"{source}: invalid YAML: {e}") from None
    except RecursionError:
        # Flow collections ([[[[...]]]]) nest in the parser itself before _check_size can count.
        raise ProfileError(f"{source}: nesting too deep for a profile (more than {MAX_DEPTH} levels)") from None
    finally:
        loader.dispose()
    return data, positions, node


def _check_characters(text: str, source: str) -> None:
    """Refuse control characters (ESC, NUL, DEL, U+FFFE, ...) with their line and column.

    >>> _check_characters("envkit: 1\\nname: a\\x1b\\n", "p.yaml")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    envkit.errors.ProfileError: p.yaml:2:8: control character U+001B is not allowed in a profile; write it as an escape ...
    """
    m = _NON_PRINTABLE.search(text)
    if m:
        line = text.count("\n", 0, m.start()) + 1
        col = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
        code = ord(m.group())
        esc = f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
        raise ProfileError(f"{source}:{line}:{col}: control character U+{code:04X} is not allowed in a profile; "
                           f"write it as an escape inside double quotes (\"{esc}\") or remove it")


def _check_flow_depth(text: str, source: str) -> None:
    """Refuse ``[[[[...`` / ``{{{{...`` nesting beyond MAX_DEPTH in one linear pass, before PyYAML sees it.

    PyYAML's scanner is quadratic in flow nesting (a 6 KB line of brackets takes seconds, 1 MiB would
    take hours) and its composer recurses: counting first keeps every profile's parse fast and bounded.
    Quoted scalars and comments are skipped; the count errs towards refusing only absurd nesting.

    >>> _check_flow_depth("x: " + "[" * 101, "p.yaml")
    Traceback (most recent call last):
    ...
    envkit.errors.ProfileError: p.yaml:1:104: nesting deeper than 100 levels
    """
    depth, line, col, quote, comment = 0, 1, 0, "", False
    prev = "\n"
    for ch in text:
        col += 1
        if ch == "\n":
            line, col, comment = line + 1, 0, False
            if quote == "":
                prev = ch
                continue
        if comment:
            continue
        if quote:
            if ch == quote:
                quote = ""
            elif ch == "\\" and quote == '"':
                quote = '"\\'  # the next character is escaped
            elif quote == '"\\':
                quote = '"'
        elif ch in "'\"" and prev in " \t\n[{,:-":
            quote = ch
        elif ch == "#" and prev in " \t\n":
            comment = True
        elif ch in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                raise ProfileError(f"{source}:{line}:{col}: nesting deeper than {MAX_DEPTH} levels")
        elif ch in "]}":
            depth = max(0, depth - 1)
        prev = ch


def _check_size(root: yaml.Node, source: str) -> None:
    """Refuse documents whose alias-expanded size exceeds MAX_NODES (anchor bombs)."""
    memo: dict[int, int] = {}

    def size(n: yaml.Node, depth: int) -> int:
        if depth > MAX_DEPTH:
            raise ProfileError(f"{source}:{n.start_mark.line + 1}: nesting deeper than {MAX_DEPTH} levels")
        key = id(n)
        if key in memo:
            return memo[key]
        memo[key] = MAX_NODES + 1  # a cycle counts as too big
        total = 1
        if isinstance(n, yaml.MappingNode):
            for k, v in n.value:
                total += size(k, depth + 1) + size(v, depth + 1)
                if total > MAX_NODES:
                    break
        elif isinstance(n, yaml.SequenceNode):
            for v in n.value:
                total += size(v, depth + 1)
                if total > MAX_NODES:
                    break
        memo[key] = total
        return total

    if size(root, 0) > MAX_NODES:
        raise ProfileError(
            f"{source}: the document expands to more than {MAX_NODES} nodes through anchors and aliases; "
            "refusing it (a profile never needs that many)"
        )


_MERGE = "tag:yaml.org,2002:merge"


def _resolve_merges(node: yaml.Node, source: str, done: set[int]) -> None:
    """Apply every merge key (``<<``) in place, as YAML 1.1's merge spec and Compose read it.

    The spec (https://yaml.org/type/merge.html): a key written in the mapping wins over a merged one, and
    in ``<<: [*a, *b]`` the EARLIER mapping wins. PyYAML's own flattening is not relied on: 6.0.4 tells
    keys apart by object identity, so ``<<: [*a, *b]`` gives ``b``'s value for most keys and ``a``'s for
    short ones. Two ``<<`` keys in one mapping are a duplicate key, refused like any other.

    >>> data, _ = read_yaml(b"x: &a {shm_size: 1g}\\ny: &b {shm_size: 2g, cpus: 2}\\nrun:\\n  <<: [*a, *b]\\n", "p")
    >>> data["run"]
    {'shm_size': '1g', 'cpus': 2}
    """
    if id(node) in done:
        return
    done.add(id(node))
    if isinstance(node, yaml.SequenceNode):
        for child in node.value:
            _resolve_merges(child, source, done)
        return
    if not isinstance(node, yaml.MappingNode):
        return
    merges = [(k, v) for k, v in node.value if k.tag == _MERGE]
    own = [(k, v) for k, v in node.value if k.tag != _MERGE]
    for _, v in own:
        _resolve_merges(v, source, done)
    if not merges:
        return
    if len(merges) > 1:
        k = merges[1][0]
        raise ProfileError(f"{source}:{k.start_mark.line + 1}:{k.start_mark.column + 1}: duplicate key '<<' (first set on "
                           f"line {merges[0][0].start_mark.line + 1}); merge several mappings with one key: <<: [*a, *b]")
    key, value = merges[0]
    sources = value.value if isinstance(value, yaml.SequenceNode) else [value]
    seen = {k.value for k, _ in own if isinstance(k, yaml.ScalarNode)}
    merged: list[tuple[yaml.Node, yaml.Node]] = []
    for src in sources:
        if not isinstance(src, yaml.MappingNode):
            raise ProfileError(f"{source}:{src.start_mark.line + 1}:{src.start_mark.column + 1}: '<<' merges mappings "
                               "(an anchored mapping, or a list of them); this is not a mapping")
        _resolve_merges(src, source, done)
        for k, v in src.value:
            if isinstance(k, yaml.ScalarNode) and k.value not in seen:  # the earlier mapping wins
                seen.add(k.value)
                merged.append((k, v))
    node.value = merged + own


def _check_tag(node: yaml.Node, path: tuple, source: str) -> None:
    """Refuse a node whose tag is none of JSON's kinds, at its position (see _JSON_TAGS)."""
    if node.tag in _JSON_TAGS:
        return
    tag = node.tag.replace("tag:yaml.org,2002:", "!!", 1)
    text = neutralise(node.value) if isinstance(node, yaml.ScalarNode) else ""
    hint = _TAG_HINTS.get(node.tag, "a profile holds only text, numbers, true/false, null, lists and mappings")
    where = f"{source}:{node.start_mark.line + 1}:{node.start_mark.column + 1}: {_dotted(path)}"
    if node.tag == "tag:yaml.org,2002:timestamp" and node.start_mark.index == node.end_mark.index - len(node.value):
        raise ProfileError(f"{where}: {hint.format(text=text)}")  # an unquoted date, not an explicit !!timestamp
    raise ProfileError(f"{where}: the YAML tag {neutralise(tag)} is not allowed in a profile; {hint.format(text=text)}")


# Numbers only YAML 1.1 reads as numbers: a leading 0 (octal) and base 60 (1:30); 1.2 reads neither so.
_YAML11_NUMBER = re.compile(r"[-+]?(0[0-9_]+|[0-9][0-9_]*(:[0-5]?[0-9])+(\.[0-9_]*)?)")
_NUMBER_TAGS = ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")


def _walk(node: yaml.Node, path: tuple, out: dict[tuple, Position], source: str,
          numbers: dict[tuple, tuple[Position, str, object]]) -> None:
    _check_tag(node, path, source)
    if (isinstance(node, yaml.ScalarNode) and node.tag in _NUMBER_TAGS and not node.style  # plain: None or ""
            and _YAML11_NUMBER.fullmatch(node.value)):
        numbers[path] = ((node.start_mark.line + 1, node.start_mark.column + 1), node.value,
                         yaml.safe_load(node.value))
    if isinstance(node, yaml.MappingNode):
        seen: dict[object, int] = {}
        for k, v in node.value:
            if not isinstance(k, yaml.ScalarNode):
                raise ProfileError(f"{source}:{k.start_mark.line + 1}:{k.start_mark.column + 1}: keys must be plain scalars")
            _check_tag(k, path, source)
            key = k.value
            if key in seen and key != "<<":
                raise ProfileError(
                    f"{source}:{k.start_mark.line + 1}:{k.start_mark.column + 1}: "
                    f"{_dotted(path + (key,))}: duplicate key (first set on line {seen[key]})"
                )
            seen[key] = k.start_mark.line + 1
            child = path + (key,)
            out.setdefault(child, (k.start_mark.line + 1, k.start_mark.column + 1))
            _walk(v, child, out, source, numbers)
    elif isinstance(node, yaml.SequenceNode):
        for i, v in enumerate(node.value):
            child = path + (i,)
            out.setdefault(child, (v.start_mark.line + 1, v.start_mark.column + 1))
            _walk(v, child, out, source, numbers)


def _dotted(path: tuple) -> str:
    out = ""
    for seg in path:
        # A key is the user's text: shown as values are, control, bidi and invisible characters escaped.
        out += f"[{seg}]" if isinstance(seg, int) else (f".{neutralise(str(seg))}" if out else neutralise(str(seg)))
    return out or "(top level)"
