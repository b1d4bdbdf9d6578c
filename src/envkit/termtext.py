"""Text from outside envkit made safe for the user's terminal (build logs, harness output tails).

A RUN step's or a container's output reaches the user's terminal; raw escapes could
retitle it, hide lines or rewrite what was printed before. Shared by ``imagebuild``
(build progress and failure tails) and ``validate`` (harness output tails), so the
rule lives here once.

Example:
    >>> neutralise("ok\\x1b]0;pwned\\x07\\tdone")
    'ok\\\\x1b]0;pwned\\\\x07\\tdone'
"""

from __future__ import annotations

# Every C0 control except TAB, DEL, and the C1 range (which some terminals treat as CSI/OSC).
_CONTROL = {c: f"\\x{c:02x}" for c in [*range(0x00, 0x09), *range(0x0a, 0x20), 0x7f, *range(0x80, 0xa0)]}


def neutralise(text: str) -> str:
    """``text`` with control characters (ESC, BEL, CR, NUL...) shown as ``\\xNN``; TAB kept.

    >>> neutralise("a\\rb\\x00c")
    'a\\\\x0db\\\\x00c'
    """
    return text.translate(_CONTROL)
