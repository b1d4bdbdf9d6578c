"""``envkit watch [--pid PID] [--interval S] [--json]``: the companion's shm watch, from the command line.

The same code runs in the image as ``python3 -m envkit_runtime watch ...`` and in a
training script as ``envkit_runtime.ShmWatch().start()``.

Its options are the companion's own, so it takes its raw argv (``raw_argv`` in
:data:`envkit.commands.COMMANDS`).

Called as::

    run(["--pid", "1234", "--interval", "0.5"]) -> 0 (2 on bad input)
"""

from __future__ import annotations


def run(argv: list[str]) -> int:
    from envkit.harness.runtime.shmwatch import main

    return main(argv)


# ---------------------------------------------------------------- command line (envkit.commands' contract)


def build_parser():
    """The companion's parser, as ``envkit watch --help`` shows it."""
    from envkit.harness.runtime.shmwatch import build_parser as watch_parser

    return watch_parser()


def main(argv: list[str]) -> int:
    return run(argv)
