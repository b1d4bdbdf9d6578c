"""Which Python an image runs, and whether the profile's torch release has a wheel for it.

The table (``envkit/data/torch_pythons.json``) lists, for each torch release envkit supports, the
CPython versions PyPI has Linux x86_64 wheels for, read from the wheel file names on the date it
records (``tools/update_torch_pythons.py`` refreshes it). A torch wheelhouse (``find_links``) is
its own truth: its file names are read instead. The image's Python is ``image.python`` when the
profile says, else what the base's name tells (``python:3.12-slim`` → 3.12, ``*bookworm*`` → 3.11,
``ubuntu:22.04`` → 3.10), else unknown; ``envkit build`` and ``validate`` then read the real one.

Example:
    >>> base_python("python:3.12-slim-bookworm"), base_python("nvidia/cuda:12.4.1-runtime-ubuntu22.04")
    ('3.12', '3.10')
    >>> mismatch("2.4.1", "3.13", torch_pythons()["2.4.1"], "3.13 (image.python)").splitlines()[0]
    'torch 2.4.1 has no wheel for Python 3.13 (image.python); its wheels are for Python 3.8, 3.9, 3.10, 3.11, 3.12.'
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import Version

# The python3 each distribution release ships (what `python3 -m venv` in the image runs).
DISTRO_PYTHONS = (
    (r"\bbuster\b|\bdebian:10\b", "3.7"),
    (r"\bbullseye\b|\bdebian:11\b", "3.9"),
    (r"\bbookworm\b|\bdebian:12\b", "3.11"),
    (r"\btrixie\b|\bdebian:13\b", "3.13"),
    (r"\bfocal\b|ubuntu[:-]?20\.04", "3.8"),
    (r"\bjammy\b|ubuntu[:-]?22\.04", "3.10"),
    (r"\bnoble\b|ubuntu[:-]?24\.04", "3.12"),
)
# The official python images (python:3.12-slim, docker.io/library/python:3.11) name their Python.
_OFFICIAL = re.compile(r"^(?:(?:docker\.io/)?library/)?python:(3\.\d{1,2})(?:[.\-]|$)")


@functools.lru_cache(maxsize=1)
def table() -> dict:
    """The recorded table: ``{"source": ..., "read_on": "YYYY-MM-DD", "releases": {version: [pythons]}}``."""
    # A plain file in the package (the wheel installs it there).
    text = (Path(__file__).resolve().parent / "data" / "torch_pythons.json").read_text(encoding="utf-8")
    return json.loads(text)


def torch_pythons() -> dict[str, list[str]]:
    return table()["releases"]


def _key(version: str) -> Version:
    """A release (``2.5.1``) or Python (``3.11``) as ``packaging`` orders it."""
    return Version(version)


def normalize(version: str) -> str:
    """``2.5`` → ``2.5.0`` (the profile allows both spellings).

    >>> normalize("2.5"), normalize("2.5.1")
    ('2.5.0', '2.5.1')
    """
    return version if version.count(".") == 2 else version + ".0"


def base_python(base: str) -> str | None:
    """The Python the base image's name implies, or None when the name does not say."""
    m = _OFFICIAL.match(base)
    if m:
        return m.group(1)
    for pattern, python in DISTRO_PYTHONS:
        if re.search(pattern, base):
            return python
    return None


def image_python(image) -> tuple[str | None, str]:
    """(Python version, where it came from) for an ``Image`` model."""
    if image.python:
        return image.python, "image.python"
    found = base_python(image.base)
    return found, f"implied by image.base {image.base!r}"


def wheelhouse_pythons(dirs: list[Path], version: str) -> list[str] | None:
    """CPython versions of ``torch-<version>[+local]`` wheels in the wheelhouses, or None when none is there.

    A wheelhouse wheel is what gets installed, so its names beat the PyPI table. Names are read by
    ``packaging.utils.parse_wheel_filename``; a file whose name is not a wheel's is not counted.

    >>> import tempfile; d = Path(tempfile.mkdtemp())
    >>> for n in ("torch-2.5.1+cpu-cp311-cp311-linux_x86_64.whl", "torch-2.5.1-cp312-cp312-manylinux1_x86_64.whl",
    ...           "torch-2.5.10-cp39-cp39-linux_x86_64.whl", "torch-2.5.1-not-a-wheel.whl"):
    ...     _ = (d / n).write_bytes(b"")
    >>> wheelhouse_pythons([d], "2.5.1")
    ['3.11', '3.12']
    """
    want = Version(version)
    found = set()
    for d in dirs:
        for wheel in d.glob("torch-*.whl"):
            try:
                _, release, _, tags = parse_wheel_filename(wheel.name)
            except InvalidWheelFilename:
                continue
            if Version(release.public) != want:
                continue
            for tag in tags:
                m = re.fullmatch(r"cp(\d)(\d+)", tag.interpreter)
                if m:
                    found.add(f"{m[1]}.{m[2]}")
    return sorted(found, key=_key) or None


def nearest_python(python: str, available: list[str]) -> str:
    """The available Python closest to ``python`` (the newer one on a tie).

    >>> nearest_python("3.13", ["3.9", "3.10", "3.11", "3.12"]), nearest_python("3.8", ["3.10", "3.11"])
    ('3.12', '3.10')
    """
    return min(available, key=lambda p: (abs(_key(p).minor - _key(python).minor), -_key(p).minor))


def nearest_torch(version: str, python: str) -> str | None:
    """The torch release closest to ``version`` (the newer one on a tie) that has a wheel for ``python``.

    >>> nearest_torch("2.4.1", "3.13"), nearest_torch("2.15.0", "3.10")
    ('2.5.0', '2.14.1')
    """
    releases = sorted(torch_pythons(), key=_key)
    if version not in releases:
        return None
    here = releases.index(version)
    fits = [i for i, v in enumerate(releases) if python in torch_pythons()[v]]
    if not fits:
        return None
    return releases[min(fits, key=lambda i: (abs(i - here), -i))]


def mismatch(version: str, python: str, available: list[str], where: str, *, from_wheelhouse: bool = False) -> str | None:
    """The message for a torch release without a wheel for ``python``, naming the nearest pairings; None if it fits."""
    if python in available:
        return None
    near_py = nearest_python(python, available)
    lines = [f"torch {version} has no wheel for Python {where}; its wheels are for Python {', '.join(available)}."]
    fixes = [f"Python {near_py} with torch {version} (image.python: '{near_py}' with a base that has it, "
             f"e.g. python:{near_py}-slim-bookworm)"]
    near_torch = None if from_wheelhouse else nearest_torch(version, python)
    if near_torch:
        fixes.append(f"torch {near_torch} with Python {python} (image.torch.version: '{near_torch}')")
    lines.append("nearest that work: " + "; or ".join(fixes))
    source = "the wheelhouse's file names" if from_wheelhouse else \
        f"PyPI's wheel names, read {table()['read_on']}"
    lines.append(f"(from {source})")
    return "\n".join(lines)


def check_profile(image, wheel_dirs: list[Path]) -> tuple[str | None, str | None]:
    """(error, note) for the profile's torch/Python pairing: error when no wheel fits, note when unchecked."""
    if image.torch is None:
        return None, None
    python, where = image_python(image)
    if python is None:
        return None, None
    version = normalize(image.torch.version)
    local = wheelhouse_pythons(wheel_dirs, version) if wheel_dirs else None
    if local is not None:
        return mismatch(version, python, local, f"{python} ({where})", from_wheelhouse=True), None
    available = torch_pythons().get(version)
    if available is None:
        newest = max(torch_pythons(), key=_key)
        return None, (f"torch {version} is not in envkit's wheel table (read {table()['read_on']}, newest "
                      f"{newest}); its Python {python} pairing is not checked before the build")
    return mismatch(version, python, available, f"{python} ({where})"), None


def compare_real(expected: str | None, where: str, real: str) -> str | None:
    """The message when the image's real Python (``3.11``) is not the one the profile says or implies.

    >>> compare_real("3.12", "image.python", "3.11")
    "the image's Python is 3.11, but the profile expects 3.12 (image.python); set image.python: '3.11' or pick a base with Python 3.12"
    >>> compare_real(None, "", "3.11") is None
    True
    """
    if expected is None or expected == real:
        return None
    return (f"the image's Python is {real}, but the profile expects {expected} ({where}); set image.python: "
            f"'{real}' or pick a base with Python {expected}")


def real_version(text: str) -> str:
    """``3.11.2`` (or ``3.11``) → ``3.11``."""
    return ".".join(text.strip().split(".")[:2])


def python_problem(image, real: str) -> str | None:
    """The message when the image's real Python (``3.11.2`` or ``3.11``) is not the one the ``Image`` says or
    implies; None when it fits or nothing is known (build reads it with python3, validate from the harness).

    >>> from envkit.profile.sections import Image
    >>> python_problem(Image(base="debian:bookworm"), "3.11.2") is None
    True
    """
    expected, where = image_python(image)
    return compare_real(expected, where, real_version(real)) if real.strip() else None
