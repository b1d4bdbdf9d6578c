"""Real two-node Slurms for the session (docker/slurm-up.sh), and the e2e image as OCI bundles.

Two sites, each started once per session in a temporary folder (munged, slurmctld, two slurmd,
runc for ``srun --container``) and stopped at the end by docker/slurm-down.sh, which kills each
daemon by the pid it recorded:

- ``root``: root submits, and runc runs as root (the bundle runs as ``image.user``);
- ``rootless``: SchedMD's rootless mode (``ENVKIT_SLURM_ROOTLESS=1``: ``runc --rootless=true``,
  run as the job's user, a state root per user). A user created for the session
  (tests/slurm/submitter.py) writes the bundle with ``envkit bundle`` and submits.

A third, ``netns_cluster``, is the multi-node network tier's (tests/slurm/netns.py): each node in
its own network namespace with its own address, hostname and /etc/hosts, and faults injected into
one node (tests/slurm/faults.py). The sites above stay on loopback: their tests are about the
generated sbatch, the bundle and runc, and a bundle's /etc/hosts is the image's, which does not
name the nodes.

Starting needs root; without it, or when the daemons do not come up, the tests skip -- and FAIL
under ``ENVKIT_REQUIRE_SLURM=1`` (.ci/run sets it), so a CI machine cannot pass by skipping them.

The image is the e2e recipe (tests/e2e/conftest.py: local base image, torch CPU wheelhouse,
NGC-style limits) under its own tag, built once; each site has its own bundle of it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_envkit
from tests.e2e.conftest import engine, ngc_profile  # noqa: F401  (fixture reused; e2e_dir is in tests/conftest.py)
from tests.dockerutil import base_image
from tests.slurm.submitter import Submitter, SubmitterUnavailable, create_submitter
from tests.slurm import netns
from tests.slurm.netns import ALLREDUCE

SLURM_TAG = "envkit-slurm-e2e:test"
BUILD_TIMEOUT = 1800

def slurm_required() -> bool:
    return os.environ.get("ENVKIT_REQUIRE_SLURM", "") == "1"


def _unavailable(msg: str):
    if slurm_required():
        pytest.fail(f"{msg} (ENVKIT_REQUIRE_SLURM=1)", pytrace=False)
    pytest.skip(msg)


@dataclass(frozen=True)
class SlurmCluster:
    dir: Path
    env: dict

    def run(self, *args: str, cwd: Path | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
        return subprocess.run(list(args), cwd=cwd, env=self.env, capture_output=True, text=True, timeout=timeout)

    def state_roots(self) -> list[Path]:
        """runc's state roots: root's, and (rootless mode) each user's."""
        users = self.dir / "runc-users"
        return [self.dir / "runc", *(sorted(users.iterdir()) if users.is_dir() else [])]

    def containers(self) -> list[str]:
        """runc's containers under the cluster's state roots (what `srun --container` started)."""
        out = []
        for root in self.state_roots():
            res = subprocess.run(["runc", f"--root={root}", "list", "-q"], capture_output=True, text=True)
            out += res.stdout.split()
        return out

    def runc_state(self) -> list[str]:
        """Anything left in the state roots (a container's folder outlives it if runc never deleted it)."""
        return sorted(str(p) for root in self.state_roots() if root.is_dir() for p in root.iterdir())


def cluster_config(*, entrypoint: str = "[allreduce.py]", bundle: Path | None = None) -> str:
    """2 nodes x 2 training processes on CPU (gloo), oci runtime; the bundle defaults to ./bundle beside the script."""
    where = f", bundle: {bundle}" if bundle else ""
    return f"""cluster:
  nodes: 2
  procs_per_node: 2
  entrypoint: {entrypoint}
  slurm: {{runtime: oci, time: "00:10:00"{where}}}
"""


def _start_cluster(folder: Path, *, rootless: bool):
    """slurm-up.sh in ``folder``; yields the cluster and stops it (slurm-down.sh) afterwards."""
    if os.geteuid() != 0:
        _unavailable("a local Slurm needs root (slurmd starts the containers)")
    # ENVKIT_SLURM_OWNER: if this session is killed before its teardown, a watchdog stops the daemons.
    env = {**os.environ, "ENVKIT_SLURM_OWNER": str(os.getpid()), "ENVKIT_SLURM_ROOTLESS": "1" if rootless else "0"}
    up = subprocess.run(["bash", str(ROOT / "docker" / "slurm-up.sh"), str(folder)], capture_output=True,
                        text=True, timeout=900, env=env)
    try:
        if up.returncode != 0:
            _unavailable(f"the local Slurm did not start: {up.stderr.strip()[-1500:]}")
        yield SlurmCluster(folder, {**os.environ, "SLURM_CONF": str(folder / "slurm.conf")})
    finally:
        subprocess.run(["bash", str(ROOT / "docker" / "slurm-down.sh"), str(folder)], timeout=120)


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory):
    yield from _start_cluster(tmp_path_factory.mktemp("slurm"), rootless=False)


@pytest.fixture(scope="session")
def rootless_cluster():
    # Outside pytest's root-only folders: the submitter reads slurm.conf and munge's socket here.
    folder = Path(tempfile.mkdtemp(prefix="envkit-slurm-rootless-"))
    try:
        yield from _start_cluster(folder, rootless=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def _netns_session(tmp_path_factory):
    """The namespaced cluster, started once; its namespaces must all be gone after slurm-down.sh."""
    if os.geteuid() != 0:
        _unavailable("a namespaced Slurm needs root (network namespaces, slurmd)")
    try:
        # owner: if this session is killed before its teardown, the watchdog removes it all.
        cluster = netns.start(tmp_path_factory.mktemp("slurm-netns"), owner=os.getpid())
    except netns.ClusterUnavailable as exc:
        _unavailable(str(exc))
    try:
        yield cluster
    finally:
        left = netns.stop(cluster)
        assert not left, f"namespaces left after docker/slurm-down.sh: {left}"


@pytest.fixture
def netns_cluster(_netns_session):
    """The namespaced two-node Slurm, with no fault applied; after the test, every fault the test
    injected must have been reverted (each node's task-env, hold, hosts file and iptables as before)."""
    before = _netns_session.node_state()
    yield _netns_session
    assert _netns_session.node_state() == before, "a fault was left applied"


@pytest.fixture(scope="session")
def submitter():
    try:
        sub = create_submitter()
    except SubmitterUnavailable as exc:
        _unavailable(str(exc))
    try:
        yield sub
    finally:
        sub.remove()


@dataclass(frozen=True)
class Site:
    """A cluster, its project folder (image built, bundle written), and who submits there."""

    name: str
    cluster: SlurmCluster
    project: Path
    user: Submitter | None  # None: root

    def envkit(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
        if self.user is None:
            return run_envkit(*args, cwd=self.project, timeout=timeout)
        return self.user.envkit(*args, cwd=self.project, timeout=timeout)

    def submit(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        """``sbatch ARGS`` from the project folder, as the site's submitter."""
        if self.user is None:
            return self.cluster.run("sbatch", *args, cwd=self.project, timeout=timeout)
        return self.user.run("sbatch", *args, cwd=self.project, timeout=timeout,
                             env={"SLURM_CONF": self.cluster.env["SLURM_CONF"]})

    def scancel(self, job: str) -> subprocess.CompletedProcess:
        if self.user is None:
            return self.cluster.run("scancel", job)
        return self.user.run("scancel", job, cwd=self.project, env={"SLURM_CONF": self.cluster.env["SLURM_CONF"]})


@pytest.fixture(scope="session")
def slurm_project(e2e_dir, tmp_path_factory) -> Path:
    """A project folder: the e2e image built under SLURM_TAG, its bundle, and allreduce.py."""
    root = tmp_path_factory.mktemp("slurm-project")
    # The bundle mounts this folder at /workspace for the image's user (uid 1234): pytest's 0700
    # folders would hide allreduce.py from it ("Permission denied", exit 2 on every rank).
    root.chmod(0o755)
    for sub in ("wheels", "certs"):
        (root / sub).symlink_to(e2e_dir / sub)
    (root / "allreduce.py").write_text(ALLREDUCE)
    (root / "envkit.yaml").write_text(ngc_profile(base_image(), tag=SLURM_TAG) + cluster_config())
    res = run_envkit("build", "envkit.yaml", cwd=root, timeout=BUILD_TIMEOUT)
    assert res.returncode == 0, res.stderr[-3000:]
    res = run_envkit("bundle", "envkit.yaml", "-o", "bundle", cwd=root, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    return root


@pytest.fixture(scope="session")
def rootless_project(slurm_project, submitter) -> Path:
    """The submitter's own project folder: the same profile and allreduce.py, and a bundle the
    submitter wrote with `envkit bundle` (the image is slurm_project's)."""
    root = submitter.home / "project"
    root.mkdir()
    (root / "wheels").mkdir()  # the image is built: the profile only has to load
    (root / "certs").mkdir()
    shutil.copy(slurm_project / "certs" / "host-ca.pem", root / "certs" / "host-ca.pem")
    for name in ("envkit.yaml", "allreduce.py"):
        shutil.copy(slurm_project / name, root / name)
    submitter.give(root)
    res = submitter.envkit("bundle", "envkit.yaml", "-o", "bundle", cwd=root, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    # The same line docs/slurm.md shows, but for this session's uid.
    assert (f"(/dev/shm 512m, the step's rlimits, runs as root in a user namespace, mapped to uid {submitter.uid} "
            "(the submitter))") in res.stdout, res.stdout
    return root


@pytest.fixture(scope="session", params=["root", "rootless"])
def site(request) -> Site:
    if request.param == "root":
        return Site("root", request.getfixturevalue("slurm_cluster"), request.getfixturevalue("slurm_project"), None)
    return Site("rootless", request.getfixturevalue("rootless_cluster"),
                request.getfixturevalue("rootless_project"), request.getfixturevalue("submitter"))
