"""The README documents every profile key and the two commands that .ci/run relies on."""

from __future__ import annotations

import os
import re

from envkit.profile.load import _model_in
from envkit.profile.model import Profile
from tests.conftest import ROOT


def _paths(model, prefix=""):
    for name, field in model.model_fields.items():
        path = prefix + name
        yield path
        sub = _model_in(field.annotation)
        if sub is not None and name != "ulimits":
            yield from _paths(sub, path + ".")


def test_every_profile_key_is_documented():
    # The cluster section's keys are documented on their own page, linked from the README.
    readme = (ROOT / "README.md").read_text() + (ROOT / "docs" / "cluster.md").read_text()
    missing = [p for p in _paths(Profile) if f"`{p}`" not in readme]
    assert not missing, f"README reference lacks: {missing}"


def test_ci_runs_exactly_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```bash\n(.*?)\n```", readme.split("## The two commands", 1)[1], re.S)
    test_cmd = blocks[1].strip()
    ci = (ROOT / ".ci" / "run").read_text()
    assert "ENVKIT_REQUIRE_DOCKER=1" in ci
    assert test_cmd in ci.splitlines()


def test_readme_examples_are_real_output(tmp_path, monkeypatch):
    """Blocks marked <!-- readme:PATH --> hold exactly what `envkit generate -o out` writes (or the default profile)."""
    from envkit.commands.generate import render_all
    from envkit.profile import default_profile_text, load_profile

    readme = (ROOT / "README.md").read_text()
    blocks = dict(re.findall(r"<!-- readme:(\S+) -->\n```\w*\n(.*?)```\n", readme, re.S))
    assert {"default.yaml", "out/run.sh", "out/compose.yaml"} <= set(blocks)
    assert blocks["default.yaml"] == default_profile_text()
    monkeypatch.chdir(tmp_path)
    files = {"out/" + f.path: f.content.decode() for f in render_all(load_profile(None), tmp_path / "out")
             if f.source is None and f.path.endswith((".sh", ".yaml"))}
    files["default.yaml"] = default_profile_text()
    if os.environ.get("ENVKIT_UPDATE_GOLDEN") == "1":  # the same switch as the golden files
        for name in ("default.yaml", "out/run.sh", "out/compose.yaml"):
            readme = re.sub(rf"(<!-- readme:{re.escape(name)} -->\n```\w*\n)(.*?)(```\n)",
                            lambda m: m.group(1) + files[name] + m.group(3), readme, count=1, flags=re.S)
        (ROOT / "README.md").write_text(readme)
        blocks = dict(re.findall(r"<!-- readme:(\S+) -->\n```\w*\n(.*?)```\n", readme, re.S))
    for name in ("out/run.sh", "out/compose.yaml"):
        assert blocks[name] == files[name], f"README's {name} is stale (ENVKIT_UPDATE_GOLDEN=1 to update)"
