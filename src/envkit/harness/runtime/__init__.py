"""The runtime companion's public API, one import away (``envkit_runtime`` in the image,
``envkit.runtime`` on a host): DataLoader arguments, adaptive workers and the shm watch.

It is its own module so that :mod:`envkit.harness.runtime.kwargs` and :mod:`.adaptive` (which uses
``loader_kwargs``) do not import each other.

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
