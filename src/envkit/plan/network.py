"""The job's network, decided once from ``cluster.network``: what every target writes for it.

- **Environment** (every target: run.sh, compose, devcontainer, the OCI bundle, the Slurm script, both
  Kubernetes targets): ``NCCL_SOCKET_IFNAME`` from ``interface`` as written (NCCL reads prefixes, ``^`` and
  ``=``: NVIDIA/nccl src/misc/socket.cc ``ncclFindInterfaces``), ``GLOO_SOCKET_IFNAME`` from its exact names
  as whole names (torch's gloo reads a comma-separated list of whole names: ProcessGroupGloo.cpp, one device
  per name; an exclusion has no gloo spelling, so it is left out and gloo uses the host name's address),
  ``NCCL_IB_HCA`` from ``hca``.
- **RDMA** (``infiniband``, ``roce``): the image installs the user-space verbs libraries (Debian and Ubuntu:
  ``libibverbs1``, ``ibverbs-providers``, ``librdmacm1``; NCCL dlopens ``libibverbs.so.1``,
  src/misc/ibvwrap.cc, and without it silently uses sockets: dstackai/dstack#2712); containers get
  ``/dev/infiniband`` and memlock unlimited (``ibv_reg_mr`` registers under RLIMIT_MEMLOCK); Kubernetes pods
  one of ``rdma_resource``; a Slurm OCI bundle a bind of ``/dev/infiniband``. pyxis (enroot) and Apptainer
  bind the node's ``/dev`` already (enroot conf/mounts; Apptainer's ``mount dev = yes``), and since enroot
  4.0 its Mellanox hook injects no host libraries, so they need nothing more. Ethernet installs and mounts
  nothing.

Example:
    >>> p = Profile.model_validate({"envkit": 1, "name": "t", "image": {"base": "debian"}, "cluster": {"nodes": 2, "entrypoint": ["t.py"],
    ...     "network": {"fabric": "infiniband", "interface": ["ib0", "ib1"], "hca": "mlx5"}}})
    >>> n = network_plan(p)
    >>> n.env
    (('GLOO_SOCKET_IFNAME', 'ib0,ib1'), ('NCCL_IB_HCA', 'mlx5'), ('NCCL_SOCKET_IFNAME', 'ib0,ib1'))
    >>> n.devices, n.apt_packages, n.memlock_unlimited
    (('/dev/infiniband',), ('ibverbs-providers', 'libibverbs1', 'librdmacm1'), True)
"""

from __future__ import annotations

from dataclasses import dataclass

from envkit.harness.rules.network import RDMA_FABRICS, network_env
from envkit.profile.cluster import Network
from envkit.profile.model import Profile

RDMA_APT = ("ibverbs-providers", "libibverbs1", "librdmacm1")
RDMA_DEVICES = ("/dev/infiniband",)


@dataclass(frozen=True)
class NetworkPlan:
    """``cluster.network`` decided: ``env`` for every container, ``devices`` and ``apt_packages`` for RDMA,
    ``memlock_unlimited`` where the fabric needs it and the profile leaves memlock unset."""

    fabric: str
    interface: str | None
    hca: str | None
    rdma_resource: str | None
    env: tuple[tuple[str, str], ...]
    devices: tuple[str, ...]
    apt_packages: tuple[str, ...]
    memlock_unlimited: bool

    @property
    def rdma(self) -> bool:
        return self.fabric in RDMA_FABRICS

    @property
    def expectation(self) -> dict | None:
        """The expectation's ``run.network`` (None where nothing differs from Ethernet's defaults)."""
        if not self.rdma and self.interface is None:
            return None
        return {"fabric": self.fabric, "interface": self.interface, "hca": self.hca}


def network_plan(p: Profile) -> NetworkPlan:
    """The plan of ``p``'s ``cluster.network`` (no cluster section: Ethernet, nothing named)."""
    n = p.cluster.network if p.cluster is not None else Network()
    rdma = n.fabric in RDMA_FABRICS
    return NetworkPlan(fabric=n.fabric, interface=n.interface, hca=n.hca, rdma_resource=n.rdma_resource,
                       env=network_env(n.interface, n.hca), devices=RDMA_DEVICES if rdma else (),
                       apt_packages=RDMA_APT if rdma else (), memlock_unlimited=rdma and "memlock" not in p.run.ulimits)
