"""The DataLoader defaults: what a profile's ``loader:`` leaves unset, and what the harness runs without an expectation.

:data:`DEFAULT_SAMPLE_COST_MS` is the CPU one synthetic sample costs (:mod:`envkit.harness.checks.synthetic`):
what one ImageNet-sized JPEG costs to decode and augment to 224 x 224 (``benchmarks/bench_sample_cost.py``);
:func:`sample_cost_problem` is the one check of a cost (profile, expectation, ``--sample-cost-ms``).

One set, standard library only: the harness reads it (:func:`envkit.harness.expectation.resolve_loader`)
and so does the profile's ``Loader`` model (:mod:`envkit.profile.model`), whose defaults
docs/profile.md shows. ``num_workers: auto`` is resolved by the one sizing rule
(:func:`envkit.harness.rules.sizing.size_node`) over the CPUs known where it runs.

Example:
    >>> LOADER.num_workers, LOADER.sample_shape, LOADER_DEFAULTS["start_method"]
    ('auto', (3, 224, 224), 'fork')
    >>> sample_cost_problem(-1), sample_cost_problem(2.5)
    ('must be a number of milliseconds from 0 to 10000, got -1', None)
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from types import MappingProxyType
from typing import Literal

# The CPU time of one ImageNet-sized JPEG (500x375, 116 KB) decoded with Pillow and augmented as
# torchvision's ImageNet recipe does (RandomResizedCrop to 224x224, horizontal flip, to a float tensor,
# normalised), rounded: measured 2026-12-03 with benchmarks/bench_sample_cost.py (Pillow 13.0.0, torch
# 2.13.0+cpu, Python 3.11.7, Intel Xeon, one thread): median 2.8-3.0 ms, p90 3.1-3.3 ms of CPU per sample.
DEFAULT_SAMPLE_COST_MS = 3.0
MAX_SAMPLE_COST_MS = 10000.0  # 10 s of CPU a sample: beyond any decoder; a larger value is a unit mistake


def sample_cost_problem(value, shown: str | None = None) -> str | None:
    """Why ``value`` is no per-sample cost (None: it is one, or it is None, "not asserted").

    A cost is a finite number of milliseconds from 0 to :data:`MAX_SAMPLE_COST_MS`; a boolean is none.
    ``shown``: how the message quotes the value (default: its repr).
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not 0 <= value <= MAX_SAMPLE_COST_MS:
        return (f"must be a number of milliseconds from 0 to {MAX_SAMPLE_COST_MS:g}, "
                f"got {shown if shown is not None else repr(value)}")
    return None


@dataclass(frozen=True)
class LoaderDefaults:
    num_workers: int | Literal["auto"] = "auto"  # CPUs per training process - 1, at least 0, at most 8 (sizing.plan_workers)
    batch_size: int = 32
    sample_shape: tuple[int, ...] = (3, 224, 224)  # one ImageNet-sized image
    dtype: str = "float32"
    pin_memory: bool = True
    prefetch_factor: int = 2
    persistent_workers: bool = True
    start_method: Literal["fork", "spawn", "forkserver"] = "fork"
    sample_cost_ms: float = DEFAULT_SAMPLE_COST_MS


LOADER = LoaderDefaults()
LOADER_DEFAULTS = MappingProxyType(asdict(LOADER))  # the same, by key (the expectation's ``loader`` keys)
