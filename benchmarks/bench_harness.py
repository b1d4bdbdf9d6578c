"""Benchmark the harness: time to verdict for the default profile's loader, and sweep quality.

Run: ``python benchmarks/bench_harness.py [--repeat N] [--skip-sweep]``. Prints results;
it is not a test. Goal: a verdict in under 20 s on 2 cores for the default
loader (4 workers, batch 128, 3x224x224 float32, prefetch 2).

Sweep quality: the recommended num_workers' throughput divided by the best
measured throughput (>= 0.95 by construction of the recommendation; printed
with the full table so the noise between runs is visible).
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
DEFAULT_PROFILE_LOADER = {"num_workers": 4, "batch_size": 128, "sample_shape": [3, 224, 224],
                          "dtype": "float32", "prefetch_factor": 2, "pin_memory": True}
GOAL_S = 20.0


def run_harness(expect_path: str, *extra: str) -> tuple[float, dict]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")])))
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "envkit.harness", "--json", "--expect", expect_path, *extra],
                       capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    if p.returncode == 2:
        raise SystemExit(f"harness usage error: {p.stderr}")
    return wall, json.loads(p.stdout)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-sweep", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        expect = Path(tmp) / "envkit_expect.json"
        expect.write_text(json.dumps({"envkit_expect": 1, "profile": "default", "loader": DEFAULT_PROFILE_LOADER}))
        print(f"cpus: {len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else os.cpu_count()}, "
              f"loader: {DEFAULT_PROFILE_LOADER}")
        walls = []
        for i in range(args.repeat):
            wall, report = run_harness(str(expect))
            loader = next(c for c in report["checks"] if c["name"] == "loader")
            m = loader["measured"]
            walls.append(wall)
            print(f"run {i + 1}: verdict {report['verdict']} in {wall:.2f} s (loader {loader['status']}: "
                  f"{m.get('batches')} batches, {m.get('samples_per_s')} samples/s, loader wall {m.get('wall_s')} s)")
        med = statistics.median(walls)
        print(f"time to verdict: median {med:.2f} s, min {min(walls):.2f} s, max {max(walls):.2f} s "
              f"-> {'OK' if med < GOAL_S else 'OVER'} the {GOAL_S:.0f} s goal")
        if args.skip_sweep:
            return 0
        wall, report = run_harness(str(expect), "--sweep")
        sw = next(c for c in report["checks"] if c["name"] == "workers_sweep")["measured"]
        print(f"--sweep: {wall:.2f} s total")
        for row in sw["table"]:
            print(f"  num_workers={row['num_workers']:>2}: {row['samples_per_s']} samples/s")
        if sw["recommended"] is not None:
            ratio = sw["recommended_samples_per_s"] / sw["best_samples_per_s"]
            print(f"recommended num_workers={sw['recommended']} ({sw['recommended_samples_per_s']} samples/s), "
                  f"best {sw['best']} ({sw['best_samples_per_s']} samples/s): ratio {ratio:.3f} (same sweep)")
            # Out of sample: does the recommendation still hold on a fresh sweep (run-to-run noise)?
            _, again = run_harness(str(expect), "--sweep")
            sw2 = next(c for c in again["checks"] if c["name"] == "workers_sweep")["measured"]
            rates = {r["num_workers"]: r["samples_per_s"] for r in sw2["table"] if r["samples_per_s"]}
            if rates and sw["recommended"] in rates:
                print(f"second sweep: num_workers={sw['recommended']} reaches {rates[sw['recommended']]} samples/s, "
                      f"best {max(rates.values())}: ratio {rates[sw['recommended']] / max(rates.values()):.3f} "
                      f"(second sweep recommends {sw2['recommended']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
