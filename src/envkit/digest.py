"""SHA-256 for what envkit hashes on every run (profile hash, output manifest, caches, lock inputs).

CPython's own SHA-256 module is used when present: ``hashlib`` first loads OpenSSL (start-up time
every ``envkit generate`` would pay) for digests of a few kilobytes. Same algorithm, same result.

Example:
    >>> sha256_hex(b"envkit")[:12]
    '5102d8c37a24'
    >>> h = sha256(); h.update(b"env"); h.update(b"kit"); h.hexdigest() == sha256_hex(b"envkit")
    True
"""

from __future__ import annotations

import importlib
from typing import Any, Callable


def _constructor() -> Callable[..., Any]:
    for name in ("_sha256", "_sha2"):  # CPython up to 3.11; 3.12 and later
        try:
            return importlib.import_module(name).sha256
        except (ImportError, AttributeError):
            pass
    from hashlib import sha256 as fallback

    return fallback


sha256: Callable[..., Any] = _constructor()
"""``sha256(data=b"")``: a hash object with ``update`` and ``hexdigest``, as ``hashlib.sha256``."""


def sha256_hex(data: bytes) -> str:
    """The SHA-256 of ``data`` as 64 lowercase hex digits (what ``hashlib.sha256(data).hexdigest()`` gives)."""
    return sha256(data).hexdigest()
