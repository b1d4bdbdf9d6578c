"""Wall time of `envkit generate` against hpccm rendering an equivalent recipe, side by side.

Both run as a user runs them: a fresh interpreter per run (import + render +
write), interleaved so that machine noise hits both alike. Prints medians and
the ratio envkit/hpccm (goal: <= 1.0, i.e. no slower than the fastest peer).

    pip install -e '.[bench]'   # hpccm
    python benchmarks/bench_generate.py [--runs 15]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# The default profile's image, as an hpccm recipe: base, apt packages, venv, torch, pip
# packages, environment, user. (hpccm has no run-time settings to render.)
RECIPE = '''
Stage0 += baseimage(image="nvidia/cuda:12.4.1-cudnn-runtime-ubuntu22.04")
Stage0 += apt_get(ospackages=["ca-certificates", "git", "numactl", "python3", "python3-venv"])
Stage0 += shell(commands=["python3 -m venv /opt/venv"])
Stage0 += environment(variables={"PATH": "/opt/venv/bin:$PATH", "VIRTUAL_ENV": "/opt/venv"})
Stage0 += shell(commands=["pip install --index-url https://download.pytorch.org/whl/cu124 torch==2.5.1"])
Stage0 += pip(packages=["pillow", "tqdm"], pip="pip", ospackages=[])
Stage0 += environment(variables={"OMP_NUM_THREADS": "1"})
Stage0 += shell(commands=["useradd --uid 1000 --create-home dev", "mkdir -p /workspace"])
Stage0 += workdir(directory="/workspace")
'''


def _time(cmd: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    res = subprocess.run(cmd, cwd=cwd, capture_output=True)
    elapsed = time.perf_counter() - start
    if res.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{res.stderr.decode()[-2000:]}")
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    hpccm = shutil.which("hpccm", path=str(Path(sys.executable).parent)) or shutil.which("hpccm")
    if not hpccm:
        sys.exit("hpccm is not installed: pip install -e '.[bench]'")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "recipe.py").write_text(RECIPE)
        cases = {
            "hpccm (Dockerfile)": [hpccm, "--recipe", "recipe.py", "--format", "docker"],
            "envkit (Dockerfile)": [sys.executable, "-m", "envkit", "generate", "-o", "o1", "--target", "dockerfile",
                                    "--force"],
            "envkit (all targets)": [sys.executable, "-m", "envkit", "generate", "-o", "o2", "--force"],
        }
        for cmd in cases.values():  # warm the page cache and .pyc files
            _time(cmd, work)
        samples: dict[str, list[float]] = {k: [] for k in cases}
        for _ in range(args.runs):
            for name, cmd in cases.items():
                samples[name].append(_time(cmd, work))
    base = statistics.median(samples["hpccm (Dockerfile)"])
    print(f"{'case':<24} {'median s':>9} {'min s':>7} {'vs hpccm':>9}   ({args.runs} interleaved runs each)")
    for name, xs in samples.items():
        med = statistics.median(xs)
        print(f"{name:<24} {med:>9.3f} {min(xs):>7.3f} {med / base:>8.2f}x")


if __name__ == "__main__":
    main()
