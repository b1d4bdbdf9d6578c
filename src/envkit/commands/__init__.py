"""One module per subcommand, and the one registry of them: :data:`COMMANDS`.

:data:`COMMANDS` maps each command's name to its module in this package; ``envkit.cli`` reads
only it (the parser, ``envkit --help``, the dispatch). A command module exposes:

- ``HELP: str``: its line in ``envkit --help``;
- ``add_arguments(parser: argparse.ArgumentParser) -> None``: its arguments and options;
- ``main(args: argparse.Namespace) -> int``: run it from the parsed arguments, writing to
  ``sys.stdout`` and ``sys.stderr``, and return the exit code. It unpacks ``args`` into the
  module's typed ``run(...)``, which tests call directly.

A command whose entry has ``raw_argv`` set takes its options from a parser of its own (the
harness's, shipped inside images): it exposes ``HELP`` and ``main(argv: list[str]) -> int``,
``envkit NAME ...`` hands it every word after ``NAME`` untouched (so ``envkit NAME --help`` is
that parser's help), and it has no ``add_arguments``.

Commands never import each other (shared argument helpers live here), raise
:class:`~envkit.errors.EnvkitError` for user-facing failures, and are imported only when run
or when the parser is built.

Adding a command: write ``envkit/commands/<module>.py`` with the three names above and add one
line to :data:`COMMANDS`.

Example:
    >>> COMMANDS["wsl"]
    Command(module='envkit.commands.wsl_apply', raw_argv=False)
    >>> sorted(name for name, command in COMMANDS.items() if command.raw_argv)
    ['harness', 'watch']
    >>> load("schema").HELP
    "print the profile's JSON Schema"
"""

from __future__ import annotations

import argparse
import importlib
import math
from pathlib import Path
from types import ModuleType
from typing import NamedTuple


class Command(NamedTuple):
    """A registry entry: the command's module, and whether it takes its raw argv (see the module docs)."""

    module: str
    raw_argv: bool = False


# In the order `envkit --help` lists them.
COMMANDS: dict[str, Command] = {
    "generate": Command("envkit.commands.generate"),
    "flags": Command("envkit.commands.flags"),
    "init": Command("envkit.commands.init"),
    "schema": Command("envkit.commands.schema"),
    "harness": Command("envkit.commands.harness", raw_argv=True),
    "watch": Command("envkit.commands.watch", raw_argv=True),
    "lock": Command("envkit.commands.lock"),
    "build": Command("envkit.commands.build"),
    "validate": Command("envkit.commands.validate"),
    "bundle": Command("envkit.commands.bundle"),
    "doctor": Command("envkit.commands.doctor"),
    "clean": Command("envkit.commands.clean"),
    "wsl": Command("envkit.commands.wsl_apply"),
}


def load(name: str) -> ModuleType:
    """The module of command ``name`` (a key of :data:`COMMANDS`), imported."""
    return importlib.import_module(COMMANDS[name].module)


# ---------------------------------------------------------------- argument helpers shared by commands
DEFAULT_PROFILE_FILE = Path("envkit.yaml")


def profile_argument(parser: argparse.ArgumentParser) -> None:
    """The optional PROFILE positional; :func:`resolve_profile` gives its default."""
    parser.add_argument("profile", nargs="?", type=Path, metavar="PROFILE",
                        help="profile YAML (default: ./envkit.yaml if present, else the embedded default profile)")


def resolve_profile(path: Path | None) -> Path | None:
    """No PROFILE given: ./envkit.yaml when it exists (what `envkit init` writes), else None (the embedded default)."""
    if path is None and DEFAULT_PROFILE_FILE.is_file():
        return DEFAULT_PROFILE_FILE
    return path


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
