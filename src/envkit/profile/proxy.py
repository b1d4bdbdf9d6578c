"""``image.proxy`` as the variables tools read: the build's arguments and the run's environment.

Example:
    >>> from envkit.profile.model import Profile
    >>> p = Profile.model_validate({"envkit": 1, "name": "p", "image": {"base": "debian",
    ...     "proxy": {"https": "http://proxy.corp:3128"}}})
    >>> proxy_build_args(p)
    [('https_proxy', 'http://proxy.corp:3128'), ('HTTPS_PROXY', 'http://proxy.corp:3128')]
"""

from __future__ import annotations

from envkit.profile.model import Profile


def proxy_build_args(p: Profile) -> list[tuple[str, str]]:
    """``image.proxy`` as the lower- and upper-case variables tools read (build args and run env)."""
    proxy = p.image.proxy
    out: list[tuple[str, str]] = []
    if proxy:
        for key, value in (("http_proxy", proxy.http), ("https_proxy", proxy.https), ("no_proxy", proxy.no_proxy)):
            if value is not None:
                out += [(key, value), (key.upper(), value)]
    return out
