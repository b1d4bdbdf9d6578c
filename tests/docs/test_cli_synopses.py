"""docs/cli.md's command table: each command's synopsis names every option its parser has."""

from __future__ import annotations

import argparse
import re

from envkit.cli import build_parser
from tests.conftest import ROOT


def _commands(parser: argparse.ArgumentParser, prefix: str = "envkit"):
    """``(words, parser)`` for every command and subcommand (``envkit wsl apply``)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                words = f"{prefix} {name}"
                nested = [a for a in sub._actions if isinstance(a, argparse._SubParsersAction)]
                if nested:
                    yield from _commands(sub, words)
                else:
                    yield words, sub


def _synopses() -> dict[str, str]:
    rows = re.findall(r"^\| `(envkit [^`]*)` \|", (ROOT / "docs" / "cli.md").read_text(), re.M)
    out: dict[str, str] = {}
    for row in rows:
        words = re.match(r"envkit(?: [a-z]+)+", row).group(0)
        out.setdefault(words, row)
    return out


def test_every_option_of_every_command_is_in_its_synopsis():
    synopses = _synopses()
    missing = []
    for words, parser in _commands(build_parser()):
        synopsis = next((s for w, s in synopses.items() if w == words or words.startswith(w + " ")), None)
        if synopsis is None:
            missing.append(f"{words}: no row in docs/cli.md")
            continue
        for action in parser._actions:
            longs = [o for o in action.option_strings if o.startswith("--")] or action.option_strings
            if not longs or "--help" in longs:
                continue
            if not any(re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", synopsis) for o in action.option_strings):
                missing.append(f"{words}: {longs[0]}")
    assert not missing, "docs/cli.md synopses lack:\n" + "\n".join(missing)
