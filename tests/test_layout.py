"""The layout's rules, read from the source: the import contracts (import-linter, pyproject.toml), and
each target's name appears only in its own module, its template and the registry."""

from __future__ import annotations

import ast
import io
import re
import subprocess
import tokenize

from envkit.targets import TARGETS
from tests.conftest import ROOT

SRC = ROOT / "src"


def test_the_import_contracts_hold(capsys):
    """pyproject.toml's [tool.importlinter] contracts: the layers from the CLI down to the harness (no
    import runs up, so no cycle), commands independent of each other, targets off the profile and the
    advice, the Dockerfile target and the Docker engine each reached through one module only."""
    from importlinter.cli import lint_imports

    code = lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True)
    assert code == 0, capsys.readouterr().out


def test_a_target_name_lives_in_its_module_template_and_registry_only():
    for target in TARGETS:
        hits = subprocess.run(["git", "grep", "-n", f'"{target}"', "--", "src", "templates"], cwd=ROOT,
                              capture_output=True, text=True).stdout.splitlines()
        allowed = (f"src/envkit/targets/{target}.py:", "src/envkit/targets/__init__.py:", "src/envkit/plan/registry.py:")
        stray = [h for h in hits if not h.startswith(allowed) and not h.startswith("templates/")]
        # A target's name may also be an ordinary word elsewhere (the profile's `run:` and `wsl:`
        # sections, the `wsl` subcommand): only spellings that select a target are strays.
        stray = [h for h in stray
                 if re.search(rf'(TARGETS|targets?|--target)\W.*"{target}"|\("{target}",\)', h.split(":", 2)[2])]
        assert not stray, f"target {target!r} named outside its module and the registry: {stray}"


def test_every_command_comes_from_the_registry_and_keeps_its_contract():
    """cli.py names no command; each registry entry's module exposes what its kind needs."""
    import importlib

    from envkit.commands import COMMANDS

    strings = {n.value for n in ast.walk(ast.parse((SRC / "envkit" / "cli.py").read_text()))
               if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    assert not strings & set(COMMANDS), sorted(strings & set(COMMANDS))
    for name, command in COMMANDS.items():
        module = importlib.import_module(command.module)
        assert isinstance(command.help, str) and command.help and not hasattr(module, "HELP"), name
        assert callable(module.main), name
        assert command.raw_argv or callable(module.add_arguments), name


ISSUE_NUMBER = re.compile(r"\bissue\s*#?\d+", re.I)


def _comments(path) -> list[tuple[int, str]]:
    """(line, text) of every comment and docstring in a Python file."""
    text = path.read_text()
    found = [(tok.start[0], tok.string) for tok in tokenize.generate_tokens(io.StringIO(text).readline)
             if tok.type == tokenize.COMMENT]
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = node.body[0] if node.body else None
            if isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant) and isinstance(doc.value.value, str):
                found.append((doc.lineno, doc.value.value))
    return found


def test_no_commented_out_docstring_example():
    """A docstring example runs as a doctest, or it is not written as one: no ``>>> #`` in src/."""
    stray = [f"{p.relative_to(ROOT)}:{n}" for p in sorted(SRC.rglob("*.py"))
             for n, line in enumerate(p.read_text().splitlines(), 1) if ">>> #" in line]
    assert not stray, f"commented-out docstring examples (make each a real example or remove it): {stray}"


def test_comments_state_the_constraint_not_the_issue():
    """No issue numbers in src/'s comments and docstrings or in templates/: a comment says what must hold."""
    stray = [f"{p.relative_to(ROOT)}:{n}" for p in sorted(SRC.rglob("*.py")) for n, text in _comments(p)
             if ISSUE_NUMBER.search(text)]
    others = [p for p in sorted((ROOT / "templates").rglob("*")) if p.is_file()]
    others += [p for p in sorted(SRC.rglob("*")) if p.is_file() and p.suffix in (".yaml", ".j2", ".sh")]
    stray += [f"{p.relative_to(ROOT)}:{n}" for p in others
              for n, line in enumerate(p.read_text().splitlines(), 1) if ISSUE_NUMBER.search(line)]
    assert not stray, f"issue numbers in comments (state the constraint instead): {stray}"


def test_a_command_run_imports_no_other_commands_module():
    """The parser of ``envkit NAME ...`` holds NAME's arguments only: no other command module is imported
    (``envkit --help`` reads each help line from the registry)."""
    import sys

    code = ("import sys, envkit.cli as c; from envkit.commands import COMMANDS; c._parse({argv!r}); "
            "print(sorted(m for m in sys.modules if m in {{k.module for k in COMMANDS.values()}}))")
    for argv, loaded in ((["schema"], ["envkit.commands.schema"]), (["flags"], ["envkit.commands.flags"])):
        res = subprocess.run([sys.executable, "-c", code.format(argv=argv)], capture_output=True, text=True)
        assert res.stdout.strip() == repr(loaded), (argv, res.stdout, res.stderr)
