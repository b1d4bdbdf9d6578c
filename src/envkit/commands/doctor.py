"""``envkit doctor``: check this host and training scripts against a profile.

Exit status: 1 when a check fails, 0 otherwise (warnings included). Output is
a table, or with ``as_json`` one JSON document (see :mod:`envkit.doctor`).

Example:
    >>> import io
    >>> from envkit.doctor.host import Host
    >>> from pathlib import Path
    >>> out = io.StringIO()
    >>> rc = run(None, [], [], True, out, io.StringIO(),
    ...          host=Host(Path("/nonexistent"), environ={}, cwd="/home/me", docker_probe=lambda: None))
    >>> '"envkit_doctor": 1' in out.getvalue()
    True
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TextIO

from envkit.doctor import Host, diagnose, render_table
from envkit.harness.report import FAIL
from envkit.profile import load_profile


def run(profile_path: Path | None, scripts: list[Path], data_paths: list[Path], as_json: bool,
        out: TextIO, err: TextIO, host: Host | None = None) -> int:
    """Diagnose ``host`` (default: this machine) for the profile (default: the embedded one)."""
    profile = load_profile(profile_path).profile
    doc = diagnose(host or Host(), profile, list(scripts), list(data_paths))
    if as_json:
        print(json.dumps(doc, indent=2, default=str), file=out)
    else:
        print(render_table(doc), file=out)
    return 1 if doc["verdict"] == FAIL else 0
