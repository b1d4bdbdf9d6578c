"""Generate-time advice for a team's profile: the image's Python against torch's wheels, and a lock
file made from other packages than the profile's now.

Errors (a torch release without a wheel for the profile's Python) are raised at load
(:mod:`envkit.profile.load`); what is only doubtful is said here, one line each naming its key.

Example:
    >>> from envkit.profile import load_profile
    >>> team_warnings(load_profile(None))
    []
"""

from __future__ import annotations

from envkit.lockfile import stale_warning
from envkit.profile import LoadedProfile
from envkit.pythons import check_profile


def team_warnings(loaded: LoadedProfile) -> list[str]:
    """The Python note (a pairing envkit cannot confirm) and the stale-lock warning, when they apply."""
    image = loaded.profile.image
    torch = image.torch
    out: list[str] = []
    _, note = check_profile(image, [loaded.base_dir / d for d in (torch.find_links if torch else ())])
    if note:
        out.append(f"image.torch.version: {note}")
    stale = stale_warning(loaded)
    if stale:
        out.append(stale)
    return out
