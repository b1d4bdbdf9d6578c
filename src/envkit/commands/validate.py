"""``envkit validate``: build (or take ``--image``), run the harness in a container with exactly the
profile's run settings, and report; ``--compare-default`` also runs it under Docker's defaults.

The container's settings are the profile's :class:`~envkit.plan.runsettings.RunSettings`, the same
decisions that write run.sh and compose.yaml, handed to the engine seam as they are. "Docker's
defaults" means no --shm-size, --ipc, --init, --cpuset-cpus, --cpus, --memory, --ulimit or
volume; a GPU request and the environment are kept, so the comparison isolates what envkit tunes.

Before it builds, it runs doctor's checks of what the container asks of this host (memory, the
cpuset, GPUs, each ulimit: :func:`envkit.doctor.host_fit`); one that fails ends the run in seconds,
naming it, before any build. With a remote engine (``DOCKER_HOST`` tcp:// or ssh://) this host is not
where the container runs, and the checks are skipped with a note.

Exit codes: 0 the generated settings pass (warnings allowed), 1 a check fails (the host's included),
2 profile/usage error, 3 engine problem.

Called as::

    run(Path("envkit.yaml"), image=None, compare_default=True, as_json=False, timeout=300,
        quick=False, out=sys.stdout, err=sys.stderr) -> 0
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from envkit.commands.arguments import profile_argument, resolve_profile, seconds
from envkit.errors import CheckFailed, EngineError
from envkit.generation import report_warnings
from envkit.plan.envplan import EnvPlan
from envkit.planner import build_plan
from envkit.harness.report import human_bytes
from envkit.hostpaths import is_drive_path
from envkit.profile import LoadedProfile, load_profile
from envkit.pythons import python_problem
from envkit.plan.runsettings import RunSettings
from envkit.termtext import neutralise
from envkit.plan.paths import EXPECT_FILE, HARNESS_DIR, HARNESS_FILE

if TYPE_CHECKING:
    from envkit.doctor import Host
    from envkit.engine import Engine, RunResult


EXPECT_ENV = "ENVKIT_EXPECT_JSON"
# Runs in the container: write the profile's expectation (passed in EXPECT_ENV, so no bind mount and
# any engine, local or remote, works) to a private temporary file, then run the harness on it.
_WITH_PROFILE_EXPECT = (
    "import os, runpy, sys, tempfile\n"
    "fd, path = tempfile.mkstemp(prefix='envkit_expect_', suffix='.json')\n"
    f"os.write(fd, os.environ.pop('{EXPECT_ENV}').encode()); os.close(fd)\n"
    "sys.argv = [sys.argv[1], '--expect', path] + sys.argv[2:]\n"
    "try:\n    runpy.run_path(sys.argv[0], run_name='__main__')\nfinally:\n    os.unlink(path)\n"
)


def harness_command(timeout: float, quick: bool, *, profile_expect: bool = False) -> list[str]:
    """The container's command; with ``profile_expect`` the expectation comes from ``EXPECT_ENV``."""
    rest = ["--json", "--timeout", f"{max(5.0, timeout / 4):g}"] + (["--quick"] if quick else [])
    if profile_expect:
        return ["python3", "-c", _WITH_PROFILE_EXPECT, f"{HARNESS_DIR}/{HARNESS_FILE}"] + rest
    return ["python3", f"{HARNESS_DIR}/{HARNESS_FILE}", "--expect", f"{HARNESS_DIR}/{EXPECT_FILE}"] + rest


def with_profile_expectation(plan: EnvPlan, run: RunSettings) -> RunSettings:
    """``run`` plus the plan's expectation in the container's environment (``EXPECT_ENV``).

    ``validate --image`` checks the PROFILE it was given, not the expectation baked into the image.
    """
    env = dict(run.env)
    env[EXPECT_ENV] = plan.expectation.decode()
    return replace(run, env=tuple(env.items()))


def label_mismatch(loaded: LoadedProfile, labels: dict[str, str]) -> str | None:
    """A note when the image was built from another profile (or another version of this one)."""
    name, sha = labels.get("io.envkit.profile"), labels.get("io.envkit.profile.sha256")
    if name is None and sha is None:
        return "the image has no envkit profile label (not built by `envkit build`); checking the profile's settings"
    if name != loaded.profile.name:
        return (f"the image was built from profile {name!r}, not {loaded.profile.name!r}; checking "
                f"{loaded.profile.name!r}'s expectation, so differences are the image's, not the run flags'")
    if sha and sha != loaded.sha256:
        return (f"the image was built from another version of profile {name!r} (sha256 {sha[:12]}, this one "
                f"{loaded.sha256[:12]}); checking this version's expectation")
    return None


def make_missing_sources(rs: RunSettings) -> list[str]:
    """Make the bind-mount sources of ``rs`` that do not exist yet, as the user who runs validate, and say so: Docker
    would make them as root, and the user could not write there (run.sh does the same; a Windows drive path is
    Docker Desktop's to resolve)."""
    made = []
    for v in rs.volumes:
        if not v.project and not is_drive_path(v.source) and not os.path.lexists(v.source):
            os.makedirs(v.source, exist_ok=True)
            made.append(f"made {v.source} for the volume {v.source}:{v.target}, as you (Docker would have made it as root)")
    return made


def container_settings(plan: EnvPlan, *, default: bool) -> tuple[RunSettings, list[str]]:
    """The container's settings for the profile (or Docker's defaults), and notes about what was left out.

    Volume sources are made absolute against the profile's folder. The container starts as the
    image's user (no ``start_as_root``): the user the harness measures for.
    """
    rs = plan.settings.with_sources(lambda src: str(plan.source.resolve(src)))
    notes: list[str] = []
    rs = replace(rs, start_as_root=False)
    if default:
        rs = replace(RunSettings.engine_defaults(), gpus=rs.gpus, env=rs.env)
    return rs, notes


def daemon_default_shm(engine: Engine) -> str:
    """What "Docker's default" /dev/shm is on this daemon: its default-shm-size where one is set and readable.

    dockerd's ``default-shm-size`` (daemon.json or ``--default-shm-size``) replaces the built-in
    64 MiB for every container started without ``--shm-size``; ``docker info`` does not show it, so
    the engine reads the local daemon's command line and config (:mod:`envkit.engine.dockerd`).
    """
    try:
        info = engine.ping()
    except EngineError:
        info = {}
    size, source = info.get("default_shm_size"), info.get("default_shm_source")
    if size:
        return f"this daemon's default /dev/shm is {human_bytes(size)}, set by {source}, not Docker's built-in 64 MiB"
    return "/dev/shm 64 MiB, Docker's built-in default; no default-shm-size found for the local daemon"


def has_profile_expectation(run: RunSettings) -> bool:
    """True when ``run`` carries the profile's expectation (:func:`with_profile_expectation`)."""
    return any(key == EXPECT_ENV for key, _ in run.env)


def run_harness(engine: Engine, image: str, run: RunSettings, *, timeout: float, quick: bool, label: str) -> dict:
    """Run the harness in a fresh container; return its JSON report (EngineError if it produced none)."""
    command = harness_command(timeout, quick, profile_expect=has_profile_expectation(run))
    from envkit.engine import LABEL  # here, not at the top: building the CLI's parser imports every command module

    result: RunResult = engine.run(image, command, run, labels={LABEL: "1", "io.envkit.run": label}, timeout=timeout)
    if result.timed_out:
        raise EngineError(f"the harness ({label} settings) did not finish within {timeout:g} s; the container was "
                          "removed", hint="raise --timeout, or use --quick")
    try:
        report = json.loads(result.stdout)
        if not isinstance(report, dict) or report.get("envkit_harness") != 1:
            raise ValueError("not a harness report")
    except ValueError:
        tail = "\n".join(("    " + neutralise(line)) for line in (result.stderr or result.stdout).splitlines()[-20:])
        raise EngineError(f"the harness ({label} settings) exited with code {result.exit_code} without a report:\n"
                          f"{tail}", hint="is this an envkit-built image? (`envkit build` copies the harness in)") from None
    return report


def readback(report: dict) -> list[str]:
    """The settings as the container saw them, from the harness's environment and check measurements."""
    env = report.get("environment") or {}
    checks = {c["name"]: c for c in report.get("checks", [])}
    shm = env.get("shm") or {}
    lines = [f"user: {env.get('user')} (uid {env.get('uid')})",
             f"/dev/shm: {human_bytes(shm.get('size_bytes'))} ({human_bytes(shm.get('free_bytes'))} free)",
             f"usable CPUs: {env.get('usable_cpus')} (cgroup quota: {(env.get('cgroup') or {}).get('quota_cpus')})"]
    ul = (checks.get("ulimits") or {}).get("measured") or {}
    if ul:
        def one(name, lim):
            if not isinstance(lim, dict):
                return f"{name}={lim}"
            soft, hard = lim.get("soft"), lim.get("hard")
            return f"{name}={soft}" if soft == hard else f"{name}={soft}:{hard}"
        lines.append("ulimits: " + ", ".join(one(k, v) for k, v in sorted(ul.items())) + " (-1 = unlimited)")
    return lines


def render_comparison(profile: str, image: str, generated: dict, default: dict | None) -> str:
    rows = [f"envkit validate: {profile} in {image}", ""]
    head = f"{'CHECK':<16} {'GENERATED':<10}" + (f" {'DOCKER DEFAULTS':<16}" if default else "") + " DETAIL"
    rows.append(head)
    dflt = {c["name"]: c for c in (default or {}).get("checks", [])}
    for c in generated["checks"]:
        d = dflt.get(c["name"])
        detail = (d["message"] if d and d["status"] != c["status"] else c["message"]) or ""
        prefix = f"{c['name']:<16} {c['status']:<10}" + (f" {(d or {}).get('status', '-'):<16}" if default else "")
        wrapped = textwrap.wrap(detail, 100) or [""]
        rows.append(f"{prefix} {wrapped[0]}")
        rows.extend(" " * (len(prefix) + 1) + w for w in wrapped[1:])
    rows += ["", "settings read back inside the container (generated):"] + [f"  {line}" for line in readback(generated)]
    for name, rep in (("generated", generated), ("Docker defaults", default)):
        fixes = [c for c in (rep or {}).get("checks", []) if c["status"] in ("fail", "warn") and c.get("remedy")]
        if fixes:
            rows += ["", f"how to fix ({name}):"]
            for c in fixes:
                rows += textwrap.wrap(f"{c['name']}: {c['remedy']}", 110, initial_indent="  ", subsequent_indent="    ")
    verdict = generated["verdict"].upper()
    tail = f"; Docker defaults: {default['verdict'].upper()}" if default else ""
    rows += ["", f"verdict: generated settings {verdict}{tail}"]
    return "\n".join(rows)


def check_host_first(loaded: LoadedProfile, plan: EnvPlan, host: Host | None, err: TextIO) -> None:
    """doctor's host checks for the container of the run's ``plan``; CheckFailed (exit 1) naming each that fails.

    Skipped, with a note, when the engine is remote: its host is not this one.
    """
    from envkit.doctor import Host, host_fit  # here, not at the top: building the CLI's parser imports every command module
    from envkit.doctor.host import engine_address
    from envkit.harness.report import FAIL

    host = host or Host()
    where = engine_address(host.environ)
    if where.startswith(("tcp://", "ssh://", "http://", "https://")):
        print(f"envkit: note: the engine at {where} runs elsewhere: this host's cpuset, memory and GPU checks are skipped",
              file=err)
        return
    failed = [c for c in host_fit(host, loaded, plan) if c["status"] == FAIL]
    if failed:
        raise CheckFailed(f"{loaded.source}: this host cannot run the profile's container, so nothing was built: "
                          + "; ".join(f"{c['name']}: {c['message']}" for c in failed),
                          hint="; ".join(remedy for c in failed if (remedy := c["remedy"]))
                          + " (`envkit doctor` shows every check)")


def run(profile_path: Path | None, *, image: str | None, compare_default: bool, as_json: bool, timeout: float,
        quick: bool, out: TextIO, err: TextIO, engine: Engine | None = None, host: Host | None = None) -> int:
    loaded = load_profile(profile_path)
    # here, not at the top: building the CLI's parser imports every command module
    from envkit.imagebuild import build_image, connect, planned_build
    from envkit.leftovers import sweep

    if image is None:
        with planned_build(loaded) as plan:  # the run's one plan: the host check reads it, then the build
            check_host_first(loaded, plan, host, err)
            engine = connect(engine)
            image = build_image(plan, engine, tag=None, no_cache=False, err=err).tag  # it sweeps and warns
        settings, notes = container_settings(plan, default=False)
    else:
        plan = build_plan(loaded)
        check_host_first(loaded, plan, host, err)
        engine = connect(engine)
        report_warnings(plan, False, err)
        sweep(engine, err)
        settings, notes = container_settings(plan, default=False)
        settings = with_profile_expectation(plan, settings)
        mismatch = label_mismatch(loaded, engine.image_labels(image))
        if mismatch:
            notes.append(mismatch)
    for note in notes + make_missing_sources(settings):
        print(f"envkit: note: {note}", file=err)
    print(f"envkit: running the harness in {image} with the profile's settings", file=err, flush=True)
    generated = run_harness(engine, image, settings, timeout=timeout, quick=quick, label="generated")
    default = None
    if compare_default:
        print(f"envkit: running the harness again with Docker's defaults ({daemon_default_shm(engine)})",
              file=err, flush=True)
        dsettings, _ = container_settings(plan, default=True)
        if has_profile_expectation(settings):
            dsettings = with_profile_expectation(plan, dsettings)
        default = run_harness(engine, image, dsettings, timeout=timeout, quick=quick, label="default")
    verdict = generated["verdict"]
    # The image's real Python against the profile's (image.python, or what the base's name implies).
    problem = python_problem(loaded.profile.image, str((generated.get("environment") or {}).get("python") or ""))
    if problem:
        print(f"envkit: error: {loaded.source}: {problem}", file=err)
        verdict = "fail"
    if as_json:
        doc = {"profile": loaded.profile.name, "image": image, "generated": generated, "default": default,
               "verdict": verdict}
        print(json.dumps(doc, indent=2), file=out)
    else:
        print(render_comparison(loaded.profile.name, image, generated, default), file=out)
    return 1 if verdict == "fail" else 0


# ---------------------------------------------------------------- command line (envkit.commands' contract)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    profile_argument(parser)
    parser.add_argument("--image", default=None, help="validate this image instead of building")
    parser.add_argument("--compare-default", action="store_true", help="also run under Docker's defaults, side by side")
    parser.add_argument("--json", action="store_true", help="print one JSON report on stdout")
    parser.add_argument("--timeout", type=seconds, default=300.0, help="seconds for each harness run (default 300)")
    parser.add_argument("--quick", action="store_true", help="fewer batches and a smaller transfer buffer")


def main(args: argparse.Namespace) -> int:
    return run(resolve_profile(args), image=args.image, compare_default=args.compare_default, as_json=args.json,
               timeout=args.timeout, quick=args.quick, out=sys.stdout, err=sys.stderr)
