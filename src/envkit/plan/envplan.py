"""The whole plan of one run: :class:`EnvPlan`, frozen, built once by :func:`envkit.planner.build_plan`.

Every command that renders, builds, validates or locks builds one plan and hands it on; targets
(:mod:`envkit.targets`) are pure functions of it. The warnings are the profile's own (workload,
files, team); what a target cannot express is that target's (``warnings(plan)`` in its module).
This module holds the plan's types only: assembling one takes the advice, which sits above the plan.

Example:
    >>> source = PlanSource("demo", "envkit.yaml", "0" * 64, Path("/p"))
    >>> source.resolve("data")
    PosixPath('/p/data')
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from envkit.errors import ProfileError
from envkit.findings import Finding, Locator
from envkit.plan.cluster import ClusterAsk, ClusterPlan
from envkit.plan.image import ImagePlan
from envkit.plan.loader import LoaderPlan
from envkit.plan.network import NetworkPlan
from envkit.plan.wslconfig import WslPlan
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
    network: NetworkPlan = NetworkPlan("ethernet", None, None, None, (), (), (), False)  # cluster.network, decided
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
