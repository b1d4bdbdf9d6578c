"""What a requirements file (or the lock) names, read from its text as pip reads it.

Example:
    >>> text = "# pinned\\n--index-url https://x/simple\\nnumpy==1.26.4 \\\\\\n    --hash=sha256:00  # ok\\n"
    >>> requirements_of(text), has_hashes(text), names_numpy(requirements_of(text))
    (['numpy==1.26.4 \\\\'], True, True)
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

# A URL with a user or password in it (https://user:token@host/...): a private index's credentials.
_USERINFO = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/\s@]+@")


def decode(data: bytes) -> str:
    """A requirements file's text as pip reads it: UTF-8, past the byte-order mark Windows editors write."""
    return data.decode("utf-8-sig", errors="replace")


def requirements_of(text: str) -> list[str]:
    """The requirements a requirements file's text names (comments, options and blank lines left out)."""
    lines = (line.split(" #", 1)[0].strip() for line in text.splitlines())
    return [line for line in lines if line and not line.startswith(("#", "-"))]


# Options that name another file or a local folder (pip's req_file.py: -r/--requirement,
# -c/--constraint, -e/--editable). Only the profile's listed files enter the build context, each alone,
# so a file one of them names (or a folder such as `-e .`) is not there when pip reads it.
_NESTED = re.compile(r"^(?:--requirement|--constraint|--editable|-[rce])(?=$|[\s=]|(?<=^-[rce])\S)")


def nested_references(text: str) -> list[tuple[int, str]]:
    r"""(line number, line) of each requirements line that names another file or a folder.

    >>> nested_references("torch\n-r base.txt\n  --constraint=c.txt\n-e .\n--extra-index-url https://x\n-rother.txt\n")
    [(2, '-r base.txt'), (3, '--constraint=c.txt'), (4, '-e .'), (6, '-rother.txt')]
    """
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if _NESTED.match(stripped):
            out.append((number, stripped))
    return out


def has_hashes(text: str) -> bool:
    """True when a requirements file pins with hashes (then pip/uv must check every one: --require-hashes).

    >>> has_hashes("a==1 --hash=sha256:00"), has_hashes("# a==1 --hash=sha256:00")
    (True, False)
    """
    return any("--hash=" in line for line in text.splitlines() if not line.lstrip().startswith("#"))


def names_numpy(requirements: Iterable[str]) -> bool:
    """True when a pip requirement installs numpy (then the profile's own numpy pin decides).

    The name is ``packaging.requirements.Requirement``'s, canonical (``NumPy``, ``numpy[extra]``,
    ``numpy @ URL``); pip's per-line options (``--hash=...``) and a final ``\\`` are not part of it. A line
    that is no requirement (a path, a URL) names no package.

    >>> names_numpy(["numpy<2", "pillow"]), names_numpy(["numpy-financial"]), names_numpy(["NumPy==1.26 --hash=sha256:ab"])
    (True, False, True)
    >>> names_numpy(["./wheels/numpy-1.26-cp311-cp311-linux_x86_64.whl"])
    False
    """
    return any(_requirement_name(r) == "numpy" for r in requirements)


def _requirement_name(line: str) -> str | None:
    """The canonical name of the package a requirements line names, or None when it names none."""
    text = re.split(r"\s-", " " + line.strip(), maxsplit=1)[0].strip().removesuffix("\\").strip()
    try:
        return canonicalize_name(Requirement(text).name)
    except InvalidRequirement:
        return None


def has_credentials(texts: Iterable[str]) -> bool:
    """True when any text holds a URL with a user or password in it (``https://user:token@host``).

    A token in a URL's path or query (``https://pypi.fury.io/TOKEN/acct/``) is not recognised.

    >>> has_credentials(["https://ci:s3cret@pypi.example.com/simple"]), has_credentials(["pkg @ https://x/p.whl"])
    (True, False)
    """
    return any(_USERINFO.search(text) for text in texts)
