"""``envkit build``: render the build context in a temporary folder and build it through the engine.

The context holds exactly what the Dockerfile copies (Dockerfile, harness,
expectations, certificates, wheelhouse); it is removed afterwards, whatever
happens. Progress streams to ``err`` as ``[step N/M]`` lines with the layer output.

Example:
    >>> # run(Path("envkit.yaml"), tag=None, no_cache=False, out=sys.stdout, err=sys.stderr) -> 0
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TextIO

from envkit.commands.generate import render_all, report_warnings
from envkit.runsettings import proxy_build_args
from envkit.engine import LABEL, BuildEvent, BuildFailed, Engine
from envkit.errors import CheckFailed, EngineError
from envkit.output import write_outputs
from envkit.profile import LoadedProfile, load_profile
from envkit.pythons import python_problem, real_version

LOG_TAIL = 25


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
            print(f"[step {ev.step}/{ev.total}] {ev.text}", file=err, flush=True)
        else:
            print(f"    {ev.text}", file=err, flush=True)

    with tempfile.TemporaryDirectory(prefix="envkit-build-") as tmp:
        context = Path(tmp)
        write_outputs(context, render_all(loaded, context, ("dockerfile",)))
        print(f"envkit: building {tag} from {loaded.source}", file=err, flush=True)
        try:
            engine.build(context, tag, labels=labels, nocache=no_cache, on_event=progress,
                         buildargs=dict(proxy_build_args(loaded.profile)))
        except BuildFailed as e:
            tail = "\n".join(f"    {line}" for line in e.log[-LOG_TAIL:])
            raise EngineError(f"{e}\nfailing step: {e.step or 'unknown'}\nlast lines of its output:\n{tail}",
                              hint=e.hint) from None
    print(f"envkit: built {tag}", file=err, flush=True)
    return tag


PYTHON_VERSION_CMD = ["python3", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"]


def check_python(loaded: LoadedProfile, engine: Engine, tag: str, err: TextIO) -> None:
    """Run python3 in the built image; CheckFailed when it is not the Python the profile says or implies."""
    result = engine.run(tag, PYTHON_VERSION_CMD, settings={}, labels={LABEL: "1", "io.envkit.run": "python"},
                        timeout=60)
    if result.exit_code != 0 or not result.stdout.strip():
        return  # nothing to compare; the harness run (validate) reports a broken python3 in detail
    problem = python_problem(loaded.profile.image, result.stdout)
    if problem:
        raise CheckFailed(f"{loaded.source}: {problem}")
    print(f"envkit: the image's Python is {real_version(result.stdout)}", file=err)


def run(profile_path: Path | None, *, tag: str | None, no_cache: bool, out: TextIO, err: TextIO,
        engine: Engine | None = None) -> int:
    loaded = load_profile(profile_path)
    report_warnings(loaded, False, err)
    engine = connect(engine)
    built = build_image(loaded, engine, tag=tag, no_cache=no_cache, err=err)
    check_python(loaded, engine, built, err)
    print(built, file=out)
    return 0
