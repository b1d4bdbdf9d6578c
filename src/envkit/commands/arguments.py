"""The arguments commands share: PROFILE and ``-f``, the profile they name, and a number of seconds.

A command module's ``add_arguments`` calls :func:`profile_argument`; its ``main`` hands the parsed
arguments to :func:`resolve_profile`, which finds the profile in the documented order
(:func:`envkit.profile.discovery.find_profile`) and says on stderr where a profile it did not
name came from. This module is shared by the commands, never a command itself: ``envkit.commands``
holds the registry alone.

Example:
    >>> parser = argparse.ArgumentParser()
    >>> profile_argument(parser)
    >>> parser.parse_args(["-f", "team.yaml"]).profile_file
    PosixPath('team.yaml')
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path
from typing import TextIO

from envkit.profile.discovery import DEFAULT_PROFILE_FILE, PROFILE_ENV, find_profile

# An action whose `completes` is this completes to *.yaml / *.yml files (envkit.commands.completion).
PROFILE_COMPLETION = "profile"


def profile_argument(parser: argparse.ArgumentParser, *, what: str | None = None) -> None:
    """The optional PROFILE positional and its ``-f/--file`` spelling; :func:`resolve_profile` gives the default."""
    found = what or "else the embedded default profile"
    text = (f"profile YAML (default: ${PROFILE_ENV}, else envkit.yaml in this folder or the nearest parent "
            f"up to the repository root, {found})")
    positional = parser.add_argument("profile", nargs="?", type=Path, metavar="PROFILE", help=text)
    option = parser.add_argument("-f", "--file", dest="profile_file", type=Path, metavar="PROFILE",
                                 help="the profile YAML, as the PROFILE argument names it")
    for action in (positional, option):
        action.completes = PROFILE_COMPLETION  # type: ignore[attr-defined]


#: What a command says on stderr when it falls back to the embedded default profile.
EMBEDDED_NOTE = (f"envkit: no profile named, none in ${PROFILE_ENV} and no envkit.yaml here or in a parent folder: "
                 "using the embedded default profile (`envkit init` writes one sized for this machine)")


def resolve_profile(args: argparse.Namespace, err: TextIO | None = None, *, announce_default: bool = True) -> Path | None:
    """The profile for a command's parsed PROFILE / ``-f`` (:func:`envkit.profile.discovery.find_profile`); None: the embedded default.

    A profile found through ``$ENVKIT_PROFILE`` or in a parent folder is said on ``err`` (default stderr),
    as ``envkit: using PATH``; one named on the command line, or ./envkit.yaml, is not. The embedded
    default is said too (:data:`EMBEDDED_NOTE`), unless ``announce_default`` is off (doctor says its own).
    """
    found = find_profile(args.profile, getattr(args, "profile_file", None), os.environ, Path.cwd())
    said = found.how == "env" or (found.how == "discovered" and found.path != DEFAULT_PROFILE_FILE)
    if said:
        source = f"${PROFILE_ENV}" if found.how == "env" else "the nearest envkit.yaml"
        print(f"envkit: using {found.path} ({source})", file=err or sys.stderr)
    elif found.path is None and announce_default:
        print(EMBEDDED_NOTE, file=err or sys.stderr)
    return found.path


def seconds(text: str) -> float:
    """A finite, positive number of seconds (nan or inf would make a deadline never fire).

    >>> seconds("2.5")
    2.5
    """
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a finite number of seconds above 0, got {text!r}")
    return value
