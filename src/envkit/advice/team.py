"""Generate-time advice for a team's profile: the image's Python against torch's wheels, and a lock
file made from other packages than the profile's now.

Errors (a torch release without a wheel for the profile's Python) are raised at load
(:mod:`envkit.profile.load`), which keeps what is only doubtful as ``LoadedProfile.python_note``;
both are said here, one line each naming its key.

Example:
    >>> from pathlib import Path
    >>> from envkit.plan.image import image_plan
    >>> from envkit.profile import load_profile
    >>> loaded = load_profile(None)
    >>> team_warnings(loaded, image_plan(loaded, Path("out")))
    []
"""

from __future__ import annotations

from envkit.findings import Finding
from envkit.plan.lockfile import stale_warning
from envkit.plan.image import ImagePlan
from envkit.profile import LoadedProfile


def team_warnings(loaded: LoadedProfile, image: ImagePlan) -> list[Finding]:
    """The Python note (a pairing envkit cannot confirm) and the stale-lock warning, when they apply."""
    out: list[Finding] = []
    if loaded.python_note:
        out.append(Finding("image.torch.version", loaded.python_note))
    stale = stale_warning(loaded, image)
    if stale:
        out.append(stale)
    return out
