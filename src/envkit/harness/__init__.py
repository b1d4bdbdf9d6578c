"""envkit harness: prove a PyTorch training environment works, from inside the container.

Stdlib + torch only, relative imports only (it also ships as one zipapp file).
Importing this package (or ``.sizing``) does not import torch; the public API
is loaded lazily:

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
