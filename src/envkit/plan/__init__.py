"""One frozen plan per run: every decision envkit makes about a profile, made once.

:func:`envkit.plan.envplan.build_plan` turns a loaded profile (and, for ``envkit doctor``, the
host's facts) into an :class:`~envkit.plan.envplan.EnvPlan`: the run settings, the loader plan,
the cluster plan, the image plan (layout, torch requirement, and every file the image is built
from, read and size-checked once), the harness expectation and the warnings. Targets are pure
functions of it: they read no file and call nothing in ``envkit.profile`` or ``envkit.advice``.

The modules:

- :mod:`envkit.plan.paths`: where things live inside the image and the build context;
- :mod:`envkit.requirements` (below the profile, which reads the files): what a requirements file names;
- :mod:`envkit.plan.loader`: workers, /dev/shm and memory the loader needs;
- :mod:`envkit.plan.cluster`: per-node counts for the cluster targets;
- :mod:`envkit.plan.image`: the Dockerfile's layout and inputs;
- :mod:`envkit.plan.envplan`: the whole plan.

This package's ``__init__`` imports nothing, so ``envkit.advice`` can use the loader plan while the
whole plan uses ``envkit.advice`` for its warnings.

Example:
    >>> from envkit.plan.envplan import build_plan
    >>> from envkit.profile import load_profile
    >>> plan = build_plan(load_profile(None))
    >>> plan.loader.workers, plan.image.layout.value
    (6, 'direct')
"""
