"""Generated compose.yaml and devcontainer.json validate against the format owners' schemas."""

from __future__ import annotations

import json

import jsonschema
import pytest
import yaml

from envkit.generation import render_all
from envkit.profile import load_profile
from tests.conftest import copy_example, example_profiles


def _validator(schema: dict):
    # compose-spec writes "https://json-schema.org/draft-07/schema" (no "#"), which jsonschema's
    # registry does not list; it is draft-07 all the same.
    uri = schema.get("$schema", "")
    if "draft-07" in uri:
        cls = jsonschema.Draft7Validator
    else:
        cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


@pytest.mark.parametrize("example", [p.name for p in example_profiles()] + ["<default>"])
def test_outputs_validate(example, tmp_path, official_schema):
    compose_v = _validator(official_schema("compose-spec.json"))
    devc_v = _validator(official_schema("devContainer.base.schema.json"))
    path = None if example == "<default>" else copy_example(example, tmp_path)
    files = {f.path: f.content.decode() for f in render_all(load_profile(path), tmp_path / "out", ("compose", "devcontainer"))}
    compose = yaml.safe_load(files["compose.yaml"])
    errors = sorted(compose_v.iter_errors(compose), key=str)
    assert not errors, errors[0].message
    devc_text = files[".devcontainer/devcontainer.json"]
    assert devc_text.startswith("// ")
    devc = json.loads(devc_text.split("\n", 1)[1])
    errors = sorted(devc_v.iter_errors(devc), key=str)
    assert not errors, errors[0].message


def test_schema_rejects_a_broken_compose(official_schema):
    # The validator is live: a wrong type is caught (so the test above can fail).
    v = _validator(official_schema("compose-spec.json"))
    assert list(v.iter_errors({"services": {"x": {"ulimits": "lots"}}}))
