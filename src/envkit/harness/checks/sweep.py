"""The ``workers_sweep`` check (``--sweep``): samples/s over num_workers, and a recommendation.

Each worker count is a short real DataLoader run (same batch, shape, start
method) in one watched child. ``recommended`` is the *smallest* worker count
whose throughput is within 5 % of the best: more workers cost memory, shm and
start-up time for no gain. Where the CPUs allow a worker it is at least 1: with
0 workers the samples load in the training process, between its steps, and the
harness runs no step, so the 0-worker rate is measured and shown, not recommended.

The CPUs bound it. With C CPUs (the affinity mask, and the cgroup quota rounded
up: :func:`envkit.harness.rules.sizing.cpu_fact`) shared by R ranks (training processes on the
node), each rank keeps one CPU for its training step and gets at most
``max(0, floor(C / R) - 1)`` workers (:func:`worker_bound`); the sweep never
recommends more, and tries counts only up to one beyond (``max(bound, 1) + 1``),
which shows what oversubscribing would gain where no training step competes.

What it measures: the synthetic dataset, whose samples each cost
``sample_cost_ms`` of CPU (:mod:`.synthetic`), or the user's ``--dataset``.

Example:
    >>> recommend({0: 100.0, 1: 190.0, 2: 200.0, 4: 198.0})
    1
    >>> worker_bound(2), worker_bound(16, 8), worker_bound(1)
    (1, 1, 0)
    >>> worker_counts(1), worker_counts(7)
    ([0, 1, 2], [0, 1, 2, 4, 7, 8])
"""

from __future__ import annotations

import sys
from typing import Any

from ..expectation import LoaderSettings
from ..report import PASS, WARN, Check, make_check
from ..rules.sizing import cpu_fact
from .loader import evaluate, make_run, run_loader_child

WITHIN = 0.95
MAX_WORKERS = 32
TIMED_BATCHES, TIMED_BATCHES_QUICK = 16, 8


def worker_bound(cpus: int, ranks: int = 1) -> int:
    """Workers per rank the CPUs allow: ``max(0, floor(cpus / ranks) - 1)`` (one CPU per rank's step)."""
    return max(0, cpus // max(1, ranks) - 1)


def worker_counts(bound: int, cap: int = MAX_WORKERS) -> list[int]:
    """The counts to try: 0, 1, powers of two below the top, ``bound``, and the top ``max(bound, 1) + 1``
    (at most ``cap``)."""
    top = min(max(bound, 1) + 1, cap)
    counts = {0, 1, top, min(bound, top)}
    w = 2
    while w < top:
        counts.add(w)
        w *= 2
    return sorted(counts)


def cpu_facts(usable: int, quota: float | None, ranks: int) -> dict:
    """The CPUs the bound is computed from, and which limit set them.

    >>> cpu_facts(4, 1.5, 1)["why"]
    '2 CPUs (the cgroup quota of 1.5 CPUs, rounded up) for 1 rank'
    """
    found, source = cpu_fact(
        ("count", usable, "the affinity mask" + (f"; cgroup quota {quota:g}" if quota else ", no cgroup quota")),
        ("quota", quota, f"the cgroup quota of {quota:g} CPU{'s' if quota != 1 else ''}, rounded up" if quota else ""))
    cpus = found or usable
    why = f"{cpus} CPU{'s' if cpus != 1 else ''} ({source}) for {ranks} rank{'s' if ranks != 1 else ''}"
    return {"cpus": cpus, "cpus_source": "cgroup_quota" if quota and cpus < usable else "affinity",
            "ranks_per_node": ranks, "bound": worker_bound(cpus, ranks), "why": why}


def measured_what(settings: LoaderSettings) -> str:
    """What the sweep ran: the synthetic samples and their cost, or the user's dataset factory.

    >>> measured_what({"dataset": "synthetic", "sample_cost_ms": 4.0}), measured_what({"dataset": "my.data:make"})
    ('synthetic samples costing 4 ms of CPU each', 'your dataset my.data:make')
    """
    if settings["dataset"] != "synthetic":
        return f"your dataset {settings['dataset']}"
    cost = settings["sample_cost_ms"] or 0
    if cost == 0:
        return ("free synthetic samples (sample_cost_ms 0): only the pipeline's overhead was measured; "
                "your samples' decode cost decides how many workers pay, so set loader.sample_cost_ms or "
                "pass --dataset")
    return f"synthetic samples costing {cost:g} ms of CPU each"


def recommend(rates: dict) -> int | None:
    """Smallest worker count with samples/s >= 95 % of the best measured."""
    if not rates:
        return None
    best = max(rates.values())
    return min(w for w, r in rates.items() if r >= WITHIN * best)


def plot_sweep(table: list[dict], path: str, recommended=None) -> None:
    """Write samples/s vs num_workers as a PNG (matplotlib, Agg backend).

    Raises ImportError without matplotlib, OSError when ``path`` cannot be written.
    """
    import matplotlib  # here: an optional dependency, only for --plot
    matplotlib.use("Agg")  # no display in a container
    import matplotlib.pyplot as plt

    rows = [r for r in table if r["samples_per_s"] is not None]
    fig, ax = plt.subplots(figsize=(6, 4))
    try:
        ax.plot([r["num_workers"] for r in rows], [r["samples_per_s"] for r in rows], marker="o")
        if recommended is not None:
            ax.axvline(recommended, linestyle="--", color="gray", label=f"recommended: {recommended}")
            ax.legend()
        ax.set_xlabel("num_workers")
        ax.set_ylabel("samples/s")
        ax.set_title("DataLoader throughput vs num_workers")
        ax.grid(True, alpha=0.3)
        fig.tight_layout()
        fig.savefig(path, format="png")
    finally:
        plt.close(fig)


def check_workers_sweep(settings: LoaderSettings, *, usable: int, quota: float | None = None, timeout: float = 60.0,
                        quick: bool = False, progress=None, plot: str | None = None,
                        counts: list[int] | None = None) -> Check:
    """Run the sweep and report the table, the best and the recommended worker count.

    ``usable``: the affinity mask's size; ``quota``: the cgroup CPU quota (None: none); the ranks are
    ``settings["ranks_per_node"]``. ``counts`` overrides the counts tried (a test's
    seam); the recommendation stays within :func:`worker_bound` whatever was tried.
    """
    facts = cpu_facts(usable, quota, max(1, settings["ranks_per_node"]))
    bound = min(facts["bound"], MAX_WORKERS)
    counts = counts if counts is not None else worker_counts(bound)
    table, rates = _measure(settings, counts, quick=quick, timeout=timeout, progress=progress)
    # Where the CPUs allow a worker, 0 is not recommended: it loads on the training process's CPU, between
    # steps, and the harness has no step to delay, so its 0-worker rate overstates what training would see.
    allowed = {w: r for w, r in rates.items() if w <= bound and (w >= 1 or bound == 0)} \
        or ({0: rates[0]} if 0 in rates else {})
    rec = recommend(allowed)
    best_w = max(allowed, key=lambda w: allowed[w]) if allowed else None
    synthetic = settings["dataset"] == "synthetic"
    measured: dict[str, Any] = {"table": table, "recommended": rec, "best": best_w,
                                "best_samples_per_s": rates.get(best_w) if best_w is not None else None,
                                "recommended_samples_per_s": rates.get(rec) if rec is not None else None,
                                "fastest_measured": max(rates, key=lambda w: rates[w]) if rates else None,
                                "dataset": settings["dataset"],
                                "sample_cost_ms": (settings["sample_cost_ms"] or 0.0) if synthetic else None,
                                "measured": measured_what(settings),
                                **{k: facts[k] for k in ("cpus", "cpus_source", "ranks_per_node")}}
    expected = {"num_workers": settings["num_workers"], "counts": counts, "within": WITHIN,
                "max_workers_per_rank": bound}
    if plot:
        _plot(measured, table, plot, rec)
    return _judge(settings, facts, bound, table, rates, measured, expected)


def _measure(settings: LoaderSettings, counts: list[int], *, quick: bool, timeout: float,
             progress) -> tuple[list[dict], dict[int, float]]:
    """One watched child runs a short loader per worker count: the table, and samples/s by count."""
    timed = TIMED_BATCHES_QUICK if quick else TIMED_BATCHES
    runs = []
    for w in counts:
        warmup = w * settings["prefetch_factor"] + 1
        runs.append(make_run(settings, quick, num_workers=w, batches=warmup + timed, warmup=warmup,
                             persistent_workers=False, sample_cost_ms=settings["sample_cost_ms"] or 0.0))
    child = run_loader_child(runs, timeout=timeout, progress=progress, label="workers_sweep", stop_on_error=False)
    table: list[dict] = []
    rates: dict[int, float] = {}
    for i, w in enumerate(counts):
        stats, bad = evaluate(child, i)
        if stats:
            rates[w] = stats["samples_per_s"]
            table.append({"num_workers": w, "samples_per_s": stats["samples_per_s"], "seconds": stats["seconds"]})
        else:
            table.append({"num_workers": w, "samples_per_s": None, "failure": bad["failure"]})
    return table, rates


def _plot(measured: dict[str, Any], table: list[dict], plot: str, rec: int | None) -> None:
    """Write the plot; a failure to is evidence in ``measured`` (and a line on stderr), never the check's end."""
    try:
        plot_sweep(table, plot, rec)
        measured["plot"] = plot
    except ImportError:
        measured["plot_error"] = "matplotlib is not installed: pip install matplotlib to use --plot"
        print(f"workers_sweep: {measured['plot_error']}", file=sys.stderr)
    except OSError as exc:  # e.g. the folder vanished or is not writable: keep the measured sweep
        measured["plot_error"] = f"cannot write the plot {plot}: {exc.strerror or exc}"
        print(f"workers_sweep: {measured['plot_error']}", file=sys.stderr)


def _judge(settings: LoaderSettings, facts: dict, bound: int, table: list[dict], rates: dict[int, float],
           measured: dict[str, Any], expected: dict[str, Any]) -> Check:
    """The recommendation against the CPU bound and the configured count."""
    rec, best_w, fastest, what = measured["recommended"], measured["best"], measured["fastest_measured"], measured["measured"]
    evidence = ", ".join(f"{r['num_workers']}: {r['samples_per_s']:.0f}" if r["samples_per_s"] is not None
                         else f"{r['num_workers']}: {r['failure']}" for r in table)
    limit = (f"the CPU bound: at most {bound} worker{'s' if bound != 1 else ''} per rank, "
             f"max(0, floor({facts['cpus']} / {facts['ranks_per_node']}) - 1) for {facts['why']}")
    if rec is None or best_w is None:
        return make_check("workers_sweep", WARN, measured, expected,
                          f"measured {what}: no worker count within {limit} completed "
                          f"(samples/s by workers: {evidence})", "fix the loader check first")
    msg = (f"measured {what}; recommended num_workers={rec} ({rates[rec]:.0f} samples/s, best {rates[best_w]:.0f} "
           f"at {best_w}) within {limit}; samples/s by workers: {evidence}")
    if fastest is not None and fastest > bound and rates[fastest] * WITHIN > rates[best_w]:
        msg += (f"; {fastest} workers measured {rates[fastest]:.0f} samples/s here, where no training step "
                "competes for a CPU, but that is past the bound")
    nw = settings["num_workers"]
    mine = rates.get(nw)
    # An explicit count past the bound is the user's to lower; "auto" is planned elsewhere (sizing).
    over = settings["num_workers_requested"] != "auto" and nw > bound
    slow = mine is not None and mine < 0.8 * rates[best_w]
    if not (any(r["samples_per_s"] is None for r in table) or over or slow):
        return make_check("workers_sweep", PASS, measured, expected, msg)
    if over:
        note = (f"; configured num_workers={nw} is past the bound: "
                f"{facts['ranks_per_node']} x ({nw} + 1) processes on {facts['cpus']} CPUs")
    else:
        note = f"; configured num_workers={nw} reaches only {mine:.0f}" if slow else ""
    return make_check("workers_sweep", WARN, measured, expected, msg + note,
                      f"set num_workers={rec} in the profile's loader section")
