"""The DataLoader defaults: what a profile's ``loader:`` leaves unset, and what the harness runs without an expectation.

One set, standard library only: the harness reads it (:func:`envkit.harness.expectation.resolve_loader`)
and so does the profile's ``Loader`` model (:mod:`envkit.profile.model`), whose defaults
docs/profile.md shows. ``num_workers: auto`` is resolved by the one sizing rule
(:func:`envkit.harness.rules.sizing.size_node`) over the CPUs known where it runs.

Example:
    >>> LOADER.num_workers, LOADER.sample_shape, LOADER_DEFAULTS["start_method"]
    ('auto', (3, 224, 224), 'fork')
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from types import MappingProxyType
from typing import Literal

from ..checks.synthetic import DEFAULT_SAMPLE_COST_MS


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
