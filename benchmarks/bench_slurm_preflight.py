"""Time from `sbatch` to the preflight's verdict on a real two-node Slurm (goal: <= 20 s).

Side by side, in one run, each repeated (median of --runs):
  1. `srun -N2 true`                          Slurm's own cost of a two-node step
  2. `srun -N2 --container=BUNDLE true`       plus starting a runc container per node
  3. `sbatch slurm.sbatch` -> "preflight passed on 2 node(s)" in the job's output
     (the harness with --quick on both nodes, in the image, through the generated script)
and prints each time and its ratio to (1).

Needs root, the Docker engine and the local base image (the e2e recipe: local Debian base,
offline torch wheelhouse, host CA):
    bash docker/with-engine.sh python benchmarks/bench_slurm_preflight.py
It starts its own cluster with docker/slurm-up.sh in a temporary folder and stops it at the end.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TORCH = "2.13.0"
BASE = os.environ.get("ENVKIT_BASE_IMAGE", "envkit/bookworm-python:local")
TAG = "envkit-slurm-e2e:test"  # the Slurm tests' image: same layers, so usually cached
GOAL_S = 20.0

PROFILE = f"""envkit: 1
name: bench-slurm
image:
  base: {BASE}
  tag: {TAG}
  torch: {{version: "{TORCH}", variant: cpu, find_links: [wheels]}}
  user: {{name: trainer, uid: 1234, gid: 1234}}
  ca_certificates: [certs/host-ca.pem]
  env: {{OMP_NUM_THREADS: "1"}}
run:
  shm_size: 512m
  cpuset: "0-1"
  memory: 4g
loader: {{num_workers: 2, batch_size: 32, sample_shape: [3, 224, 224], start_method: fork}}
cluster:
  nodes: 2
  entrypoint: [noop.py]
  slurm: {{runtime: oci}}
"""


def envkit(*args: str, cwd: Path) -> None:
    res = subprocess.run([sys.executable, "-m", "envkit", *args], cwd=cwd, capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"envkit {' '.join(args)} failed ({res.returncode}):\n{res.stderr[-3000:]}")


def timed(cmd: list[str], env: dict, cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, env=env, cwd=cwd, check=True, capture_output=True)
    return time.perf_counter() - start


def submit_to_verdict(env: dict, cwd: Path) -> float:
    start = time.perf_counter()
    res = subprocess.run(["sbatch", "--parsable", "slurm.sbatch"], env=env, cwd=cwd, check=True,
                         capture_output=True, text=True)
    job = res.stdout.strip().split(";")[0]
    out = cwd / f"slurm-{job}.out"
    try:
        while time.perf_counter() - start < 300:
            text = out.read_text() if out.exists() else ""
            if "envkit: preflight passed" in text:
                return time.perf_counter() - start
            if "preflight FAILED" in text or "preflight step failed" in text:
                sys.exit(f"the preflight failed:\n{text[-3000:]}")
            time.sleep(0.05)
        sys.exit("no preflight verdict within 300 s")
    finally:
        subprocess.run(["scancel", job], env=env, capture_output=True)
        while subprocess.run(["squeue", "-h", "-j", job], env=env, capture_output=True, text=True).stdout.strip():
            time.sleep(0.2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="envkit-bench-slurm-") as tmp:
        root = Path(tmp) / "project"
        root.mkdir()
        root.chmod(0o755)  # mounted at /workspace for uid 1234
        (root / "wheels").mkdir()
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                        "-d", str(root / "wheels"), f"torch=={TORCH}"], check=True)
        (root / "certs").mkdir()
        shutil.copy("/etc/ssl/certs/ca-certificates.crt", root / "certs" / "host-ca.pem")
        (root / "envkit.yaml").write_text(PROFILE)
        (root / "noop.py").write_text("pass\n")
        envkit("build", "envkit.yaml", cwd=root)
        envkit("bundle", "envkit.yaml", "-o", "bundle", cwd=root)
        envkit("generate", "envkit.yaml", "-o", ".", "--target", "slurm", cwd=root)
        cluster = Path(tmp) / "slurm"
        subprocess.run(["bash", str(ROOT / "docker" / "slurm-up.sh"), str(cluster)], check=True,
                       stdout=subprocess.DEVNULL)
        env = {**os.environ, "SLURM_CONF": str(cluster / "slurm.conf")}
        try:
            cases = {
                "srun -N2 true": lambda: timed(["srun", "-N2", "true"], env, root),
                "srun -N2 --container true": lambda: timed(
                    ["srun", "-N2", "--export=NONE", f"--container={root / 'bundle'}", "true"], env, root),
                "sbatch -> preflight verdict": lambda: submit_to_verdict(env, root),
            }
            results = {name: [] for name in cases}
            for _ in range(args.runs):  # interleaved, so load changes hit every case alike
                for name, fn in cases.items():
                    results[name].append(fn())
        finally:
            subprocess.run(["bash", str(ROOT / "docker" / "slurm-down.sh"), str(cluster)])
    base = statistics.median(results["srun -N2 true"])
    print(f"{'case':32} {'median s':>9} {'min s':>7} {'vs srun':>8}   ({args.runs} interleaved runs each)")
    for name, times in results.items():
        med = statistics.median(times)
        print(f"{name:32} {med:9.2f} {min(times):7.2f} {med / base:7.1f}x")
    verdict = statistics.median(results["sbatch -> preflight verdict"])
    print(f"submit to preflight verdict: median {verdict:.1f} s -> "
          f"{'OK' if verdict <= GOAL_S else 'MISSES'} the {GOAL_S:g} s goal")


if __name__ == "__main__":
    main()
