"""The runtime companion: DataLoader arguments that fit the live environment, adaptive workers and the
shm watch, for a training script. One name, ``runtime``: this package is ``envkit_runtime`` in the
image (the zipapp's top-level shim) and ``envkit.runtime`` on a host (a re-export); its modules are
:mod:`.kwargs` (``loader_kwargs``), :mod:`.adaptive` (``AdaptiveLoader``, which uses it) and
:mod:`.shmwatch` (``ShmWatch``, ``envkit watch``). Its facts and rules are the harness's own
(:mod:`envkit.harness.probes`, :mod:`envkit.harness.rules`).

Example:
    >>> from envkit.harness.runtime import loader_kwargs, AdaptiveLoader
    >>> loader_kwargs.__module__, AdaptiveLoader.__module__
    ('envkit.harness.runtime.kwargs', 'envkit.harness.runtime.adaptive')
"""

from __future__ import annotations

from .adaptive import AdaptiveLoader
from .kwargs import LoaderKwargs, item_bytes, loader_kwargs, start_method
from .shmwatch import ShmWatch, main as watch_main

__all__ = ["AdaptiveLoader", "LoaderKwargs", "ShmWatch", "item_bytes", "loader_kwargs", "start_method", "watch_main"]
