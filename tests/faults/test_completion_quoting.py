"""Bash completion inserts profile names quoted, so a hostile or spaced name stays one inert word.

Readline inserts a COMPREPLY entry as it stands (bash(1), "Programmable Completion"); an unquoted
``z$(touch PWNED-z).yaml`` would run on Enter and ``my profile.yaml`` would be two words.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from envkit.cli import build_parser
from envkit.commands.completion import script

NAMES = ["z$(touch PWNED-z).yaml", "my profile.yaml", "it's.yaml"]

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def _complete(folder: Path, *words: str) -> list[str]:
    """COMPREPLY, one entry per line (NUL-separated), for the last of ``words`` in ``folder``."""
    program = ('source "$ENVKIT_BASH"; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; '
               'COMP_POINT=${#COMP_LINE}; COMPREPLY=(); _shtab_envkit; printf "%s\\0" "${COMPREPLY[@]}"')
    res = subprocess.run(["bash", "-c", program, "bash", *words], cwd=folder, capture_output=True, text=True,
                         timeout=60, env={"PATH": "/usr/bin:/bin", "ENVKIT_BASH": str(folder.parent / "envkit.bash")})
    assert res.returncode == 0, res.stderr
    return [w for w in res.stdout.split("\0") if w]


def _as_words(folder: Path, reply: str) -> list[str]:
    """The words bash makes of ``reply`` where it stands on a command line (expansions run)."""
    res = subprocess.run(["bash", "-c", 'reply=$1; set --; eval "set -- $reply" || exit 3; printf "%s\\0" "$@"', "bash", reply], cwd=folder,
                         capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin"})
    assert res.returncode == 0, res.stderr
    return [w for w in res.stdout.split("\0") if w]


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    (tmp_path / "envkit.bash").write_text(script(build_parser(), "bash"))
    project = tmp_path / "project"
    project.mkdir()
    for name in NAMES:
        (project / name).write_text("name: x\n")
    return project


@pytest.mark.parametrize(("typed", "name"), [("z", NAMES[0]), ("my", NAMES[1]), ("it", NAMES[2])])
@pytest.mark.parametrize("where", [("generate",), ("build", "-f")])
def test_bash_completion_inserts_the_profile_name_quoted(folder, typed, name, where):
    reply = _complete(folder, "envkit", *where, typed)
    assert len(reply) == 1, reply
    assert _as_words(folder, reply[0]) == [name]  # one word, the file's own name
    assert not (folder / "PWNED-z").exists()  # the command substitution in the name never ran
    assert sorted(p.name for p in folder.iterdir()) == sorted(NAMES)


def test_bash_completion_offers_every_profile_quoted(folder):
    reply = _complete(folder, "envkit", "generate", "")
    assert sorted(w for r in reply for w in _as_words(folder, r)) == sorted(NAMES)
    assert not (folder / "PWNED-z").exists()
