"""One module per subcommand. Each exposes ``run(...)`` with typed arguments and returns an exit code.

Commands never parse argv (``envkit.cli`` does) and raise ``EnvkitError`` for user-facing failures.
"""
