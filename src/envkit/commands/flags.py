"""``envkit flags``: the ``docker run`` flags on one shell-quoted line.

Relative volume sources are made absolute (against the profile's folder), so
``eval "docker run $(envkit flags) IMAGE"`` works from any directory.

Called as::

    run(None, out=sys.stdout) prints: --shm-size=2g --ipc=private --cpuset-cpus=0-7 ...
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TextIO

from envkit.generation import report_warnings
from envkit.profile import load_profile
from envkit.runsettings import RunSettings
from envkit.targets.run import docker_flags


def run(profile_path: Path | None, *, out: TextIO, err: TextIO) -> int:
    loaded = load_profile(profile_path)
    report_warnings(loaded, False, err)  # stderr: `$(envkit flags)` still captures only the flags
    rs = RunSettings.from_profile(loaded.profile)

    def source(v):
        return str(loaded.resolve(v.source)) if v.is_relative else v.source

    print(shlex.join(docker_flags(rs, volume_source=source)), file=out)
    return 0
