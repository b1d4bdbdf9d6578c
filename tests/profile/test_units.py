"""Property-based tests for the size, cpuset and ulimit parsers."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from envkit.profile.sections import Run, Ulimit
from envkit.units import format_cpuset, format_size, format_wsl_size, parse_cpuset, parse_size

UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}


@given(st.integers(min_value=0, max_value=2**62))
def test_size_roundtrip(n):
    assert parse_size(format_size(n)) == n
    assert parse_size(format_wsl_size(n)) == n
    assert parse_size(n) == n


@given(st.integers(min_value=0, max_value=10**6), st.sampled_from(sorted(UNITS)), st.sampled_from(["", "b", "B", "iB"]),
       st.booleans())
def test_size_units_are_binary_and_case_insensitive(number, unit, suffix, upper):
    if not unit and suffix:
        suffix = ""  # "12b" alone is not a Docker size spelling we document
    text = f"{number}{unit.upper() if upper else unit}{suffix}"
    assert parse_size(text) == number * UNITS[unit]


@given(st.text(alphabet="abcxyz!@# ", min_size=1, max_size=6))
def test_size_garbage_is_rejected(text):
    with pytest.raises(ValueError, match="expected a size"):
        parse_size(text)


@pytest.mark.parametrize("bad", [-1, True, 1.5, "1.5", "", "8 gigs", None])
def test_size_bad_values(bad):
    with pytest.raises(ValueError):
        parse_size(bad)


@given(st.sets(st.integers(min_value=0, max_value=255), min_size=1, max_size=64))
def test_cpuset_roundtrip(cpus):
    ordered = tuple(sorted(cpus))
    text = format_cpuset(ordered)
    assert parse_cpuset(text) == ordered
    assert format_cpuset(parse_cpuset(text)) == text  # canonical form is a fixed point


@given(st.lists(st.tuples(st.integers(0, 100), st.integers(0, 20)), min_size=1, max_size=8))
def test_cpuset_ranges_in_any_order(parts):
    text = ",".join(f"{lo}-{lo + w}" for lo, w in parts)
    expected = sorted({c for lo, w in parts for c in range(lo, lo + w + 1)})
    assert list(parse_cpuset(text)) == expected


@pytest.mark.parametrize("bad", ["", "a", "1-", "-1", "3-1", "1,,2", "0-5000", "1.5"])
def test_cpuset_bad(bad):
    with pytest.raises(ValueError):
        parse_cpuset(bad)


@given(st.integers(min_value=-1, max_value=2**40), st.integers(min_value=-1, max_value=2**40))
def test_ulimit_soft_never_above_hard(soft, hard):
    ok = hard == -1 or (soft != -1 and soft <= hard)
    if ok:
        u = Ulimit.model_validate({"soft": soft, "hard": hard})
        assert (u.soft, u.hard) == (soft, hard)
    else:
        with pytest.raises(ValidationError):
            Ulimit.model_validate({"soft": soft, "hard": hard})


@given(st.integers(min_value=-1, max_value=2**40))
def test_ulimit_scalar_means_soft_equals_hard(n):
    u = Ulimit.model_validate(n)
    assert u.soft == u.hard == n


def test_ulimit_names_and_unlimited():
    run = Run.model_validate({"ulimits": {"memlock": "unlimited", "nofile": 1024}})
    assert run.ulimits["memlock"].soft == -1
    with pytest.raises(ValidationError, match="did you mean 'nofile'"):
        Run.model_validate({"ulimits": {"nofiles": 1}})


@pytest.mark.parametrize("text", ["0-3", "0-0", "00-1", "1 - 2", "0+3"])
def test_text_with_a_sign_after_a_digit_is_no_whole_number(text):
    """pydantic-core alone reads "0-3" as -3 and "0-0" as 0; a profile's whole numbers refuse such text."""
    with pytest.raises(ValidationError) as e:
        Ulimit.model_validate({"soft": text, "hard": 5})
    assert e.value.errors()[0]["type"] == "int_parsing"
    assert Ulimit.model_validate({"soft": " 3 ", "hard": "+5"}) == Ulimit(soft=3, hard=5)
