"""Workers that adapt between epochs, from the time the training loop waits on the loader.

:class:`AdaptiveLoader` wraps a DataLoader. Around every ``next()`` it measures
how long the loop waited for a batch and how long the loop itself worked
between batches; a shared counter inside the dataset wrapper measures what one
item costs to load in the workers. At the end of an epoch it computes the
workers that would hide the loading behind the loop's work::

    needed = ceil(batch_load_s / loop_s_per_batch * 1.25)   clamped to [1, budget]

where the budget is one worker per usable CPU (:func:`envkit.harness.rules.sizing.cpu_fact`, quota rounded up)
and the shm rule (:func:`envkit.harness.rules.budget.shm_fit` against the free /dev/shm). It steps down
only while more than one worker is above the estimate (one spare, so it does not oscillate), and only
recommends (``history`` and one line on ``stream``) unless ``apply=True``; then
the loader is recreated with the new count at the next epoch's start, never
inside an epoch, and never with more workers than the budget.

Example:
    >>> needed_workers(item_s=0.005, batch_size=4, loop_s=0.01, budget=8)
    3
    >>> needed_workers(item_s=0.005, batch_size=4, loop_s=0.01, budget=2)
    2
"""

from __future__ import annotations

import math
import multiprocessing
import sys
import time

from ..probes import env as envmod
from ..report import plural
from ..rules.budget import shm_fit
from ..rules.sizing import cpu_fact
from .kwargs import item_bytes, loader_kwargs

HEADROOM = 1.25
KEEP_BELOW = 0.02  # a loop that waits less than 2 % of its time needs no more workers


def needed_workers(*, item_s: float, batch_size: int, loop_s: float, budget: int) -> int:
    """Workers that load one batch per ``loop_s`` when an item costs ``item_s`` (at least 1, at most budget)."""
    if budget <= 0:
        return 0
    if loop_s <= 0:
        return budget
    return max(1, min(budget, math.ceil(item_s * batch_size / loop_s * HEADROOM)))


class _TimedDataset:
    """Map-style wrapper that adds each ``__getitem__``'s duration to a shared (sum, count) pair."""

    def __init__(self, dataset, counter):
        self.dataset, self.counter = dataset, counter

    def __len__(self):
        return len(self.dataset)

    def __getitem__(self, index):
        t0 = time.perf_counter()
        item = self.dataset[index]
        dt = time.perf_counter() - t0
        with self.counter.get_lock():
            self.counter[0] += dt
            self.counter[1] += 1
        return item


class AdaptiveLoader:
    """Iterate it once per epoch like a DataLoader; it re-plans ``num_workers`` at each epoch's end.

    ``kwargs`` are DataLoader arguments (default: :func:`envkit.harness.runtime.kwargs.loader_kwargs` for ``dataset``);
    ``budget`` caps the workers (default: one per usable CPU, the harness's bound); ``apply`` opts in to recreating
    the loader with the recommendation at the next epoch boundary.
    """

    def __init__(self, dataset, kwargs: dict | None = None, *, apply: bool = False, budget: int | None = None,
                 stream=None, shm_path: str = "/dev/shm"):
        import torch.utils.data as tud  # here: importing the companion must not cost torch's import
        self._tud = tud
        self.kwargs = dict(loader_kwargs(dataset) if kwargs is None else kwargs)
        if budget is None:
            budget = cpu_fact(("count", envmod.usable_cpus(), "affinity"),
                              ("quota", envmod.read_cgroup_cpu_quota()["quota_cpus"], "cgroup quota"))[0] or 1
        self.budget, self.apply, self.shm_path = budget, apply, shm_path
        self.stream = sys.stderr if stream is None else stream
        self.counter = multiprocessing.Array("d", 2)
        self.dataset = _TimedDataset(dataset, self.counter)
        self.kwargs["num_workers"] = min(int(self.kwargs.get("num_workers", 0)), budget)
        self.history: list[dict] = []
        self.recommendation: int | None = None
        self.loader = self._make(self.kwargs["num_workers"])

    @property
    def num_workers(self) -> int:
        return self.loader.num_workers

    def _make(self, workers: int):
        kw = dict(self.kwargs, num_workers=workers)
        if workers == 0:  # DataLoader refuses these without workers
            for key in ("prefetch_factor", "persistent_workers", "multiprocessing_context"):
                kw.pop(key, None)
        else:
            kw.setdefault("persistent_workers", True)
        return self._tud.DataLoader(self.dataset, **kw)  # type: ignore[arg-type]  # map-style by duck typing

    def _close(self) -> None:
        it = getattr(self.loader, "_iterator", None)
        if it is not None and hasattr(it, "_shutdown_workers"):
            it._shutdown_workers()  # persistent workers would otherwise live until garbage collection
        self.loader._iterator = None

    def close(self) -> None:
        self._close()

    def __len__(self):
        return len(self.loader)

    def __iter__(self):
        if self.apply and self.recommendation is not None and self.recommendation != self.num_workers:
            self._close()  # only here, between epochs
            self.loader = self._make(self.recommendation)
        with self.counter.get_lock():
            self.counter[0] = self.counter[1] = 0.0
        wait = loop = 0.0
        batches = 0
        it = iter(self.loader)
        last = None
        while True:
            t0 = time.perf_counter()
            if last is not None:
                loop += t0 - last
            try:
                batch = next(it)
            except StopIteration:
                break
            t1 = time.perf_counter()
            if batches:  # the first batch also waits for the workers to start: not the steady state
                wait += t1 - t0
            batches += 1
            last = t1
            yield batch
        self._plan(wait, loop, batches)

    def _plan(self, wait: float, loop: float, batches: int) -> None:
        with self.counter.get_lock():
            total, items = self.counter[0], self.counter[1]
        steady = max(1, batches - 1)
        item_s = total / items if items else 0.0
        loop_s = loop / steady
        frac = wait / (wait + loop) if wait + loop > 0 else 0.0
        cap = self.budget
        st = envmod.shm_stats(self.shm_path)
        bs = int(self.kwargs.get("batch_size") or 1)
        if st and cap and self.dataset.dataset is not None and len(self.dataset):
            cap, _ = shm_fit(free_bytes=st["free_bytes"], batch_bytes=bs * item_bytes(self.dataset.dataset[0]),
                             num_workers=cap, prefetch_factor=int(self.kwargs.get("prefetch_factor") or 2))
        need = needed_workers(item_s=item_s, batch_size=bs, loop_s=loop_s, budget=cap)
        current = self.num_workers
        if need > current and frac < KEEP_BELOW:
            need, why = current, f"the loop waited only {frac:.1%} of the epoch"
        elif need > current:
            why = f"the loop waited {frac:.0%} of the epoch for batches"
        elif need + 1 < current:
            # Keep one spare: stepping down to the bare estimate would make the next epoch wait and
            # step up again (an oscillation on a noisy machine).
            need, why = need + 1, (f"{plural(need, 'worker')} keep{'s' if need == 1 else ''} up (waited {frac:.1%}); "
                                  "frees CPUs, one spare kept")
        elif need < current:
            need, why = current, f"keeps up (waited {frac:.1%}); within one worker of the estimate"
        else:
            why = f"keeps up (waited {frac:.1%})"
        if need >= cap and need > current:
            why += f"; capped by the budget of {cap}"
        self.recommendation = need
        entry = {"epoch": len(self.history), "num_workers": current, "wait_s": round(wait, 4),
                 "loop_s": round(loop, 4), "wait_fraction": round(frac, 4), "item_s": round(item_s, 6),
                 "budget": cap, "recommended": need, "reason": why}
        self.history.append(entry)
        if need != current:
            verb = "using" if self.apply else "recommend"
            self.stream.write(f"envkit: epoch {entry['epoch']}: {verb} num_workers={need} next epoch "
                              f"(was {current}): {why}\n")
            self.stream.flush()
