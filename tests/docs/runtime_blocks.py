"""docs/runtime.md holds real output: blocks marked ``<!-- runtime:NAME -->`` are checked by the tests
that produce them (exactly, or with digits masked where timings vary), and rewritten under
ENVKIT_UPDATE_GOLDEN=1 (the golden files' switch)."""

from __future__ import annotations

import os
import re

from tests.conftest import ROOT

DOC = ROOT / "docs" / "runtime.md"


def _pattern(name: str) -> str:
    return rf"(<!-- runtime:{re.escape(name)} -->\n```\w*\n)(.*?)(```\n)"


def mask(text: str) -> str:
    """Digits vary run to run (timings, byte counts); the shape of the output does not."""
    return re.sub(r"\d+", "#", text)


def check_block(name: str, actual: str, *, masked: bool = False, optional: str | None = None) -> None:
    """Assert the doc's block ``name`` is ``actual`` (digits masked if asked); update it under the switch.

    ``optional``: a regex for a clause that one run prints and another may not (removed on both sides).
    """
    actual = actual.rstrip("\n") + "\n"
    doc = DOC.read_text()
    found = re.search(_pattern(name), doc, re.S)
    assert found, f"docs/runtime.md has no block <!-- runtime:{name} -->"
    if os.environ.get("ENVKIT_UPDATE_GOLDEN") == "1":
        DOC.write_text(re.sub(_pattern(name), lambda m: m.group(1) + actual + m.group(3), doc, count=1, flags=re.S))
        return
    shown = found.group(2)
    if optional:
        shown, actual = re.sub(optional, "", shown), re.sub(optional, "", actual)
    if masked:
        shown, actual = mask(shown), mask(actual)
    assert shown == actual, f"docs/runtime.md block {name} is stale (ENVKIT_UPDATE_GOLDEN=1 to update)"
