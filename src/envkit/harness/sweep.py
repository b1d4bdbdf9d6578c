"""The ``workers_sweep`` check (``--sweep``): samples/s over num_workers, and a recommendation.

Each worker count is a short real DataLoader run (same batch, shape, start
method) in one watched child. ``recommended`` is the *smallest* worker count
whose throughput is within 5 % of the best: more workers cost memory, shm and
start-up time for no gain.

Example:
    >>> recommend({0: 100.0, 1: 190.0, 2: 200.0, 4: 198.0})
    1
    >>> worker_counts(2)
    [0, 1, 2, 4]
"""

from __future__ import annotations

import sys
from typing import Any

from .report import PASS, WARN, make_check

WITHIN = 0.95
MAX_WORKERS = 32
TIMED_BATCHES, TIMED_BATCHES_QUICK = 16, 8


def worker_counts(usable: int, cap: int = MAX_WORKERS) -> list[int]:
    """0, 1, 2, 4, ... powers of two up to ``2 * usable`` (capped)."""
    top = max(1, min(2 * usable, cap))
    counts, w = [0, 1], 2
    while w <= top:
        counts.append(w)
        w *= 2
    return counts


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
    import matplotlib
    matplotlib.use("Agg")  # no display in a container
    import matplotlib.pyplot as plt

    rows = [r for r in table if r.get("samples_per_s") is not None]
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


def check_workers_sweep(settings: dict, *, usable: int, timeout: float = 60.0, quick: bool = False,
                        progress=None, plot: str | None = None, counts: list[int] | None = None) -> dict:
    """Run the sweep and report the table, the best and the recommended worker count."""
    from .loader import evaluate, make_run, run_loader_child

    counts = counts if counts is not None else worker_counts(usable)
    timed = TIMED_BATCHES_QUICK if quick else TIMED_BATCHES
    runs = []
    for w in counts:
        warmup = w * settings["prefetch_factor"] + 1
        runs.append(make_run(settings, quick, num_workers=w, batches=warmup + timed, warmup=warmup,
                             persistent_workers=False))
    child = run_loader_child(runs, timeout=timeout, progress=progress, label="workers_sweep", stop_on_error=False)
    table: list[dict] = []
    rates: dict[int, float] = {}
    for i, w in enumerate(counts):
        stats, bad = evaluate(child, i)
        if stats:
            rates[w] = stats["samples_per_s"]
            table.append({"num_workers": w, "samples_per_s": stats["samples_per_s"], "seconds": stats["seconds"]})
        else:
            table.append({"num_workers": w, "samples_per_s": None, "failure": bad.get("failure")})
    rec = recommend(rates)
    best_w = max(rates, key=lambda w: rates[w]) if rates else None
    measured: dict[str, Any] = {"table": table, "recommended": rec, "best": best_w,
                                "best_samples_per_s": rates.get(best_w) if best_w is not None else None,
                                "recommended_samples_per_s": rates.get(rec) if rec is not None else None}
    expected = {"num_workers": settings["num_workers"], "counts": counts, "within": WITHIN}
    if plot:
        try:
            plot_sweep(table, plot, rec)
            measured["plot"] = plot
        except ImportError:
            measured["plot_error"] = "matplotlib is not installed: pip install matplotlib to use --plot"
            print(f"workers_sweep: {measured['plot_error']}", file=sys.stderr)
        except OSError as exc:  # e.g. the folder vanished or is not writable: keep the measured sweep
            measured["plot_error"] = f"cannot write the plot {plot}: {exc.strerror or exc}"
            print(f"workers_sweep: {measured['plot_error']}", file=sys.stderr)
    failed = [r for r in table if r["samples_per_s"] is None]
    evidence = ", ".join(f"{r['num_workers']}: {r['samples_per_s']:.0f}" if r["samples_per_s"] is not None
                         else f"{r['num_workers']}: {r['failure']}" for r in table)
    if rec is None or best_w is None:
        return make_check("workers_sweep", WARN, measured, expected,
                          f"no worker count completed (samples/s by workers: {evidence})",
                          "fix the loader check first")
    msg = (f"recommended num_workers={rec} ({rates[rec]:.0f} samples/s, best {rates[best_w]:.0f} at {best_w}); "
           f"samples/s by workers: {evidence}")
    mine = rates.get(settings["num_workers"])
    if failed or (mine is not None and mine < 0.8 * rates[best_w]):
        return make_check("workers_sweep", WARN, measured, expected,
                          msg + (f"; configured num_workers={settings['num_workers']} reaches only {mine:.0f}"
                                 if mine is not None else ""),
                          f"set num_workers={rec} in the profile's loader section")
    return make_check("workers_sweep", PASS, measured, expected, msg)
