"""User-facing texts (every string in src/envkit that is not a docstring, and every template) name nothing that
lives only in this repository: its scripts are not in the wheel, and they build the tests' images."""

from __future__ import annotations

import ast
import re

from tests.conftest import ROOT

INTERNAL = re.compile(r"\b(?:docker|tools|\.ci|tests)/[\w.-]+\.(?:sh|py|mjs)\b|\.ci/run\b")


def _strings(tree: ast.AST):
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            yield node.lineno, node.value


def test_the_pattern_finds_repository_scripts():
    assert INTERNAL.search("or run `sudo bash docker/base-image.sh`") and INTERNAL.search("docker/engine-up.sh")
    assert not INTERNAL.search("/etc/docker/daemon.json") and not INTERNAL.search("docker compose build")


def test_no_message_names_a_repository_script():
    found = []
    for path in sorted((ROOT / "src" / "envkit").rglob("*.py")):
        for line, text in _strings(ast.parse(path.read_text(), str(path))):
            found += [f"{path.relative_to(ROOT)}:{line}: {m.group(0)}" for m in INTERNAL.finditer(text)]
    for path in sorted(p for p in (ROOT / "templates").rglob("*") if p.is_file()):
        text = path.read_text(errors="replace")
        found += [f"{path.relative_to(ROOT)}: {m.group(0)}" for m in INTERNAL.finditer(text)]
    assert not found, "user-facing texts that name this repository's files:\n" + "\n".join(found)
