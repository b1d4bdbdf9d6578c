"""The planner: a loaded profile -> the one frozen :class:`~envkit.plan.envplan.EnvPlan` of a run.

:func:`build_plan` asks each room of :mod:`envkit.plan` for its decision (the loader, the run settings,
the image, the cluster, the WSL sections, the expectation) and :mod:`envkit.advice` for the warnings and
notes, once. It sits above both: the plan's modules decide and never ask for advice, and the advice reads
the plan's decisions.

Example:
    >>> from envkit.profile import load_profile
    >>> plan = build_plan(load_profile(None))
    >>> plan.settings.shm_size, plan.loader.workers, plan.cluster, plan.warnings
    (2147483648, 6, None, ())
"""

from __future__ import annotations

from pathlib import Path

from envkit.advice.profile import file_warnings, profile_warnings, sizing_notes, volume_notes
from envkit.advice.team import team_warnings
from envkit.errors import ProfileError
from envkit.findings import Locator
from envkit.plan.cluster import ClusterPlan, cluster_ask, cluster_plan
from envkit.plan.envplan import EnvPlan, PlanSource
from envkit.plan.expectfile import expectation_json
from envkit.plan.image import image_plan
from envkit.plan.loader import loader_plan
from envkit.plan.network import network_plan
from envkit.plan.runsettings import RunSettings
from envkit.plan.wslconfig import wsl_plan
from envkit.profile import LoadedProfile


def build_plan(loaded: LoadedProfile, out_dir: Path = Path(".")) -> EnvPlan:
    """Decide everything about ``loaded`` once. ``out_dir``: where the files go (relative volume sources
    and the project copy depend on it). The plan is the container's, whatever host renders it: the
    host's own facts are ``envkit doctor``'s (:func:`envkit.plan.loader.loader_plan` with them)."""
    p = loaded.profile
    loader = loader_plan(p)
    image = image_plan(loaded, out_dir)
    network = network_plan(p)
    settings = RunSettings.from_profile(p, loader, image.spec.user, network)
    cluster: ClusterPlan | None = None
    error: ProfileError | None = None
    try:
        cluster = cluster_plan(p, loaded.source)  # ProfileError without a cluster: section, or one it cannot plan
    except ProfileError as e:
        error = e
    locate = Locator(loaded.source, loaded.positions)
    warnings = profile_warnings(p, settings, loader) + file_warnings(p, image) + team_warnings(loaded, image)
    source = PlanSource(p.name, loaded.source, loaded.sha256, loaded.base_dir)
    sections = tuple(name for name in ("cluster", "wsl") if getattr(p, name) is not None)
    return EnvPlan(source=source, sections=sections, out_dir=out_dir, settings=settings, loader=loader, image=image,
                   expectation=expectation_json(p, settings, loader), warnings=tuple(map(locate, warnings)), cluster=cluster,
                   network=network,
                   wsl=wsl_plan(p.wsl, p.run.wants_gpus), cluster_error=error, cluster_ask=cluster_ask(p),
                   notes=tuple(map(locate, sizing_notes(p, settings, loader) + volume_notes(settings, loaded.base_dir))),
                   locate=locate)
