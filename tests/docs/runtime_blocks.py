"""docs/runtime.md holds real output: blocks marked ``<!-- runtime:NAME -->`` are checked by the tests
that produce them (exactly, or with digits masked where timings vary) through the ``golden`` fixture,
so ENVKIT_UPDATE_GOLDEN=1 rewrites a block that differs (and fails that test until it is run again)."""

from __future__ import annotations

import re

from tests.conftest import ROOT

DOC = ROOT / "docs" / "runtime.md"


def _pattern(name: str) -> str:
    return rf"(<!-- runtime:{re.escape(name)} -->\n```\w*\n)(.*?)(```\n)"


def mask(text: str) -> str:
    """Digits vary run to run (timings, byte counts); the shape of the output does not.

    >>> mask("3 workers in 0.25 s")
    '# workers in #.# s'
    """
    return re.sub(r"\d+", "#", text)


def check_block(golden, name: str, actual: str, *, masked: bool = False, optional: str | None = None) -> None:
    """The doc's block ``name`` is ``actual`` (digits masked if asked), checked with the ``golden`` fixture.

    ``optional``: a regex for a clause that one run prints and another may not (removed on both sides).
    """
    __tracebackhide__ = True
    actual = actual.rstrip("\n") + "\n"
    doc = DOC.read_bytes().decode()
    assert re.search(_pattern(name), doc, re.S), f"docs/runtime.md has no block <!-- runtime:{name} -->"

    def shape(block: str) -> str:
        if optional:
            block = re.sub(optional, "", block)
        return mask(block) if masked else block

    def normalize(page: str) -> str:  # the one block in its shape; the rest of the page as it is
        return re.sub(_pattern(name), lambda m: m.group(1) + shape(m.group(2)) + m.group(3), page, count=1, flags=re.S)

    new = re.sub(_pattern(name), lambda m: m.group(1) + actual + m.group(3), doc, count=1, flags=re.S)
    golden.check(DOC, new.encode(), normalize=normalize if (masked or optional) else None)
