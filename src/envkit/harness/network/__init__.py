"""The network stage of the preflight: before a multi-node job trains, prove that its nodes reach each other.

A multi-node job fails first at its first collective: the wrong interface, a host name that resolves to
loopback, a rendezvous port a firewall drops, RDMA missing in the container, nodes on different torch or NCCL
builds; torch then waits out its own timeouts (a 600 s rendezvous join, a 30 min gloo or 10 min NCCL
timeout) with the whole allocation held. This stage runs on every node, after the loaders, as the job will:

- :mod:`.rendezvous` reads the rendezvous from the job's environment (torchrun's, the Indexed Job's, Kubeflow
  Trainer's ``PET_*``, Slurm's), each fact with the variable it came from;
- :mod:`.static` checks, per node and in seconds, the interface, the node's own name, the rendezvous
  endpoint and, on an RDMA fabric, the verbs devices, libibverbs and memlock;
- :mod:`.live` forms a group of the nodes on the rendezvous port, within a stated bound, compares every
  node's versions and times an all_reduce (gloo; NCCL on GPUs), in a child the stage kills at its deadline;
- :mod:`.nccllog` names the transport NCCL chose from its own ``NCCL_DEBUG=INFO`` lines.

Every failure names the node (host and rank), the cause and the profile key or variable that fixes it
(:data:`.keys.KEYS`). Standard library and torch only, like the rest of the harness.
"""

from __future__ import annotations

from .stage import NETWORK_BOUND_S, run_network_stage

__all__ = ["NETWORK_BOUND_S", "run_network_stage"]
