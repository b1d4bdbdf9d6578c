"""``envkit harness``: the in-container harness, run here; ``--profile`` becomes ``--expect``.

The harness itself takes expectations as JSON (it is standard library + torch
only); this wrapper derives them from a profile, exactly as ``generate`` does.

Its options are the harness's own plus ``--profile`` (``envkit harness --help`` is the harness's
parser under the name ``envkit harness``, :func:`build_parser`), so it takes its raw argv
(``raw_argv`` in :data:`envkit.commands.COMMANDS`).

Called as::

    run(Path("envkit.yaml"), ["--quick", "--json"]) -> 0 | 1 | 2
"""

from __future__ import annotations

from pathlib import Path

from envkit.errors import UsageError
from envkit.planner import build_plan
from envkit.profile import load_profile


PROG = "envkit harness"


def run(profile_path: Path | None, harness_argv: list[str]) -> int:
    from envkit.harness.cli import main

    def harness_main(argv: list[str]) -> int:
        return main(argv, prog=PROG, profile_option=True)

    if profile_path is None:
        return harness_main(harness_argv)
    import tempfile  # here, not at the top: building the CLI's parser imports every command module

    loaded = load_profile(profile_path)
    with tempfile.TemporaryDirectory(prefix="envkit-expect-") as tmp:
        expect = Path(tmp) / "envkit_expect.json"
        expect.write_bytes(build_plan(loaded).expectation)
        return harness_main(["--expect", str(expect), *harness_argv])


# ---------------------------------------------------------------- command line (envkit.commands' contract)


def build_parser():
    """The harness's parser as ``envkit harness`` shows it: its name, and ``--profile``."""
    from envkit.harness.cli import build_parser as harness_parser

    return harness_parser(PROG, profile_option=True)


def split_harness_argv(argv: list[str]) -> tuple[Path | None, list[str]]:
    """``--profile P`` is envkit's; every other harness flag belongs to the harness's own parser.

    >>> split_harness_argv(["--quick", "--profile", "p.yaml", "--json"])
    (PosixPath('p.yaml'), ['--quick', '--json'])
    """
    profile, rest, i = None, [], 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--profile":
            if i + 1 >= len(argv):
                raise UsageError("harness: --profile needs a profile file")
            profile, i = Path(argv[i + 1]), i + 2
            continue
        if arg.startswith("--profile="):
            profile = Path(arg.split("=", 1)[1])
        else:
            rest.append(arg)
        i += 1
    return profile, rest


def main(argv: list[str]) -> int:
    profile, rest = split_harness_argv(argv)
    return run(profile, rest)  # no profile: the harness's own defaults or --expect
