"""``envkit help [COMMAND ... | TOPIC]``: the top-level help, a command's (``envkit help wsl apply``), or a guide.

The guides are the docs/*.md pages, shipped in the wheel (``envkit/docs``): ``envkit help profile``
prints docs/profile.md. The words complete in every shell (their choices are the commands, the
subcommands and the topics). Exit 0; an unknown word is a usage error (exit 2) with a did-you-mean.

Called as::

    run(root_parser, ["generate"], out=sys.stdout) -> 0, printing `envkit generate --help`'s text
"""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path
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


def docs_dir() -> Path | None:
    """The guides: inside the wheel (envkit/docs), or a checkout's top-level docs/; None when neither is there."""
    here = Path(__file__).resolve().parent.parent
    for candidate in (here / "docs", here.parent.parent / "docs"):
        if candidate.is_dir():
            return candidate
    return None


def topics() -> dict[str, Path]:
    """``envkit help TOPIC``'s topics: each guide by its file name without ``.md``."""
    folder = docs_dir()
    return {p.stem: p for p in sorted(folder.glob("*.md"))} if folder else {}


class _Words(list):
    """Completion's choices for the help words; any word passes argparse (``run`` checks it, with a did-you-mean)."""

    def __contains__(self, item: object) -> bool:
        return True


def run(root: argparse.ArgumentParser, words: list[str], *, out: TextIO) -> int:
    parser = root
    guides = topics()
    if len(words) == 1 and words[0] in guides and words[0] not in subcommands(root):
        print(guides[words[0]].read_text(encoding="utf-8"), end="", file=out)
        return 0
    for depth, word in enumerate(words):
        choices = subcommands(parser)
        if depth == 0:
            choices = {**{t: root for t in guides}, **choices}  # a misspelt topic gets its did-you-mean too
        if word not in choices or (depth == 0 and word in guides and word not in subcommands(root)):
            said = " ".join(["envkit", *words[:depth]])
            close = difflib.get_close_matches(word, list(choices), n=1)
            mean = f" (did you mean {close[0]!r}?)" if close else ""
            raise UsageError(f"help: {said} has no command {word!r}{mean}",
                             hint=f"commands: {', '.join(subcommands(parser)) or 'none'}"
                             + (f"; guides: {', '.join(guides)}" if depth == 0 and guides else ""))
        parser = choices[word]
    print(parser.format_help(), end="", file=out)
    return 0


# ---------------------------------------------------------------- command line (envkit.commands' contract)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from envkit.commands import COMMANDS

    words = _Words(dict.fromkeys([*COMMANDS, "apply", *topics()]))
    parser.add_argument("words", nargs="*", metavar="COMMAND", choices=words,
                        help="the command (and subcommand) to explain, or a guide: " + (", ".join(topics()) or "none"))


def main(args: argparse.Namespace) -> int:
    return run(args.root_parser, list(args.words), out=sys.stdout)
