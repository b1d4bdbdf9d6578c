"""Parsers for the value syntaxes a profile accepts: sizes, cpusets, ulimit names.

Each parser raises ``ValueError`` with a message that says what was expected;
the profile loader turns that into a located ``ProfileError``.

Sizes follow Docker's ``RAMInBytes``: units are binary (``1k = 1024``) and
case-insensitive, with an optional ``b``/``ib`` suffix, so ``8g``, ``8G``,
``8GB`` and ``8GiB`` all mean 8 × 2**30 bytes, as they do for
``docker run --shm-size`` and in ``.wslconfig``.

Example:
    >>> parse_size("8GB"), parse_size(512), parse_size("1.5g")
    (8589934592, 512, 1610612736)
    >>> parse_cpuset("0-3,8")
    (0, 1, 2, 3, 8)
"""

from __future__ import annotations

import re

# One Docker size formatter, defined in the stdlib-only harness (which also spells --shm-size remedies).
from envkit.harness.rules.sizing import docker_size as format_size  # noqa: F401 (re-exported)
from envkit.harness.probes.cpulist import format_cpulist

_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4, "p": 1024**5}
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgtp]?)(i?b)?\s*$", re.IGNORECASE)
_CPUSET_MAX = 4095  # Linux's default NR_CPUS ceiling; larger ids are typos
ULIMIT_NAMES = (
    "core", "cpu", "data", "fsize", "locks", "memlock", "msgqueue", "nice",
    "nofile", "nproc", "rss", "rtprio", "rttime", "sigpending", "stack",
)


def parse_size(value: object) -> int:
    """Bytes from ``512m``, ``8g``, ``8GB``, ``1.5GiB`` or a plain integer."""
    if isinstance(value, bool):
        raise ValueError("expected a size such as 512m, 8g or a number of bytes, got a boolean")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"expected a size >= 0, got {value}")
        return value
    if not isinstance(value, str):
        raise ValueError(f"expected a size such as 512m, 8g or a number of bytes, got {type(value).__name__}")
    m = _SIZE_RE.match(value)
    if not m:
        hint = ""
        unit = re.sub(r"^[\d.\s]+", "", value).lower()
        import difflib  # only on a bad input: not on every run's import path

        close = difflib.get_close_matches(unit, ["k", "m", "g", "t", "kb", "mb", "gb", "tb"], n=1)
        if unit and close:
            hint = f" (did you mean {re.sub(r'[^0-9.]', '', value)}{close[0]}?)"
        raise ValueError(f"expected a size such as 512m, 8g, 8GB or a number of bytes, got {value!r}{hint}")
    number, unit = m.group(1), m.group(2).lower()
    if "." in number:
        if not unit:
            raise ValueError(f"a size in bytes must be a whole number, got {value!r}")
        whole, frac = number.split(".")
        scale = _UNITS[unit]
        total = int(whole) * scale + (int(frac) * scale) // (10 ** len(frac))
        return total
    return int(number) * _UNITS[unit]


def format_wsl_size(n: int) -> str:
    """``.wslconfig`` spelling: ``16GB``, ``512MB``, or bytes."""
    for unit, factor in (("TB", 1024**4), ("GB", 1024**3), ("MB", 1024**2), ("KB", 1024)):
        if n >= factor and n % factor == 0:
            return f"{n // factor}{unit}"
    return str(n)


def parse_cpuset(value: object) -> tuple[int, ...]:
    """The sorted CPU ids of a cpuset list such as ``0-7`` or ``0,2,4-6`` (Linux cpuset syntax)."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise ValueError("expected a cpuset such as \"0-7\" or \"0,2,4-6\"")
    text = str(value).strip()
    if not text:
        raise ValueError("expected a cpuset such as \"0-7\" or \"0,2,4-6\", got an empty string")
    cpus: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not m:
            raise ValueError(f"expected a cpuset such as \"0-7\" or \"0,2,4-6\", got {text!r} (bad part {part!r})")
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) is not None else lo
        if hi < lo:
            raise ValueError(f"cpuset range {part!r} runs backwards; write {hi}-{lo}")
        if hi > _CPUSET_MAX:
            raise ValueError(f"cpuset CPU id {hi} is above {_CPUSET_MAX}")
        cpus.update(range(lo, hi + 1))
    return tuple(sorted(cpus))


def format_cpuset(cpus: tuple[int, ...]) -> str:
    """Canonical cpuset text with ranges collapsed: the harness's list formatter (one rule).

    >>> format_cpuset((0, 1, 2, 3, 8, 10, 11))
    '0-3,8,10-11'
    """
    return format_cpulist(cpus)


def did_you_mean(word: object, choices) -> str:
    """`` (did you mean 'x'?)`` for the closest choice, or an empty string."""
    import difflib  # only on a bad input: not on every run's import path

    close = difflib.get_close_matches(str(word), list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""
