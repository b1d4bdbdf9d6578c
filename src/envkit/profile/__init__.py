"""Profile loading and the typed profile model (validated once, at the edge)."""

from envkit.profile.load import LoadedProfile, default_profile_text, load_profile, load_profile_bytes
from envkit.profile.model import Profile

__all__ = ["LoadedProfile", "Profile", "default_profile_text", "load_profile", "load_profile_bytes"]
