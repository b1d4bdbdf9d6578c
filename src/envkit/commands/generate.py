"""``envkit generate``: profile → files, after the workload-aware checks.

Called as::

    run(Path("envkit.yaml"), Path("out"), (), force=False, strict=False, out=sys.stdout, err=sys.stderr)
"""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

from envkit.errors import UsageError
from envkit.generation import render_owned, report_warnings
from envkit.output import write_outputs
from envkit.profile import load_profile
from envkit.targets import TARGET_NAMES, required_section


def run(profile_path: Path | None, out_dir: Path, targets: tuple[str, ...], *, force: bool, strict: bool,
        out: TextIO, err: TextIO) -> int:
    loaded = load_profile(profile_path)
    for target in targets:
        section = required_section(target)
        if section is not None and getattr(loaded.profile, section) is None:
            raise UsageError(f"{loaded.source}: --target {target} needs a {section}: section in the profile",
                             hint=f"add a {section}: section to the profile (its keys: docs/profile.md)")
    requested = targets or TARGET_NAMES
    report_warnings(loaded, strict, err, requested)
    files, owners = render_owned(loaded, out_dir, requested)
    report = write_outputs(out_dir, files, force=force, owners=owners, requested=tuple(requested))
    for path in report.written:
        print(f"wrote {out_dir / path}", file=out)
    for path in report.removed:
        print(f"removed {out_dir / path} (its target is no longer in the profile)", file=out)
    for path in report.kept:
        print(f"envkit: warning: kept {out_dir / path}: its target is no longer in the profile, "
              "but the file was edited (delete it yourself if unneeded)", file=err)
    if report.unchanged:
        print(f"unchanged: {len(report.unchanged)} file(s)", file=out)
    for bak in report.backups:
        print(f"backed up your edited file to {bak}", file=err)
    return 0
