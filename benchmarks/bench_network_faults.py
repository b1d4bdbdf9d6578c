"""What each network fault costs a multi-node job, on a real two-node Slurm whose nodes are network namespaces.

For the clean job and each fault of tests/slurm/faults.py's FAULTS (a wrong or isolated interface,
the rendezvous port dropped or rejected, a hostname resolving to loopback, a node that never starts,
RDMA declared where there is none), each runner in RUNNERS runs once on the cluster of
tests/slurm/netns.py, with the fault injected into one node, and is stopped at --bound seconds.
Printed: how it ended (passed, failed, or still waiting at the bound), when, the first node that
failed and the first error line it printed.

RUNNERS holds plain `srun torchrun` (2 nodes x 2 ranks, a gloo all_reduce, c10d rendezvous at
n1:29500, torch's own timeouts: what the user would have waited for) and envkit's preflight with its
network stage as the generated sbatch runs it (its verdict: the first failing node's network check).
PREFLIGHT_RUNNERS, a clean preflight with and without the stage, gives the time the stage adds.

    .venv/bin/python benchmarks/bench_network_faults.py [--bound 120] [--clean-runs 20] [--only KEY ...]

Needs root (network namespaces, slurmd; slurm-up.sh installs slurm-wlm and munge with apt when
missing) and torch in this interpreter. It starts its own cluster in a temporary folder and
removes it (daemons, namespaces, veths, bridge) at the end; a watchdog does it if this is killed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.slurm import netns  # noqa: E402  (the tests' cluster and faults: one catalogue)
from tests.slurm.faults import FAULTS, Fault, RdmaDeclared, injected  # noqa: E402


@dataclass(frozen=True)
class Outcome:
    verdict: str  # "passed", "failed", or "waiting" (still running at the bound)
    seconds: float  # to the end, or to the bound
    node: str = ""  # the first node that failed
    message: str = ""  # what it said (a runner with verdicts: the named verdict)

    def cell(self) -> str:
        if self.verdict == "waiting":
            return f"still waiting at {self.seconds:.0f} s"
        return f"{self.verdict} {self.seconds:.1f} s" + (f" ({self.node})" if self.node else "")


Runner = Callable[[netns.NetnsCluster, "Fault | None", float], Outcome]


def plain_torchrun(cluster: netns.NetnsCluster, fault: Fault | None, bound: float, *,
                   kill_on_bad_exit: bool = True) -> Outcome:
    """`srun torchrun` of a gloo all_reduce on every node, as a user writes it (no preflight)."""
    script = cluster.dir / "allreduce.py"
    script.write_text(netns.ALLREDUCE)
    res = cluster.step(netns.torchrun(script), bound=bound, kill_on_bad_exit=kill_on_bad_exit)
    if res.bounded:
        # Who had said something by the bound, even though nothing ended.
        said = [(n.name, res.message(n.name)) for n in cluster.nodes if res.message(n.name)]
        return Outcome("waiting", res.seconds, *(said[0] if said else ("", "")))
    if res.returncode == 0:
        return Outcome("passed", res.seconds)
    first = min(res.failed_at, key=lambda n: res.failed_at[n]) if res.failed_at else ""
    said = res.message(first) if first else ""
    if not said:  # the first to fail may only have been killed: take whoever said why
        first, said = next(((n.name, res.message(n.name)) for n in cluster.nodes if res.message(n.name)), (first, ""))
    return Outcome("failed", res.seconds, first, said)


def envkit_preflight(cluster: netns.NetnsCluster, fault: Fault | None, bound: float, *, network: bool = True) -> Outcome:
    """envkit's preflight as the generated sbatch runs it (``envkit-check --quick``, then ``--network`` with the
    job's rendezvous, nodes and id), one task per node, ``--kill-on-bad-exit=1``; the first failing node's
    network verdict is the message. An RDMA fault runs against an InfiniBand profile, the rest ethernet."""
    fabric = "infiniband" if isinstance(fault, RdmaDeclared) else "ethernet"
    expect = netns.preflight_expectation(cluster.dir, fabric)
    res, reports = netns.preflight(cluster, expect, network=network, bound=bound, kill_on_bad_exit=True)
    if res.bounded:
        return Outcome("waiting", res.seconds)
    # The network check's verdict first: the stage is what is measured (a node may fail other checks too).
    failed = sorted(((name, c) for name, r in reports.items() for c in r["checks"] if c["status"] == "fail"),
                    key=lambda f: f[1]["name"] != "network")
    if res.returncode == 0 and not failed:
        return Outcome("passed", res.seconds)
    name, check = failed[0] if failed else ("", {"message": ""})
    return Outcome("failed", res.seconds, name, check["message"] or res.message(name))


RUNNERS: dict[str, Runner] = {"plain torchrun": plain_torchrun, "envkit preflight + network stage": envkit_preflight}
# A clean preflight without and with the stage: the second's median minus the first's is the time it adds.
PREFLIGHT_RUNNERS: dict[str, Runner] = {
    "preflight": lambda c, f, b: envkit_preflight(c, f, b, network=False),
    "preflight + network stage": envkit_preflight,
}


def clean_runs(cluster: netns.NetnsCluster, runs: int, bound: float) -> None:
    """The clean job ``runs`` times with each runner: every failure is a false failure."""
    for name, runner in RUNNERS.items():
        times, failures = [], []
        for i in range(runs):
            out = runner(cluster, None, bound)
            times.append(out.seconds)
            if out.verdict != "passed":
                failures.append(f"run {i + 1}: {out.cell()} {out.message}")
        print(f"{name}: {runs} clean runs, {len(failures)} false failures; median {statistics.median(times):.1f} s, "
              f"min {min(times):.1f} s, max {max(times):.1f} s")
        for line in failures:
            print(f"  {line}")


def preflight_cost(cluster: netns.NetnsCluster, runs: int, bound: float) -> None:
    medians = {name: statistics.median(r(cluster, None, bound).seconds for _ in range(runs))
               for name, r in PREFLIGHT_RUNNERS.items()}
    (base, t0), *rest = medians.items()
    for name, t in rest:
        print(f"{name}: median {t:.1f} s, {t - t0:+.1f} s against {base} ({t0:.1f} s)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bound", type=float, default=120, help="seconds after which a run is stopped (default 120)")
    ap.add_argument("--clean-runs", type=int, default=1, help="clean runs per runner before the faults (default 1)")
    ap.add_argument("--only", nargs="*", metavar="KEY", help="only these faults (keys: " +
                    ", ".join(f.key for f in FAULTS) + ")")
    ap.add_argument("--no-kill", action="store_true",
                    help="srun without --kill-on-bad-exit: a node that fails does not stop the others")
    args = ap.parse_args()
    faults = [f for f in FAULTS if not args.only or f.key in args.only]
    if args.only and len(faults) != len(args.only):
        sys.exit(f"unknown fault in {args.only}; keys: {', '.join(f.key for f in FAULTS)}")
    if args.no_kill:
        RUNNERS["plain torchrun"] = lambda c, f, b: plain_torchrun(c, f, b, kill_on_bad_exit=False)

    with tempfile.TemporaryDirectory(prefix="envkit-bench-netns-") as tmp:
        start = time.monotonic()
        cluster = netns.start(Path(tmp) / "cluster", owner=os.getpid())
        up = time.monotonic() - start
        try:
            print(f"cluster up in {up:.1f} s ({cluster.hub}, nodes {', '.join(n.netns for n in cluster.nodes)}); "
                  f"bound {args.bound:g} s; srun {'without' if args.no_kill else 'with'} --kill-on-bad-exit")
            clean_runs(cluster, args.clean_runs, args.bound)
            preflight_cost(cluster, args.clean_runs, args.bound)
            rows: list[tuple[str, str, dict[str, Outcome]]] = []
            for fault in faults:
                outcomes = {}
                for name, runner in RUNNERS.items():
                    with injected(cluster, fault):
                        outcomes[name] = runner(cluster, fault, args.bound)
                rows.append((fault.key, fault.describe(), outcomes))
                print(f"  {fault.key}: " + "; ".join(f"{n} {o.cell()}" for n, o in outcomes.items()),
                      file=sys.stderr, flush=True)
        finally:
            left = netns.stop(cluster)
            if left:
                print(f"namespaces left after slurm-down.sh: {left}", file=sys.stderr)
    names = list(RUNNERS)
    width = max([len("fault"), *(len(k) for k, _, _ in rows)])
    print()
    # How much sooner the user knows: plain torchrun's time to its end (or to the bound) over envkit's.
    print(f"{'fault':{width}}  " + "  ".join(f"{n:34}" for n in names) + "  torchrun / envkit")
    for key, _, outcomes in rows:
        plain, ours = outcomes.get("plain torchrun"), outcomes.get("envkit preflight + network stage")
        ratio = f"{plain.seconds / ours.seconds:.1f}x" if plain and ours and ours.seconds > 0 else "-"
        print(f"{key:{width}}  " + "  ".join(f"{outcomes[n].cell():34}" for n in names) + f"  {ratio}")
    print()
    for key, what, outcomes in rows:
        print(f"{key}: {what}")
        for name, out in outcomes.items():
            said = f"{out.node}: {out.message}" if out.message else "(no error printed)"
            print(f"  {name}: {said[:300]}")


if __name__ == "__main__":
    main()
