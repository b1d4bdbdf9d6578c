"""``envkit init``: write the embedded default profile (with its comments) for the user to edit.

Called as::

    run(Path("envkit.yaml"), force=False, out=sys.stdout)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

from envkit.errors import OutputConflict
from envkit.output import atomic_write, write_backup
from envkit.profile import default_profile_text
from envkit.safeio import PROFILE_MAX, FileRefused, read_bounded, write_target


def run(path: Path, *, force: bool, out: TextIO) -> int:
    text = default_profile_text().encode()
    if path.is_dir() and not path.is_symlink():
        raise FileRefused(f"{path}: is a folder; give the profile's file name (e.g. {path / 'envkit.yaml'})")
    # A symlink is followed (its target is edited in its own folder); a device, FIFO or socket is refused.
    target = write_target(path)
    if target.exists():
        if read_bounded(target, PROFILE_MAX, "a profile", FileRefused) == text:
            print(f"{path} already holds the default profile", file=out)
            return 0
        if not force:
            raise OutputConflict(f"{path} already exists; not overwriting it",
                                 hint="pass --force to replace it (a .envkit-bak-<time> copy is kept)")
        bak = write_backup(path)
        print(f"backed up {path} to {bak}", file=out)
    atomic_write(path, text)
    command = "envkit generate" if path == Path("envkit.yaml") else f"envkit generate {path}"
    print(f"wrote {path}; edit it, then run `{command}`", file=out)
    return 0


# ---------------------------------------------------------------- command line (envkit.commands' contract)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", nargs="?", type=Path, default=Path("envkit.yaml"), metavar="PATH",
                        help="where to write the profile (default: envkit.yaml)")
    parser.add_argument("--force", action="store_true",
                        help="replace a file that holds something else (a .envkit-bak-<time> copy is kept)")


def main(args: argparse.Namespace) -> int:
    return run(args.path, force=args.force, out=sys.stdout)
