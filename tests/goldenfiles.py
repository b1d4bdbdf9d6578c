"""The suite's one golden-file check, on pytest-regressions' ``file_regression`` (the ``golden`` fixture).

A golden is a committed file at a fixed path: a target's output under ``tests/golden/``, or a page
of docs/ whose marked blocks hold real output (the page is checked whole, with the blocks put in).
A check compares the bytes; on a difference it fails with a unified diff, expected against what the
test produced. Regenerating is pytest-regressions' own: ``--force-regen``, or ENVKIT_UPDATE_GOLDEN=1
(tests/conftest.py maps the switch onto it), rewrites each golden that differs and still FAILS that
test, so a rewrite nobody reviewed is never a green run: review ``git diff``, then run again.

A folder of goldens (:meth:`Golden.check_folder`) is checked as a set: a file the test no longer
produces fails (and is deleted when regenerating), a new one is created and fails, and every file is
checked before the test fails, so one regenerating run rewrites them all.

Example (``golden`` is the fixture)::

    golden.check(GOLDEN / "default" / "wsl.conf", rendered_bytes)
    golden.check_folder(GOLDEN / "cpu-minimal", {"Dockerfile": b"...", "run.sh": b"..."})
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

SWITCH = "ENVKIT_UPDATE_GOLDEN"  # "1": regenerate, as pytest's --force-regen does
DIFF_LINES = 400  # a longer diff is cut; `git diff` after regenerating shows it whole


def diff(expected: bytes, obtained: bytes, name: str) -> str:
    """A unified diff of two versions of a golden, for a failure message.

    >>> print(diff(b"a\\nb\\n", b"a\\nc\\n", "f.txt"))
    --- f.txt (golden)
    +++ f.txt (this run)
    @@ -1,2 +1,2 @@
     a
    -b
    +c
    >>> diff(b"a\\n", b"a\\r\\n", "f.txt").splitlines()[-1]
    "+'a\\\\r\\\\n'"
    """
    want = expected.decode("utf-8", "replace").splitlines(keepends=True)
    got = obtained.decode("utf-8", "replace").splitlines(keepends=True)
    if [line.rstrip("\r\n") for line in want] == [line.rstrip("\r\n") for line in got]:
        want, got = [repr(line) + "\n" for line in want], [repr(line) + "\n" for line in got]  # only line ends differ
    lines = [line if line.endswith("\n") else line + "\n"
             for line in difflib.unified_diff(want, got, f"{name} (golden)", f"{name} (this run)")]
    if not lines:
        return f"{name}: the bytes differ outside its text (encoding)"
    if len(lines) > DIFF_LINES:
        lines = [*lines[:DIFF_LINES], f"... {len(lines) - DIFF_LINES} more diff lines\n"]
    return "".join(lines).rstrip("\n")


class Golden:
    """Compare produced bytes with committed files; ``file_regression`` reads, writes and regenerates them."""

    def __init__(self, file_regression, scratch: Path) -> None:
        self._regression = file_regression
        self._scratch = scratch  # where this run's versions are written for the comparison

    @property
    def regenerating(self) -> bool:
        return bool(self._regression.force_regen or self._regression.request.config.getoption("force_regen"))

    def check(self, path: Path, content: bytes, *, normalize: Callable[[str], str] | None = None) -> None:
        """``path`` holds exactly ``content``, or the test fails with the diff (and ``path`` is rewritten
        when regenerating). ``normalize``: both sides pass through it first, for output that varies
        run to run (timings); then equal normalized texts pass and are not rewritten."""
        __tracebackhide__ = True
        name = _shown(path)
        differs: list[str] = []

        def same(obtained: Path, expected: Path) -> None:
            got, want = obtained.read_bytes(), expected.read_bytes()
            if normalize is None:
                equal = got == want
            else:
                equal = normalize(got.decode("utf-8", "replace")) == normalize(want.decode("utf-8", "replace"))
            if not equal:
                differs.append(diff(want, got, name))
                raise AssertionError(differs[-1])

        obtained = self._scratch / name.replace("/", "__")
        message = None
        try:
            self._regression.check(content, fullpath=path, binary=True, check_fn=same, obtained_filename=obtained)
        except (AssertionError, pytest.fail.Exception) as e:
            if not differs:  # no golden yet: pytest-regressions wrote it
                message = f"{name}: no golden file, so this run's was written ({e})"
            elif self.regenerating:
                message = f"{name} rewritten from this run (review git diff, then run again):\n{differs[-1]}"
            else:
                message = f"{name} differs from this run ({SWITCH}=1 or --force-regen rewrites it):\n{differs[-1]}"
        if message is not None:  # outside the handler: the failure shows the message, not a chain
            pytest.fail(message, pytrace=False)

    def check_folder(self, folder: Path, files: dict[str, bytes]) -> None:
        """``folder`` holds exactly ``files`` (paths relative to it): no file more, none less, each byte-equal."""
        __tracebackhide__ = True
        failures: list[str] = []
        present = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else []
        stale = [path for path in present if path not in files]
        if stale:
            if self.regenerating:
                for path in stale:
                    (folder / path).unlink()
            failures.append(f"{_shown(folder)}: this run no longer produces {stale}"
                            + (" (deleted)" if self.regenerating else f" ({SWITCH}=1 deletes them)"))
        for path in sorted(files):
            with _collected(failures):
                self.check(folder / path, files[path])
        if failures:
            pytest.fail("\n\n".join(failures), pytrace=False)


@contextmanager
def _collected(failures: list[str]) -> Iterator[None]:
    """Record a failed check's message and go on (pytest-regressions fails at the first file)."""
    try:
        yield
    except (AssertionError, pytest.fail.Exception) as e:
        failures.append(str(e))


def _shown(path: Path) -> str:
    """The path as a failure shows it: relative to the repository."""
    root = Path(__file__).resolve().parent.parent
    try:
        return str(path.resolve().relative_to(root))
    except ValueError:
        return str(path)
