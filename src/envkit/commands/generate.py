"""``envkit generate``: profile → files, after the workload-aware checks.

Example:
    >>> # run(Path("envkit.yaml"), Path("out"), ("dockerfile",), force=False, strict=False, out=sys.stdout, err=sys.stderr)
"""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

from envkit.checks import file_warnings, profile_warnings
from envkit.errors import ProfileError
from envkit.lockfile import stale_warning
from envkit.output import write_outputs
from envkit.profile import LoadedProfile, load_profile
from envkit.render import make_env
from envkit.runsettings import RunSettings
from envkit.targets import TARGET_NAMES, GenContext, OutputFile, render_targets


def render_all(loaded: LoadedProfile, out_dir: Path, targets: tuple[str, ...] = TARGET_NAMES) -> list[OutputFile]:
    """Render ``targets`` in memory (nothing is written)."""
    ctx = GenContext(loaded=loaded, settings=RunSettings.from_profile(loaded.profile), out_dir=out_dir, env=make_env())
    return render_targets(ctx, targets)


def report_warnings(loaded: LoadedProfile, strict: bool, err: TextIO) -> None:
    """Print warnings to ``err``; under ``strict`` they are errors (exit 2, nothing written)."""
    warnings = profile_warnings(loaded.profile) + file_warnings(loaded.profile, loaded.base_dir)
    stale = stale_warning(loaded)
    if stale:
        warnings.append(stale)
    if strict and warnings:
        raise ProfileError("\n".join(f"{loaded.source}: {w}" for w in warnings),
                           hint="fix the profile, or drop --strict to treat these as warnings")
    for w in warnings:
        print(f"envkit: warning: {loaded.source}: {w}", file=err)


def run(profile_path: Path | None, out_dir: Path, targets: tuple[str, ...], *, force: bool, strict: bool,
        out: TextIO, err: TextIO) -> int:
    loaded = load_profile(profile_path)
    report_warnings(loaded, strict, err)
    files = render_all(loaded, out_dir, targets or TARGET_NAMES)
    report = write_outputs(out_dir, files, force=force)
    for path in report.written:
        print(f"wrote {out_dir / path}", file=out)
    if report.unchanged:
        print(f"unchanged: {len(report.unchanged)} file(s)", file=out)
    for bak in report.backups:
        print(f"backed up your edited file to {bak}", file=err)
    return 0
