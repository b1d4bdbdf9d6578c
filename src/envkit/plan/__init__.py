"""The plan: every decision envkit makes about a profile, each made once, in one room.

:func:`envkit.planner.build_plan` (above this package and the advice) asks each module here for its
decision and assembles an :class:`~envkit.plan.envplan.EnvPlan`: the run settings, the loader plan,
the cluster plan, the image plan (layout, torch requirement, and every file the image is built
from, read and size-checked once), the harness expectation and the warnings. Targets are pure
functions of it: they read no file and call nothing in ``envkit.profile`` or ``envkit.advice``.
Nothing here imports the advice or anything above it (pyproject.toml's import-linter contracts: the
package is one layer, its modules layered among themselves by the contract "The plan's modules").

The modules, top down:

- :mod:`envkit.plan.envplan`: the whole plan's types (:class:`~envkit.plan.envplan.EnvPlan`);
- :mod:`envkit.plan.expectfile`: ``envkit_expect.json``, the run's promises as the harness reads them;
  :mod:`envkit.plan.lockfile`: the lock file's inputs and whether it is stale;
- :mod:`envkit.plan.runsettings`: every run-time setting (``docker run``, compose, the engine);
- :mod:`envkit.plan.image`: the Dockerfile's layout and inputs; :mod:`envkit.plan.wslconfig`: the
  ``.wslconfig`` and ``wsl.conf`` sections; :mod:`envkit.plan.loader`: workers, /dev/shm and memory
  the loader needs;
- :mod:`envkit.plan.cluster`: per-node counts and the rules every cluster target words;
  :mod:`envkit.plan.registry`: the targets' records;
- :mod:`envkit.plan.paths`: where things live inside the image and the build context.

Example:
    >>> from envkit.planner import build_plan
    >>> from envkit.profile import load_profile
    >>> plan = build_plan(load_profile(None))
    >>> plan.loader.workers, plan.image.layout.value
    (6, 'direct')
"""
