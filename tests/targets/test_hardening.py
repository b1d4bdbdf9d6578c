"""Profile values and file names can never become code in a generated file (review findings)."""

from __future__ import annotations

from pathlib import Path

import pytest

from envkit.generation import render_all
from envkit.errors import ProfileError
from envkit.profile import load_profile, load_profile_bytes
from envkit.render import make_env
from tests.conftest import call_envkit

BASE = "envkit: 1\nname: h\nimage:\n  base: debian:bookworm\n"


def _err(text: str) -> str:
    with pytest.raises(ProfileError) as exc:
        load_profile_bytes(text.encode(), "p.yaml", Path("."))
    return str(exc.value)


@pytest.mark.parametrize("snippet, key", [
    ("  workdir: \"/w;touch${IFS}/PWNED;#\"\n", "image.workdir"),
    ("  workdir: \"/w,type=volume\"\n", "image.workdir"),
    ("  env: {A: \"line1\\nRUN touch /PWNED\"}\n", "image.env.A"),
    ("run:\n  gpus: []\n", "run.gpus"),
    ("run:\n  gpus: [\"1'\\\"; id\"]\n", "run.gpus"),
    ("run:\n  volumes: [\"~/data:/data\"]\n", "run.volumes[0]"),
    ("run:\n  volumes: [\"./d:/data,type=x\"]\n", "run.volumes[0]"),
    ("run:\n  ulimits: {nofile: 99999999999999999999999}\n", "run.ulimits.nofile"),
    ("loader:\n  sample_shape: [100000, 100000, 100000]\n", "loader"),
])
def test_dangerous_or_impossible_values_are_refused(snippet, key):
    msg = _err(BASE + snippet)
    assert f": {key}" in msg, msg


def test_merge_keys_do_not_crash():
    msg = _err("base: &b {envkit: 2}\n<<: *b\nname: x\n")
    assert "envkit: profile version 2 is not supported" in msg


def test_dollar_signs_stay_literal_in_the_dockerfile(tmp_path):
    p = tmp_path / "p.yaml"
    p.write_text(BASE + "  env: {PRICE: \"5$ and $HOME\"}\n  proxy: {http: \"http://u:p$w@proxy:3128\"}\n")
    files = {f.path: f.content.decode() for f in render_all(load_profile(p), tmp_path, ("dockerfile",))
             if f.path == "Dockerfile"}
    text = files["Dockerfile"]
    assert 'PRICE="5\\$ and \\$HOME"' in text
    # The proxy (and its password) is a build argument, never a value recorded in the image.
    assert "p$w@proxy" not in text and "p\\$w@proxy" not in text


def test_file_name_with_newline_cannot_inject_lines(tmp_path):
    p = tmp_path / "x\ntouch PWNED\n.yaml"
    p.write_text(BASE)
    out = tmp_path / "out"
    res = call_envkit("generate", str(p), "-o", str(out))
    assert res.returncode == 0, res.stderr
    for f in ("run.sh", "Dockerfile", "compose.yaml", ".dockerignore"):
        lines = (out / f).read_text().splitlines()
        assert "touch PWNED" not in lines, f


def test_powershell_quoting_doubles_every_single_quote_kind():
    env = make_env()
    out = env.from_string("{{ v|psquote }}").render(v="x\u2019; Start-Process calc; \u2018'")
    body = out[1:-1]
    for q in "'\u2018\u2019\u201a\u201b":
        # every quote character inside the literal comes in pairs
        assert body.count(q) % 2 == 0
    assert body.replace("''", "").replace("\u2019\u2019", "").replace("\u2018\u2018", "") == "x; Start-Process calc; "


def test_non_regular_target_stops_before_writing(tmp_path):
    out = tmp_path / "out"
    (out / "run.sh").mkdir(parents=True)
    res = call_envkit("generate", "-o", str(out), "--force")
    # A folder is not bad input but a file envkit may not replace: exit 1, naming what it is.
    assert res.returncode == 1 and "is a folder, not a regular file" in res.stderr and "Traceback" not in res.stderr
    assert sorted(p.name for p in out.iterdir()) == ["run.sh"]


@pytest.mark.parametrize("args", [["generate", "-o", "/dev/null/x"], ["init", "/dev/null/x.yaml"]])
def test_filesystem_errors_are_messages_not_tracebacks(args):
    res = call_envkit(*args)
    assert res.returncode in (1, 2) and "Traceback" not in res.stderr and res.stderr.startswith("envkit: error:")
