"""``envkit wsl apply``: merge the profile's .wslconfig keys into a .wslconfig (or its wsl.conf keys into a wsl.conf).

The one ``.wslconfig``/``wsl.conf`` merge: setup-wsl.ps1 runs it, natively on Windows or inside the
distribution, and has none of its own.

Everything else in the file (other keys and sections, comments, blank lines,
key order, the encoding, byte-order mark and line endings) is kept; see
:mod:`envkit.wslmerge`. When something changes, the old file is copied to
``PATH.envkit-bak-<UTC time>`` first (an existing backup is never
overwritten), then the new text replaces the file atomically (a temporary file
in the same folder, then ``os.replace``). When nothing changes, nothing is
written and no backup is made, so applying twice is harmless.

Example:
    >>> import io, tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp()); cfg = d / ".wslconfig"
    >>> _ = cfg.write_bytes(b"[wsl2]\\r\\nmemory=8GB\\r\\n")
    >>> out = io.StringIO()
    >>> run(None, cfg, dry_run=True, out=out, err=io.StringIO())
    0
    >>> "[wsl2] memory: 8GB -> 40GB" in out.getvalue()
    True
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from collections.abc import Sequence
from typing import TextIO

from envkit.termtext import neutralise
from envkit.commands.arguments import profile_argument, resolve_profile
from envkit.errors import ProfileError, UsageError
from envkit.output import atomic_write, write_backup
from envkit.profile import load_profile
from envkit.safeio import WSLCONFIG_MAX, FileRefused, read_bounded, write_target
from envkit.wslmerge import Change, Decoded, decode_config, encode_config, merge_ini


def run(profile_path: Path | None, wslconfig: Path, dry_run: bool, out: TextIO, err: TextIO, *,
        wsl_conf: bool = False) -> int:
    """Merge the profile's ``wsl`` keys into ``wslconfig``; 0 on success (changed or not).

    ``wsl_conf=True``: ``wslconfig`` names a distribution's ``/etc/wsl.conf`` and the keys are
    ``wsl.wsl_conf``'s (a new file gets LF line endings). Raises ProfileError when the profile has
    no ``wsl`` section (or no ``wsl.wsl_conf`` for ``wsl_conf=True``) or the file is not a text INI
    file (with the line), FileRefused (exit 1) when ``wslconfig`` is a folder.
    """
    from envkit.planner import build_plan  # here, not at the top: building the CLI's parser imports every command module

    loaded = load_profile(profile_path)
    wsl = build_plan(loaded).wsl
    if wsl is None:
        raise ProfileError(f"{loaded.source}: the profile has no 'wsl' section, so there is nothing to apply",
                           hint="add a wsl: section (memory, processors, ...) to the profile")
    if wsl_conf and wsl.conf_sections is None:
        raise ProfileError(f"{loaded.source}: the profile has no 'wsl.wsl_conf' section, so there is nothing to apply",
                           hint="add wsl.wsl_conf (boot, automount, ...) to the profile")
    sections = (wsl.conf_sections or ()) if wsl_conf else wsl.sections
    updates = [(s.name, e.key, e.value) for s in sections for e in s.entries]
    if wslconfig.is_dir() and not wslconfig.is_symlink():
        raise FileRefused(f"{wslconfig}: is a folder; --wslconfig takes the .wslconfig file itself",
                         hint="e.g. --wslconfig /mnt/c/Users/<you>/.wslconfig")
    if not wslconfig.parent.is_dir():
        raise UsageError(f"{wslconfig}: the folder {wslconfig.parent} does not exist")
    # A symlink (a dotfiles repo) is followed and its target edited; a device, FIFO or socket is refused (exit 1).
    target = write_target(wslconfig)
    exists = target.exists()
    if exists:
        raw = read_bounded(target, WSLCONFIG_MAX, "a .wslconfig")
        decoded = decode_config(raw, str(wslconfig))
    else:
        # A new .wslconfig: UTF-8 without a BOM and CRLF, as Windows tools write it; a new wsl.conf: LF.
        decoded = Decoded("", newline="\n") if wsl_conf else Decoded("")
    result = merge_ini(decoded.text, updates, str(wslconfig), decoded.newline)
    if not result.changes:
        print(f"{neutralise(str(wslconfig))}: already matches the profile; nothing changed, nothing written.", file=out)
        return 0
    if dry_run:
        _report(wslconfig, "would change", result.changes, out)
        print("Dry run: nothing written.", file=out)
        return 0
    # The report follows the write: a full or read-only disk must not be told as "changed" (FileRefused,
    # exit 1, says nothing was changed), and the backup of a file left as it was is no backup at all.
    backup = write_backup(wslconfig, raw) if exists else None
    try:
        atomic_write(wslconfig, encode_config(result.text, decoded), mode=None)
    except BaseException:
        if backup is not None:
            backup.unlink(missing_ok=True)
        raise
    _report(wslconfig, "changed" if exists else "created", result.changes, out)
    if backup is not None:
        print(f"Backup: {neutralise(str(backup))}", file=out)
    if wsl_conf:
        print("Run `wsl --shutdown` from Windows so the distribution restarts with these settings.", file=out)
        return 0
    print("Run `wsl --shutdown` from Windows (PowerShell or cmd) so WSL restarts with these settings; "
          "WSL reads .wslconfig only when its VM starts.", file=out)
    return 0


def _report(wslconfig: Path, verb: str, changes: Sequence[Change], out: TextIO) -> None:
    print(f"{neutralise(str(wslconfig))}: {verb} {len(changes)} key(s):", file=out)
    for change in changes:
        print(f"  {neutralise(change.describe())}", file=out)


# ---------------------------------------------------------------- command line (envkit.commands' contract)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="wsl_command", required=True, metavar="COMMAND")
    apply = sub.add_parser("apply", help="merge the profile's keys into a .wslconfig (backup first)")
    # No default profile here: its example values would silently land in a real .wslconfig.
    profile_argument(apply, what="else an error: a profile of yours with a wsl: section is needed")
    which = apply.add_mutually_exclusive_group(required=True)
    which.add_argument("--wslconfig", type=Path, help="path to .wslconfig (%%UserProfile%%\\.wslconfig)")
    which.add_argument("--wsl-conf", type=Path, metavar="PATH",
                       help="path to a distribution's wsl.conf (/etc/wsl.conf, as root): merges wsl.wsl_conf's keys")
    apply.add_argument("--dry-run", action="store_true", help="show what would change; write nothing")


def main(args: argparse.Namespace) -> int:
    profile = resolve_profile(args)
    if profile is None:
        raise UsageError("wsl apply: no profile: name one (PROFILE or -f), set $ENVKIT_PROFILE, or run it where "
                         "an envkit.yaml is found", hint="the embedded default's example values would land in a "
                         "real .wslconfig, so it is never used here")
    if args.wsl_conf is not None:
        return run(profile, args.wsl_conf, args.dry_run, sys.stdout, sys.stderr, wsl_conf=True)
    return run(profile, args.wslconfig, args.dry_run, sys.stdout, sys.stderr)
