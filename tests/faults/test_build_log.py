"""Terminal escapes in build output are neutralised before they reach the user's terminal."""

from __future__ import annotations

import io
import uuid

import pytest

from envkit import termtext
from envkit.commands import build
from envkit.engine import BuildEvent, BuildFailed
from envkit.errors import EngineError
from tests.dockerutil import require_base_image, require_docker
from tests.fakes import FakeEngine

PROFILE = "envkit: 1\nname: esc\nimage: {base: debian:bookworm, tag: 'unit/esc:1'}\n"
EVIL = "\x1b]0;pwned\x07\x1b[2J\rfake ok"


def test_escapes_in_build_progress_and_failure_tails_are_neither_obeyed_nor_printed_as_noise(tmp_path):
    p = tmp_path / "envkit.yaml"
    p.write_text(PROFILE)
    eng = FakeEngine(build_events=[BuildEvent("step", 1, 1, "RUN x" + EVIL), BuildEvent("log", 1, 1, EVIL)])
    err = io.StringIO()
    assert build.run(p, tag=None, no_cache=False, out=io.StringIO(), err=err, engine=eng) == 0
    text = err.getvalue()
    assert "\x1b" not in text and "\x07" not in text and "\r" not in text
    # Colour and title sequences are stripped (a log is read, not replayed); any other control is shown escaped.
    assert "pwned" not in text and "\\x1b" not in text and "\\x0dfake ok" in text
    failing = FakeEngine(failures={"build": BuildFailed("failed" + EVIL, step="Step 1/1 : RUN" + EVIL, log=[EVIL])})
    with pytest.raises(EngineError) as exc:
        build.run(p, tag=None, no_cache=False, out=io.StringIO(), err=io.StringIO(), engine=failing)
    assert "\x1b" not in str(exc.value) and "\\x1b" not in str(exc.value) and "\\x0dfake ok" in str(exc.value)


@pytest.mark.docker
def test_the_real_engine_passes_escapes_through_and_the_neutraliser_stops_them(tmp_path):
    engine = require_docker()
    base = require_base_image(engine)
    (tmp_path / "Dockerfile").write_text(f"FROM {base}\nRUN printf '\\033]0;pwned\\007 marker-{uuid.uuid4().hex}\\n'\n")
    seen: list[str] = []
    tag = f"envkit-hardening-esc:{uuid.uuid4().hex[:8]}"
    try:
        engine.build(tmp_path, tag, nocache=True, on_event=lambda ev: seen.append(ev.text))
    finally:
        try:
            engine.client.images.remove(tag, force=True)
        except Exception:  # already gone / never built
            pass
    raw = [t for t in seen if "marker-" in t and "printf" not in t]
    assert raw and "\x1b" in raw[0], "the engine hands the escape to envkit"
    assert "\x1b" not in termtext.neutralise(raw[0]) and "\\x1b]0;pwned\\x07" in termtext.neutralise(raw[0])
