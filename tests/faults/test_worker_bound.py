"""The harness asks for no more workers than a profile may (harness.rules.sizing.MAX_WORKERS)."""

from __future__ import annotations

import pytest

from envkit.harness.errors import UsageError
from envkit.harness.expectation import resolve_loader, validate_expect
from envkit.harness.rules.sizing import MAX_WORKERS
from envkit.profile.model import Profile


def test_num_workers_above_the_profile_bound_is_refused_before_anything_forks():
    with pytest.raises(UsageError, match="--num-workers must be from 0 to 256"):
        resolve_loader({"envkit_expect": 1}, usable=2, num_workers=100000)
    assert resolve_loader({"envkit_expect": 1}, usable=2, num_workers=MAX_WORKERS)["num_workers"] == MAX_WORKERS


def test_an_expectation_above_the_bound_is_refused():
    with pytest.raises(UsageError, match="at most 256"):
        validate_expect({"envkit_expect": 1, "loader": {"num_workers": 100000}})


def test_the_profile_and_the_harness_share_the_bound():
    base = {"envkit": 1, "name": "b", "image": {"base": "debian"}}
    assert Profile.model_validate({**base, "loader": {"num_workers": MAX_WORKERS}}).loader.num_workers == MAX_WORKERS
    with pytest.raises(ValueError):
        Profile.model_validate({**base, "loader": {"num_workers": MAX_WORKERS + 1}})


@pytest.mark.slow  # real processes for seconds: CI's slow tier keeps the unit tier under 90 s
def test_envkit_harness_exits_2_on_too_many_workers(tmp_path):
    from tests.conftest import run_envkit

    res = run_envkit("harness", "--num-workers", "100000", "--quick", cwd=tmp_path)
    assert res.returncode == 2 and "--num-workers must be from 0 to 256" in res.stderr, res.stderr
