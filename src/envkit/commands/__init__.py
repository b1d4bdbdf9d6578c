"""One module per subcommand, and the one registry of them: :data:`COMMANDS`.

:data:`COMMANDS` maps each command's name to its module in this package; ``envkit.cli`` reads
only it (the parser, ``envkit --help``, the dispatch). A command module exposes:

- ``add_arguments(parser: argparse.ArgumentParser) -> None``: its arguments and options;
- ``main(args: argparse.Namespace) -> int``: run it from the parsed arguments, writing to
  ``sys.stdout`` and ``sys.stderr``, and return the exit code. It unpacks ``args`` into the
  module's typed ``run(...)``, which tests call directly.

``args.root_parser`` is the whole CLI's parser (``help`` and ``completion`` read it).

A command whose entry has ``raw_argv`` set takes its options from a parser of its own (the
harness's, shipped inside images): it exposes ``build_parser()`` (that parser, which
``envkit --help``, ``envkit help NAME`` and completion read) and ``main(argv: list[str]) -> int``,
``envkit NAME ...`` hands it every word after ``NAME`` untouched (so ``envkit NAME --help`` is
that parser's help), and it has no ``add_arguments``.

Commands never import each other (the arguments they share are :mod:`envkit.commands.arguments`'s), raise
:class:`~envkit.errors.EnvkitError` for user-facing failures, and are imported only when run
(the parser holds only the running command's arguments; ``help`` and ``completion`` get the whole CLI's).

Adding a command: write ``envkit/commands/<module>.py`` with the two names above and add one
line (its module and help line) to :data:`COMMANDS`.

Example:
    >>> COMMANDS["wsl"]
    Command(module='envkit.commands.wsl_apply', help='WSL2 helpers', raw_argv=False, whole_parser=False)
    >>> sorted(name for name, command in COMMANDS.items() if command.raw_argv)
    ['harness', 'watch']
    >>> COMMANDS["schema"].help
    "print the profile's JSON Schema"
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import NamedTuple


class Command(NamedTuple):
    """A registry entry: the command's module, its line in ``envkit --help``, whether it takes its raw argv
    (see the module docs), and whether it reads the whole CLI's parser (``args.root_parser``)."""

    module: str
    help: str
    raw_argv: bool = False
    whole_parser: bool = False


# In the order `envkit --help` lists them. The help lines live here, so `envkit --help` and a command's
# own run import no other command's module.
COMMANDS: dict[str, Command] = {
    "generate": Command("envkit.commands.generate",
                        "render Dockerfile, run.sh, compose.yaml, devcontainer.json, WSL files"),
    "flags": Command("envkit.commands.flags", "print the docker run flags on one shell-quoted line"),
    "init": Command("envkit.commands.init", "write a profile sized for this machine (or a preset) to envkit.yaml for you to edit"),
    "schema": Command("envkit.commands.schema", "print the profile's JSON Schema"),
    "harness": Command("envkit.commands.harness",
                       "run the loader harness on this host (envkit harness --help for its options)", raw_argv=True),
    "watch": Command("envkit.commands.watch", "watch /dev/shm and a DataLoader's workers; warn before shm runs out",
                     raw_argv=True),
    "lock": Command("envkit.commands.lock",
                    "pin the image's packages with hashes into envkit.lock.txt beside the profile"),
    "build": Command("envkit.commands.build", "build the image through the Docker engine"),
    "validate": Command("envkit.commands.validate",
                        "build, then run the harness in a container with the profile's settings"),
    "bundle": Command("envkit.commands.bundle",
                      "write an OCI bundle of the built image for Slurm's srun --container "
                      "(run it as the user who submits: a non-root user's bundle is rootless)"),
    "doctor": Command("envkit.commands.doctor", "check this host (Linux, WSL2, Windows) and training scripts"),
    "clean": Command("envkit.commands.clean",
                     "remove leftovers of killed envkit runs and images superseded by a rebuild, and list them"),
    "wsl": Command("envkit.commands.wsl_apply", "WSL2 helpers"),
    "completion": Command("envkit.commands.completion",
                          "print a shell completion script (bash, zsh, fish, powershell); docs/cli.md says where "
                          "it goes", whole_parser=True),
    "help": Command("envkit.commands.help", "print the help of envkit or of a command (envkit help wsl apply), "
                    "or a guide (envkit help profile)",
                    whole_parser=True),
}


def load(name: str) -> ModuleType:
    """The module of command ``name`` (a key of :data:`COMMANDS`), imported."""
    return importlib.import_module(COMMANDS[name].module)
