"""The plan holds decisions, never the profile: no pydantic model from envkit.profile is reachable from it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from pydantic import BaseModel

from envkit.plan.envplan import EnvPlan

from envkit.planner import build_plan
from envkit.profile import load_profile

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.yaml"))


def profile_models(value: object, where: str = "plan") -> list[str]:
    """Where in ``value`` (dataclass fields, tuples, lists, dicts, recursively) an envkit.profile model sits."""
    if isinstance(value, BaseModel):
        return [f"{where}: {type(value).__module__}.{type(value).__name__}"] \
            if type(value).__module__.startswith("envkit.profile") else []
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [hit for f in dataclasses.fields(value)
                for hit in profile_models(getattr(value, f.name), f"{where}.{f.name}")]
    if isinstance(value, (tuple, list, set, frozenset)):
        return [hit for i, item in enumerate(value) for hit in profile_models(item, f"{where}[{i}]")]
    if isinstance(value, dict):
        return [hit for k, v in value.items() for hit in profile_models(k, f"{where}.key") + profile_models(v, f"{where}[{k!r}]")]
    return []


def test_the_walk_finds_a_profile_model():
    loaded = load_profile(None)
    assert profile_models((1, {"x": [loaded.profile.image]})) == ["plan[1]['x'][0]: envkit.profile.sections.Image"]


def test_the_plan_has_no_profile_field():
    names = {f.name for f in dataclasses.fields(EnvPlan)}
    assert not names & {"loaded", "profile"}
    assert not hasattr(EnvPlan, "profile")


@pytest.mark.parametrize("path", EXAMPLES + [None], ids=lambda p: p.name if p else "default")
def test_no_profile_model_is_reachable_from_the_plan(path, tmp_path):
    plan = build_plan(load_profile(path), tmp_path)
    assert profile_models(plan) == []


def test_require_cluster_raises_the_recorded_error_without_planning_again():
    plan = build_plan(load_profile(None))
    assert plan.cluster is None and plan.cluster_error is not None
    assert "the profile has no cluster: section" in str(plan.cluster_error)
    with pytest.raises(type(plan.cluster_error)) as e:
        plan.require_cluster()
    assert e.value is plan.cluster_error


def test_targets_read_neither_the_profile_nor_a_file():
    from envkit.targets import GenContext

    assert not hasattr(GenContext, "profile") and not hasattr(GenContext, "loaded")
    targets = Path(__file__).resolve().parents[2] / "src" / "envkit" / "targets"
    for module in sorted(targets.glob("*.py")):
        text = module.read_text()
        for read in ("ctx.profile", "ctx.loaded", "plan.profile", "plan.loaded", "read_bytes(", "read_text("):
            assert read not in text, f"{module.name} reads {read}"
