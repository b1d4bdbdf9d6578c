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

Commands never import each other (shared argument helpers live here), raise
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

import argparse
import importlib
import math
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import NamedTuple, TextIO

from envkit.errors import UsageError


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
    "init": Command("envkit.commands.init", "write the default profile to envkit.yaml for you to edit"),
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
    "help": Command("envkit.commands.help", "print the help of envkit or of a command (envkit help wsl apply)",
                    whole_parser=True),
}


def load(name: str) -> ModuleType:
    """The module of command ``name`` (a key of :data:`COMMANDS`), imported."""
    return importlib.import_module(COMMANDS[name].module)


# ---------------------------------------------------------------- argument helpers shared by commands
DEFAULT_PROFILE_FILE = Path("envkit.yaml")
PROFILE_ENV = "ENVKIT_PROFILE"
PROFILE_SUFFIXES = (".yaml", ".yml")
# An action whose `completes` is this completes to *.yaml / *.yml files (envkit.commands.completion).
PROFILE_COMPLETION = "profile"


def profile_argument(parser: argparse.ArgumentParser, *, what: str | None = None) -> None:
    """The optional PROFILE positional and its ``-f/--file`` spelling; :func:`resolve_profile` gives the default."""
    found = what or "else the embedded default profile"
    text = (f"profile YAML (default: ${PROFILE_ENV}, else envkit.yaml in this folder or the nearest parent "
            f"up to the repository root, {found})")
    positional = parser.add_argument("profile", nargs="?", type=Path, metavar="PROFILE", help=text)
    option = parser.add_argument("-f", "--file", dest="profile_file", type=Path, metavar="PROFILE",
                                 help="the profile YAML, as the PROFILE argument names it")
    for action in (positional, option):
        action.completes = PROFILE_COMPLETION  # type: ignore[attr-defined]


class Found(NamedTuple):
    """The profile a command uses and how it was found: ``named``, ``env``, ``discovered`` or ``default``."""

    path: Path | None
    how: str


def discover_profile(start: Path, euid: int | None = None) -> Path | None:
    """``envkit.yaml`` in ``start`` or the nearest parent, up to the repository root (the folder holding
    ``.git``) or the filesystem root outside a repository; None when there is none.

    A profile decides what runs and what is mounted (``run.volumes: ["/:/host"]``), so one found by
    walking is trusted as git trusts a repository (safe.directory, CVE-2022-24765): it must belong to
    ``euid`` (default: this process's) or root, else :class:`~envkit.errors.ProfileError` (exit 2);
    and the walk never goes up into a world-writable folder (``/tmp``), where anyone can plant one.
    A profile named with PROFILE, ``-f`` or ``$ENVKIT_PROFILE`` is the user's choice and is not checked.

    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp()); (root / ".git").mkdir(); _ = (root / "envkit.yaml").write_text("")
    >>> (root / "a" / "b").mkdir(parents=True)
    >>> discover_profile(root / "a" / "b") == root / "envkit.yaml"
    True
    >>> (root / "a" / ".git").mkdir()  # a nested repository's root stops the walk
    >>> discover_profile(root / "a" / "b") is None
    True
    """
    if euid is None:
        euid = os.geteuid() if hasattr(os, "geteuid") else None  # Windows: no owner rule
    for folder in (start, *start.parents):
        if folder != start and _world_writable(folder):
            return None
        candidate = folder / DEFAULT_PROFILE_FILE
        if candidate.is_file():
            _check_owner(candidate, euid)
            return candidate
        if (folder / ".git").exists():
            return None
    return None


def _world_writable(folder: Path) -> bool:
    import stat

    try:
        return bool(folder.stat().st_mode & stat.S_IWOTH)
    except OSError:
        return True  # a folder envkit cannot inspect is not one to trust either


def _check_owner(candidate: Path, euid: int | None) -> None:
    from envkit.errors import ProfileError
    from envkit.termtext import neutralise

    owner = candidate.stat().st_uid
    if euid is None or owner in (euid, 0):
        return
    try:
        import pwd

        who = f"uid {owner} ({pwd.getpwuid(owner).pw_name})"
    except (ImportError, KeyError):
        who = f"uid {owner}"
    raise ProfileError(f"{neutralise(str(candidate))}: found by looking up from this folder, but owned by {who}, "
                       "not by you or root; envkit does not use a profile another user could have put there "
                       "(as git refuses such a repository, safe.directory)",
                       hint=f"if you trust it, name it: -f {neutralise(str(candidate))}; or run envkit where "
                            "your own envkit.yaml is")


def find_profile(named: Path | None, file: Path | None, environ: Mapping[str, str], cwd: Path) -> Found:
    """The profile for PROFILE / ``-f`` (never both: UsageError), else ``$ENVKIT_PROFILE``, else discovery.

    >>> find_profile(None, Path("p.yaml"), {}, Path("/nonexistent"))
    Found(path=PosixPath('p.yaml'), how='named')
    >>> find_profile(None, None, {"ENVKIT_PROFILE": "team.yaml"}, Path("/nonexistent"))
    Found(path=PosixPath('team.yaml'), how='env')
    >>> find_profile(None, None, {}, Path("/nonexistent"))
    Found(path=None, how='default')
    """
    if named is not None and file is not None:
        raise UsageError(f"the profile is named twice ({named} and -f {file}); give PROFILE or -f, not both")
    if named is not None or file is not None:
        return Found(named or file, "named")
    if environ.get(PROFILE_ENV):
        return Found(Path(environ[PROFILE_ENV]), "env")
    found = discover_profile(cwd)
    if found is None:
        return Found(None, "default")
    return Found(_shown(found, cwd), "discovered")


def _shown(path: Path, cwd: Path) -> Path:
    """``path`` as the user would type it from ``cwd``: ``envkit.yaml``, ``../envkit.yaml``, ...

    >>> _shown(Path("/p/envkit.yaml"), Path("/p/a/b"))
    PosixPath('../../envkit.yaml')
    """
    ups = len(cwd.parts) - len(path.parent.parts)
    return Path(*([".."] * ups), path.name) if ups else Path(path.name)


def resolve_profile(args: argparse.Namespace, err: TextIO | None = None) -> Path | None:
    """The profile for a command's parsed PROFILE / ``-f`` (see :func:`find_profile`); None: the embedded default.

    A profile found through ``$ENVKIT_PROFILE`` or in a parent folder is said on ``err`` (default stderr),
    as ``envkit: using PATH``; one named on the command line, or ./envkit.yaml, is not.
    """
    found = find_profile(args.profile, getattr(args, "profile_file", None), os.environ, Path.cwd())
    said = found.how == "env" or (found.how == "discovered" and found.path != DEFAULT_PROFILE_FILE)
    if said:
        source = f"${PROFILE_ENV}" if found.how == "env" else "the nearest envkit.yaml"
        print(f"envkit: using {found.path} ({source})", file=err or sys.stderr)
    return found.path


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
