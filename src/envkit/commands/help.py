"""``envkit help [COMMAND ...]``: the top-level help, or that command's (``envkit help wsl apply``).

Exit 0; an unknown command is a usage error (exit 2) with a did-you-mean.

Called as::

    run(root_parser, ["generate"], out=sys.stdout) -> 0, printing `envkit generate --help`'s text
"""

from __future__ import annotations

import argparse
import difflib
import sys
from typing import TextIO

from envkit.errors import UsageError


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The parser's subcommands by name (empty when it has none).

    >>> p = argparse.ArgumentParser(prog="x"); sub = p.add_subparsers(); _ = sub.add_parser("go")
    >>> sorted(subcommands(p))
    ['go']
    """
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def run(root: argparse.ArgumentParser, words: list[str], *, out: TextIO) -> int:
    parser = root
    for depth, word in enumerate(words):
        choices = subcommands(parser)
        if word not in choices:
            said = " ".join(["envkit", *words[:depth]])
            close = difflib.get_close_matches(word, list(choices), n=1)
            mean = f" (did you mean {close[0]!r}?)" if close else ""
            raise UsageError(f"help: {said} has no command {word!r}{mean}",
                             hint=f"commands: {', '.join(choices) or 'none'}")
        parser = choices[word]
    print(parser.format_help(), end="", file=out)
    return 0


# ---------------------------------------------------------------- command line (envkit.commands' contract)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("words", nargs="*", metavar="COMMAND", help="the command (and subcommand) to explain")


def main(args: argparse.Namespace) -> int:
    return run(args.root_parser, list(args.words), out=sys.stdout)
