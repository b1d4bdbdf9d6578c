"""Merge keys into an existing .wslconfig (or wsl.conf) text without losing anything else.

``configparser`` would drop comments, blank lines and the user's spelling, so
this is a small line-based INI editor that follows WSL's own parser
(microsoft/WSL ``src/shared/configfile/configfile.cpp``):

- ``[section]`` and key names start with a letter and continue with letters or
  digits; both are matched case-insensitively (WSL uses ``strcasecmp``), and the
  user's spelling is kept.
- ``#`` starts a comment (also after a value, outside quotes); ``;`` lines are
  kept as comments too.
- Values may be quoted and use ``\\\\``, ``\\"``, ``\\n``, ``\\t`` escapes; a
  trailing ``\\`` continues the value on the next line.
- Only the first occurrence of a key counts (WSL warns about the rest), so that
  is the one replaced.

A key present in its section has its value replaced in place (indentation,
spacing around ``=`` and a trailing comment survive); a missing key is appended
after the last key of its section; a missing section is appended at the end.
Bytes are decoded with :func:`decode_config` and written back in the same
encoding, byte-order mark and line endings with :func:`encode_config`.

Example:
    >>> r = merge_ini("# mine\\n[wsl2]\\nMemory = 8GB  # old\\n", [("wsl2", "memory", "16GB")])
    >>> print(r.text, end="")
    # mine
    [wsl2]
    Memory = 16GB  # old
    >>> r.changes[0].describe()
    '[wsl2] Memory: 8GB -> 16GB'
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

from envkit.errors import ProfileError
from envkit.units import parse_size

_SECTION_RE = re.compile(r"^(\s*)\[([A-Za-z][A-Za-z0-9]*)\](\s*(?:#.*)?)$")
_KEY_RE = re.compile(r"^(\s*)([A-Za-z][A-Za-z0-9]*)(\s*=[ \t]*)(.*)$")
_BOMS = ((b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be"))


@dataclass(frozen=True)
class Decoded:
    """A config file's text and how it was stored (so it can be written back the same way)."""

    text: str
    encoding: str = "utf-8"
    bom: bytes = b""
    newline: str = "\r\n"


@dataclass(frozen=True)
class Change:
    """One key set: ``old`` is None when the key was added."""

    section: str
    key: str
    old: str | None
    new: str

    def describe(self) -> str:
        if self.old is None:
            return f"[{self.section}] {self.key}: added {self.new}"
        return f"[{self.section}] {self.key}: {self.old} -> {self.new}"


@dataclass(frozen=True)
class MergeResult:
    text: str
    changes: tuple[Change, ...]


def decode_config(raw: bytes, source: str) -> Decoded:
    """Decode UTF-8 (with or without BOM) or UTF-16 (with a BOM, or without one when the text shows it:
    mostly Latin-1 characters, their NUL bytes on one side) bytes; anything else is a ProfileError.

    >>> decode_config(b"\\xff\\xfe[\\x00w\\x00]\\x00\\r\\x00\\n\\x00", "x").encoding
    'utf-16-le'
    """
    bom, encoding = b"", "utf-8"
    for mark, enc in _BOMS:
        if raw.startswith(mark):
            bom, encoding = mark, enc
            break
    body = raw[len(bom):]
    if not bom and b"\x00" in body and len(body) % 2 == 0:
        # UTF-16 without a BOM (what some Windows tools write): an INI file is mostly ASCII, whose high
        # byte is NUL, so the NULs fall on odd offsets (little-endian) or even ones (big-endian); it is
        # that encoding when at least half its characters are Latin-1 and it decodes to no NUL.
        odd, even = body[1::2].count(0), body[0::2].count(0)
        candidate = "utf-16-le" if odd > even else "utf-16-be"
        try:
            if max(odd, even) * 4 >= len(body) and "\x00" not in body.decode(candidate):
                encoding = candidate
        except UnicodeDecodeError:
            pass
    try:
        text = body.decode(encoding)
    except UnicodeDecodeError as e:
        line = body[: e.start].count(b"\n" if encoding == "utf-8" else "\n".encode(encoding)) + 1
        raise ProfileError(
            f"{source}:{line}: not UTF-8 or UTF-16 text (undecodable byte at offset {e.start + len(bom)})",
            hint="save the file as UTF-8 (Notepad: Save as, Encoding: UTF-8)",
        ) from None
    if "\x00" in text:
        line = text[: text.index("\x00")].count("\n") + 1
        raise ProfileError(f"{source}:{line}: binary data (a NUL character); not a text configuration file")
    crlf, lf = text.count("\r\n"), text.count("\n")
    # A new file, or one without line breaks, gets Windows line endings: it is a Windows file.
    newline = "\r\n" if crlf * 2 >= lf else "\n"
    return Decoded(text, encoding, bom, newline)


def encode_config(text: str, like: Decoded) -> bytes:
    """``text`` in ``like``'s encoding, with its BOM."""
    return like.bom + text.encode(like.encoding)


def quote_value(value: str) -> str:
    """Spell a string for WSL's parser: escape ``\\`` and ``"``; quote when ``#`` or edge spaces appear.

    >>> quote_value("C:\\\\temp\\\\kernel")
    'C:\\\\\\\\temp\\\\\\\\kernel'
    """
    out = value.replace("\\", "\\\\").replace('"', '\\"')
    if "#" in value or value != value.strip():
        out = f'"{out}"'
    return out


def parse_value(raw: str) -> tuple[str, str]:
    """Split a raw value into (WSL's reading of it, the trailing text kept on replacement).

    The trailing text is the whitespace before an unquoted ``#`` comment and the comment.

    >>> parse_value('"a # b" \\\\\\\\x  # note')
    ('a # b \\\\x', '  # note')
    """
    value, in_quote, i, end = [], False, 0, len(raw)
    while i < len(raw):
        ch = raw[i]
        if ch == '"':
            in_quote = not in_quote
        elif ch == "\\" and i + 1 < len(raw):
            nxt = raw[i + 1]
            value.append({"n": "\n", "t": "\t", "b": "\b"}.get(nxt, nxt))
            i += 1
        elif ch == "#" and not in_quote:
            end = i
            break
        else:
            value.append(ch)
        i += 1
    body = raw[:end]
    trailing = raw[len(body.rstrip()):]
    return "".join(value).strip(), trailing


def _same(old: str, new: str) -> bool:
    """Equal as WSL would read them: case-insensitive, sizes compared in bytes."""
    if old.lower() == new.lower():
        return True
    try:
        return parse_size(old) == parse_size(new)
    except ValueError:
        return False


@dataclass
class _Line:
    text: str            # without its line ending
    ending: str          # "\r\n", "\n", "\r" or "" (last line)
    kind: str            # blank | comment | section | key | cont
    section: str | None  # lower-cased section this line belongs to
    key: str | None = None
    match: re.Match | None = None


_LINE_RE = re.compile(r"[^\n]*\n|[^\n]+\Z")


def split_lines(text: str) -> list[str]:
    """Lines with their endings, broken only at ``\\n`` (so ``\\r\\n`` too), as WSL's parser reads them.

    ``str.splitlines`` would also break at U+2028, form feed, a lone ``\\r`` and others, where WSL
    sees one line: a key written after such a character would land inside what WSL reads as a comment.

    >>> split_lines("a=1\\u2028b\\r\\n# c\\x0cd=2\\n")
    ['a=1\\u2028b\\r\\n', '# c\\x0cd=2\\n']
    """
    return _LINE_RE.findall(text)


def _parse_lines(text: str, source: str) -> list[_Line]:
    lines: list[_Line] = []
    section: str | None = None
    continuing = False
    for n, piece in enumerate(split_lines(text), start=1):
        ending = "\r\n" if piece.endswith("\r\n") else ("\n" if piece.endswith("\n") else "")
        body = piece[: len(piece) - len(ending)]
        stripped = body.strip()
        if continuing:
            lines.append(_Line(body, ending, "cont", section))
            continuing = _continues(body)
            continue
        if not stripped:
            lines.append(_Line(body, ending, "blank", section))
        elif stripped[0] in "#;":
            lines.append(_Line(body, ending, "comment", section))
        elif stripped[0] == "[":
            m = _SECTION_RE.match(body)
            if not m:
                raise ProfileError(f"{source}:{n}: invalid section header {stripped!r}; "
                                   "expected [name] with letters and digits only, such as [wsl2]")
            section = m.group(2).lower()
            lines.append(_Line(body, ending, "section", section, match=m))
        else:
            m = _KEY_RE.match(body)
            if not m:
                raise ProfileError(f"{source}:{n}: expected 'key = value', a [section] or a # comment, "
                                   f"got {stripped[:60]!r}")
            lines.append(_Line(body, ending, "key", section, m.group(2).lower(), m))
            continuing = _continues(m.group(4))
    return lines


def _continues(value: str) -> bool:
    # An odd number of trailing backslashes escapes the line break (WSL's line continuation).
    trailing = len(value) - len(value.rstrip("\\"))
    return trailing % 2 == 1


def merge_ini(text: str, updates: Iterable[tuple[str, str, str]], source: str = "<config>",
              newline: str | None = None) -> MergeResult:
    """Set each ``(section, key, value)`` (value already spelled for the file) in ``text``.

    ``newline`` is used for added lines (default: what the text uses, else CRLF).
    Raises ProfileError (with the line number) when ``text`` is not INI.
    """
    lines = _parse_lines(text, source)
    if newline is None:
        newline = "\r\n" if text.count("\r\n") * 2 >= text.count("\n") else "\n"
    changes: list[Change] = []
    pending: dict[str, list[tuple[str, str]]] = {}
    for section, key, value in updates:
        idx = next((i for i, ln in enumerate(lines)
                    if ln.kind == "key" and ln.section == section.lower() and ln.key == key.lower()), None)
        if idx is None:
            pending.setdefault(section, []).append((key, value))
            continue
        ln = lines[idx]
        assert ln.match is not None  # a "key" line always carries its match
        indent, user_key, eq, raw = ln.match.groups()
        # Continuation lines belong to the value being replaced.
        j = idx + 1
        full_raw = raw
        while j < len(lines) and lines[j].kind == "cont":
            full_raw = full_raw[:-1] + lines[j].text
            j += 1
        old, trailing = parse_value(full_raw)
        if _same(old, parse_value(value)[0]):
            continue
        del lines[idx + 1:j]
        lines[idx] = _Line(f"{indent}{user_key}{eq}{value}{trailing}", ln.ending, "key", ln.section, ln.key)
        changes.append(Change(section, user_key, old, value))
    for section, keys in pending.items():
        changes.extend(Change(section, k, None, v) for k, v in keys)
        positions = [i for i, ln in enumerate(lines) if ln.section == section.lower() and ln.kind in ("section", "key", "cont")]
        new = [_Line(f"{k}={v}", newline, "key", section.lower(), k.lower()) for k, v in keys]
        if positions:
            at = positions[-1]
            if not lines[at].ending:
                lines[at].ending = newline
            lines[at + 1:at + 1] = new
        else:
            if lines and not lines[-1].ending:
                lines[-1].ending = newline
            if lines and lines[-1].kind != "blank":
                lines.append(_Line("", newline, "blank", None))
            lines.append(_Line(f"[{section}]", newline, "section", section.lower()))
            lines.extend(new)
    return MergeResult("".join(ln.text + ln.ending for ln in lines), tuple(changes))
