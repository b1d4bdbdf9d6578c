"""Run-time values the Dev Containers CLI would expand are refused at load time (exit 2, one message).

The CLI replaces ${localWorkspaceFolder}, ${localEnv:X}, ... in every devcontainer.json string with no
escape; run.sh and compose keep them literal, so the targets would disagree. tests/clients shows the
real CLI expanding them and keeping every other `$` text literal.
"""

from __future__ import annotations

import pytest

from tests.conftest import call_envkit

BASE = "envkit: 1\nname: x\nimage: {base: 'debian:bookworm'%s}\nrun:\n%s"


@pytest.mark.parametrize("image, run, where", [
    ("", "  env: {A: '${localWorkspaceFolder}/x'}\n", "run.env.A"),
    ("", "  env: {A: 'pre ${localEnv:HOME} post'}\n", "run.env.A"),
    ("", "  env: {A: '${containerEnv:PATH}'}\n", "run.env.A"),
    ("", "  volumes: ['/d/${devcontainerId}:/data']\n", "run.volumes[0]"),
    (", proxy: {http: 'http://${env:PROXY}:3128'}", "  ipc: private\n", "image.proxy.http"),
])
def test_devcontainer_variables_are_refused(tmp_path, image, run, where):
    p = tmp_path / "p.yaml"
    p.write_text(BASE % (image, run))
    res = call_envkit("generate", str(p), "-o", str(tmp_path / "out"))
    assert res.returncode == 2, res.stderr
    assert where in res.stderr and "Dev Containers CLI" in res.stderr and "Traceback" not in res.stderr
    assert not (tmp_path / "out").exists()


def test_other_dollar_text_stays_allowed(tmp_path):
    p = tmp_path / "p.yaml"
    p.write_text(BASE % ("", "  env: {A: '$HOME ${X} ${unknownVar:y} 5$'}\n"))
    res = call_envkit("generate", str(p), "-o", str(tmp_path / "out"), "--target", "devcontainer")
    assert res.returncode == 0, res.stderr
