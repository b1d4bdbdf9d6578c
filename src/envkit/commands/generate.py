"""``envkit generate``: profile → files, after the workload-aware checks.

Called as::

    run(Path("envkit.yaml"), Path("out"), (), force=False, strict=False, out=sys.stdout, err=sys.stderr)

With ``as_json`` stdout holds one document (``envkit.jsonout.SCHEMAS["generate"]``) and every line
for people goes to ``err``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

from envkit.commands.arguments import profile_argument, resolve_profile
from envkit.errors import UsageError
from envkit.generation import render_owned, report_notes, report_warnings, warning_record
from envkit.jsonout import FileRecord, GenerateDoc, LoaderDoc, WarningRecord, emit
from envkit.output import check_output_folder, foreign_files, write_outputs
from envkit.planner import build_plan
from envkit.profile import load_profile
from envkit.targets import TARGET_NAMES, exact_folders, needs_a_dockerfile, required_section
from envkit.termtext import neutralise

FOREIGN_SHOWN = 20  # the user's files under .envkit/ named one per line; the rest counted


def run(profile_path: Path | None, out_dir: Path, targets: tuple[str, ...], *, force: bool, strict: bool,
        out: TextIO, err: TextIO, as_json: bool = False) -> int:
    loaded = load_profile(profile_path)
    for target in targets:
        section = required_section(target)
        if section is not None and getattr(loaded.profile, section) is None:
            raise UsageError(f"{loaded.source}: --target {target} needs a {section}: section in the profile",
                             hint=f"add a {section}: section to the profile (its keys: docs/profile.md)")
    requested = targets or TARGET_NAMES
    check_output_folder(out_dir)
    plan = build_plan(loaded, out_dir)
    warnings = report_warnings(plan, strict, err, requested)
    notes = report_notes(plan, err)
    files, owners = render_owned(plan, requested)
    exact = tuple(d for t in requested for d in exact_folders(t, plan.sections))
    foreign = tuple(foreign_files(out_dir, exact, files))
    if foreign:  # the user's files under .envkit/: the .dockerignore keeps them out of the image
        files, owners = render_owned(plan, requested, foreign)
    report = write_outputs(out_dir, files, force=force, owners=owners, requested=tuple(requested), exact=exact)
    if as_json:
        # A copy pruned from the build context is removed like a target's file the profile no longer has.
        statuses = {"written": report.written, "unchanged": report.unchanged,
                    "removed": report.removed + report.pruned, "kept": report.kept + report.foreign}
        emit(GenerateDoc(profile=loaded.source, output=str(out_dir),
                         files=tuple(FileRecord(path=str(out_dir / path), status=status)
                                     for status, paths in statuses.items() for path in paths),
                         backups=tuple(str(bak) for bak in report.backups),
                         warnings=tuple(WarningRecord.model_validate(warning_record(w)) for w in warnings),
                         notes=tuple(WarningRecord.model_validate(warning_record(n)) for n in notes),
                         loader=LoaderDoc.model_validate(plan.loader.as_json())), out)
        out = err
    for path in report.written:
        print(f"wrote {neutralise(str(out_dir / path))}", file=out)
    for path in report.removed:
        print(f"removed {neutralise(str(out_dir / path))} (its target is no longer in the profile)", file=out)
    for path in report.pruned:
        print(f"removed {neutralise(str(out_dir / path))} (no longer part of the build context)", file=out)
    for path in report.kept:
        print(f"envkit: warning: kept {neutralise(str(out_dir / path))}: its target is no longer in the profile, "
              "but the file was edited (delete it yourself if unneeded)", file=err)
    for path in report.foreign[:FOREIGN_SHOWN]:
        print(f"envkit: warning: kept {neutralise(str(out_dir / path))}: envkit did not write it (it is not in "
              "the manifest), so it is yours; the generated .dockerignore keeps it out of the image", file=err)
    if len(report.foreign) > FOREIGN_SHOWN:
        print(f"envkit: warning: kept {len(report.foreign) - FOREIGN_SHOWN} more file(s) under "
              f"{neutralise(str(out_dir))} that envkit did not write", file=err)
    if report.unchanged:
        print(f"unchanged: {len(report.unchanged)} file(s)", file=out)
    for bak in report.backups:
        print(f"backed up your edited file to {neutralise(str(bak))}", file=err)
    for note in layout_notes(out_dir, tuple(requested), tuple(report.written)):
        print(f"envkit: warning: {neutralise(note)}" if "cannot build" in note else f"envkit: note: {neutralise(note)}",
              file=err)
    return 0


def layout_notes(out_dir: Path, requested: tuple[str, ...], written: tuple[str, ...]) -> list[str]:
    """What the written files need from the output folder: compose.yaml and the dev container build from its
    Dockerfile (a warning when it is neither requested nor there); VS Code finds .devcontainer/ only at the
    top of the folder it opens."""
    notes = []
    builders = needs_a_dockerfile(requested, out_dir)
    if builders:
        notes.append(f"{' and '.join(builders)} build{'s' if len(builders) == 1 else ''} from {out_dir / 'Dockerfile'}, "
                     "which is not there, so it cannot build: add --target dockerfile")
    if ".devcontainer/devcontainer.json" in written and out_dir.resolve() != Path.cwd().resolve():
        notes.append(f"VS Code finds the dev container in the folder it opens: open {out_dir} (or generate with -o .)")
    return notes


# ---------------------------------------------------------------- command line (envkit.commands' contract)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    profile_argument(parser)
    parser.add_argument("-o", "--output", type=Path, default=Path("."), help="output directory (default: .)")
    parser.add_argument("--target", action="append", choices=TARGET_NAMES, default=[],
                        help="only this target (repeatable)")
    parser.add_argument("--force", action="store_true", help="overwrite files edited since envkit wrote them (backups kept)")
    parser.add_argument("--strict", action="store_true", help="treat workload warnings as errors")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON document on stdout: the files and the warnings (docs/cli.md)")


def main(args: argparse.Namespace) -> int:
    return run(resolve_profile(args), args.output, tuple(args.target), force=args.force, strict=args.strict,
               out=sys.stdout, err=sys.stderr, as_json=args.json)
