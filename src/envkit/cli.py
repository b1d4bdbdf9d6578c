"""Command line: parse → dispatch to ``envkit.commands.*`` → one place that turns errors into exit codes.

Every command comes from the registry :data:`envkit.commands.COMMANDS`; nothing here names one.

A bare ``envkit`` prints the help with the command list (exit 0).

Exit codes: 0 ok; 1 a check failed or an edited file blocked writing; 2 bad
profile or usage; 3 the Docker engine failed or refused; 70 an internal error
(a bug: ENVKIT_DEBUG=1 shows the traceback); 130 interrupted.

Example:
    >>> main(["flags"])  # doctest: +SKIP
    --shm-size=2g --ipc=private ...
"""

from __future__ import annotations

import argparse
import os
import sys

from envkit import __version__
from envkit.commands import COMMANDS, load
from envkit.errors import EnvkitError, UsageError
from envkit.harness.errors import interrupted_status, raise_on_sigterm
from envkit.harness.text import shorten_words
from envkit.termtext import neutralise_lines


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # usage errors: exit 2 with one line, like every other bad input
        self.print_usage(sys.stderr)
        print(f"envkit: error: {neutralise_lines(shorten_words(message))}", file=sys.stderr)
        raise SystemExit(2)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The CLI: a subparser per entry of :data:`envkit.commands.COMMANDS`, with its module's arguments.

    ``only``: fill in that command's arguments alone (the others keep their help line, from the
    registry), so a run imports no other command's module; None: the whole CLI. A ``raw_argv``
    command's subparser copies its module's ``build_parser()`` options, for help and completion only:
    :func:`main` hands its words to the command before this parser sees them. Every parsed namespace
    carries the whole CLI's parser as ``root_parser`` when its command's entry asks for it
    (``envkit help``, ``envkit completion``), else this one.
    """
    parser = _Parser(prog="envkit", description="One YAML profile in; a working, proven PyTorch environment out.",
                     epilog="A command's options: envkit COMMAND --help. The guides ship with envkit: envkit help "
                            "TOPIC (profile, windows, validate, cli, ...; envkit help help lists them).")
    parser.add_argument("--version", action="version", version=f"envkit {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)
    for name, command in COMMANDS.items():
        if only is not None and name != only:
            sub.add_parser(name, help=command.help, add_help=False)
            continue
        module = load(name)
        if command.raw_argv:
            own = module.build_parser()
            sub.add_parser(name, add_help=False, help=command.help, parents=[own], description=own.description)
        else:
            module.add_arguments(sub.add_parser(name, help=command.help))
    parser.set_defaults(root_parser=parser)
    return parser


def _parse(argv: list[str]) -> argparse.Namespace:
    """``argv`` parsed by a parser holding only its command's arguments (:func:`build_parser`)."""
    name = argv[0] if argv and argv[0] in COMMANDS else None
    if name is None:  # `envkit`, `envkit --help`, `envkit --version`, a misspelt command
        return build_parser("").parse_args(argv)
    args = build_parser(name).parse_args(argv)
    if COMMANDS[name].whole_parser:
        args.root_parser = build_parser()
    return args


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``envkit`` console script and ``python -m envkit``."""
    argv = sys.argv[1:] if argv is None else argv
    # envkit uses no pydantic plugins: none installed elsewhere may hook into its validation.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    # Containers and temporary build folders are removed in `finally` blocks: make SIGTERM
    # unwind through them as Ctrl-C does, instead of killing the process where it stands.
    raise_on_sigterm()
    try:
        if not argv:  # a bare `envkit`: what it is and every command, as `envkit --help` shows them
            build_parser().print_help(sys.stdout)
            return 0
        if argv and argv[0] in COMMANDS and COMMANDS[argv[0]].raw_argv:
            return load(argv[0]).main(argv[1:])
        args = _parse(argv)
        return load(args.command).main(args)
    except (EnvkitError, UsageError) as e:
        # Messages quote the user's keys, values and file names: every line is made safe to print.
        print(f"envkit: error: {neutralise_lines(str(e))}", file=sys.stderr)
        if e.hint:
            print(f"envkit: hint: {neutralise_lines(e.hint)}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt as e:
        print("envkit: interrupted; cleaned up", file=sys.stderr)
        return interrupted_status(e)
    except BrokenPipeError:
        return 0
    except OSError as e:  # the file system said no (permissions, full disk, a path through a file)
        where = f"{e.filename}: " if e.filename else ""
        print(f"envkit: error: {neutralise_lines(f'{where}{e.strerror or e}')}", file=sys.stderr)
        return 1
    except Exception as e:  # a bug in envkit: one line for the user, the traceback on request
        if os.environ.get("ENVKIT_DEBUG"):
            raise
        print(f"envkit: internal error: {type(e).__name__}: {neutralise_lines(str(e))}", file=sys.stderr)
        print("envkit: hint: rerun with ENVKIT_DEBUG=1 for the traceback, and please report it", file=sys.stderr)
        return 70


if __name__ == "__main__":
    raise SystemExit(main())
