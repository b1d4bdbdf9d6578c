"""``envkit build``: render the build context in a temporary folder and build it through the engine.

The context holds exactly what the Dockerfile copies (Dockerfile, harness,
expectations, certificates, wheelhouse); it is removed afterwards, whatever
happens. Progress streams to ``err`` as ``[step N/M]`` lines with the layer output.

Example:
    >>> # run(Path("envkit.yaml"), tag=None, no_cache=False, out=sys.stdout, err=sys.stderr) -> 0
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TextIO

from envkit.commands.generate import render_all, report_warnings
from envkit.runsettings import proxy_build_args
from envkit.engine import LABEL, BuildEvent, BuildFailed, Engine
from envkit.errors import EngineError
from envkit.leftovers import make_build_dir, sweep
from envkit.output import write_outputs
from envkit.profile import LoadedProfile, load_profile

LOG_TAIL = 25


_CONTROL = {c: f"\\x{c:02x}" for c in [*range(0x00, 0x09), *range(0x0a, 0x20), 0x7f, *range(0x80, 0xa0)]}


def neutralise(text: str) -> str:
    """Build output made safe for a terminal: control characters (ESC, BEL, CR...) shown as ``\\xNN``.

    A RUN step's output reaches the user's terminal; raw escapes could retitle it, hide lines or
    rewrite what was printed before.

    >>> neutralise("ok\\x1b]0;pwned\\x07\\tdone")
    'ok\\\\x1b]0;pwned\\\\x07\\tdone'
    """
    return text.translate(_CONTROL)


def connect(engine: Engine | None) -> Engine:
    if engine is not None:
        return engine
    from envkit.engine import DockerEngine

    return DockerEngine.connect()


def build_image(loaded: LoadedProfile, engine: Engine, *, tag: str | None, no_cache: bool, err: TextIO) -> str:
    """Build the profile's image; return the tag. Raises EngineError with the failing step and log tail."""
    tag = tag or loaded.profile.image_tag
    labels = {LABEL: "1", "io.envkit.profile": loaded.profile.name, "io.envkit.profile.sha256": loaded.sha256}

    def progress(ev: BuildEvent) -> None:
        if ev.kind == "step":
            print(f"[step {ev.step}/{ev.total}] {neutralise(ev.text)}", file=err, flush=True)
        else:
            print(f"    {neutralise(ev.text)}", file=err, flush=True)

    sweep(engine, err)  # containers and build folders of killed envkit runs
    context = make_build_dir()  # records its owner, so a killed build's folder is swept later
    try:
        write_outputs(context, render_all(loaded, context, ("dockerfile",)))
        print(f"envkit: building {tag} from {loaded.source}", file=err, flush=True)
        try:
            engine.build(context, tag, labels=labels, nocache=no_cache, on_event=progress,
                         buildargs=dict(proxy_build_args(loaded.profile)))
        except BuildFailed as e:
            tail = "\n".join(f"    {neutralise(line)}" for line in e.log[-LOG_TAIL:])
            raise EngineError(f"{neutralise(str(e))}\nfailing step: {neutralise(e.step or 'unknown')}\nlast lines of its output:\n{tail}",
                              hint=e.hint) from None
    finally:
        shutil.rmtree(context, ignore_errors=True)
    print(f"envkit: built {tag}", file=err, flush=True)
    return tag


def run(profile_path: Path | None, *, tag: str | None, no_cache: bool, out: TextIO, err: TextIO,
        engine: Engine | None = None) -> int:
    loaded = load_profile(profile_path)
    report_warnings(loaded, False, err)
    built = build_image(loaded, connect(engine), tag=tag, no_cache=no_cache, err=err)
    print(built, file=out)
    return 0
