"""Wall time of `envkit generate` against neurodocker (and hpccm) rendering an equivalent Dockerfile, side by side.

Each runs as a user runs it: a fresh interpreter per run (import + render +
write), interleaved so that machine noise hits every case alike, with compiled bytecode
as an installed package has it (PYTHONDONTWRITEBYTECODE is dropped for the runs:
with it set, an editable envkit would recompile every module on every run while
the peers' site-packages copies read their .pyc files). Prints each median and
the ratio to neurodocker's, and checks the goal: envkit generate (all targets) takes a median
of at most 0.5 s. hpccm is an extra row when it is installed (``--no-hpccm`` leaves it out).

It also generates the 2-node cluster example (examples/cluster-2node.yaml) with
and without the cluster targets (k8s, trainjob) side by side, and prints the
ratio (goal: <= 1.10, i.e. the cluster targets add at most 10%).

    pip install -e '.[bench]'   # neurodocker, hpccm
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

# The default profile's image (src/envkit/profile/default.yaml), as each peer spells it: base, apt packages,
# a Python with torch (the CUDA 12.4 wheel) and the pip packages, user, workdir. Neither peer renders
# run-time settings (shm, CPUs, memory, ulimits) or the other targets.
BASE = "ubuntu:24.04"
NEURODOCKER_ARGS = [
    "generate", "docker", "--pkg-manager", "apt", "--base-image", BASE,
    "--install", "ca-certificates", "git", "numactl",
    # neurodocker's way to a Python with pip packages: miniconda, then pip in its base environment.
    "--miniconda", "version=latest", "conda_install=python=3.12",
    "pip_install=torch==2.5.1 pillow tqdm", "pip_opts=--extra-index-url https://download.pytorch.org/whl/cu124",
    "--user", "dev", "--workdir", "/workspace", "--yes",
]
RECIPE = f'Stage0 += baseimage(image="{BASE}")' + '''
Stage0 += apt_get(ospackages=["ca-certificates", "git", "numactl", "python3", "python3-venv"])
Stage0 += shell(commands=["python3 -m venv /opt/venv"])
Stage0 += environment(variables={"PATH": "/opt/venv/bin:$PATH", "VIRTUAL_ENV": "/opt/venv"})
Stage0 += shell(commands=["pip install --index-url https://download.pytorch.org/whl/cu124 torch==2.5.1"])
Stage0 += pip(packages=["pillow", "tqdm"], pip="pip", ospackages=[])
Stage0 += shell(commands=["useradd --uid 1000 --create-home dev", "mkdir -p /workspace"])
Stage0 += workdir(directory="/workspace")
'''


CLUSTER_EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "cluster-2node.yaml"


def non_cluster_targets() -> tuple[str, ...]:
    """Every registered target but those that render from the cluster: section (the registry says which)."""
    from envkit.targets import TARGET_NAMES, required_section

    return tuple(t for t in TARGET_NAMES if required_section(t) != "cluster")


NEURODOCKER = "neurodocker (Dockerfile)"
ALL_TARGETS = "envkit (all targets)"
GOAL_S = 0.5  # median of envkit generate (all targets, the default profile), fresh interpreter
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
    ap.add_argument("--no-hpccm", action="store_true", help="leave out hpccm's row even when it is installed")
    args = ap.parse_args()
    here = str(Path(sys.executable).parent)
    neurodocker = shutil.which("neurodocker", path=here) or shutil.which("neurodocker")
    if not neurodocker:
        sys.exit("neurodocker is not installed: pip install -e '.[bench]'")
    hpccm = None if args.no_hpccm else shutil.which("hpccm", path=here) or shutil.which("hpccm")
    # The console script, as users run envkit and as hpccm is run here (`python -m` adds runpy's imports).
    script = shutil.which("envkit", path=str(Path(sys.executable).parent))
    envkit = [script, "generate"] if script else [sys.executable, "-m", "envkit", "generate"]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "recipe.py").write_text(RECIPE)
        shutil.copy(CLUSTER_EXAMPLE, work / CLUSTER_EXAMPLE.name)
        cases = {
            NEURODOCKER: [neurodocker, *NEURODOCKER_ARGS],
            "envkit (Dockerfile)": envkit + ["-o", "o1", "--target", "dockerfile", "--force"],
            ALL_TARGETS: envkit + ["-o", "o2", "--force"],
        }
        if hpccm:
            cases["hpccm (Dockerfile)"] = [hpccm, "--recipe", "recipe.py", "--format", "docker"]
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
    base_name = NEURODOCKER
    base = statistics.median(samples[base_name])
    print(f"{'case':<38} {'median s':>9} {'min s':>7} {'ratio':>7}   ({args.runs} interleaved runs each; "
          f"ratio vs {base_name})")
    for name, xs in samples.items():
        med = statistics.median(xs)
        print(f"{name:<38} {med:>9.3f} {min(xs):>7.3f} {med / base:>6.2f}x")
    envkit_all = statistics.median(samples[ALL_TARGETS])
    print(f"envkit (all targets) / neurodocker: {envkit_all:.3f} s / {base:.3f} s = {envkit_all / base:.2f}x")
    verdict = "OK" if envkit_all <= GOAL_S else "OVER"
    print(f"envkit generate (all targets): median {envkit_all:.3f} s -> {verdict} the {GOAL_S} s goal")
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
