"""The layout's rules, read from the source: no import cycles, commands import no command, and
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


def _module_name(path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports() -> dict[str, set[str]]:
    """envkit module -> the envkit modules it imports, at any depth (function-level imports too)."""
    modules = {_module_name(p): p for p in SRC.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
                targets = [f"{base}.{a.name}" for a in node.names] + [base]
            else:
                continue
            for t in targets:
                while t and t not in modules:  # `from pkg import name`: name may be an attribute
                    t = t.rpartition(".")[0]
                if t and t != name and t.startswith("envkit"):
                    deps.add(t)
        graph[name] = deps
    return graph


def test_no_import_cycles():
    graph = _imports()
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for dep in sorted(graph[node]):
            # a package imports its submodules' names only through them; parents are implicit
            if node.startswith(dep + "."):
                continue
            if state.get(dep) == 1:
                raise AssertionError("import cycle: " + " -> ".join(path[path.index(dep):] + [dep]))
            if dep not in state:
                visit(dep)
        path.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)


def test_only_the_cli_imports_commands_and_no_command_imports_another():
    for name, deps in _imports().items():
        commands = {d for d in deps if d.startswith("envkit.commands.")}
        if name in ("envkit.cli",):
            continue
        assert not commands, f"{name} imports {sorted(commands)}"


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


def test_targets_read_the_plan_never_the_profile_or_the_advice():
    """A target is a pure function of the run's plan: no import of envkit.profile or envkit.advice,
    even for annotations (the plan's modules are where those are used)."""
    for name, deps in _imports().items():
        if name == "envkit.targets" or name.startswith("envkit.targets."):
            stray = sorted(d for d in deps if d.startswith(("envkit.profile", "envkit.advice")))
            assert not stray, f"{name} imports {stray}: read it from the plan (envkit.plan) instead"


def test_commands_reach_in_image_paths_through_the_plan_only():
    """In-image paths live in envkit.plan.paths; nothing imports them from a target module."""
    for name, deps in _imports().items():
        if not name.startswith("envkit.targets"):
            assert "envkit.targets.dockerfile" not in deps or name == "envkit.generation", \
                f"{name} imports envkit.targets.dockerfile"


def test_only_the_engine_factory_imports_the_docker_engine():
    """Commands and the rest ask ``envkit.engine.connect()`` for an engine; only it names the Docker one."""
    graph = _imports()
    importers = sorted(name for name, deps in graph.items() if "envkit.engine.docker" in deps)
    assert importers == ["envkit.engine"], importers
    commands = [name for name in graph if name.startswith("envkit.commands")]
    assert commands and not [c for c in commands if "envkit.engine.docker" in graph[c]]


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

    code = ("import sys, envkit.cli as c; c._parse({argv!r}); "
            "print(sorted(m for m in sys.modules if m.startswith('envkit.commands.')))")
    for argv, loaded in ((["schema"], ["envkit.commands.schema"]), (["flags"], ["envkit.commands.flags"])):
        res = subprocess.run([sys.executable, "-c", code.format(argv=argv)], capture_output=True, text=True)
        assert res.stdout.strip() == repr(loaded), (argv, res.stdout, res.stderr)
