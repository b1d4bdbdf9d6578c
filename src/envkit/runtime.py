"""The runtime companion on a host: ``from envkit.runtime import loader_kwargs``.

The code lives in the harness package (standard library + torch), which is also what the
image carries as ``envkit_runtime``; this module only re-exports it.

Example:
    >>> from envkit.runtime import loader_kwargs
    >>> kw = loader_kwargs(batch_size=4, sample_bytes=16, expect=False, cuda=False)
    >>> kw["batch_size"], kw["pin_memory"], "num_workers" in kw.reasons
    (4, False, True)
"""

from envkit.harness.runtime import (  # noqa: F401
    AdaptiveLoader, LoaderKwargs, ShmWatch, item_bytes, loader_kwargs, start_method, watch_main,
)

__all__ = ["AdaptiveLoader", "LoaderKwargs", "ShmWatch", "item_bytes", "loader_kwargs", "start_method", "watch_main"]
