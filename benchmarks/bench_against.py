"""Wall time of `envkit generate`: this checkout beside another git revision of it, side by side.

For the cost of a change (the YAML emitter's move from PyYAML to ruamel.yaml was measured so). The
other revision's ``src/`` and ``templates/`` are extracted with ``git archive`` into a temporary
folder and run from there (``PYTHONPATH`` puts them before this checkout's editable install), with the
same interpreter and packages. Each run is a fresh interpreter (``python -m envkit generate``:
import, plan, render, write), the two revisions interleaved so that machine noise hits both alike,
with bytecode written as an installed package has it. Two profiles: the default one (compose.yaml is
its only YAML) and examples/cluster-2node.yaml (compose.yaml, k8s.yaml, trainjob.yaml).

It also times the YAML targets alone, in a process per revision (five each, interleaved): the first
render of compose, k8s and trainjob for the cluster example (it imports the emitter) and the median
of the next ones, so the emitter's own cost shows apart from the interpreter's start.

    python benchmarks/bench_against.py --against f21304d [--runs 15]

Prints each median, and the ratio of this checkout's to the other revision's.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLUSTER = ROOT / "examples" / "cluster-2node.yaml"
YAML_TARGETS = ("compose", "k8s", "trainjob")
# What a user's shell has: bytecode written on first import (pip writes it at install time).
ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}

RENDER_ONLY = """
import json, statistics, sys, time
from pathlib import Path
from envkit.generation import render_plan
try:  # the planner's module since the plan's layering; a revision before it has it in the plan
    from envkit.planner import build_plan
except ImportError:
    from envkit.plan.envplan import build_plan
from envkit.profile import load_profile
plan = build_plan(load_profile(Path(sys.argv[1])), Path("o"))
targets, n = tuple(sys.argv[2].split(",")), int(sys.argv[3])
start = time.perf_counter(); render_plan(plan, targets); first = time.perf_counter() - start
times = []
for _ in range(n):
    start = time.perf_counter(); render_plan(plan, targets); times.append(time.perf_counter() - start)
print(json.dumps({"first": first, "next": statistics.median(times)}))
"""


def extract(rev: str, into: Path) -> Path:
    """``rev``'s src/ and templates/ under ``into``; the folder to put on PYTHONPATH."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src", "templates"], capture_output=True)
    if archive.returncode != 0:
        sys.exit(f"git archive {rev}: {archive.stderr.decode().strip()}")
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into / "src"


def run(cmd: list[str], cwd: Path, src: Path | None) -> tuple[float, str]:
    env = dict(ENV, **({"PYTHONPATH": str(src)} if src else {}))
    start = time.perf_counter()
    res = subprocess.run(cmd, cwd=cwd, capture_output=True, env=env, text=True)
    elapsed = time.perf_counter() - start
    if res.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{res.stderr[-2000:]}")
    return elapsed, res.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--against", required=True, help="the git revision to compare this checkout with")
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--renders", type=int, default=50, help="renders timed in-process after the first")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "other").mkdir()
        revisions = {"this checkout": None, args.against: extract(args.against, work / "other")}
        envkit = [sys.executable, "-m", "envkit", "generate", "--force"]
        cases = {"default profile, all targets": ["-o", "d"],
                 "cluster example, all targets": [str(CLUSTER), "-o", "c"]}
        samples: dict[tuple[str, str], list[float]] = {}
        for case, extra in cases.items():  # warm the page cache and write the .pyc files
            for rev, src in revisions.items():
                run(envkit + extra, work, src)
                samples[(case, rev)] = []
        for _ in range(args.runs):
            for case, extra in cases.items():
                for rev, src in revisions.items():
                    samples[(case, rev)].append(run(envkit + extra, work, src)[0])
        timed: dict[str, list[dict[str, float]]] = {rev: [] for rev in revisions}
        for _ in range(5):  # interleaved too; the median of each
            for rev, src in revisions.items():
                timed[rev].append(json.loads(run([sys.executable, "-c", RENDER_ONLY, str(CLUSTER),
                                                  ",".join(YAML_TARGETS), str(args.renders)], work, src)[1]))
        renders = {rev: {key: statistics.median(t[key] for t in runs) for key in ("first", "next")}
                   for rev, runs in timed.items()}
    this, other = revisions
    print(f"{'case':<48} {'this s':>8} {other[:12]:>12} {'ratio':>7}   (medians of {args.runs} interleaved runs)")
    for case in cases:
        a, b = statistics.median(samples[(case, this)]), statistics.median(samples[(case, other)])
        print(f"{'generate, ' + case:<48} {a:>8.3f} {b:>12.3f} {a / b:>7.2f}")
    for key, label in (("first", "first render of compose+k8s+trainjob"), ("next", "each render after")):
        a, b = renders[this][key], renders[other][key]
        print(f"{label:<48} {a * 1000:>6.1f}ms {b * 1000:>10.1f}ms {a / b:>7.2f}")


if __name__ == "__main__":
    main()
