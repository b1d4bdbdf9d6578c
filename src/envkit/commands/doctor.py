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

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from envkit.commands.arguments import profile_argument, resolve_profile
from envkit.harness.report import FAIL
from envkit.profile import load_profile, load_profile_bytes

if TYPE_CHECKING:
    from envkit.doctor import Host

# A profile that asks for nothing beyond a small multi-worker loader: no memory limit, cpuset,
# GPUs or ulimits to compare the host against.
HOST_ONLY = {"envkit": 1, "name": "host-check", "image": {"base": "none"},
             "loader": {"num_workers": 2, "batch_size": 32, "sample_shape": [3, 224, 224]}}


def run(profile_path: Path | None, scripts: list[Path], data_paths: list[Path], as_json: bool,
        out: TextIO, err: TextIO, host: Host | None = None) -> int:
    """Diagnose ``host`` (default: this machine) for the profile.

    Without a profile the host is checked alone: the embedded default profile asks for 32 GB,
    8 CPUs and GPUs, and comparing a laptop against it would only produce false failures.
    """
    if profile_path is None:
        loaded = load_profile_bytes(json.dumps(HOST_ONLY).encode(), "<host check>", Path.cwd())
        print("envkit doctor: no profile given (none named, in $ENVKIT_PROFILE or found): checking the host alone",
              file=err)
    else:
        loaded = load_profile(profile_path)
    from envkit.doctor import Host, diagnose, render_table  # here, not at the top: building the CLI's parser imports every command module

    doc = diagnose(host or Host(), loaded, list(scripts), list(data_paths))
    if as_json:
        print(json.dumps(doc, indent=2, default=str), file=out)
    else:
        print(render_table(doc), file=out)
    return 1 if doc["verdict"] == FAIL else 0


# ---------------------------------------------------------------- command line (envkit.commands' contract)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    profile_argument(parser, what="else none: the host is checked alone")
    parser.add_argument("--script", action="append", type=Path, default=[], help="training script to check (repeatable)")
    parser.add_argument("--data", action="append", type=Path, default=[], help="dataset path to check (repeatable)")
    parser.add_argument("--json", action="store_true", help="print one JSON report on stdout")


def main(args: argparse.Namespace) -> int:
    return run(resolve_profile(args, announce_default=False), args.script, args.data, args.json, sys.stdout, sys.stderr)
