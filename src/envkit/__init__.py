"""envkit: one YAML profile in; a working, proven PyTorch training environment out.

The package index's ``envkit`` is another project, so envkit is distributed as :data:`DISTRIBUTION`;
the command and the import stay ``envkit``. Every install line a user reads is built from it.

Example:
    >>> install("harness")
    "pip install 'envkit-torch[harness]'"
"""
__version__ = "0.1.0"

#: The name on the package index (``project.name`` in pyproject.toml; a test keeps them equal).
DISTRIBUTION = "envkit-torch"


def install(extra: str = "", tool: str = "pip") -> str:
    """The install line for envkit (with ``extra``, quoted for the shell) through ``tool`` (pip, pipx)."""
    return f"{tool} install '{DISTRIBUTION}[{extra}]'" if extra else f"{tool} install {DISTRIBUTION}"
