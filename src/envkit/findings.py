"""A warning or note as data: the profile key it concerns, its text, and where that key is written.

Every adviser (:mod:`envkit.advice`), the plan and each target's ``warnings(plan)`` makes a
:class:`Finding` with the key path as a field, never by writing ``"key: text"`` and parsing it back.
The plan (:func:`envkit.planner.build_plan`) places each once with its :class:`Locator`: the
line and column of the nearest key the profile writes (``None`` when the finding names no key),
and the profile's source name, which the printed line starts with.

A finding is also a ``str``: its value is the line as the user reads it (``"path: text"``, or the
text alone without a path), so a check such as ``w.startswith("run.shm_size:")`` reads what is shown.

>>> f = Finding("loader.num_workers", "too many")
>>> f, f.path, f.text, f.line
('loader.num_workers: too many', 'loader.num_workers', 'too many', None)
>>> where = Locator("p.yaml", {("loader",): (4, 1), ("loader", "num_workers"): (5, 3)})
>>> placed = where(Finding("loader.prefetch_factor", "high"))  # not written: its parent's place
>>> placed.source, placed.line, placed.column, placed.record()
('p.yaml', 4, 1, {'path': 'loader.prefetch_factor', 'line': 4, 'column': 1, 'text': 'high'})
>>> where(Finding(None, "word: no key here")).record()
{'path': None, 'line': None, 'column': None, 'text': 'word: no key here'}
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

Positions = Mapping[tuple[str | int, ...], tuple[int, int]]

_PART = re.compile(r"\[(\d+)\]|([^.\[]+)")


def key_of(path: str) -> tuple[str | int, ...]:
    """A key path as the profile's positions index it: ``"a.b[2].c"`` -> ``("a", "b", 2, "c")``.

    >>> key_of("cluster.kubernetes.volumes[0].claim")
    ('cluster', 'kubernetes', 'volumes', 0, 'claim')
    """
    return tuple(int(index) if index else name for index, name in _PART.findall(path))


class Finding(str):
    """One warning or note: ``path`` (the profile key, ``None`` when it names none) and ``text``;
    ``source``, ``line`` and ``column`` once a :class:`Locator` placed it. Immutable."""

    path: str | None
    text: str
    source: str | None
    line: int | None
    column: int | None

    def __new__(cls, path: str | None, text: str, source: str | None = None,
                line: int | None = None, column: int | None = None) -> Finding:
        self = super().__new__(cls, f"{path}: {text}" if path else text)
        for name, value in (("path", path), ("text", text), ("source", source), ("line", line), ("column", column)):
            object.__setattr__(self, name, value)
        return self

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Finding is immutable ({name})")

    def __getnewargs__(self) -> tuple[Any, ...]:
        return (self.path, self.text, self.source, self.line, self.column)

    def record(self) -> dict[str, object]:
        """The finding as ``--json`` gives it."""
        return {"path": self.path, "line": self.line, "column": self.column, "text": self.text}


@dataclass(frozen=True)
class Locator:
    """Places findings in one profile: its ``source`` name and its keys' ``positions`` (1-based line, column)."""

    source: str
    positions: Positions = field(default_factory=dict, compare=False, repr=False)

    def __call__(self, finding: Finding) -> Finding:
        """``finding`` with this profile's source and the line and column of its key, or of the nearest parent
        the profile writes (``None`` for both when it writes none, or the finding names no key)."""
        key = key_of(finding.path) if finding.path else ()
        where = next((self.positions[key[:n]] for n in range(len(key), 0, -1) if key[:n] in self.positions), None)
        line, column = where if where else (None, None)
        return Finding(finding.path, finding.text, self.source, line, column)
