"""Why the engine could not pull a build's base image, and what the user can do about it.

A ``FROM`` that fails is a pull that failed. The daemon's text says which of four things it was
(moby's distribution errors, containerd's resolver, Go's net package): the registry's host name did
not resolve (``dns``), the registry did not answer or a proxy stood in the way (``registry``), it
refused our credentials (``auth``), or it has no such name or tag (``not_found``). Docker Hub says
"pull access denied ... may require 'docker login'" both for a name it lacks and for a private
one: that is ``not_found`` with the login remedy as well. The remedies are the user's own: pull the
base through their mirror or proxy, log in, or name a base on a registry this engine reaches.

Example:
    >>> classify("dial tcp: lookup registry-1.docker.io on 127.0.0.53:53: server misbehaving")
    'dns'
    >>> base_of("Step 1/9 : FROM --platform=linux/amd64 python:3.11-slim AS system")
    'python:3.11-slim'
    >>> registry_of("python:3.11-slim"), registry_of("nvcr.io/nvidia/pytorch:24.01-py3")
    ('registry-1.docker.io', 'nvcr.io')
"""

from __future__ import annotations

import re

# Lower-case fragments of the daemon's texts, checked in this order (a DNS failure also says "dial tcp").
_KINDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("dns", ("lookup ", "no such host", "server misbehaving", "temporary failure in name resolution",
             "name or service not known", "name resolution")),
    ("auth", ("unauthorized", "authentication required", "incorrect username or password", "no basic auth credentials",
              "denied: access forbidden", "403 forbidden")),
    ("not_found", ("manifest unknown", "not found", "pull access denied", "repository does not exist",
                   "name unknown", "no such image")),
    ("registry", ("i/o timeout", "connection refused", "connection reset", "network is unreachable", "no route to host",
                  "tls handshake timeout", "context deadline exceeded", "client.timeout", "proxyconnect", "dial tcp",
                  "x509:", "certificate", "service unavailable", "toomanyrequests", "too many requests", "eof")),
)
WHAT = {
    "dns": "the engine could not resolve the registry's host name {registry} (DNS)",
    "registry": "the engine could not reach the registry {registry} (network, proxy, TLS or rate limit)",
    "auth": "the registry {registry} refused the engine's credentials",
    "not_found": "the registry {registry} has no image by that name and tag (or it is private and needs a login)",
    "other": "the engine could not pull it from {registry}",
}
_FROM = re.compile(r"^Step \d+/\d+ : FROM\s+(?:--\S+\s+)*(\S+)", re.I)
DOCKER_HUB = "registry-1.docker.io"


def classify(text: str) -> str:
    """``dns``, ``registry``, ``auth``, ``not_found`` or ``other`` for the daemon's pull error ``text``."""
    low = text.lower()
    return next((kind for kind, words in _KINDS if any(w in low for w in words)), "other")


def base_of(step: str) -> str | None:
    """The image a ``Step N/M : FROM ...`` line names (None for any other step)."""
    m = _FROM.match(step)
    return m[1] if m else None


def registry_of(ref: str) -> str:
    """The registry host Docker pulls ``ref`` from (Docker Hub for a name without one)."""
    first, sep, _ = ref.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        return first
    return DOCKER_HUB


def explain(base: str, text: str) -> tuple[str, str]:
    """``(what happened, the user's remedies)`` for a ``FROM base`` whose pull failed with ``text``.

    >>> what, hint = explain("python:3.11-slim", "Get https://registry-1.docker.io/v2/: net/http: TLS handshake timeout")
    >>> what.split(": ", 1)  # doctest: +ELLIPSIS
    ['the base image python:3.11-slim could not be pulled', 'the engine could not reach the registry registry-1.docker.io (network, ...)']
    """
    kind, registry = classify(text), registry_of(base)
    what = f"the base image {base} could not be pulled: " + WHAT[kind].format(registry=registry)
    reachable = (f"or set image.base to the same image on a registry this engine reaches (your mirror's "
                 f"copy, e.g. registry.example.com/{base.split('/')[-1]}) or to an image already on this machine "
                 "(`docker load -i base.tar`: the README's 'Offline or behind a proxy')")
    through = (f"pull it through your registry mirror or proxy (dockerd's \"registry-mirrors\" or its "
               f"HTTPS_PROXY setting), `docker pull {base}` to check, then build again")
    if kind == "auth":
        hint = f"`docker login {registry}` with an account that may pull {base}, then build again; {reachable}"
    elif kind == "not_found":
        hint = (f"check image.base's name and tag (`docker pull {base}` shows what the registry says); a private "
                f"image needs `docker login {registry}` first; {reachable}")
    elif kind == "dns":
        hint = (f"this engine's DNS cannot name {registry}: fix the resolver dockerd uses (\"dns\" in "
                f"/etc/docker/daemon.json), or {through}; {reachable}")
    else:
        hint = f"{through}; {reachable}"
    return what, hint
