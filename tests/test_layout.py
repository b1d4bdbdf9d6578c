"""The layout's rules, read from the source: the import contracts (import-linter, pyproject.toml), each
package one layer (read by folder and by module, the layers agree), no import inside a function that goes up
a layer, and each target's name appears only in its own module, its template and the registry."""

from __future__ import annotations

import ast
import io
import re
import subprocess
import tokenize
from typing import NamedTuple

import pytest

from envkit.targets import TARGET_NAMES
from tests.conftest import ROOT

SRC = ROOT / "src"
tomllib = pytest.importorskip("tomllib")  # Python 3.11+: the contracts are read from pyproject.toml


def _contracts() -> list[dict]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]


class Layer(NamedTuple):
    rooms: tuple[str, ...]
    independent: bool  # "|" siblings import nothing from each other; ":" siblings may


def _main_layers() -> list[Layer]:
    """The rooms of each layer of the main contract (the one without containers), top down."""
    main = [c for c in _contracts() if c["type"] == "layers" and not c.get("containers")]
    assert len(main) == 1, "one layers contract runs from the CLI down to the harness"
    return [Layer(tuple(room.strip() for room in re.split(r"[|:]", layer)), "|" in layer) for layer in main[0]["layers"]]


def _rooms_on_disk() -> set[str]:
    """Every top-level module and package of envkit: ``envkit.<name>``."""
    top = SRC / "envkit"
    return {f"envkit.{p.stem}" for p in top.glob("*.py") if p.name != "__init__.py"} | \
        {f"envkit.{p.name}" for p in top.iterdir() if (p / "__init__.py").is_file()}


def room_of(module: str) -> str | None:
    """The room (top-level module or package) a dotted module name belongs to; None for the root package.

    >>> room_of("envkit.plan.runsettings"), room_of("envkit.cli"), room_of("envkit")
    ('envkit.plan', 'envkit.cli', None)
    """
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else None


def test_each_layer_names_whole_rooms_and_every_room_is_in_one():
    """Each layer entry is a whole top-level module or package, so no package spans two layers (read by folder,
    each package is one room; read by module, import-linter's layers are the same), and no room is left out."""
    rooms = [room for layer in _main_layers() for room in layer.rooms]
    partial = [room for room in rooms if room_of(room) != room]
    assert not partial, f"layer entries that are part of a package (the package then spans layers): {partial}"
    twice = sorted({room for room in rooms if rooms.count(room) > 1})
    assert not twice, f"rooms in two layers: {twice}"
    missing = sorted(_rooms_on_disk() - set(rooms))
    assert not missing, f"rooms in no layer (import-linter would not check them): {missing}"
    assert not set(rooms) - _rooms_on_disk(), sorted(set(rooms) - _rooms_on_disk())


def _function_imports(source: str, module: str) -> list[tuple[int, str]]:
    """(line, imported module) of every import inside a function of ``source`` (the module ``module``)."""
    found = []
    for fn in ast.walk(ast.parse(source)):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.Import):
                found += [(node.lineno, alias.name) for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:  # relative: within the importer's own package
                    base = module.split(".")[:-node.level] if not module.endswith("__init__") else module.split(".")
                    found.append((node.lineno, ".".join(base + ([node.module] if node.module else []))))
                elif node.module == "envkit":  # from envkit import planner: the module, else the root's names
                    found += [(node.lineno, f"envkit.{alias.name}") for alias in node.names
                              if room_of(f"envkit.{alias.name}") in _rooms_on_disk()]
                elif node.module:
                    found.append((node.lineno, node.module))
    return found


def layer_crossings(source: str, module: str, layers: list[Layer]) -> list[str]:
    r"""The function-level imports in ``source`` that go up a layer or across to an independent sibling.

    >>> layers = [Layer(("envkit.planner", "envkit.targets"), True), Layer(("envkit.advice",), False)]
    >>> layer_crossings("def f():\n    from envkit.planner import x\n", "envkit.advice.team", layers)
    ['envkit.advice.team:2 imports envkit.planner, a layer above']
    >>> layer_crossings("def f():\n    from envkit.targets import x\n", "envkit.planner", layers)
    ['envkit.planner:2 imports envkit.targets, an independent sibling']
    >>> layer_crossings("def f():\n    from envkit.advice.team import x\n", "envkit.planner", layers)
    []
    """
    index = {room: i for i, layer in enumerate(layers) for room in layer.rooms}
    here = room_of(module)
    out = []
    for line, target in _function_imports(source, module):
        there = room_of(target)
        if there is None or there == here or target.split(".")[0] != "envkit":
            continue
        if index[there] < index[here]:
            out.append(f"{module}:{line} imports {target}, a layer above")
        elif index[there] == index[here] and layers[index[here]].independent:
            out.append(f"{module}:{line} imports {target}, an independent sibling")
    return out


def test_no_import_inside_a_function_goes_up_a_layer():
    """A lazy import is for cost (docker-py, the templates), never to dodge a layer: read by folder, every import
    inside a function goes to its own room or a layer below."""
    layers = _main_layers()
    crossings = []
    for path in sorted((SRC / "envkit").rglob("*.py")):
        module = ".".join(path.relative_to(SRC).with_suffix("").parts)
        crossings += layer_crossings(path.read_text(), module.removesuffix(".__init__"), layers)
    assert not crossings, crossings


def test_the_import_contracts_hold(capsys):
    """pyproject.toml's [tool.importlinter] contracts: the layers from the CLI down to the harness (no
    import runs up, so no cycle), commands independent of each other, targets off the profile and the
    advice, the Dockerfile target and the Docker engine each reached through one module only."""
    from importlinter.cli import lint_imports

    code = lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True)
    assert code == 0, capsys.readouterr().out


def test_a_target_name_lives_in_its_module_template_and_registry_only():
    for target in TARGET_NAMES:
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
