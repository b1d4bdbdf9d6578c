"""envkit harness: prove a PyTorch training environment works, from inside the container.

Stdlib + torch only, relative imports only (it also ships as one zipapp file, :mod:`.zipapp`).
Its rooms, each importing only from the ones below it (pyproject.toml's import contract):
the entry points (:mod:`.cli`, :mod:`.runner`), the checks (:mod:`.checks`) and the runtime
companion (:mod:`.runtime`), the records (:mod:`.report`), the expectation (:mod:`.expectation`)
and the facts (:mod:`.probes`), and the rules every command applies (:mod:`.rules`).
Importing this package (or ``.rules``) does not import torch; the public API is loaded lazily
(it would otherwise import every check):

    >>> from envkit.harness import run_checks, render_table, main   # doctest: +SKIP
    >>> print(render_table(run_checks(None, quick=True)))             # doctest: +SKIP
"""

_EXPORTS = {"run_checks": "runner", "main": "cli", "render_table": "report", "UsageError": "errors",
            "load_expect": "expectation", "measure_h2d": "checks.transfer", "build_zipapp": "zipapp"}
__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name in _EXPORTS:
        import importlib
        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
