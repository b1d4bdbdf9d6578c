"""The target registry (envkit.plan.registry) is the one record of each target: each target renders only under the
names its record declares, the project copy leaves all of them out, every registered module holds to
envkit.targets.TargetModule, and docs/contributing.md's recipe lists every place a target touches."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import re
from dataclasses import replace
from pathlib import Path

import jinja2
import pytest

from envkit.generation import render_owned
from envkit.plan import registry
from envkit.plan.registry import REGISTRY, output_names
from envkit.planner import build_plan
from envkit.profile import load_profile
from envkit.render import make_env, templates_dir
from envkit.targets import render_targets
from tests.conftest import ROOT, call_envkit, copy_example, example_profiles


@pytest.mark.parametrize("example", [p.name for p in example_profiles()])
def test_each_target_renders_only_under_the_names_its_registry_line_declares(example, tmp_path):
    files, owners = render_owned(build_plan(load_profile(copy_example(example, tmp_path)), tmp_path / "out"))
    for f in files:
        top = f.path.split("/", 1)[0]
        assert top in REGISTRY[owners[f.path]].outputs, f"{owners[f.path]} renders {f.path}, not in its record"


def _envkit_files_in_project_copy(project: Path) -> list[str]:
    copied = project / ".envkit" / "project"
    names = output_names()
    return sorted(p.relative_to(copied).as_posix() for p in copied.rglob("*")
                  if p.relative_to(copied).parts[0] in names) if copied.is_dir() else []


def test_two_generates_into_the_profiles_folder_copy_no_envkit_output_into_the_project(tmp_path):
    profile = copy_example("cluster-2node.yaml", tmp_path)
    text = profile.read_text()
    if "copy_project" not in text:
        text = text.replace("image:\n", "image:\n  copy_project: true\n", 1)
        profile.write_text(text)
    (tmp_path / "train.py").write_text("print(1)\n")
    for _ in range(2):
        res = call_envkit("generate", "-o", ".", str(profile.name), cwd=tmp_path)
        assert res.returncode == 0, res.stderr
    assert (tmp_path / "k8s.yaml").is_file() and (tmp_path / "slurm.sbatch").is_file()
    assert (tmp_path / ".envkit" / "project" / "train.py").is_file()
    assert _envkit_files_in_project_copy(tmp_path) == []


def protocol_problems(name: str, module) -> list[str]:
    """How ``module`` (target ``name``'s) differs from TargetModule: a missing function, another signature."""
    from envkit.targets import TargetModule

    problems = []
    for attr in ("render", "warnings"):
        fn = getattr(module, attr, None)
        if not callable(fn):
            problems.append(f"{name}: no {attr}()")
            continue
        want, got = inspect.signature(getattr(TargetModule, attr)), inspect.signature(fn)
        if [(p.name, p.kind, p.annotation) for p in got.parameters.values()] != \
                [(p.name, p.kind, p.annotation) for p in list(want.parameters.values())[1:]] \
                or got.return_annotation != want.return_annotation:
            problems.append(f"{name}: {attr}{got}, not {attr}{want}")
    return problems


def test_every_registered_target_module_holds_to_the_protocol():
    """Each record's module has ``render(ctx)`` and ``warnings(plan)`` with TargetModule's signatures; nothing else
    of a module is read (targets/__init__.py calls no getattr: every other fact is the record's)."""
    problems = [p for name, target in REGISTRY.items() for p in protocol_problems(name, importlib.import_module(target.module))]
    assert not problems, problems
    tree = ast.parse((ROOT / "src" / "envkit" / "targets" / "__init__.py").read_text())
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id in ("getattr", "hasattr")]


def test_the_protocol_check_fails_a_module_without_warnings_or_with_another_signature():
    import types

    def render(ctx):  # no annotations
        return []

    problems = protocol_problems("x", types.SimpleNamespace(render=render))
    assert len(problems) == 2 and problems[0].startswith("x: render(ctx), not render(") and problems[1] == "x: no warnings()"


# ---------------------------------------------------------------- docs/contributing.md's recipe against the targets

RECIPE_ITEM = re.compile(r"^\d+\. \*\*(?P<title>[^*]+)\*\*[^`]*`(?P<place>[^`]+)`(?P<rest>.*?)(?=^\d+\. |\Z)", re.M | re.S)


def recipe(text: str) -> dict[str, bool]:
    """The places docs/contributing.md's "adding a target" recipe lists (``text``: the file), each with whether
    every target touches it (False: an item marked *only*)."""
    section = text.split("## Contributing: adding a target", 1)[1].split("\n## ", 1)[0]
    items = {m["place"]: "*only*" not in m.group(0) for m in RECIPE_ITEM.finditer(section.split("\n\n", 2)[2])}
    assert len(items) >= 5, f"the recipe's numbered list was not found: {items}"
    return items


class _Recording(jinja2.FileSystemLoader):
    """The template loader, noting each template a render loads (an extended or included one too)."""

    def __init__(self, searchpath, seen: set[str]):
        super().__init__(searchpath)
        self.seen = seen

    def get_source(self, environment, template):
        self.seen.add(template)
        return super().get_source(environment, template)


def _templates_of(name: str, contexts: list) -> set[str]:
    seen: set[str] = set()
    for ctx in contexts:
        env = make_env()
        env.loader = _Recording(templates_dir(), seen)
        render_targets(replace(ctx, env=env), (name,))
    return {f"templates/{t}" for t in seen}


def places_of(name: str, contexts: list) -> set[str]:
    """Every place in the repository target ``name`` touches, found there (never read from the recipe), each
    spelt as the recipe spells places: ``<name>``, ``<template>``, ``<profile>``, ``<output>``, ``<room>``.
    ``contexts``: the default profile's and every example's, which the templates are recorded over."""
    target = REGISTRY[name]
    found = {Path(inspect.getsourcefile(registry) or "").relative_to(ROOT).as_posix()}  # its record
    spec = importlib.util.find_spec(target.module)
    if spec and spec.origin:
        found.add(Path(spec.origin).relative_to(ROOT).as_posix().replace(f"/{name}.py", "/<name>.py"))
    found |= {"templates/<template>" for t in _templates_of(name, contexts) if (ROOT / t).is_file()}
    golden = ROOT / "tests" / "golden"
    if any((folder / out).exists() for folder in golden.iterdir() for out in target.outputs):
        found.add("tests/golden/<profile>/<output>")
    for test in sorted((ROOT / "tests").glob("*/test_agreement.py")):
        keys = {n.slice.value for n in ast.walk(ast.parse(test.read_text()))
                if isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Constant) and isinstance(n.slice.value, str)}
        if any(key.split("/", 1)[0] in target.outputs for key in keys):
            found.add("tests/<room>/test_agreement.py")
    if re.search(rf"^\| `{name}` \|", (ROOT / "docs" / "outputs.md").read_text(), re.M):
        found.add("docs/outputs.md")
    generate = next(line for line in (ROOT / "docs" / "cli.md").read_text().splitlines()
                    if line.startswith("| `envkit generate"))
    if f"`{name}`" in generate:
        found.add("docs/cli.md")
    return found


def recipe_problems(listed: dict[str, bool], touched: dict[str, set[str]]) -> list[str]:
    """Where the recipe (``listed``) and the targets (``touched``: each target's places) disagree."""
    problems = []
    for name, places in touched.items():
        if places - set(listed):
            problems.append(f"{name} touches places the recipe does not list: {sorted(places - set(listed))}")
        missing = {place for place, everyone in listed.items() if everyone} - places
        if missing:
            problems.append(f"{name} lacks places the recipe says every target has: {sorted(missing)}")
    untouched = set(listed) - set().union(*touched.values())
    if untouched:
        problems.append(f"the recipe lists places no target touches: {sorted(untouched)}")
    return problems


@pytest.fixture(scope="module")
def touched(tmp_path_factory) -> dict[str, set[str]]:
    """Each target's places, the templates recorded over the default profile and every example."""
    from envkit.generation import context

    base = tmp_path_factory.mktemp("recipe")
    contexts = [context(build_plan(load_profile(None), base / "out"))]
    for example in example_profiles():
        folder = base / example.stem
        folder.mkdir()
        contexts.append(context(build_plan(load_profile(copy_example(example.name, folder)), folder / "out")))
    return {name: places_of(name, contexts) for name in REGISTRY}


def test_the_recipe_for_a_target_lists_every_place_a_target_touches(touched):
    """docs/contributing.md's recipe against the targets there are: every place a target touches is in the recipe,
    every place in the recipe is touched, and each place not marked *only* is touched by every target."""
    problems = recipe_problems(recipe((ROOT / "docs" / "contributing.md").read_text()), touched)
    assert not problems, problems


def test_the_recipe_check_sees_a_missing_and_a_stale_place(touched):
    """The check above can fail: a recipe without its golden-files item, or with a place no target touches."""
    listed = recipe((ROOT / "docs" / "contributing.md").read_text())
    without_golden = {k: v for k, v in listed.items() if k != "tests/golden/<profile>/<output>"}
    assert any("does not list: ['tests/golden/<profile>/<output>']" in p for p in recipe_problems(without_golden, touched))
    stale = {**listed, "docs/targets.md": True}
    assert any("no target touches: ['docs/targets.md']" in p for p in recipe_problems(stale, touched))
