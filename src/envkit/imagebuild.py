"""Build a profile's image through the engine seam (``envkit build`` and ``envkit validate``).

The build context is rendered in a temporary folder that records its owner (so a
killed build's folder is swept later, :mod:`envkit.leftovers`) and holds exactly what the
Dockerfile copies (Dockerfile, harness, expectations, certificates, wheelhouse); it
is removed afterwards, whatever happens. Progress streams to ``err`` as
``[step N/M]`` lines with the layer output, control characters neutralised
(:mod:`envkit.termtext`).

The plan is made once, for the build folder (:func:`planned_build`), and the caller may read it before
anything is built (``envkit validate`` checks the host with it first)::

    with planned_build(load_profile(None)) as plan:
        build_image(plan, connect(None), tag=None, no_cache=False, err=sys.stderr)
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NamedTuple, TextIO

from envkit.engine import LABEL, BuildEvent, BuildFailed, Engine
from envkit.errors import EngineError
from envkit.generation import render_build_context, report_warnings
from envkit.leftovers import make_build_dir, sweep
from envkit.output import write_outputs
from envkit.plan.envplan import EnvPlan
from envkit.planner import build_plan
from envkit.profile import LoadedProfile
from envkit.engine.buildcause import cause
from envkit.harness.text import shorten
from envkit.termtext import neutralise, strip_escapes

LOG_TAIL = 25
STEP_SHOWN = 160  # characters of the failing step shown: a RUN line is over a thousand


def connect(engine: Engine | None) -> Engine:
    """``engine`` when given (tests pass a fake), else this host's (:func:`envkit.engine.connect`)."""
    if engine is not None:
        return engine
    from envkit.engine import connect as connect_engine

    return connect_engine()


def build_error(e: BuildFailed) -> EngineError:
    """The failed build as the user reads it: the engine's words, the failing step once (shortened: a RUN is
    over a thousand characters), the last lines of its output without colour codes, and one hint naming the
    profile key where the output shows a cause the profile can fix (:mod:`envkit.engine.buildcause`)."""
    lines = [strip_escapes(line) for line in e.log[-LOG_TAIL:]]
    tail = "\n".join(f"    {neutralise(line)}" for line in lines)
    found = cause(lines + [str(e)])
    step = neutralise(shorten(strip_escapes(e.step or "unknown"), STEP_SHOWN))
    hint = e.hint or (found[1] if found else None)
    return EngineError(f"{neutralise(strip_escapes(str(e)))}\nfailing step: {step}\nlast lines of its output:\n{tail}",
                       hint=hint)


class Built(NamedTuple):
    """What :func:`build_image` built: the tag, the run's plan, and the engine's image id ("" when it said none)."""

    tag: str
    plan: EnvPlan
    image_id: str


@contextmanager
def planned_build(loaded: LoadedProfile) -> Iterator[EnvPlan]:
    """The run's one plan of ``loaded``, made for a fresh build folder (its ``out_dir``), which records its owner
    (so a killed build's folder is swept later) and is removed on leaving, whatever happens."""
    context = make_build_dir()
    try:
        yield build_plan(loaded, context)
    finally:
        shutil.rmtree(context, ignore_errors=True)


def build_image(plan: EnvPlan, engine: Engine, *, tag: str | None, no_cache: bool, err: TextIO) -> Built:
    """Build the image of ``plan`` (from :func:`planned_build`: its ``out_dir`` is the build folder); its warnings
    are printed to ``err``. Return the tag, the plan and the engine's image id. Raises EngineError with the
    failing step and log tail."""
    tag = tag or plan.image.spec.tag
    labels = {LABEL: "1", "io.envkit.profile": plan.source.name, "io.envkit.profile.sha256": plan.source.sha256}

    def progress(ev: BuildEvent) -> None:
        if ev.kind == "step":
            print(f"[step {ev.step}/{ev.total}] {neutralise(strip_escapes(ev.text))}", file=err, flush=True)
        else:
            print(f"    {neutralise(strip_escapes(ev.text))}", file=err, flush=True)

    sweep(engine, err)  # containers and build folders of killed envkit runs
    report_warnings(plan, False, err)
    write_outputs(plan.out_dir, render_build_context(plan))
    print(f"envkit: building {tag} from {plan.source.source}", file=err, flush=True)
    try:
        image_id = engine.build(plan.out_dir, tag, labels=labels, nocache=no_cache, on_event=progress,
                                buildargs=dict(plan.image.spec.proxy_build_args))
    except BuildFailed as e:
        raise build_error(e) from None
    print(f"envkit: built {tag}", file=err, flush=True)
    return Built(tag, plan, image_id)
