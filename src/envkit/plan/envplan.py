"""The whole plan of one run: :class:`EnvPlan`, built once by :func:`build_plan`.

Every command that renders, builds, validates or locks builds one plan and hands it on; targets
(:mod:`envkit.targets`) are pure functions of it. The warnings are the profile's own (workload,
files, team); what a target cannot express is that target's (``warnings(plan)`` in its module).

Example:
    >>> from envkit.profile import load_profile
    >>> plan = build_plan(load_profile(None))
    >>> plan.settings.shm_size, plan.loader.workers, plan.cluster, plan.warnings
    (2147483648, 6, None, ())
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from envkit.errors import ProfileError
from envkit.findings import Finding, Locator
from envkit.plan.cluster import ClusterAsk, ClusterPlan, cluster_ask, cluster_plan
from envkit.plan.image import ImagePlan, image_plan
from envkit.plan.loader import LoaderPlan, loader_plan
from envkit.plan.wslconfig import WslPlan, wsl_plan
from envkit.profile import LoadedProfile
from envkit.plan.runsettings import RunSettings


@dataclass(frozen=True)
class PlanSource:
    """Where the plan comes from: the profile's name, its file as given (``<...>`` for the embedded one),
    its sha256 and the folder relative volume sources and the project copy are relative to."""

    name: str
    source: str
    sha256: str
    base_dir: Path

    def resolve(self, rel: str) -> Path:
        """A path the profile names, resolved against its folder."""
        return (self.base_dir / rel).resolve()


@dataclass(frozen=True)
class EnvPlan:
    """What every target and command reads: decided values only (no profile model; the commands keep the
    :class:`~envkit.profile.LoadedProfile` themselves)."""

    source: PlanSource
    sections: tuple[str, ...]  # the optional profile sections present ("cluster", "wsl")
    out_dir: Path
    settings: RunSettings
    loader: LoaderPlan
    image: ImagePlan
    expectation: bytes  # envkit_expect.json, as baked into the image
    warnings: tuple[Finding, ...]  # each placed in the profile by ``locate``
    cluster: ClusterPlan | None  # None without a cluster: section, or when it cannot be planned
    wsl: WslPlan | None = None  # None without a wsl: section
    cluster_error: ProfileError | None = None  # why there is no cluster plan (require_cluster raises it)
    cluster_ask: ClusterAsk | None = None  # what a cluster: section asks, as written (None without one)
    notes: tuple[Finding, ...] = ()  # what envkit decided where the profile left it open (said once, never an error)
    locate: Locator = Locator("")  # places a finding (a target's too) in the profile: its source, key line and column

    @cached_property
    def harness_zipapp(self) -> bytes:
        """envkit_harness.pyz, built from envkit's own harness sources (never from a cache)."""
        from envkit.harness.zipapp import zip_bytes

        return zip_bytes()

    def require_cluster(self) -> ClusterPlan:
        """The cluster plan, for the targets that cannot render without one (ProfileError otherwise)."""
        if self.cluster is None:
            assert self.cluster_error is not None  # build_plan records why there is no cluster plan
            raise self.cluster_error
        return self.cluster


def build_plan(loaded: LoadedProfile, out_dir: Path = Path(".")) -> EnvPlan:
    """Decide everything about ``loaded`` once. ``out_dir``: where the files go (relative volume sources
    and the project copy depend on it). The plan is the container's, whatever host renders it: the
    host's own facts are ``envkit doctor``'s (:func:`envkit.plan.loader.loader_plan` with them)."""
    from envkit.advice.profile import file_warnings, profile_warnings, sizing_notes
    from envkit.advice.team import team_warnings
    from envkit.plan.expectfile import expectation_json

    p = loaded.profile
    loader = loader_plan(p)
    settings = RunSettings.from_profile(p, loader)
    image = image_plan(loaded, out_dir)
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
                   wsl=wsl_plan(p.wsl, p.run.wants_gpus), cluster_error=error, cluster_ask=cluster_ask(p),
                   notes=tuple(map(locate, sizing_notes(p, settings, loader))), locate=locate)
