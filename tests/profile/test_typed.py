"""envkit.profile.typed: the validation the profile's models run on (pydantic's lax semantics, kept on purpose)."""

from __future__ import annotations

import pickle
from typing import Annotated, Literal

import pytest

from envkit.profile.model import Loader, Profile, Run, User
from envkit.profile.typed import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

BASE = {"envkit": 1, "name": "t", "image": {"base": "debian:bookworm"}}


class Point(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    x: Annotated[int, Field(ge=0)]
    kind: Literal["a", "b"] = "a"
    tags: tuple[str, ...] = ()


@pytest.mark.parametrize(("raw", "want"), [("5", 5), (" 5 ", 5), (5.0, 5), ("5.0", 5), (True, 1)])
def test_whole_numbers_from_text_and_integral_floats(raw, want):
    assert TypeAdapter(int).validate_python(raw) == want


@pytest.mark.parametrize(("raw", "kind"), [(5.5, "int_from_float"), ("0-3", "int_parsing"), ("x", "int_parsing"),
                                           (None, "int_type"), ([1], "int_type")])
def test_not_whole_numbers(raw, kind):
    # "0-3" (a cpuset typed into a number field) was once reported by pydantic as "at least 0": it is not a number.
    with pytest.raises(ValidationError) as e:
        TypeAdapter(int).validate_python(raw)
    assert e.value.errors()[0]["type"] == kind


@pytest.mark.parametrize(("raw", "want"), [("yes", True), ("Off", False), (1, True), (0, False), ("t", True)])
def test_yaml_and_shell_booleans(raw, want):
    assert TypeAdapter(bool).validate_python(raw) is want


def test_bool_refuses_other_numbers_and_none():
    for raw, kind in ((2, "bool_parsing"), ("maybe", "bool_parsing"), (None, "bool_type")):
        with pytest.raises(ValidationError) as e:
            TypeAdapter(bool).validate_python(raw)
        assert e.value.errors()[0]["type"] == kind


def test_union_prefers_the_exact_type():
    # gpus: 1 is a count (int), not True; num_workers: "8" converts only because nothing matches exactly.
    assert Run.model_validate({"gpus": 1}).gpus == 1
    assert Run.model_validate({"gpus": [0, "GPU-ab"]}).gpus == (0, "GPU-ab")
    assert Loader.model_validate({"num_workers": "8"}).num_workers == 8
    assert Loader.model_validate({"num_workers": "auto"}).num_workers == "auto"


def test_every_problem_is_reported_with_its_path():
    with pytest.raises(ValidationError) as e:
        Point.model_validate({"x": -1, "kind": "c", "tags": ["a", 3], "extra": 1})
    got = {(err["type"], err["loc"]) for err in e.value.errors()}
    assert got == {("greater_than_equal", ("x",)), ("literal_error", ("kind",)), ("string_type", ("tags", 1)),
                   ("extra_forbidden", ("extra",))}


def test_missing_and_wrong_container_types():
    with pytest.raises(ValidationError) as e:
        Point.model_validate({"tags": "ab"})
    assert {(err["type"], err["loc"]) for err in e.value.errors()} == {("missing", ("x",)), ("tuple_type", ("tags",))}
    with pytest.raises(ValidationError) as e:
        Point.model_validate([1])
    assert e.value.errors()[0]["type"] == "model_type"


def test_frozen_equal_hashable_and_picklable():
    p = Profile.model_validate(BASE)
    with pytest.raises(TypeError, match="frozen"):
        p.name = "x"  # type: ignore[misc]
    assert p == Profile.model_validate(BASE) and hash(p.image.user) == hash(User())
    assert pickle.loads(pickle.dumps(p)) == p
    assert p.model_copy(update={"name": "u"}).name == "u" and p.name == "t"


def test_dump_leaves_out_defaults_recursively():
    p = Profile.model_validate({**BASE, "run": {"ipc": "host"}, "loader": {"sample_shape": [1, 2]}})
    assert p.model_dump(mode="json", exclude_defaults=True) == {
        "envkit": 1, "name": "t", "image": {"base": "debian:bookworm"}, "run": {"ipc": "host"},
        "loader": {"sample_shape": [1, 2]}}
    assert p.model_dump()["loader"]["sample_shape"] == (1, 2)


def test_validators_run_once_fields_are_valid():
    # A model validator does not run on fields that failed: one message, the field's own.
    with pytest.raises(ValidationError) as e:
        Profile.model_validate({**BASE, "image": {"base": "debian", "install_project": "maybe"}})
    assert [err["loc"] for err in e.value.errors()] == [("image", "install_project")]
    with pytest.raises(ValidationError, match="set image.copy_project: true"):
        Profile.model_validate({**BASE, "image": {"base": "debian", "install_project": True}})


def test_sections_compile_on_first_use():
    # A run that never reads a section's fields never compiles them (start-up time every run would pay).
    class Late(BaseModel):
        y: int = 1

    assert Late.__dict__.get("_fields") is None
    assert list(Late.model_fields) == ["y"] and Late.__dict__["_fields"] is not None


@pytest.mark.parametrize(("section", "value"), [
    ({"image": {"base": "debian", "workdir": "/workspace\n"}}, "a final newline in a path"),
    ({"image": {"base": "debian", "env": {"FOO": "bar\n"}}}, "a final newline in an env value"),
    ({"run": {"env": {"BAZ": "q\n"}}}, "a final newline in a run-time value"),
    ({"image": {"base": "debian", "pip_packages": ["numpy\x1c==1.26"]}}, "a control character Python calls space"),
])
def test_patterns_match_the_whole_text_as_rust_regex_did(section, value):
    """Python's `$` also matches before a final newline and its \\s takes \\x1c-\\x1f: both let a newline or a
    control character into generated files (found in review); pydantic's Rust regex refused them."""
    data = {**BASE, **section}
    data["image"] = {**BASE["image"], **section.get("image", {})}
    with pytest.raises(ValidationError):
        Profile.model_validate(data)


def test_white_space_is_unicode_white_space():
    assert Profile.model_validate({**BASE, "image": {"base": "debian", "torch": {
        "version": "2.5.1", "index_url": "https://x\x1c"}}}).image.torch.index_url == "https://x\x1c"
    # As under pydantic: "5" is a device id (text matches first), "5\n" is not one, and as a number it is 5.
    assert Run.model_validate({"gpus": ["5"]}).gpus == ("5",)
    assert Run.model_validate({"gpus": ["5\n"]}).gpus == (5,)


@pytest.mark.parametrize("raw", ["1e3", "\uff15", "\u0663", "5.5", " yes "])
def test_numbers_are_ascii_digits(raw):
    # float() and int() take full-width and Arabic-Indic digits and exponents; pydantic did not.
    with pytest.raises(ValidationError):
        TypeAdapter(bool if raw == " yes " else int).validate_python(raw)
    if raw in ("\uff15", "\u0663"):
        with pytest.raises(ValidationError):
            TypeAdapter(float).validate_python(raw)


def test_defaults_are_not_shared_between_profiles():
    a = Profile.model_validate(BASE)
    a.run.env["Y"] = "1"  # frozen models, but a dict inside one is still a dict
    assert Profile.model_validate(BASE).run.env == {}
    assert Run.model_validate({}).ulimits == {} and Run.model_validate({}).ulimits is not Run.model_validate({}).ulimits


def test_tabs_are_refused_whichever_parser_reads_the_profile():
    """libyaml takes a tab as a separator where PyYAML refuses it; the profile's validity must not
    depend on how PyYAML was built (found in review)."""
    from envkit.errors import ProfileError
    from envkit.profile.yamlsrc import read_yaml

    with pytest.raises(ProfileError, match="'\\\\t'"):
        read_yaml(b"envkit: 1\nname:\tvision\n", "p.yaml")
