"""Text from outside envkit made safe for the user's terminal (build logs, harness output, messages).

A RUN step's or a container's output, and a profile's keys and values quoted in a message, reach the
user's terminal: raw escapes could retitle it, hide lines or rewrite what was printed before, and
bidi or invisible characters could make a key read as another (``shm_size\\u200b`` as ``shm_size``).
Shared by ``imagebuild`` (build progress and failure tails), ``validate`` (harness output tails),
the profile's messages and ``cli`` (every error line), so the rule lives here once.

URL credentials are text from outside too, and no message may show them: ``neutralise`` also
replaces a URL's userinfo (``https://deploy:TOKEN@host``) with ``***``, as pip redacts them
(pip ``_internal/utils/misc.py``, ``redact_auth_from_url``), whatever message or log line holds it.

Example:
    >>> neutralise("ok\\x1b]0;pwned\\x07\\tdone")
    'ok\\\\x1b]0;pwned\\\\x07\\tdone'
    >>> neutralise("shm_size\\u200b \\u202eabc")
    'shm_size\\\\u200b \\\\u202eabc'
"""

from __future__ import annotations

import re
import unicodedata

# Candidates: anything but TAB and printable ASCII; each is then judged by its Unicode category.
_SUSPECT = re.compile(r"[^\t\x20-\x7e]")
# Controls (C0, DEL, C1), format characters (bidi embeddings, overrides and isolates, zero-width
# space/joiners, word joiner, BOM, soft hyphen), line/paragraph separators, surrogates (which no
# terminal encoding can carry) and unassigned code points (U+FFFE).
_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Cn"})
# Letters and marks that render as nothing: combining grapheme joiner, Hangul and Khmer fillers.
_INVISIBLE = frozenset({0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x3164, 0xFFA0})
# scheme "://" userinfo "@" (RFC 3986 3.2.1): userinfo holds no "/", "?", "#" or "@"; the scheme may be
# misspelt (a typo is exactly when a URL gets echoed back), so any scheme-like word counts.
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s/?#@\"'<>]+@")


# Terminal control sequences a tool writes for colour or cursor moves: CSI (ESC [ ... final byte) and OSC
# (ESC ] ... BEL or ESC \\). Quoted from a build log they are noise, so they go before neutralise sees the rest.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")


def strip_escapes(text: str) -> str:
    """``text`` without its colour and cursor sequences (any other control character is :func:`neutralise`'s).

    >>> strip_escapes("\x1b[31mERROR\x1b[0m: no")
    'ERROR: no'
    """
    return _ESCAPES.sub("", text)


def redact_userinfo(text: str) -> str:
    """``text`` with every URL's userinfo (user, password or token) shown as ``***``.

    >>> redact_userinfo("htps://deploy:S3CRET@pypi.corp/simple and https://pypi.org/simple")
    'htps://***@pypi.corp/simple and https://pypi.org/simple'
    """
    return _USERINFO.sub(r"\1***@", text)


def _escape(m: re.Match[str]) -> str:
    ch = m.group()
    code = ord(ch)
    if code not in _INVISIBLE and unicodedata.category(ch) not in _UNSAFE_CATEGORIES:
        return ch
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def neutralise(text: str) -> str:
    """``text`` with control, bidi and invisible characters shown as escapes, as Python's repr spells them.

    ``\\xNN`` below U+0100 (ESC, BEL, CR, NUL, NEL...), ``\\uXXXX`` above (U+200B, U+202E, U+FEFF...);
    TAB and every visible character kept; a URL's userinfo becomes ``***`` (:func:`redact_userinfo`).
    Backslashes are left alone, so neutralising twice is the same as once.

    >>> neutralise("a\\rb\\x00c")
    'a\\\\x0db\\\\x00c'
    >>> neutralise("caf\\u00e9 \\u4e2d \\U0001f600")
    'café 中 😀'
    """
    return _SUSPECT.sub(_escape, redact_userinfo(text))


def neutralise_lines(text: str) -> str:
    """Each line of ``text`` neutralised, the line breaks (``\\n``) between them kept.

    >>> neutralise_lines("a\\x1b[8m\\nb")
    'a\\\\x1b[8m\\nb'
    """
    return "\n".join(neutralise(line) for line in text.split("\n"))
