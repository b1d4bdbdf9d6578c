"""The job network's words, as the profile, the expectation and the harness spell them: one set of rules.

- A fabric is ``ethernet`` (the default: sockets), ``infiniband`` or ``roce`` (RDMA through libibverbs).
- An interface is ``NCCL_SOCKET_IFNAME``'s spelling: comma-separated names or prefixes, ``^`` first to exclude
  them, ``=`` first for exact names (NVIDIA/nccl src/misc/utils.cc ``parseStringList``). Each name is what Linux
  accepts: 1 to 15 bytes (IFNAMSIZ 16 with its NUL), no ``/``, ``:``, ``,`` or white space (the kernel's
  net/core/dev.c ``dev_valid_name``; ``:`` marks an alias, ``,`` is NCCL's separator).
- An HCA list is ``NCCL_IB_HCA``'s: the same prefix grammar over device names, each with an optional ``:port``.

Example:
    >>> interface_problem("eth0"), interface_problem("^docker,lo"), interface_problem("=ib0,ib1")
    (None, None, None)
    >>> interface_problem("enp65s0f0np0x"), interface_problem("e")
    (None, "'e' is one character, which NCCL ignores (it reads NCCL_SOCKET_IFNAME of two or more)")
    >>> interface_problem("a-very-long-interface")
    "'a-very-long-interface' is 21 bytes: Linux names interfaces in at most 15 (IFNAMSIZ)"
    >>> hca_problem("mlx5_0:1,mlx5_1"), hca_problem("mlx5 0")
    (None, "'mlx5 0' holds white space: NCCL_IB_HCA is names (or prefixes) with an optional :PORT, comma-separated")
"""

from __future__ import annotations

import re

FABRICS = ("ethernet", "infiniband", "roce")
RDMA_FABRICS = ("infiniband", "roce")
IFNAMSIZ = 16
_BAD = re.compile(r"[/:,\s]")
_HCA = re.compile(r"^[A-Za-z0-9_.-]{1,64}(:\d{1,3})?$")


def _tokens(spec: str) -> list[str]:
    text = spec[1:] if spec.startswith("^") else spec
    text = text[1:] if text.startswith("=") else text
    return text.split(",")


def interface_problem(spec: str) -> str | None:
    """Why ``spec`` is no interface list NCCL and Linux accept (None: it is one)."""
    if not spec or not _tokens(spec) or any(t == "" for t in _tokens(spec)):
        return f"{spec!r} names no interface: give names or prefixes, comma-separated (e.g. eth0 or ^docker,lo)"
    if len(spec) < 2:  # NVIDIA/nccl src/misc/socket.cc:198 reads only a value longer than one character
        return f"{spec!r} is one character, which NCCL ignores (it reads NCCL_SOCKET_IFNAME of two or more)"
    for name in _tokens(spec):
        if len(name.encode()) >= IFNAMSIZ:
            return f"{name!r} is {len(name.encode())} bytes: Linux names interfaces in at most {IFNAMSIZ - 1} (IFNAMSIZ)"
        if _BAD.search(name) or name in (".", ".."):
            return f"{name!r} is no Linux interface name (no '/', ':', ',' or white space; not '.' or '..')"
    return None


def hca_problem(spec: str) -> str | None:
    """Why ``spec`` is no ``NCCL_IB_HCA`` value (None: it is one)."""
    tokens = _tokens(spec)
    for token in tokens:
        if any(c.isspace() for c in token):
            return (f"{spec!r} holds white space: NCCL_IB_HCA is names (or prefixes) with an optional :PORT, "
                    "comma-separated")
        if not _HCA.match(token):
            return f"{token!r} is no HCA name (letters, digits, '_', '.', '-', then an optional :PORT)"
    return None


def gloo_names(spec: str | None) -> str | None:
    """GLOO_SOCKET_IFNAME for an interface spec: its names as whole names (gloo has no prefixes), None for an
    exclusion (gloo then takes the host name's address).

    >>> gloo_names("=eth0,eth1"), gloo_names("eth0"), gloo_names("^lo")
    ('eth0,eth1', 'eth0', None)
    """
    if not spec or spec.startswith("^"):
        return None
    return spec.lstrip("=")


# The variable each cluster.network key writes: the profile rule that refuses a second spelling in run.env reads it.
NETWORK_ENV = {"NCCL_SOCKET_IFNAME": "interface", "GLOO_SOCKET_IFNAME": "interface", "NCCL_IB_HCA": "hca"}


def network_env(interface: str | None, hca: str | None) -> tuple[tuple[str, str], ...]:
    """The variables an interface spec and an HCA list set, sorted by name.

    >>> network_env("^docker,lo", None)
    (('NCCL_SOCKET_IFNAME', '^docker,lo'),)
    """
    env = {"NCCL_SOCKET_IFNAME": interface, "GLOO_SOCKET_IFNAME": gloo_names(interface), "NCCL_IB_HCA": hca}
    return tuple(sorted((k, v) for k, v in env.items() if v))
