"""Wall time of `envkit generate` against hpccm rendering an equivalent recipe, side by side.

Both run as a user runs them: a fresh interpreter per run (import + render +
write), interleaved so that machine noise hits both alike, with compiled bytecode
as an installed package has it (PYTHONDONTWRITEBYTECODE is dropped for the runs:
with it set, an editable envkit recompiled every module on every run while
hpccm's site-packages copy read its .pyc files, a 2x handicap that was not envkit's). Prints medians and
the ratio envkit/hpccm (goal: <= 1.0, i.e. no slower than the fastest peer).

It also generates the 2-node cluster example (examples/cluster-2node.yaml) with
and without the cluster targets (k8s, trainjob) side by side, and prints the
ratio (goal: <= 1.10, i.e. the cluster targets add at most 10%).

    pip install -e '.[bench]'   # hpccm
    python benchmarks/bench_generate.py [--runs 15] [--no-hpccm]
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


CLUSTER_EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "cluster-2node.yaml"


def non_cluster_targets() -> tuple[str, ...]:
    """Every registered target but those that render from the cluster: section (the registry says which)."""
    from envkit.targets import TARGET_NAMES, required_section

    return tuple(t for t in TARGET_NAMES if required_section(t) != "cluster")


CLUSTER_WITHOUT = "cluster profile, without k8s/trainjob"
CLUSTER_WITH = "cluster profile, all targets"


# What a user's shell has: bytecode written on first import (pip writes it at install time).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _time(cmd: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    res = subprocess.run(cmd, cwd=cwd, capture_output=True, env=ENV)
    elapsed = time.perf_counter() - start
    if res.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{res.stderr.decode()[-2000:]}")
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--no-hpccm", action="store_true", help="only the cluster comparison (no hpccm needed)")
    args = ap.parse_args()
    hpccm = shutil.which("hpccm", path=str(Path(sys.executable).parent)) or shutil.which("hpccm")
    if not hpccm and not args.no_hpccm:
        sys.exit("hpccm is not installed: pip install -e '.[bench]' (or pass --no-hpccm)")
    # The console script, as users run envkit and as hpccm is run here (`python -m` adds runpy's imports).
    script = shutil.which("envkit", path=str(Path(sys.executable).parent))
    envkit = [script, "generate"] if script else [sys.executable, "-m", "envkit", "generate"]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "recipe.py").write_text(RECIPE)
        shutil.copy(CLUSTER_EXAMPLE, work / CLUSTER_EXAMPLE.name)
        cases = {} if args.no_hpccm else {
            "hpccm (Dockerfile)": [hpccm, "--recipe", "recipe.py", "--format", "docker"],
            "envkit (Dockerfile)": envkit + ["-o", "o1", "--target", "dockerfile", "--force"],
            "envkit (all targets)": envkit + ["-o", "o2", "--force"],
        }
        # The same cluster profile, without and with its cluster targets (all targets = both plus k8s, trainjob).
        cases[CLUSTER_WITHOUT] = envkit + [CLUSTER_EXAMPLE.name, "-o", "o3", "--force"] + [
            arg for t in non_cluster_targets() for arg in ("--target", t)]
        cases[CLUSTER_WITH] = envkit + [CLUSTER_EXAMPLE.name, "-o", "o4", "--force"]
        for cmd in cases.values():  # warm the page cache and .pyc files
            _time(cmd, work)
        samples: dict[str, list[float]] = {k: [] for k in cases}
        for _ in range(args.runs):
            for name, cmd in cases.items():
                samples[name].append(_time(cmd, work))
    base_name = CLUSTER_WITHOUT if args.no_hpccm else "hpccm (Dockerfile)"
    base = statistics.median(samples[base_name])
    print(f"{'case':<38} {'median s':>9} {'min s':>7} {'ratio':>7}   ({args.runs} interleaved runs each; "
          f"ratio vs {base_name})")
    for name, xs in samples.items():
        med = statistics.median(xs)
        print(f"{name:<38} {med:>9.3f} {min(xs):>7.3f} {med / base:>6.2f}x")
    with_, without = statistics.median(samples[CLUSTER_WITH]), statistics.median(samples[CLUSTER_WITHOUT])
    verdict = "OK" if with_ / without <= 1.10 else "OVER"
    print(f"cluster targets: {with_:.3f} s / {without:.3f} s = {with_ / without:.3f}x -> {verdict} the 1.10x goal")
    _in_process(args.runs)


def _in_process(runs: int) -> None:
    """The same comparison inside one interpreter (rendering only: less noise than whole runs)."""
    from envkit.generation import render_all
    from envkit.profile import load_profile
    from envkit.targets import TARGET_NAMES

    loaded = load_profile(CLUSTER_EXAMPLE)
    out = Path(tempfile.gettempdir())
    cases = {"without": non_cluster_targets(), "with": TARGET_NAMES}
    samples: dict[str, list[float]] = {k: [] for k in cases}
    for _ in range(max(runs, 20)):
        for name, targets in cases.items():
            start = time.perf_counter()
            render_all(loaded, out, targets)
            samples[name].append(time.perf_counter() - start)
    without, with_ = (statistics.median(samples[k]) for k in ("without", "with"))
    print(f"in-process render of the cluster profile: {with_ * 1000:.1f} ms with, {without * 1000:.1f} ms without "
          f"= {with_ / without:.2f}x (the cluster targets' own cost: {(with_ - without) * 1000:.1f} ms)")


if __name__ == "__main__":
    main()
