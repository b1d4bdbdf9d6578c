"""``envkit flags``: the ``docker run`` flags on one shell-quoted line.

Relative volume sources are made absolute (against the profile's folder), so
``eval "docker run $(envkit flags) IMAGE"`` works from any directory.

Called as::

    run(None, out=sys.stdout) prints: --shm-size=2g --ipc=private --cpuset-cpus=0-7 ...
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import TextIO

from envkit.commands.arguments import profile_argument, resolve_profile
from envkit.generation import report_warnings, warning_record
from envkit.jsonout import FlagsDoc, LoaderDoc, WarningRecord, emit
from envkit.planner import build_plan
from envkit.profile import load_profile
from envkit.targets.run import docker_flags


def run(profile_path: Path | None, *, out: TextIO, err: TextIO, as_json: bool = False) -> int:
    """Print the flags; with ``as_json`` one document (``envkit.jsonout.SCHEMAS["flags"]``) instead."""
    loaded = load_profile(profile_path)
    plan = build_plan(loaded)
    warnings = report_warnings(plan, False, err)  # stderr: `$(envkit flags)` still captures only the flags
    rs = plan.settings

    def source(v):
        return str(loaded.resolve(v.source)) if v.is_relative else v.source

    argv = docker_flags(rs, volume_source=source)
    if as_json:
        emit(FlagsDoc(profile=loaded.source, argv=tuple(argv),
                      warnings=tuple(WarningRecord.model_validate(warning_record(w)) for w in warnings),
                      notes=tuple(WarningRecord.model_validate(warning_record(n)) for n in plan.notes),
                      loader=LoaderDoc.model_validate(plan.loader.as_json())), out)
    else:
        print(shlex.join(argv), file=out)
    return 0


# ---------------------------------------------------------------- command line (envkit.commands' contract)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    profile_argument(parser)
    parser.add_argument("--json", action="store_true",
                        help="print one JSON document: the flags as a list, one argument each (docs/cli.md)")


def main(args: argparse.Namespace) -> int:
    return run(resolve_profile(args), out=sys.stdout, err=sys.stderr, as_json=args.json)
