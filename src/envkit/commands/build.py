"""``envkit build``: build the profile's image through the engine (:mod:`envkit.imagebuild`).

Example:
    >>> # run(Path("envkit.yaml"), tag=None, no_cache=False, out=sys.stdout, err=sys.stderr) -> 0
"""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

from envkit.engine import Engine
from envkit.generation import report_warnings
from envkit.imagebuild import build_image, connect
from envkit.profile import load_profile


def run(profile_path: Path | None, *, tag: str | None, no_cache: bool, out: TextIO, err: TextIO,
        engine: Engine | None = None) -> int:
    loaded = load_profile(profile_path)
    report_warnings(loaded, False, err)
    built = build_image(loaded, connect(engine), tag=tag, no_cache=no_cache, err=err)
    print(built, file=out)
    return 0
