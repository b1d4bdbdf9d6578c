"""validate --image checks the PROFILE's expectation and reports a different profile label.

Unit tier over the fake engine (the wiring) plus the in-container snippet run for
real with this Python; the real-engine case is tests/e2e/test_validate_image.py.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys

from envkit.commands import validate
from envkit.engine import RunResult
from tests.conftest import expectation_of
from envkit.profile import load_profile
from tests.fakes import FakeEngine

PROFILE = "envkit: 1\nname: mine\nimage: {base: debian:bookworm}\nrun: {shm_size: 3g}\n"


def _report() -> str:
    return json.dumps({"envkit_harness": 1, "verdict": "pass", "environment": {}, "checks": []})


class LabelledEngine(FakeEngine):
    def __init__(self, labels, **kw):
        super().__init__(**kw)
        self.labels = labels

    def image_labels(self, image):
        self.calls.append(("image_labels", {"image": image}))
        return dict(self.labels)


def test_image_is_checked_against_the_given_profile_and_a_foreign_label_is_reported(tmp_path):
    p = tmp_path / "envkit.yaml"
    p.write_text(PROFILE)
    eng = LabelledEngine({"io.envkit.profile": "other", "io.envkit.profile.sha256": "0" * 64},
                         run_results=[RunResult(0, _report(), "")])
    out, err = io.StringIO(), io.StringIO()
    rc = validate.run(p, image="some/img:1", compare_default=False, as_json=True, timeout=60, quick=True,
                      out=out, err=err, engine=eng)
    assert rc == 0
    (run,) = [c[1] for c in eng.calls if c[0] == "run"]
    shipped = json.loads(dict(run["run"].env)[validate.EXPECT_ENV])
    assert shipped == expectation_of(load_profile(p)) and shipped["run"]["shm_size_bytes"] == 3 << 30
    assert run["command"][:2] == ["python3", "-c"] and "/opt/envkit/envkit_harness.pyz" in run["command"]
    assert "built from profile 'other', not 'mine'" in err.getvalue()


def test_same_profile_label_gives_no_note(tmp_path):
    p = tmp_path / "envkit.yaml"
    p.write_text(PROFILE)
    loaded = load_profile(p)
    eng = LabelledEngine({"io.envkit.profile": "mine", "io.envkit.profile.sha256": loaded.sha256},
                         run_results=[RunResult(0, _report(), "")])
    err = io.StringIO()
    validate.run(p, image="img", compare_default=False, as_json=True, timeout=60, quick=True,
                 out=io.StringIO(), err=err, engine=eng)
    assert "built from" not in err.getvalue() and "no envkit profile label" not in err.getvalue()


def test_the_in_container_snippet_hands_the_profile_expectation_to_the_harness(tmp_path):
    # Run the container's command here, with a stand-in harness that echoes what it was given.
    fake = tmp_path / "harness.py"
    fake.write_text("import json, sys\ni = sys.argv.index('--expect')\n"
                    "print(json.dumps({'argv': sys.argv[1:], 'doc': json.load(open(sys.argv[i + 1]))}))\n"
                    "raise SystemExit(3)\n")
    cmd = validate.harness_command(60, True, profile_expect=True)
    cmd = [sys.executable, cmd[1], cmd[2], str(fake), *cmd[4:]]
    doc = {"envkit_expect": 1, "profile": "mine"}
    res = subprocess.run(cmd, env={validate.EXPECT_ENV: json.dumps(doc)}, capture_output=True, text=True,
                         cwd=tmp_path, timeout=60)
    assert res.returncode == 3, res.stderr  # the harness's own exit code comes through
    seen = json.loads(res.stdout)
    assert seen["doc"] == doc and "--quick" in seen["argv"] and "--json" in seen["argv"]
    path = seen["argv"][seen["argv"].index("--expect") + 1]
    assert not __import__("os").path.exists(path), "the temporary expectation is removed"
