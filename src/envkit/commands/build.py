"""``envkit build``: build the profile's image through the engine (:mod:`envkit.imagebuild`), then check
that the image's Python is the one the profile says or implies (:mod:`envkit.pythons`).

Called as::

    run(Path("envkit.yaml"), tag=None, no_cache=False, out=sys.stdout, err=sys.stderr) -> 0
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from envkit.commands.arguments import profile_argument, resolve_profile
from envkit.errors import CheckFailed
from envkit.jsonout import BuildDoc, emit
from envkit.profile import LoadedProfile, load_profile
from envkit.pythons import python_problem, real_version
from envkit.plan.runsettings import RunSettings

if TYPE_CHECKING:
    from envkit.engine import Engine

PYTHON_VERSION_CMD = ["python3", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"]


def check_python(loaded: LoadedProfile, engine: Engine, tag: str, err: TextIO) -> str | None:
    """Run python3 in the built image and return its version (None when it did not run); CheckFailed when it
    is not the Python the profile says or implies."""
    from envkit.engine import LABEL  # here, not at the top: building the CLI's parser imports every command module

    result = engine.run(tag, PYTHON_VERSION_CMD, RunSettings.engine_defaults(),
                        labels={LABEL: "1", "io.envkit.run": "python"}, timeout=60)
    if result.exit_code != 0 or not result.stdout.strip():
        return None  # nothing to compare; the harness run (validate) reports a broken python3 in detail
    problem = python_problem(loaded.profile.image, result.stdout)
    if problem:
        raise CheckFailed(f"{loaded.source}: {problem}")
    version = real_version(result.stdout)
    print(f"envkit: the image's Python is {version}", file=err)
    return version


def run(profile_path: Path | None, *, tag: str | None, no_cache: bool, out: TextIO, err: TextIO,
        engine: Engine | None = None, as_json: bool = False) -> int:
    """Build, check the Python, print the tag; with ``as_json`` one document (``envkit.jsonout.SCHEMAS["build"]``)."""
    loaded = load_profile(profile_path)
    # here, not at the top: building the CLI's parser imports every command module
    from envkit.imagebuild import build_image, connect, planned_build

    engine = connect(engine)
    with planned_build(loaded) as plan:
        built = build_image(plan, engine, tag=tag, no_cache=no_cache, err=err)
    python = check_python(loaded, engine, built.tag, err)
    if as_json:
        emit(BuildDoc(profile=loaded.source, tag=built.tag, image_id=built.image_id or None, python=python), out)
    else:
        print(built.tag, file=out)
    return 0


# ---------------------------------------------------------------- command line (envkit.commands' contract)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    profile_argument(parser)
    parser.add_argument("--tag", default=None, help="the image's tag (default: the profile's image.tag)")
    parser.add_argument("--no-cache", action="store_true", help="build every step again, using no cached layer")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON document: the tag, image id and Python (docs/cli.md)")


def main(args: argparse.Namespace) -> int:
    return run(resolve_profile(args), tag=args.tag, no_cache=args.no_cache, out=sys.stdout, err=sys.stderr,
               as_json=args.json)
