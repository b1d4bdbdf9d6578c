"""``envkit clean``: remove what killed envkit runs and superseded builds left behind, and list it.

Only containers and ``envkit-build-*`` folders whose recorded owner (pid, start
time, this host's boot id) no longer runs are removed; see :mod:`envkit.leftovers`.
Images that envkit built and that no tag names any more (a rebuild under the same
tag leaves the previous one nameless, holding a whole environment's layers) are
removed with the cache layers only they use, unless a container still uses them;
tagged images, images pulled by digest, and the layers of current builds stay. Anything else, including another user's live runs on a
shared engine, is left alone.

Called as::

    run(out=sys.stdout, err=sys.stderr) -> 0, printing "removed container envkit-run-..." lines
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, TextIO

from envkit.errors import EngineError
from envkit.jsonout import CleanDoc, emit
from envkit.termtext import neutralise

if TYPE_CHECKING:
    from envkit.engine import Engine


def run(*, out: TextIO, err: TextIO, engine: Engine | None = None, as_json: bool = False) -> int:
    """Sweep and list; with ``as_json`` one document (``envkit.jsonout.SCHEMAS["clean"]``) on ``out``, the list on ``err``."""
    # Here, not at the top: building the CLI's parser imports every command module.
    from envkit.leftovers import sweep_build_dirs, sweep_containers, sweep_superseded_images

    doc = out
    if as_json:
        out = err
    # The folders need no engine: they are swept and listed first, so a missing engine (exit 3,
    # docs/cli.md's exit codes) never hides what was already removed. A folder's name is the temp
    # folder's, which anyone can write: made safe to print.
    folders = sweep_build_dirs()
    for folder in folders:
        print(f"removed build folder {neutralise(folder)}", file=out)
    if engine is None:
        from envkit.imagebuild import connect

        try:
            engine = connect(None)
        except EngineError as e:
            done = f"removed {len(folders)} build folder(s), listed above" if folders else "no build folder was left"
            raise EngineError(f"{e}; containers and superseded images were not swept ({done})", hint=e.hint) from None
    containers = sweep_containers(engine)
    for name in containers:
        print(f"removed container {name}", file=out)
    images = sweep_superseded_images(engine)  # said after the others: an engine error here loses no report
    for line in images:
        print(f"removed superseded image {line}", file=out)
    if not containers and not folders and not images:
        print("nothing to clean: no leftovers of killed envkit runs, no superseded envkit images", file=out)
    if as_json:
        emit(CleanDoc(build_folders=tuple(str(f) for f in folders), containers=tuple(containers), images=tuple(images)), doc)
    return 0


# ---------------------------------------------------------------- command line (envkit.commands' contract)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON document: what was removed (docs/cli.md)")


def main(args: argparse.Namespace) -> int:
    return run(out=sys.stdout, err=sys.stderr, as_json=args.json)
