"""``image.proxy`` as the variables tools read: the build's arguments and the run's environment.

Example:
    >>> proxy_build_args(Proxy(https="http://proxy.corp:3128"))
    [('https_proxy', 'http://proxy.corp:3128'), ('HTTPS_PROXY', 'http://proxy.corp:3128')]
"""

from __future__ import annotations

from envkit.profile.sections import Proxy


def proxy_build_args(proxy: Proxy | None) -> list[tuple[str, str]]:
    """``image.proxy`` as the lower- and upper-case variables tools read (build args and run env)."""
    out: list[tuple[str, str]] = []
    if proxy:
        for key, value in (("http_proxy", proxy.http), ("https_proxy", proxy.https), ("no_proxy", proxy.no_proxy)):
            if value is not None:
                out += [(key, value), (key.upper(), value)]
    return out
