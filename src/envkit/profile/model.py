"""The profile, version 1: one typed, frozen model validated once at load time.

Templates and targets only ever see these objects, never raw dicts. Every model
forbids unknown keys, so a typo is an error with a did-you-mean, not a silently
ignored setting (hpccm's and compose's failure mode). The sections are
:mod:`envkit.profile.sections`' (and :mod:`~envkit.profile.cluster`'s, :mod:`~envkit.profile.wsl`'s);
:class:`Profile` adds the rules that read several of them (:mod:`envkit.profile.rules`,
:mod:`envkit.profile.kuberules`), which read the sections only, so nothing here imports back.

Example:
    >>> p = Profile.model_validate({"envkit": 1, "name": "demo", "image": {"base": "debian:bookworm"}})
    >>> p.run.ipc, p.image.user.name
    ('private', 'dev')
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from envkit.hostpaths import split_volume
from envkit.profile.cluster import Cluster
from envkit.profile.dockerref import PATH_COMPONENT, default_image_tag
from envkit.profile.kuberules import kubernetes_problems
from envkit.profile.rules import (
    RUN_ENV_HINT, gpu_id_problems, mount_source_problems, network_problems, raise_problems, ranks_per_gpu_problems,
    run_env_problems,
)
from envkit.profile.sections import Image, Loader, Model, Run
from envkit.profile.types import Name
from envkit.profile.wsl import Wsl


class Profile(Model):
    """A whole profile, ``envkit: 1``."""

    envkit: Literal[1] = Field(description="The profile format version.")
    name: Name = Field(description="The profile's name: compose project and service name, and the default image localhost/envkit/<name>.")
    image: Image = Field(description="What goes into the image (build-time settings).")
    run: Run = Field(Run(), description="How the container runs (run-time settings).")
    loader: Loader = Field(Loader(), description="The training workload: sizes the settings and drives the harness.")
    wsl: Wsl | None = Field(None, description=".wslconfig [wsl2] keys as Microsoft documents them, plus experimental and wsl_conf.")
    cluster: Cluster | None = Field(None, description="The same environment on several nodes (the cluster targets).")

    @field_validator("name")
    @classmethod
    def _name_makes_an_image_name(cls, v: str) -> str:
        # The default image is localhost/envkit/<name>: the name must be one path component of Docker's grammar.
        if not PATH_COMPONENT.match(v):
            raise ValueError(f"{v!r} cannot be part of an image name (localhost/envkit/{v}); use lowercase letters and "
                             "digits joined by single '.', '_' or '-', e.g. vision-train")
        return v

    @model_validator(mode="after")
    def _project_mount_is_free(self):
        if self.run.mount_project:
            for i, spec in enumerate(self.run.volumes):
                target = split_volume(spec)[1]
                if target.rstrip("/") == self.image.workdir.rstrip("/"):
                    raise ValueError(
                        f"run.volumes[{i}] mounts onto image.workdir ({self.image.workdir}), where the profile's "
                        "folder is mounted; set run.mount_project: false to mount your own")
        return self

    @property
    def copies_project(self) -> bool:
        """image.copy_project, or its default: on for a profile with a cluster section."""
        return self.image.copy_project if self.image.copy_project is not None else self.cluster is not None

    @model_validator(mode="after")
    def _install_needs_the_copy(self):
        if self.image.install_project and not self.copies_project:
            raise ValueError("image.install_project installs the copied project: set image.copy_project: true")
        return self

    @model_validator(mode="after")
    def _rules_across_sections(self, info: ValidationInfo):
        """Last, once every field is valid: the rules that read several sections (envkit.profile.rules,
        envkit.profile.kuberules), each problem at its own key path. The validation context's ``base_dir``
        (the profile's folder, given by envkit.profile.load) adds the rules on host paths."""
        base_dir = (info.context or {}).get("base_dir")
        raise_problems("mount_source", mount_source_problems(self.run, self.cluster, base_dir), self)
        raise_problems("run_env_too_large", run_env_problems(self.run, self.image.proxy), self, RUN_ENV_HINT)
        raise_problems("gpu_listed_twice", gpu_id_problems(self.run), self)
        raise_problems("ranks_share_a_gpu", ranks_per_gpu_problems(self.cluster, self.run), self)
        raise_problems("network_set_twice", network_problems(self.cluster, self.run), self)
        raise_problems("kubernetes_refuses", kubernetes_problems(self.cluster, self.run), self)
        return self

    @property
    def image_tag(self) -> str:
        """``image.tag``, else :func:`default_image_tag`: a local-only name that no registry serves."""
        return self.image.tag or default_image_tag(self.name)

    @property
    def image_is_default(self) -> bool:
        """True when the image is envkit's local-only default (built here, never pulled)."""
        return self.image.tag is None
