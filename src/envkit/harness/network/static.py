"""What one node can tell about its own network in seconds: interfaces, its name, the rendezvous, RDMA.

Each check reads the facts through :class:`Facts` (the seam: tests hand a fake) and returns
``(status, message, remedy)``; every call that could block (a DNS lookup) is bounded.

- **The interface** NCCL and gloo are told to use: ``NCCL_SOCKET_IFNAME`` is a comma-separated list of
  prefixes, ``^`` excluding them and ``=`` asking for an exact name (NVIDIA/nccl v2.30.7-1
  src/misc/socket.cc ``ncclFindInterfaces`` with ``matchIfList``, src/misc/utils.cc ``parseStringList``);
  ``GLOO_SOCKET_IFNAME`` is a comma-separated list of exact names (torch ProcessGroupGloo's
  ``createDeviceForInterface`` per name). A name that matches no interface with an address fails on that node
  ("Unable to find address for: eth1" is gloo's own words for it).
- **The node's own name**: gloo takes its address from ``gethostname()`` when no interface is named, so a name
  that resolves to loopback (Debian's ``127.0.1.1 hostname`` line) is advertised to the other nodes, which then
  cannot connect (aws-samples/aws-do-eks#69); a name that does not resolve fails the same way (pytorch#150532).
- **The rendezvous**: ``MASTER_ADDR`` resolves; on the master node the port can be bound (not taken already).
- **RDMA** (fabric ``infiniband`` or ``roce``): ``/dev/infiniband/uverbs*`` in the container, ``libibverbs.so.1``
  loads (NCCL ``dlopen``s it, src/misc/ibvwrap.cc; without it NCCL falls back to sockets, 4-40x slower:
  dstackai/dstack#2712), verbs devices are listed, and RLIMIT_MEMLOCK lets ``ibv_reg_mr`` register memory
  (NVIDIA/nccl-tests#206: "Cannot allocate memory" at ``ulimit -l`` 8192).

Example:
    >>> nccl_matches("eth", ["lo", "eth0", "ib0"]), nccl_matches("^lo,docker", ["lo", "eth0", "docker0"])
    (['eth0'], ['eth0'])
    >>> nccl_matches("=eth0", ["eth0", "eth01"])
    ['eth0']
"""

from __future__ import annotations

import ctypes
import errno
import ipaddress
import os
import socket
import threading
from collections.abc import Callable
from typing import Literal

from ..report import FAIL, PASS, SKIP, WARN
from .keys import ENV, KEYS

Outcome = tuple[Literal["pass", "warn", "fail", "skip"], str, "str | None"]
RESOLVE_S = 3.0  # a DNS lookup that takes longer is its own finding
MEMLOCK_MIN = 64 * 1024 * 1024  # below this, ibv_reg_mr of NCCL's buffers fails (nccl-tests#206 at 8 MiB)


def nccl_matches(spec: str, names: list[str]) -> list[str]:
    """The interfaces NCCL picks for ``NCCL_SOCKET_IFNAME=spec``: prefixes, ``^`` to exclude, ``=`` for exact."""
    text = spec.strip()
    exclude = text.startswith("^")
    text = text[1:] if exclude else text
    exact = text.startswith("=")
    text = text[1:] if exact else text
    tokens = [t for t in text.split(",") if t]

    def hit(name: str) -> bool:
        return any(name == t if exact else name.startswith(t) for t in tokens)
    return [n for n in names if hit(n) != exclude]


class Facts:
    """The node's facts, read from this machine (tests pass a fake with the same methods)."""

    def interfaces(self) -> dict[str, list[str]]:
        """``{name: [addresses]}`` for every interface (IPv4 through SIOCGIFADDR, IPv6 from /proc/net/if_inet6)."""
        out: dict[str, list[str]] = {}
        for _, name in socket.if_nameindex():
            out[name] = [a for a in (_ipv4(name),) if a]
        try:
            with open("/proc/net/if_inet6", encoding="ascii") as f:
                for line in f.read(1 << 20).splitlines():
                    parts = line.split()
                    if len(parts) == 6 and parts[5] in out:
                        out[parts[5]].append(str(ipaddress.IPv6Address(bytes.fromhex(parts[0]))))
        except (OSError, ValueError):
            pass
        return out

    def resolve(self, name: str) -> list[str] | str:
        """The addresses ``name`` resolves to, or why not (bounded: :data:`RESOLVE_S`)."""
        return _bounded(lambda: sorted({str(a[4][0]) for a in socket.getaddrinfo(name, None, type=socket.SOCK_STREAM)}),
                        RESOLVE_S, f"{name} did not resolve within {RESOLVE_S:g} s")

    def hostname(self) -> str:
        return socket.gethostname()

    def bind_error(self, port: int) -> str | None:
        """Why ``port`` cannot be bound on this node (None: it can), asked as torch's store binds it: with
        SO_REUSEADDR (libuv's ``uv__tcp_bind``, src/unix/tcp.c, under TCPStore's libuv backend), so the
        TIME_WAIT connections a previous job left are no obstacle and only a listening socket is."""
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("", port))
            except OSError as exc:
                return "in use by another process" if exc.errno == errno.EADDRINUSE else (exc.strerror or str(exc))
        return None

    def verbs(self) -> tuple[list[str], str | None, int | None]:
        """``(uverbs device files, why libibverbs.so.1 did not load or None, verbs devices listed or None)``."""
        try:
            files = sorted(n for n in os.listdir("/dev/infiniband") if n.startswith("uverbs"))
        except OSError:
            files = []
        try:
            lib = ctypes.CDLL("libibverbs.so.1")
        except OSError as exc:
            return files, str(exc)[:200], None
        n = ctypes.c_int(0)
        get = lib.ibv_get_device_list
        get.restype = ctypes.c_void_p
        devices = get(ctypes.byref(n))
        if devices:
            lib.ibv_free_device_list(ctypes.c_void_p(devices))
        return files, None, n.value

    def memlock(self) -> int | None:
        """RLIMIT_MEMLOCK's soft limit in bytes (-1: unlimited; None: unknown)."""
        try:
            import resource
        except ImportError:
            return None
        soft = resource.getrlimit(resource.RLIMIT_MEMLOCK)[0]
        return -1 if soft == resource.RLIM_INFINITY else soft


def _ipv4(name: str) -> str | None:
    try:
        import fcntl
        import struct

        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            packed = fcntl.ioctl(s.fileno(), 0x8915, struct.pack("256s", name.encode()[:15]))  # SIOCGIFADDR
        return socket.inet_ntoa(packed[20:24])
    except (OSError, ImportError):
        return None


def _bounded(fn: Callable[[], list[str]], seconds: float, late: str) -> list[str] | str:
    """``fn()`` in a daemon thread, or ``late`` when it takes longer (a wedged resolver cannot hold the stage)."""
    box: list = []

    def work() -> None:
        try:
            box.append(fn())
        except OSError as exc:
            box.append(exc.strerror or str(exc))
        except (UnicodeError, ValueError) as exc:  # an empty or over-long label: the IDNA codec refuses the name
            box.append(f"not a host name ({exc})")
    t = threading.Thread(target=work, daemon=True)
    t.start()
    t.join(seconds)
    return box[0] if box else late


def is_loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address.split("%")[0]).is_loopback
    except ValueError:
        return False


def check_interfaces(env: dict[str, str], ifaces: dict[str, list[str]], where: str) -> Outcome:
    """The interfaces the job names exist here with an address."""
    have = ", ".join(f"{n} {' '.join(a) or '(no address)'}" for n, a in sorted(ifaces.items())) or "none"
    named = [(v, env[v]) for v in (ENV["nccl_ifname"], ENV["gloo_ifname"]) if env.get(v)]
    if not named:
        return SKIP, f"no interface named (NCCL and gloo pick their own); {where} has {have}", None
    problems = []
    for var, spec in named:
        if var == ENV["gloo_ifname"]:
            missing = [n for n in spec.split(",") if n and not ifaces.get(n)]
            if missing:
                problems.append(f"{var}={spec} names {', '.join(missing)}, which {where} lacks or which has no address "
                                f"(gloo: 'Unable to find address for: {missing[0]}')")
        elif not [n for n in nccl_matches(spec, sorted(ifaces)) if ifaces[n]]:
            problems.append(f"{var}={spec} matches no interface with an address on {where} (NCCL: 'no socket interface "
                            "found')")
    if problems:
        return (FAIL, "; ".join(problems) + f"; it has {have}",
                f"name an interface every node has in {KEYS['interface']} (it sets {ENV['nccl_ifname']} and "
                f"{ENV['gloo_ifname']}), e.g. a prefix both share")
    return PASS, f"{', '.join(f'{v}={s}' for v, s in named)} found on {where} ({have})", None


def check_own_name(facts: Facts, env: dict[str, str], rendezvous_local: bool, where: str) -> tuple[Outcome, list[str]]:
    """The name the other nodes (and gloo) use for this node resolves, and not to loopback."""
    name = facts.hostname()
    found = facts.resolve(name)
    if isinstance(found, str):
        return (FAIL, f"{where}'s name {name} does not resolve ({found}): gloo advertises it and the rendezvous "
                      "cannot name this node (pytorch#150532)",
                f"add {name} with the node's address to /etc/hosts (or DNS), or name the interface in "
                f"{KEYS['interface']}"), []
    loop = [a for a in found if is_loopback(a)]
    if not loop or len(loop) < len(found) or rendezvous_local:
        note = " (all nodes are processes of this host: MASTER_ADDR is loopback)" if rendezvous_local and loop else ""
        return (PASS, f"{where}'s name {name} resolves to {', '.join(found)}{note}", None), found
    if env.get(ENV["gloo_ifname"]):
        return (WARN, f"{where}'s name {name} resolves to loopback ({', '.join(loop)}); gloo uses "
                      f"{ENV['gloo_ifname']}={env[ENV['gloo_ifname']]} instead, but tools that take the host name will not",
                f"map {name} to the node's own address in /etc/hosts"), found
    return (FAIL, f"{where}'s name {name} resolves to loopback ({', '.join(loop)}): gloo advertises that address and "
                  "the other nodes cannot connect ('Connection refused, remote=[127.0.0.1]'; aws-samples/aws-do-eks#69)",
            f"map {name} to the node's own address in /etc/hosts (Debian writes 127.0.1.1 for it), or name the "
            f"interface in {KEYS['interface']} ({ENV['gloo_ifname']})"), found


def check_rendezvous(facts: Facts, master: str, port: int, is_master: bool, where: str) -> tuple[Outcome, bool]:
    """MASTER_ADDR resolves; on the master node the port is free. Also whether the rendezvous is this host's loopback."""
    found = facts.resolve(master)
    if isinstance(found, str):
        return (FAIL, f"the rendezvous host {master} does not resolve on {where} ({found})",
                "give the nodes the master's address (MASTER_ADDR) or fix their DNS / /etc/hosts"), False
    local = all(is_loopback(a) for a in found)
    if is_master:
        why = facts.bind_error(port)
        if why:
            return (FAIL, f"the rendezvous port {port} on {where} (the master) is {why}: the rendezvous, and torchrun "
                          "after it, cannot listen there",
                    "end what holds the port, or run the job with another MASTER_PORT"), local
    note = " (this host's loopback: the nodes are processes of this host)" if local else ""
    return (PASS, f"the rendezvous {master}:{port} resolves to {', '.join(found)}{note}", None), local


def check_rdma(facts: Facts, fabric: str, where: str) -> Outcome:
    """On an RDMA fabric: the verbs devices, libibverbs and memlock in this container."""
    if fabric not in ("infiniband", "roce"):
        return SKIP, f"fabric {fabric or 'ethernet'}: no RDMA to check", None
    files, lib_error, devices = facts.verbs()
    problems, remedies = [], []
    if not files:
        problems.append("no /dev/infiniband/uverbs* device in the container")
        remedies.append(f"give the pod the cluster's RDMA resource ({KEYS['rdma_resource']}) or the container "
                        "/dev/infiniband (docker run --device=/dev/infiniband)")
    if lib_error:
        problems.append(f"libibverbs.so.1 does not load ({lib_error}): NCCL falls back to sockets")
        remedies.append(f"build the image with {KEYS['fabric']}: {fabric} (it installs libibverbs1, ibverbs-providers "
                        "and librdmacm1)")
    elif not devices:
        problems.append("libibverbs lists no verbs device")
    lock = facts.memlock()
    if lock is not None and lock != -1 and lock < MEMLOCK_MIN:
        problems.append(f"memlock is {lock} bytes: ibv_reg_mr cannot register NCCL's buffers (nccl-tests#206)")
        remedies.append(f"{KEYS['memlock']}: -1 (and a node runtime that allows it)")
    if problems:
        return FAIL, f"{fabric} on {where}: " + "; ".join(problems), "; ".join(remedies) or None
    return PASS, f"{fabric} on {where}: {', '.join(files)}, libibverbs loads, {devices} verbs device(s)", None
