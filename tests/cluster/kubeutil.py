"""Helpers for the cluster tests: the cluster examples, a tricky profile, and reading manifests back."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from envkit.generation import render_all
from envkit.profile import load_profile
from tests.conftest import EXAMPLES, copy_example

# Every value a YAML writer could get wrong: quotes, $, $(VAR), :, #, a line separator, a leading dash.
TRICKY = """envkit: 1
name: 3d.tricky_name
image: {base: debian:bookworm, tag: envkit/tricky:latest, user: {name: root, uid: 0, gid: 0},
        proxy: {http: "http://u:p$w@proxy:3128"}}
run:
  shm_size: 1536m
  cpuset: "0-3"
  cpus: 2.5
  memory: 8g
  gpus: [0, 1]
  ulimits: {memlock: -1, nofile: 65536}
  volumes: ["/abs/$dir:/abs:ro", "./rel:/rel", "/scratch:/scratch"]
  env: {PRICE: "5$ and $HOME and $(HOME) and $$", QUOTES: "it's \\"q\\" `id` # no comment: yes",
        SEP: "a\\u2028b\\x85c", DASH: "- item", "YES": "yes", NUM: "010"}
cluster:
  nodes: 3
  entrypoint: ["-m", "pkg.train", "--tag=$(HOME)", "--msg", "a: b # c", "it's \\"x\\"", "$$", "~", "null"]
  kubernetes:
    namespace: ns-1
    host_path_volumes: true
"""


# The other branches: ipc host (unsized shm), no CPU/memory limits (no resources), no env, one node, one GPU.
BARE = """envkit: 1
name: bare
image: {base: debian:bookworm}
run: {ipc: host, gpus: 1, mount_project: false}
cluster: {entrypoint: [train.py]}
"""
# An RDMA fabric: the interface as a list, the HCAs, the device plugin's resource, a root pod (IPC_LOCK).
RDMA = """envkit: 1
name: rdma
image: {base: debian:bookworm, tag: reg.example.com/rdma:1, user: {name: root, uid: 0, gid: 0}}
run: {gpus: 8, cpus: 32, memory: 256g}
cluster:
  nodes: 2
  gpus_per_node: 8
  entrypoint: [train.py]
  image: reg.example.com/rdma:1
  network: {fabric: infiniband, interface: [ib0, ib1], hca: "mlx5_0:1,mlx5_1:1", rdma_resource: rdma/hca_shared_devices_a}
"""
VARIANTS = {"<tricky>": TRICKY, "<bare>": BARE, "<rdma>": RDMA}


def cluster_examples() -> list[str]:
    return sorted(p.name for p in EXAMPLES.glob("*.yaml") if "\ncluster:" in p.read_text())


def profile_path(example: str, tmp_path: Path) -> Path:
    if example in VARIANTS:
        path = tmp_path / (example.strip("<>") + ".yaml")
        path.write_text(VARIANTS[example])
        return path
    return copy_example(example, tmp_path)


def rendered(example: str, tmp_path: Path, targets=("run", "k8s", "trainjob")) -> dict[str, str]:
    files = render_all(load_profile(profile_path(example, tmp_path)), tmp_path / "out", targets)
    return {f.path: f.content.decode() for f in files if f.source is None}


def manifests(text: str) -> dict[str, dict]:
    """kind -> object, parsed with a YAML reader (as kubectl would)."""
    return {doc["kind"]: doc for doc in yaml.safe_load_all(text)}


def expand(text: str, env: dict[str, str]) -> str:
    """Kubernetes' $(VAR) expansion of command/args/env values ($$ is a literal $; unknown refs stay)."""
    out, i = [], 0
    while i < len(text):
        if text[i] == "$" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "$":
                out.append("$")
                i += 2
            elif nxt == "(" and ")" in text[i + 2:]:
                end = text.index(")", i + 2)
                name = text[i + 2:end]
                out.append(env.get(name, f"$({name})"))
                i = end + 1
            else:
                out.append("$" + nxt)
                i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


_UNITS = {"": 1, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}


def parse_quantity(q) -> int:
    """A Kubernetes quantity as envkit writes them (integers with binary suffixes); anything else fails."""
    m = re.fullmatch(r"(\d+)(Ki|Mi|Gi|Ti|Pi|Ei)?", str(q))
    assert m, f"not a Kubernetes quantity: {q!r}"
    return int(m.group(1)) * _UNITS[m.group(2) or ""]
