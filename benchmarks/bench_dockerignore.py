"""Time envkit's .dockerignore matching (``envkit.project.project_files``) on hostile and large trees.

Four cases, each against a goal:

- eight ``**/`` segments and one file 20 folders deep (docker-py's own regex took more than 20 s): goal < 1 s;
- ``**/a**/a**/a**/a**/a**/a**/a**/a**/x`` and a file 40 folders deep (more than 50 s in docker-py's regex):
  goal < 1 s;
- 10,000 files in 100 folders under a typical .dockerignore (``**/*.pyc``, folders, ``!`` exceptions)
  and under 200 patterns (docker-py's cache holds 100 compiled expressions): goal < 1 s each. The time grows with
  files x patterns (docker-py's PatternMatcher tries every pattern on every path).

Run: ``.venv/bin/python benchmarks/bench_dockerignore.py`` (prints one line per case, wall and CPU time,
and exits 1 when a goal is missed; on a loaded machine the CPU time is the steadier number).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from envkit.project import project_files

GOAL_S = 1.0


def _deep(root: Path, depth: int, name: str = "d") -> None:
    folder = root.joinpath(*[name] * depth)
    folder.mkdir(parents=True)
    (folder / "file").write_text("x")


def _wide(root: Path, folders: int = 100, files: int = 100) -> None:
    for d in range(folders):
        folder = root / f"pkg{d}" / "sub"
        folder.mkdir(parents=True)
        for f in range(files):
            (folder / (f"m{f}.pyc" if f % 10 == 0 else f"m{f}.py")).write_text("")


def _case(label: str, build, patterns: list[str]) -> bool:
    with tempfile.TemporaryDirectory(prefix="envkit-bench-ignore-") as tmp:
        root = Path(tmp)
        build(root)
        (root / ".dockerignore").write_text("\n".join(patterns) + "\n")
        start, cpu = time.perf_counter(), time.process_time()
        files = project_files(root)
        took, cpu = time.perf_counter() - start, time.process_time() - cpu
    ok = took < GOAL_S
    print(f"{label}: {took:.3f} s ({cpu:.3f} s CPU) for {len(files)} files kept -> "
          f"{'OK' if ok else 'MISSED'} the {GOAL_S:g} s goal")
    return ok


def main() -> int:
    import docker.utils.build  # noqa: F401  (imported once, outside the timings)

    results = [
        _case("8 x '**/', a file 20 folders deep", lambda r: _deep(r, 20), ["**/**/**/**/**/**/**/**/x"]),
        _case("'**/a**' x 8, a file 40 folders deep", lambda r: _deep(r, 40, "a"), ["**/" + "a**/" * 8 + "x"]),
        _case("10,000 files, a typical .dockerignore", _wide,
              ["**/*.pyc", "build/", "**/__pycache__", "*.log", "!keep.log", "pkg9*/sub/m1.py", "docs/**"]),
        _case("10,000 files, 200 patterns", _wide, [f"pkg{i}/sub/m{i}.py" for i in range(200)]),
    ]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
