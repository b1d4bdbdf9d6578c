"""``envkit init``: write the default profile (with its comments), fitted to this machine, for the user to edit.

The sizes come from this host's CPUs, memory and NVIDIA GPUs (on native Windows the PC's, for
``wsl.memory`` and ``wsl.processors``), or from ``--preset laptop|workstation|cluster``
(:mod:`envkit.fitted_profile`); stderr says which, and what was chosen.

Called as::

    run(Path("envkit.yaml"), force=False, out=sys.stdout, err=sys.stderr, preset=None)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

from envkit.errors import OutputConflict
from envkit.output import atomic_write, write_backup
from envkit.fitted_profile import PRESETS, fitted_profile, this_machine
from envkit.safeio import PROFILE_MAX, FileRefused, read_bounded, write_target


def run(path: Path, *, force: bool, out: TextIO, err: TextIO | None = None, preset: str | None = None,
        host=None) -> int:
    """Write the fitted profile to ``path``; ``host``: doctor's Host seam (default: this machine)."""
    if preset is not None:
        machine = PRESETS[preset]
    else:
        from envkit.doctor.host import Host  # here, not at the top: building the CLI's parser imports every command module

        machine = this_machine(host or Host())
    content, chosen = fitted_profile(machine)
    text = content.encode()
    if path.is_dir() and not path.is_symlink():
        raise FileRefused(f"{path}: is a folder; give the profile's file name (e.g. {path / 'envkit.yaml'})")
    # A symlink is followed (its target is edited in its own folder); a device, FIFO or socket is refused.
    target = write_target(path)
    if target.exists():
        if read_bounded(target, PROFILE_MAX, "a profile", FileRefused) == text:
            print(f"{path} already holds this profile", file=out)
            return 0
        if not force:
            raise OutputConflict(f"{path} already exists; not overwriting it",
                                 hint="pass --force to replace it (a .envkit-bak-<time> copy is kept)")
        bak = write_backup(path)
        print(f"backed up {path} to {bak}", file=out)
    atomic_write(path, text)
    print(f"envkit init: sized for {chosen}", file=err or sys.stderr)
    command = "envkit generate" if path == Path("envkit.yaml") else f"envkit generate {path}"
    print(f"wrote {path}; edit it, then run `{command}`", file=out)
    return 0


# ---------------------------------------------------------------- command line (envkit.commands' contract)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", nargs="?", type=Path, default=Path("envkit.yaml"), metavar="PATH",
                        help="where to write the profile (default: envkit.yaml)")
    parser.add_argument("--force", action="store_true",
                        help="replace a file that holds something else (a .envkit-bak-<time> copy is kept)")
    parser.add_argument("--preset", choices=sorted(PRESETS), default=None,
                        help="size for a typical machine instead of this one (laptop: 4 CPUs, 16 GB, no GPU; "
                             "workstation: 8 CPUs, 64 GB, GPUs; cluster: 2 nodes of 8 GPUs)")


def main(args: argparse.Namespace) -> int:
    return run(args.path, force=args.force, out=sys.stdout, err=sys.stderr, preset=args.preset)
