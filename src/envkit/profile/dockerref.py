"""What the Docker engine accepts, checked at load time: reference grammar, sizes, CPU precision, mounts.

The image-reference grammar is distribution/reference's (``reference.go``): a
name is an optional domain then ``/``-separated path components of lowercase
letters and digits joined by one ``.``, one ``_``, ``__`` or dashes; a tag is
``[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}``; the whole name is at most 255 characters.
Docker takes ``--cpus`` as integer nano-CPUs (more than 9 decimals is "too
precise") and refuses below 0.01; sizes are int64 bytes.

Example:
    >>> check_reference("nvidia/cuda:12.4.1-runtime-ubuntu22.04")
    'nvidia/cuda:12.4.1-runtime-ubuntu22.04'
    >>> check_reference("a.")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: 'a.' is not a valid image reference: path component 'a.' must be lowercase letters and digits ...
"""

from __future__ import annotations

import re

INT64_MAX = 2**63 - 1
MIN_CPUS = "0.01"  # Docker's smallest --cpus, compared exactly (as a Decimal)
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = re.compile(rf"^(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[0-9a-fA-F:]+\])(?::[0-9]+)?$")
PATH_COMPONENT = re.compile(r"^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$")
_TAG = re.compile(r"^[\w][\w.-]{0,127}$", re.ASCII)


def check_reference(ref: str, *, what: str = "image reference") -> str:
    """``ref`` if Docker's reference grammar accepts it (name[:tag], no digest), else ValueError."""
    name, tag = ref, None
    slash = ref.rfind("/")
    colon = ref.rfind(":")
    if colon > slash:
        name, tag = ref[:colon], ref[colon + 1:]
        if not _TAG.match(tag):
            raise ValueError(f"{ref!r} is not a valid {what}: tag {tag!r} must be letters, digits, '_', '.', '-' "
                             "(at most 128, not starting with '.' or '-')")
    if len(name) > 255:
        raise ValueError(f"{ref!r} is not a valid {what}: the name is longer than 255 characters")
    parts = name.split("/")
    if len(parts) > 1 and (("." in parts[0] or ":" in parts[0] or parts[0] == "localhost")
                           or parts[0] != parts[0].lower()):
        if not _DOMAIN.match(parts[0]):
            raise ValueError(f"{ref!r} is not a valid {what}: registry {parts[0]!r} is not a host name[:port]")
        parts = parts[1:]
    for part in parts:
        if not PATH_COMPONENT.match(part):
            raise ValueError(f"{ref!r} is not a valid {what}: path component {part!r} must be lowercase letters "
                             "and digits joined by '.', '_', '__' or '-' (e.g. team/vision-train:dev)")
    return ref


#: The registry host of envkit's default image names: Docker reads ``localhost/x`` as the host ``localhost``,
#: so a missing image is never looked up on Docker Hub (where anyone could publish ``envkit/<name>``).
LOCAL_HOST = "localhost"


def default_image_tag(name: str) -> str:
    """The image a profile without ``image.tag`` builds and runs: local only.

    >>> default_image_tag("tour")
    'localhost/envkit/tour:latest'
    """
    return f"{LOCAL_HOST}/envkit/{name}:latest"


def is_local_only(ref: str) -> bool:
    """True for a reference under ``localhost/`` without a port: an image built here, which nodes cannot pull.

    >>> is_local_only("localhost/envkit/x:latest"), is_local_only("localhost:5000/x"), is_local_only("team/x")
    (True, False, False)
    """
    return ref.split("/", 1)[0] == LOCAL_HOST and "/" in ref


def check_size(n: int) -> int:
    """A byte count Docker can store (int64)."""
    if n > INT64_MAX:
        raise ValueError(f"{n} bytes is more than Docker can take (at most {INT64_MAX} bytes, 8 EiB)")
    return n


def check_cpus(value: float) -> float:
    """``--cpus`` as Docker takes it: nano-CPUs (at most 9 decimals), at least 0.01.

    >>> check_cpus(1.5)
    1.5
    """
    from decimal import Decimal  # only for a profile that sets run.cpus

    d = Decimal(repr(value))
    exponent = d.as_tuple().exponent
    if not isinstance(exponent, int):  # 'n', 'N', 'F': NaN or infinity
        raise ValueError(f"{value!r} is not a number of CPUs")
    if exponent < -9:
        raise ValueError(f"{value!r} is too precise: Docker counts CPUs in billionths (at most 9 decimals)")
    if d < Decimal(MIN_CPUS):
        raise ValueError(f"{value!r} is below Docker's smallest CPU limit, 0.01")
    return value


def volume_target_problem(target: str) -> str | None:
    """Why Docker (or sense) refuses ``target`` as a mount point, or None.

    >>> volume_target_problem("/data/../..")
    "it climbs out with '..' (write the path it means, e.g. /data)"
    """
    segments = [s for s in target.split("/") if s]
    if ".." in segments:
        return "it climbs out with '..' (write the path it means, e.g. /data)"
    if not segments or all(s == "." for s in segments):
        return "'/' is the container's root; Docker refuses to mount over it"
    return None
