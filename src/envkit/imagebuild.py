"""Build a profile's image through the engine seam (``envkit build`` and ``envkit validate``).

The build context is rendered in a temporary folder that records its owner (so a
killed build's folder is swept later, :mod:`envkit.leftovers`) and holds exactly what the
Dockerfile copies (Dockerfile, harness, expectations, certificates, wheelhouse); it
is removed afterwards, whatever happens. Progress streams to ``err`` as
``[step N/M]`` lines with the layer output, control characters neutralised
(:mod:`envkit.termtext`).

Called as::

    build_image(load_profile(None), connect(None), tag=None, no_cache=False, err=sys.stderr)
"""

from __future__ import annotations

import shutil
from typing import NamedTuple, TextIO

from envkit.engine import LABEL, BuildEvent, BuildFailed, Engine
from envkit.errors import EngineError
from envkit.generation import render_build_context, report_warnings
from envkit.leftovers import make_build_dir, sweep
from envkit.output import write_outputs
from envkit.plan.envplan import EnvPlan
from envkit.planner import build_plan
from envkit.profile import LoadedProfile
from envkit.termtext import neutralise

LOG_TAIL = 25


def connect(engine: Engine | None) -> Engine:
    """``engine`` when given (tests pass a fake), else this host's (:func:`envkit.engine.connect`)."""
    if engine is not None:
        return engine
    from envkit.engine import connect as connect_engine

    return connect_engine()


class Built(NamedTuple):
    """What :func:`build_image` built: the tag, the run's plan, and the engine's image id ("" when it said none)."""

    tag: str
    plan: EnvPlan
    image_id: str


def build_image(loaded: LoadedProfile, engine: Engine, *, tag: str | None, no_cache: bool,
                err: TextIO) -> Built:
    """Build the profile's image; return its tag, the run's plan (made for the build context, its warnings
    printed to ``err``) and the engine's image id. Raises EngineError with the failing step and log tail."""
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
        plan = build_plan(loaded, context)
        report_warnings(plan, False, err)
        write_outputs(context, render_build_context(plan))
        print(f"envkit: building {tag} from {loaded.source}", file=err, flush=True)
        try:
            image_id = engine.build(context, tag, labels=labels, nocache=no_cache, on_event=progress,
                         buildargs=dict(plan.image.spec.proxy_build_args))
        except BuildFailed as e:
            tail = "\n".join(f"    {neutralise(line)}" for line in e.log[-LOG_TAIL:])
            raise EngineError(f"{neutralise(str(e))}\nfailing step: {neutralise(e.step or 'unknown')}\n"
                              f"last lines of its output:\n{tail}", hint=e.hint) from None
    finally:
        shutil.rmtree(context, ignore_errors=True)
    print(f"envkit: built {tag}", file=err, flush=True)
    return Built(tag, plan, image_id)
