"""Standard output that holds one document: what anything else prints goes to stderr (stdlib only).

``--json`` promises exactly one JSON document on stdout. A ``--dataset`` module, torch or a DataLoader
worker may print while the checks run: inside :func:`document_stdout` Python's ``print`` and every
write to file descriptor 1 (C code, child processes, which inherit it) reach stderr instead, and
the caller prints its document after the block, on the stdout it had before.

Example:
    >>> import io, contextlib
    >>> err = io.StringIO()
    >>> with contextlib.redirect_stderr(err), document_stdout():
    ...     print("from a dataset module")
    >>> err.getvalue()
    'from a dataset module\\n'
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator


@contextlib.contextmanager
def document_stdout() -> Iterator[None]:
    """While the block runs, stdout (the Python stream and descriptor 1) goes to stderr."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    saved = _dup_stdout()
    try:
        if saved is not None:
            os.dup2(2, 1)
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stderr.flush()
        if saved is not None:
            os.dup2(saved, 1)
            os.close(saved)


def _dup_stdout() -> int | None:
    """A copy of descriptor 1, or None where there is no usable one (closed, or no descriptor 2 to point it at)."""
    try:
        os.fstat(2)
        return os.dup(1)
    except OSError:
        return None
