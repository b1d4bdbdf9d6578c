"""Help that tells the truth, shell completion from the parser, and how a command finds its profile."""

from __future__ import annotations

import argparse
import io
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from envkit.cli import build_parser
from envkit.commands import COMMANDS
from envkit.profile.discovery import find_profile
from envkit.commands.completion import SHELLS, nodes, script
from envkit.errors import UsageError
from envkit.targets import TARGET_NAMES
from tests.conftest import call_envkit


def _parsers(parser: argparse.ArgumentParser, words: tuple[str, ...] = ()):
    yield words, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, words + (name,))


def test_every_option_and_argument_of_every_command_has_help():
    walked, missing = set(), []
    for words, parser in _parsers(build_parser()):
        walked.add(words)
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                missing += [f"{' '.join(words)} {a.dest}" for a in action._choices_actions if not a.help]
            elif not action.help or action.help == argparse.SUPPRESS:
                missing.append(f"envkit {' '.join(words)}: {'/'.join(action.option_strings) or action.dest}")
    assert not missing, missing
    assert ("wsl", "apply") in walked and ("harness",) in walked and {(n,) for n in COMMANDS} <= walked


def test_harness_help_is_envkits_own_and_lists_profile():
    res = call_envkit("harness", "--help")
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("usage: envkit harness ") and "--profile PROFILE" in res.stdout
    assert "envkit harness" in call_envkit("help", "harness").stdout


def test_doctor_help_states_its_real_default():
    text = " ".join(call_envkit("doctor", "--help").stdout.split())
    assert "the host is checked alone" in text and "embedded default" not in text


def test_help_prints_the_top_level_or_a_command_and_refuses_an_unknown_one():
    top = call_envkit("help")
    assert top.returncode == 0 and top.stdout == call_envkit("--help").stdout
    nested = call_envkit("help", "wsl", "apply")
    assert nested.returncode == 0 and nested.stdout == call_envkit("wsl", "apply", "--help").stdout
    bad = call_envkit("help", "gnerate")
    assert bad.returncode == 2 and "did you mean 'generate'?" in bad.stderr


def _bash_complete(tmp_path: Path, *words: str) -> list[str]:
    """What bash offers for the last of ``words`` with envkit's sourced completion script."""
    (tmp_path / "envkit.bash").write_text(script(build_parser(), "bash"))
    line = " ".join(words)
    program = ('source envkit.bash; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; '
               'COMP_POINT=${#COMP_LINE}; COMPREPLY=(); _shtab_envkit; printf "%s\\n" "${COMPREPLY[@]}"')
    res = subprocess.run(["bash", "-c", program, "bash", *words], cwd=tmp_path, capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 0, (line, res.stderr)
    return sorted(w for w in res.stdout.splitlines() if w)


def test_bash_completion_is_sourced_and_completes_commands_targets_and_profiles(tmp_path):
    res = subprocess.run(["bash", "-c", "source <(\"$0\" -m envkit completion bash) && type _shtab_envkit",
                          sys.executable], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and "function" in res.stdout, res.stderr
    assert _bash_complete(tmp_path, "envkit", "gen") == ["generate"]
    assert _bash_complete(tmp_path, "envkit", "generate", "--target", "k") == ["k8s"]
    assert _bash_complete(tmp_path, "envkit", "generate", "--target", "") == sorted(TARGET_NAMES)
    for name in ("team.yaml", "ci.yml", "notes.txt"):
        (tmp_path / name).write_text("")
    assert _bash_complete(tmp_path, "envkit", "flags", "") == ["ci.yml", "team.yaml"]
    assert _bash_complete(tmp_path, "envkit", "lock", "-f", "") == ["ci.yml", "team.yaml"]
    assert _bash_complete(tmp_path, "envkit", "wsl", "ap") == ["apply"]
    assert _bash_complete(tmp_path, "envkit", "harness", "--pro") == ["--profile"]


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed")
def test_fish_completion_completes_commands_targets_and_profiles(tmp_path):
    (tmp_path / "envkit.fish").write_text(script(build_parser(), "fish"))
    for name in ("team.yaml", "ci.yml", "notes.txt"):
        (tmp_path / name).write_text("")

    def complete(line: str) -> list[str]:
        res = subprocess.run(["fish", "--no-config", "-c", f"source envkit.fish; complete -C {shlex.quote(line)}"],
                             cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert res.returncode == 0 and not res.stderr, (line, res.stderr)
        return sorted(w.split("\t")[0] for w in res.stdout.splitlines())

    assert complete("envkit gen") == ["generate"]
    assert complete("envkit generate --target k") == ["k8s"]
    assert complete("envkit flags ") == ["ci.yml", "team.yaml"]
    assert complete("envkit lock -f ") == ["ci.yml", "team.yaml"]
    assert complete("envkit wsl ") == ["apply"]
    assert complete("envkit completion ") == sorted(SHELLS)


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_zsh_completion_parses(tmp_path):
    (tmp_path / "_envkit").write_text(script(build_parser(), "zsh"))
    res = subprocess.run(["zsh", "-n", str(tmp_path / "_envkit")], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr


@pytest.mark.parametrize("shell", SHELLS)
def test_every_shell_gets_a_script_naming_every_command_and_target(shell):
    res = call_envkit("completion", shell)
    assert res.returncode == 0, res.stderr
    assert all(name in res.stdout for name in (*COMMANDS, *TARGET_NAMES)), shell


def test_the_completion_tree_marks_every_profile():
    found = {n.words: n for n in nodes(build_parser())}
    assert found[("generate",)].profile and found[("wsl", "apply")].profile and not found[("schema",)].profile
    options = {f: o for o in found[("generate",)].options for f in o.flags}
    assert options["-f"].profile and options["--target"].choices == list(TARGET_NAMES)
    assert {f for o in found[("harness",)].options if o.profile for f in o.flags} == {"--profile"}


# ---------------------------------------------------------------- profile discovery
def test_both_profile_spellings_at_once_are_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="not both"):
        find_profile(Path("a.yaml"), Path("b.yaml"), {}, tmp_path)
    res = call_envkit("flags", "a.yaml", "-f", "b.yaml", cwd=tmp_path)
    assert res.returncode == 2 and "not both" in res.stderr


PROFILE = "envkit: 1\nname: found\nimage: {base: debian:bookworm}\nrun: {shm_size: 3g}\n"


def test_from_a_subfolder_flags_uses_the_nearest_envkit_yaml_and_says_so(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "envkit.yaml").write_text(PROFILE)
    sub = tmp_path / "src" / "pkg"
    sub.mkdir(parents=True)
    res = call_envkit("flags", cwd=sub)
    assert res.returncode == 0, res.stderr
    assert "--shm-size=3g" in res.stdout
    assert "envkit: using ../../envkit.yaml (the nearest envkit.yaml)" in res.stderr.splitlines()
    here = call_envkit("flags", cwd=tmp_path)
    assert "--shm-size=3g" in here.stdout and "using" not in here.stderr  # ./envkit.yaml: not said


def test_discovery_stops_at_the_repository_root(tmp_path):
    (tmp_path / "envkit.yaml").write_text(PROFILE)
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    res = call_envkit("flags", cwd=repo)
    assert res.returncode == 0 and "--shm-size=3g" not in res.stdout and "using the embedded default profile" in res.stderr


def test_envkit_profile_names_the_profile_and_is_said(tmp_path):
    (tmp_path / "team.yaml").write_text(PROFILE)
    res = call_envkit("flags", cwd=tmp_path, env={"ENVKIT_PROFILE": "team.yaml"})
    assert "--shm-size=3g" in res.stdout and "envkit: using team.yaml ($ENVKIT_PROFILE)" in res.stderr
    named = call_envkit("flags", "-f", "team.yaml", cwd=tmp_path, env={"ENVKIT_PROFILE": "missing.yaml"})
    assert named.returncode == 0 and "--shm-size=3g" in named.stdout and "using" not in named.stderr


def test_wsl_apply_never_falls_back_to_the_embedded_default(tmp_path):
    (tmp_path / ".git").mkdir()
    res = call_envkit("wsl", "apply", "--wslconfig", str(tmp_path / ".wslconfig"), "--dry-run", cwd=tmp_path)
    assert res.returncode == 2 and "no profile" in res.stderr
    assert not (tmp_path / ".wslconfig").exists()


def test_help_output_goes_to_stdout_only():
    from envkit.commands.help import run

    buf = io.StringIO()
    assert run(build_parser(), [], out=buf) == 0 and buf.getvalue().startswith("usage: envkit")


def test_help_prints_a_shipped_guide_and_completes_its_topics(capsys):
    from envkit.cli import build_parser, main
    from envkit.commands.completion import fish_script
    from tests.conftest import ROOT

    assert main(["help", "profile"]) == 0
    assert capsys.readouterr().out == (ROOT / "docs" / "profile.md").read_text()
    assert main(["help", "windws"]) == 2
    assert "did you mean 'windows'" in capsys.readouterr().err
    fish = fish_script(build_parser())
    help_values = next(line for line in fish.splitlines() if "__envkit_at help" in line and " -a " in line
                       and "windows" in line)
    for word in ("generate", "apply", "profile", "windows", "validate"):
        assert word in help_values, word
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert '"docs" = "envkit/docs"' in pyproject  # the wheel carries the guides


def test_the_top_level_help_says_where_the_guides_are(capsys):
    from envkit.cli import main

    main([])
    assert "envkit help TOPIC" in capsys.readouterr().out
