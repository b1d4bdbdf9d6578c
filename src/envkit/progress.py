"""One status line for a long step: redrawn in place on a terminal, plain lines on a pipe.

``envkit lock`` shows uv's latest line with it and ``envkit bundle`` the bytes exported; ``envkit build``
prints its steps as plain lines (each step is news, not a replacement). Text is neutralised first, so
a line never carries terminal escapes.

Example:
    >>> import io
    >>> out = io.StringIO()
    >>> s = StatusLine(out, every=0)
    >>> s.show("envkit: exported 1.0 GiB"); s.show("envkit: exported 2.0 GiB"); s.done()
    >>> print(out.getvalue(), end="")
    envkit: exported 1.0 GiB
    envkit: exported 2.0 GiB
"""

from __future__ import annotations

import math
import time
from typing import TextIO

from envkit.termtext import neutralise


class StatusLine:
    """``show`` redraws the line on a terminal; on a pipe it prints a line at most every ``every`` seconds.
    ``say`` always prints a line of its own (a warning, the last word); ``done`` clears a drawn line."""

    def __init__(self, err: TextIO, *, every: float = 10.0) -> None:
        self.err, self.every = err, every
        self.tty = hasattr(err, "isatty") and err.isatty()
        self.drawn = False
        self.said = -math.inf

    def show(self, text: str) -> None:
        text = neutralise(text)
        if self.tty:
            import shutil

            width = max(shutil.get_terminal_size().columns - 1, 20)
            self.err.write("\r\033[K" + text[:width])
            self.err.flush()
            self.drawn = True
        elif time.monotonic() - self.said >= self.every:
            self.say(text)

    def say(self, text: str) -> None:
        self.done()
        print(neutralise(text), file=self.err, flush=True)
        self.said = time.monotonic()

    def done(self) -> None:
        if self.drawn:
            self.err.write("\r\033[K")
            self.err.flush()
            self.drawn = False
