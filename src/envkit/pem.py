"""PEM files as a CA list holds them: the CERTIFICATE blocks are kept, a PRIVATE KEY block is found.

A file named in ``image.ca_certificates`` is copied into the image, readable by everyone who can
pull it: only its certificate blocks are copied (text, bag attributes and other blocks around them
are dropped), and a file holding any private key (``RSA``, ``EC``, ``ENCRYPTED``, PKCS#8...) is
refused when the profile is loaded.

Example:
    >>> pem = b"Bag Attributes\\n-----BEGIN CERTIFICATE-----\\nMIIB\\n-----END CERTIFICATE-----\\ntrailer\\n"
    >>> certificate_blocks(pem)
    b'-----BEGIN CERTIFICATE-----\\nMIIB\\n-----END CERTIFICATE-----\\n'
    >>> private_key_at(pem + b"-----BEGIN EC PRIVATE KEY-----\\nxx\\n-----END EC PRIVATE KEY-----\\n")
    (6, '-----BEGIN EC PRIVATE KEY-----')
    >>> private_key_at(pem) is None
    True
"""

from __future__ import annotations

import re

_CERTIFICATE = re.compile(rb"-----BEGIN CERTIFICATE-----\r?\n[A-Za-z0-9+/=\s]*?-----END CERTIFICATE-----")
_PRIVATE_KEY = re.compile(rb"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----")


def certificate_blocks(data: bytes) -> bytes:
    """The complete CERTIFICATE blocks of ``data``, each ending in a newline; b"" when there is none."""
    return b"".join(m.group(0).replace(b"\r\n", b"\n") + b"\n" for m in _CERTIFICATE.finditer(data))


def private_key_at(data: bytes) -> tuple[int, str] | None:
    """(line, header) of the first PRIVATE KEY block's header in ``data``, or None when it holds no key."""
    m = _PRIVATE_KEY.search(data)
    if m is None:
        return None
    return data.count(b"\n", 0, m.start()) + 1, m.group(0).decode("ascii")
