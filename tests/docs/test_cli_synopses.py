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


def test_the_bad_input_samples_allowed_keys_are_the_image_sections_keys():
    from envkit.profile.sections import Image

    line = next(line for line in (ROOT / "docs" / "cli.md").read_text().splitlines() if "image.torhc: unknown key" in line)
    shown = line.split("allowed keys here: ", 1)[1].split(", ")
    assert shown == sorted(Image.model_fields)


def test_a_bare_envkit_lists_the_commands(capsys):
    from envkit.cli import main
    from envkit.commands import COMMANDS

    assert main([]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: envkit") and all(f"\n    {name}" in out for name in COMMANDS)


def test_the_embedded_default_is_announced_on_stderr(tmp_path, monkeypatch, capsys):
    from envkit.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ENVKIT_PROFILE", raising=False)
    assert main(["flags"]) == 0
    assert "using the embedded default profile" in capsys.readouterr().err
    (tmp_path / "envkit.yaml").write_text("envkit: 1\nname: x\nimage: {base: 'debian:bookworm'}\n")
    assert main(["flags"]) == 0
    assert "embedded" not in capsys.readouterr().err
