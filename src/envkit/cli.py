"""Command line: parse → dispatch to ``envkit.commands.*`` → one place that turns errors into exit codes.

Exit codes: 0 ok; 1 a check failed or an edited file blocked writing; 2 bad
profile or usage; 3 the Docker engine failed or refused; 70 an internal error
(a bug: ENVKIT_DEBUG=1 shows the traceback); 130 interrupted.

Example:
    >>> main(["flags"])  # doctest: +SKIP
    --shm-size=2g --ipc=private ...
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from envkit import __version__
from envkit.errors import EnvkitError, UsageError
from envkit.targets import TARGET_NAMES



class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # usage errors: exit 2 with one line, like every other bad input
        self.print_usage(sys.stderr)
        print(f"envkit: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def _seconds(text: str) -> float:
    """A finite, positive number of seconds (nan or inf would make a deadline never fire)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a finite number of seconds above 0, got {text!r}")
    return value


def _profile_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("profile", nargs="?", type=Path, metavar="PROFILE",
                   help="profile YAML (default: ./envkit.yaml if present, else the embedded default profile)")


COMMANDS = ("generate", "flags", "init", "schema", "harness", "watch", "lock", "build", "validate", "bundle", "doctor",
            "clean", "wsl")


class _Unused:
    """Stands in for the parsers of the subcommands not asked for (building all of them is start-up time every run would pay)."""

    def add_argument(self, *args: object, **kw: object) -> None:
        return None

    def add_subparsers(self, *args: object, **kw: object) -> _Unused:
        return self

    def add_parser(self, *args: object, **kw: object) -> _Unused:
        return self


class _Subparsers:
    def __init__(self, real: Any, only: str | None) -> None:
        self.real, self.only = real, only

    def add_parser(self, name: str, **kw: Any) -> Any:
        return self.real.add_parser(name, **kw) if self.only in (None, name) else _Unused()


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole CLI, or (``only``: the subcommand on the command line) the top level and that subcommand."""
    parser = _Parser(prog="envkit", description="One YAML profile in; a working, proven PyTorch environment out.")
    parser.add_argument("--version", action="version", version=f"envkit {__version__}")
    sub: Any = _Subparsers(parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser),
                           only if only in COMMANDS else None)

    g = sub.add_parser("generate", help="render Dockerfile, run.sh, compose.yaml, devcontainer.json, WSL files")
    _profile_arg(g)
    g.add_argument("-o", "--output", type=Path, default=Path("."), help="output directory (default: .)")
    g.add_argument("--target", action="append", choices=TARGET_NAMES, default=[], help="only this target (repeatable)")
    g.add_argument("--force", action="store_true", help="overwrite files edited since envkit wrote them (backups kept)")
    g.add_argument("--strict", action="store_true", help="treat workload warnings as errors")

    f = sub.add_parser("flags", help="print the docker run flags on one shell-quoted line")
    _profile_arg(f)

    i = sub.add_parser("init", help="write the default profile to envkit.yaml for you to edit")
    i.add_argument("path", nargs="?", type=Path, default=Path("envkit.yaml"))
    i.add_argument("--force", action="store_true")

    sub.add_parser("schema", help="print the profile's JSON Schema")

    # `envkit harness ...` never reaches this parser (see main); listed here for --help.
    sub.add_parser("harness", add_help=False,
                   help="run the loader harness on this host (envkit harness --help for its options)")

    # `envkit watch ...` never reaches this parser either (see main): its options are the companion's.
    sub.add_parser("watch", add_help=False, help="watch /dev/shm and a DataLoader's workers; warn before shm runs out")

    lk = sub.add_parser("lock", help="pin the image's packages with hashes into envkit.lock.txt beside the profile")
    _profile_arg(lk)
    lk.add_argument("--force", action="store_true", help="replace an envkit.lock.txt envkit did not write")

    b = sub.add_parser("build", help="build the image through the Docker engine")
    _profile_arg(b)
    b.add_argument("--tag", default=None)
    b.add_argument("--no-cache", action="store_true")

    v = sub.add_parser("validate", help="build, then run the harness in a container with the profile's settings")
    _profile_arg(v)
    v.add_argument("--image", default=None, help="validate this image instead of building")
    v.add_argument("--compare-default", action="store_true", help="also run under Docker's defaults, side by side")
    v.add_argument("--json", action="store_true")
    v.add_argument("--timeout", type=_seconds, default=300.0, help="seconds for each harness run (default 300)")
    v.add_argument("--quick", action="store_true", help="fewer batches and a smaller transfer buffer")

    bu = sub.add_parser("bundle", help="write an OCI bundle of the built image for Slurm's srun --container")
    _profile_arg(bu)
    bu.add_argument("--image", default=None, help="the built image (default: the profile's image tag)")
    bu.add_argument("-o", "--output", type=Path, required=True, help="bundle folder (on storage every node sees)")

    d = sub.add_parser("doctor", help="check this host (Linux, WSL2, Windows) and training scripts")
    _profile_arg(d)
    d.add_argument("--script", action="append", type=Path, default=[], help="training script to check (repeatable)")
    d.add_argument("--data", action="append", type=Path, default=[], help="dataset path to check (repeatable)")
    d.add_argument("--json", action="store_true")

    sub.add_parser("clean", help="remove leftovers of killed envkit runs and images superseded by a rebuild, and list them")

    w = sub.add_parser("wsl", help="WSL2 helpers")
    wsub = w.add_subparsers(dest="wsl_command", required=True, metavar="COMMAND", parser_class=_Parser)
    wa = wsub.add_parser("apply", help="merge the profile's keys into a .wslconfig (backup first)")
    # No default profile here: its example values would silently land in a real .wslconfig.
    wa.add_argument("profile", type=Path, metavar="PROFILE", help="profile YAML with a wsl: section")
    wa.add_argument("--wslconfig", type=Path, required=True, help="path to .wslconfig (%%UserProfile%%\\.wslconfig)")
    wa.add_argument("--dry-run", action="store_true")
    return parser


DEFAULT_PROFILE_FILE = Path("envkit.yaml")


def resolve_profile(path: Path | None) -> Path | None:
    """No PROFILE given: ./envkit.yaml when it exists (what `envkit init` writes), else None (the embedded default)."""
    if path is None and DEFAULT_PROFILE_FILE.is_file():
        return DEFAULT_PROFILE_FILE
    return path


def dispatch(args: argparse.Namespace) -> int:
    out, err = sys.stdout, sys.stderr
    cmd = args.command
    if hasattr(args, "profile") and cmd != "wsl":
        args.profile = resolve_profile(args.profile)
    if cmd == "generate":
        from envkit.commands import generate
        return generate.run(args.profile, args.output, tuple(args.target), force=args.force, strict=args.strict,
                            out=out, err=err)
    if cmd == "flags":
        from envkit.commands import flags
        return flags.run(args.profile, out=out, err=err)
    if cmd == "init":
        from envkit.commands import init
        return init.run(args.path, force=args.force, out=out)
    if cmd == "schema":
        from envkit.commands import schema
        return schema.run(out=out)
    if cmd == "lock":
        from envkit.commands import lock
        return lock.run(args.profile, force=args.force, out=out, err=err)
    if cmd == "build":
        from envkit.commands import build
        return build.run(args.profile, tag=args.tag, no_cache=args.no_cache, out=out, err=err)
    if cmd == "validate":
        from envkit.commands import validate
        return validate.run(args.profile, image=args.image, compare_default=args.compare_default,
                            as_json=args.json, timeout=args.timeout, quick=args.quick, out=out, err=err)
    if cmd == "bundle":
        from envkit.commands import bundle
        return bundle.run(args.profile, args.image, args.output, out=out, err=err)
    if cmd == "doctor":
        from envkit.commands import doctor
        return doctor.run(args.profile, args.script, args.data, args.json, out, err)
    if cmd == "clean":
        from envkit.commands import clean
        return clean.run(out=out, err=err)
    if cmd == "wsl":
        from envkit.commands import wsl_apply
        return wsl_apply.run(args.profile, args.wslconfig, args.dry_run, out, err)
    raise AssertionError(cmd)


def split_harness_argv(argv: list[str]) -> tuple[Path | None, list[str]]:
    """``--profile P`` is envkit's; every other harness flag belongs to the harness's own parser.

    >>> split_harness_argv(["--quick", "--profile", "p.yaml", "--json"])
    (PosixPath('p.yaml'), ['--quick', '--json'])
    """
    profile, rest, i = None, [], 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--profile":
            if i + 1 >= len(argv):
                raise UsageError("harness: --profile needs a profile file")
            profile, i = Path(argv[i + 1]), i + 2
            continue
        if arg.startswith("--profile="):
            profile = Path(arg.split("=", 1)[1])
        else:
            rest.append(arg)
        i += 1
    return profile, rest


class Terminated(KeyboardInterrupt):
    """SIGTERM (docker stop, a CI cancel), raised like Ctrl-C so every ``finally`` cleans up."""


def _on_sigterm(signum, frame):
    raise Terminated()


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``envkit`` console script and ``python -m envkit``."""
    argv = sys.argv[1:] if argv is None else argv
    if threading.current_thread() is threading.main_thread():
        # Containers and temporary build folders are removed in `finally` blocks: make SIGTERM
        # unwind through them as Ctrl-C does, instead of killing the process where it stands.
        signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        if argv[:1] == ["harness"]:
            from envkit.commands import harness

            profile, rest = split_harness_argv(argv[1:])
            return harness.run(profile, rest)  # no profile: the harness's own defaults or --expect
        if argv[:1] == ["watch"]:
            from envkit.commands import watch

            return watch.run(argv[1:])
        args = build_parser(argv[0] if argv else None).parse_args(argv)
        return dispatch(args)
    except (EnvkitError, UsageError) as e:
        print(f"envkit: error: {e}", file=sys.stderr)
        if e.hint:
            print(f"envkit: hint: {e.hint}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt as e:
        print("envkit: interrupted; cleaned up", file=sys.stderr)
        return 143 if isinstance(e, Terminated) else 130
    except BrokenPipeError:
        return 0
    except OSError as e:  # the file system said no (permissions, full disk, a path through a file)
        where = f"{e.filename}: " if e.filename else ""
        print(f"envkit: error: {where}{e.strerror or e}", file=sys.stderr)
        return 1
    except Exception as e:  # a bug in envkit: one line for the user, the traceback on request
        if os.environ.get("ENVKIT_DEBUG"):
            raise
        print(f"envkit: internal error: {type(e).__name__}: {e}", file=sys.stderr)
        print("envkit: hint: rerun with ENVKIT_DEBUG=1 for the traceback, and please report it", file=sys.stderr)
        return 70


if __name__ == "__main__":
    raise SystemExit(main())
