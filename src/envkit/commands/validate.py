"""``envkit validate``: build (or take ``--image``), run the harness in a container with exactly the
profile's run settings, and report; ``--compare-default`` also runs it under Docker's defaults.

The container settings come from ``envkit.engine.docker.sdk_kwargs``, the same
translation that writes run.sh and compose.yaml. "Docker's defaults" means no
--shm-size, --ipc, --cpuset-cpus, --cpus, --memory or --ulimit; a GPU request
is kept, so the comparison isolates what envkit tunes.

Exit codes: 0 the generated settings pass (warnings allowed), 1 a check fails,
2 profile/usage error, 3 engine problem.

Called as::

    run(Path("envkit.yaml"), image=None, compare_default=True, as_json=False, timeout=300,
        quick=False, out=sys.stdout, err=sys.stderr) -> 0
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import TextIO

from envkit.engine import LABEL, Engine, RunResult
from envkit.engine.docker import sdk_kwargs
from envkit.errors import EngineError
from envkit.expect import expectation_json
from envkit.generation import report_warnings
from envkit.harness.report import human_bytes
from envkit.imagebuild import build_image, connect
from envkit.leftovers import sweep
from envkit.profile import LoadedProfile, load_profile
from envkit.pythons import python_problem
from envkit.runsettings import RunSettings
from envkit.termtext import neutralise
from envkit.targets.dockerfile import EXPECT_FILE, HARNESS_DIR, HARNESS_FILE


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


def with_profile_expectation(loaded: LoadedProfile, settings: dict) -> dict:
    """``settings`` plus the profile's expectation in the container's environment.

    ``validate --image`` checks the PROFILE it was given, not the expectation baked into the image.
    """
    env = settings.get("environment") or {}
    env = dict(env) if isinstance(env, dict) else dict(e.split("=", 1) for e in env)
    env[EXPECT_ENV] = expectation_json(loaded.profile).decode()
    return {**settings, "environment": env}


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


def container_settings(loaded: LoadedProfile, *, default: bool) -> tuple[dict, list[str]]:
    """docker-py settings for the profile (or Docker's defaults), and notes about what was left out."""
    kw = sdk_kwargs(RunSettings.from_profile(loaded.profile),
                    volume_source=lambda v: str(loaded.resolve(v.source)) if v.is_relative else v.source)
    notes = []
    # The harness reads nothing from bind mounts; a missing host path would make Docker create it as root.
    vols = []
    for spec in kw.pop("volumes", []):
        src = spec.split(":", 1)[0]
        (vols.append(spec) if Path(src).exists() else notes.append(f"volume {spec!r} skipped: {src} does not exist"))
    if vols:
        kw["volumes"] = vols
    if default:
        kw = {k: v for k, v in kw.items() if k in ("device_requests", "environment")}
    return kw, notes


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


def run_harness(engine: Engine, image: str, settings: dict, *, timeout: float, quick: bool, label: str) -> dict:
    """Run the harness in a fresh container; return its JSON report (EngineError if it produced none)."""
    command = harness_command(timeout, quick, profile_expect=EXPECT_ENV in (settings.get("environment") or {}))
    result: RunResult = engine.run(image, command, settings=settings,
                                   labels={LABEL: "1", "io.envkit.run": label}, timeout=timeout)
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


def run(profile_path: Path | None, *, image: str | None, compare_default: bool, as_json: bool, timeout: float,
        quick: bool, out: TextIO, err: TextIO, engine: Engine | None = None) -> int:
    loaded = load_profile(profile_path)
    report_warnings(loaded, False, err)
    engine = connect(engine)
    if image is not None:
        sweep(engine, err)  # (build_image sweeps when it builds)
    if image is None:
        image = build_image(loaded, engine, tag=None, no_cache=False, err=err)
        settings, notes = container_settings(loaded, default=False)
    else:
        settings, notes = container_settings(loaded, default=False)
        settings = with_profile_expectation(loaded, settings)
        mismatch = label_mismatch(loaded, engine.image_labels(image))
        if mismatch:
            notes.append(mismatch)
    for note in notes:
        print(f"envkit: note: {note}", file=err)
    print(f"envkit: running the harness in {image} with the profile's settings", file=err, flush=True)
    generated = run_harness(engine, image, settings, timeout=timeout, quick=quick, label="generated")
    default = None
    if compare_default:
        print(f"envkit: running the harness again with Docker's defaults ({daemon_default_shm(engine)})",
              file=err, flush=True)
        dsettings, _ = container_settings(loaded, default=True)
        if EXPECT_ENV in (settings.get("environment") or {}):
            dsettings = with_profile_expectation(loaded, dsettings)
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
