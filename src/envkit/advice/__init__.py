"""Advice from the profile alone, at generate time (no host, no container).

``advice.profile`` sizes the run settings against the loader and says what is too
small or contradictory; ``advice.wslvm`` checks the ``wsl:`` section against the
container it must host. The numbers come from the harness's rules
(:mod:`envkit.harness.rules.sizing`), so the advice, ``envkit doctor`` and the in-container
checks agree.
"""
