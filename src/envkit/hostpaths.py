"""Host paths as Docker reads a volume's host side, Docker Desktop's Windows forms included.

``C:\\data`` and ``C:/data`` are drive paths (Docker Desktop reads them from PowerShell and cmd);
``//c/data`` is the same folder as bash under WSL or Git Bash hands it over. Standard library only:
the profile grammar, the run settings and the targets all split and spell volumes here.
"""

from __future__ import annotations

import re

_DRIVE = re.compile(r"[A-Za-z]:[\\/]")


def is_drive_path(text: str) -> bool:
    r"""Whether ``text`` is a Windows drive path as Docker Desktop reads a volume's host side (``C:\x``, ``C:/x``).

    >>> is_drive_path("C:\\data"), is_drive_path("c:/data"), is_drive_path("//c/data"), is_drive_path("./c")
    (True, True, False, False)
    """
    return _DRIVE.match(text) is not None


def split_volume(spec: str) -> tuple[str, str, str | None]:
    r"""``HOST:/CONTAINER[:MODE]`` as (host, container, mode); a drive's ``X:`` is part of the host side.

    >>> split_volume("C:\\data:/data:ro"), split_volume("./d:/d")
    (('C:\\data', '/data', 'ro'), ('./d', '/d', None))
    """
    drive = spec[:2] if is_drive_path(spec) else ""
    source, target, *mode = spec[len(drive):].split(":", 2)
    return drive + source, target, mode[0] if mode else None


def mnt_path(source: str) -> str:
    r"""A Windows drive path as a Linux process inside WSL names it (Docker Engine installed in the distribution
    sees the drive where WSL mounts it): ``C:\data`` -> ``/mnt/c/data``. Other paths are returned as they are.

    >>> mnt_path("C:\\Users\\me\\data"), mnt_path("D:/x"), mnt_path("/srv/data")
    ('/mnt/c/Users/me/data', '/mnt/d/x', '/srv/data')
    """
    if not is_drive_path(source):
        return source
    return "/mnt/" + bash_path(source)[2:]


def bash_path(source: str) -> str:
    r"""A host path as bash under WSL or Git Bash hands it to Docker Desktop: ``C:\data`` -> ``//c/data``.

    Other paths are returned as they are.

    >>> bash_path("C:\\Users\\me\\data"), bash_path("D:/x"), bash_path("/srv/data")
    ('//c/Users/me/data', '//d/x', '/srv/data')
    """
    if not is_drive_path(source):
        return source
    from pathlib import PureWindowsPath

    path = PureWindowsPath(source)
    return "//" + path.drive[0].lower() + path.as_posix()[len(path.drive):]
