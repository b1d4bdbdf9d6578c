"""Values quoted in messages, bounded: a value of thousands of characters is shown by its start and its length.

An error names the value it refused, and the value is the user's (or an attacker's) text: echoed whole,
a 1 MiB ``--interval`` or profile value would bury the message. Standard library only: the harness's
parsers and envkit's share it.

Example:
    >>> shorten("x" * 5000)[-30:]
    'xxxxxxxxx... (5000 characters)'
    >>> shorten("8gg")
    '8gg'
    >>> shorten_values("invalid float value: '" + "9" * 500 + "'", ["9" * 500])[-25:]
    "999... (500 characters)'"
"""

from __future__ import annotations

import argparse
import re
import sys

SHOWN = 80  # characters of a long value a message shows


def shorten(text: str, limit: int = SHOWN) -> str:
    """``text`` itself, or its first ``limit`` characters and its length when it is longer."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def shorten_words(message: str, limit: int = SHOWN) -> str:
    """``message`` with each run of ``limit`` or more characters without a space shortened (a usage error's argument).

    >>> shorten_words("invalid choice: '" + "y" * 300 + "' (choose from 'a', 'b')")[-44:]
    "y... (302 characters) (choose from 'a', 'b')"
    """
    return re.sub(r"\S{%d,}" % (limit + 1), lambda m: shorten(m.group(), limit), message)


def shorten_values(message: str, values, limit: int = SHOWN) -> str:
    """``message`` with each of ``values`` (the input it may quote) that is longer than ``limit`` shortened."""
    for value in sorted({str(v) for v in values if isinstance(v, (str, int, float))}, key=len, reverse=True):
        if len(value) > limit:
            message = message.replace(value, shorten(value, limit))
    return message


class BoundedParser(argparse.ArgumentParser):
    """argparse's parser whose usage errors quote no argument longer than :data:`SHOWN` characters (exit 2)."""

    def error(self, message: str):
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {shorten_words(message)}\n")


def peer_text(value: object, limit: int = 200) -> str:
    r"""Text another machine sent, fit to print: control and other unprintable characters as escapes (a newline
    cannot forge a log line), at most ``limit`` characters and the original length.

    >>> peer_text("n1\nerror: n2: task 1: Exited")
    'n1\\nerror: n2: task 1: Exited'
    >>> peer_text("x" * 30000)[-24:]
    'xx... (30000 characters)'
    """
    raw = str(value)
    shown = "".join(c if c.isprintable() else repr(c)[1:-1] for c in raw[:limit + 1])
    return shown if len(shown) <= limit else f"{shown[:limit]}... ({len(raw)} characters)"

