"""Why a build step failed, read from its output, and the one profile key that fixes it.

A failing RUN prints its installer's own words (pip, uv, apt, curl) among hundreds of lines. The causes
a user can fix from the profile each leave a recognisable phrase, checked in this order (a certificate
failure also ends in "No matching distribution found"):

- ``certificate``: a TLS-intercepting proxy or a private index whose CA the image does not trust
  (pip ``CERTIFICATE_VERIFY_FAILED``, uv ``invalid peer certificate``, apt ``Certificate verification
  failed``, curl ``SSL certificate problem``, Go ``x509:``) -> ``image.ca_certificates``;
- ``proxy``: a proxy that refused or was not used (``407 Proxy Authentication Required``, ``ProxyError``,
  ``Tunnel connection failed``) -> ``image.proxy``;
- ``dns``: no name resolution in the build (``Temporary failure in name resolution``, ``Could not resolve
  host``, ``dns error``) -> ``image.proxy``, or offline: ``image.torch.find_links`` and a local base;
- ``offline``: the index has nothing to offer (``No matching distribution found``, uv's ``was not found in
  the package registry``) -> ``image.torch.find_links`` / ``image.torch.index_url``.

Example:
    >>> cause(["ERROR: Could not install: [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed"])[0]
    'certificate'
    >>> cause(["curl: (6) Could not resolve host: download.pytorch.org"])[0]
    'dns'
    >>> cause(["all good"]) is None
    True
"""

from __future__ import annotations

from collections.abc import Iterable

# Lower-case fragments of each cause, in the order they are tried.
_PHRASES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("certificate", ("certificate_verify_failed", "certificate verify failed", "invalid peer certificate",
                     "certificate verification failed", "ssl certificate problem", "x509: certificate",
                     "unable to get local issuer certificate", "self-signed certificate", "self signed certificate")),
    ("proxy", ("407 proxy authentication required", "proxyerror", "tunnel connection failed", "proxyconnect",
               "unable to connect to proxy", "received http code 407")),
    ("dns", ("temporary failure in name resolution", "could not resolve host", "name or service not known",
             "failed to lookup address information", "dns error", "could not resolve '", "no address associated")),
    ("offline", ("no matching distribution found", "was not found in the package registry",
                 "could not find a version that satisfies")),
)
HINTS = {
    "certificate": ("the build does not trust the certificate it was shown: behind a TLS-intercepting proxy (or with "
                    "a private index) list your organisation's CA bundle (a PEM file beside the profile) in "
                    "image.ca_certificates; envkit installs it before any download (the README's 'Offline or behind a proxy')"),
    "proxy": ("the proxy refused or was not used: set image.proxy.http and image.proxy.https (build arguments, never "
              "baked into the image; credentials in the URL are passed, not printed) and image.proxy.no_proxy"),
    "dns": ("the build could not resolve a host name: behind a proxy set image.proxy.http and image.proxy.https; "
            "offline, install from a wheel folder (image.torch.find_links) on a base image that is already local"),
    "offline": ("the index offered nothing to install: offline, point image.torch.find_links at a folder of wheels "
                "(pip download them where the network is), or image.torch.index_url at your mirror"),
}


def cause(lines: Iterable[str]) -> tuple[str, str] | None:
    """``(cause, hint)`` for a failed step's output ``lines``, or None when nothing recognisable is there."""
    text = "\n".join(lines).lower()
    for name, phrases in _PHRASES:
        if any(p in text for p in phrases):
            return name, HINTS[name]
    return None
