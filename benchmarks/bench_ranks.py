"""The harness's time to a verdict with R = 1, 2 and 4 loaders at once (``--ranks R``), side by side.

Run: ``python benchmarks/bench_ranks.py [--runs N] [--ranks 1 2 4]``. Each round runs
``python -m envkit.harness --quick --json --ranks R`` once for every R, in a rotated order (the
first of a round warms the page cache), and the table shows the median over the rounds of the
whole command's wall time, the loader check's own wall time and the peak /dev/shm use it saw
(over what was in use before), each with its ratio to R = 1. It is not a test. The workload is the
a stated one (2 workers, batch 32, 3x64x64 float32, prefetch 2), so R = 4 is 4 x 3
processes with torch imported.
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

SRC = Path(__file__).resolve().parents[1] / "src"
# The workload the numbers in docs/benchmarks.md were measured with, stated rather than the harness's defaults.
WORKLOAD = {"num_workers": 2, "batch_size": 32, "sample_shape": [3, 64, 64], "dtype": "float32", "prefetch_factor": 2}


def run_harness(ranks: int) -> tuple[float, dict]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")])))
    with tempfile.TemporaryDirectory() as tmp:
        expect = Path(tmp) / "envkit_expect.json"
        expect.write_text(json.dumps({"envkit_expect": 1, "profile": "bench", "loader": WORKLOAD, "run": {}}))
        t0 = time.perf_counter()
        p = subprocess.run([sys.executable, "-m", "envkit.harness", "--quick", "--json", "--ranks", str(ranks),
                            "--expect", str(expect)], capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    if p.returncode == 2:
        raise SystemExit(f"harness usage error: {p.stderr}")
    report = json.loads(p.stdout)
    loader = next(c for c in report["checks"] if c["name"] == "loader")
    if loader["measured"].get("concurrent_loaders") != ranks:
        raise SystemExit(f"--ranks {ranks}: the loader check ran {loader['measured'].get('concurrent_loaders')}")
    return wall, report


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4])
    args = ap.parse_args()
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    rows: dict[int, list[tuple[float, dict]]] = {r: [] for r in args.ranks}
    for i in range(args.runs):
        order = args.ranks[i % len(args.ranks):] + args.ranks[:i % len(args.ranks)]
        for ranks in order:
            wall, report = run_harness(ranks)
            rows[ranks].append((wall, report))
            m = next(c for c in report["checks"] if c["name"] == "loader")["measured"]
            print(f"round {i + 1}, R={ranks}: verdict {report['verdict']} in {wall:.2f} s "
                  f"(loader {m.get('wall_s')} s)", file=sys.stderr)
    print(f"envkit harness --quick --json --ranks R, {cpus} CPUs, workload (2 workers, batch 32, "
          f"3x64x64 float32), median of {args.runs}")
    med = {}
    for ranks in args.ranks:
        ms = [next(c for c in rep["checks"] if c["name"] == "loader")["measured"] for _, rep in rows[ranks]]
        med[ranks] = (statistics.median(w for w, _ in rows[ranks]), statistics.median(m["wall_s"] for m in ms),
                      statistics.median(m["peak_shm_bytes"] - m["shm_used_before_bytes"] for m in ms),
                      {rep["verdict"] for _, rep in rows[ranks]})
    base = med[args.ranks[0]]
    print(f"{'R':>2}  {'verdict s':>9}  {'x R=1':>6}  {'loader s':>8}  {'x R=1':>6}  {'peak shm MiB':>12}  {'x R=1':>6}  "
          "verdict")
    for ranks in args.ranks:
        v, ld, shm, verdicts = med[ranks]
        print(f"{ranks:>2}  {v:>9.2f}  {v / base[0]:>5.2f}x  {ld:>8.2f}  {ld / base[1]:>5.2f}x  {shm / 2**20:>12.1f}  "
              f"{shm / base[2] if base[2] else 0:>5.2f}x  {'/'.join(sorted(verdicts))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
