"""shm / ulimits / gpus checks with injected measurements, expectation validation, classification."""

import resource

import pytest

from envkit.harness.checks.shm import check_shm
from envkit.harness.checks.system import check_gpus, check_ulimits
from envkit.harness.checks.classify import classify
from envkit.harness.errors import UsageError
from envkit.harness.expectation import resolve_loader, validate_expect
from envkit.harness.rules.sizing import plan_workers
from envkit.harness.rules.sizing import MIB, docker_size, recommended_shm_bytes, shm_required_bytes

VISION = {"batch_size": 128, "sample_shape": [3, 224, 224], "dtype": "float32", "num_workers": 4,
          "prefetch_factor": 2}


def stats(size, free=None):
    return {"path": "/dev/shm", "size_bytes": size, "free_bytes": size if free is None else free}


def test_shm_fails_on_docker_default_with_exact_remedy():
    c = check_shm(VISION, {}, stats=stats(64 * MIB))
    req = shm_required_bytes(**VISION)
    size = docker_size(recommended_shm_bytes(req))
    assert c["status"] == "fail"
    assert c["expected"]["required_bytes"] == req
    assert f"--shm-size={size}" in c["remedy"] and f"shm_size: {size}" in c["remedy"]
    assert "--ipc=host" in c["remedy"]


def test_shm_warns_when_full_and_when_profile_size_not_applied():
    req = shm_required_bytes(**VISION)
    assert check_shm(VISION, {}, stats=stats(8 << 30, free=req // 2))["status"] == "warn"
    c = check_shm(VISION, {"shm_size_bytes": 8 << 30}, stats=stats(2 << 30))
    assert c["status"] == "warn" and "not applied" in c["message"] and "--shm-size=8g" in c["remedy"]
    assert check_shm(VISION, {"shm_size_bytes": 8 << 30}, stats=stats(8 << 30))["status"] == "pass"


def test_shm_ipc_host_is_the_hosts_shm():
    c = check_shm(VISION, {"shm_size_bytes": 8 << 30, "ipc": "host"}, stats=stats(32 << 30))
    assert c["status"] == "pass" and "host" in c["message"]


def test_shm_not_needed_without_workers():
    c = check_shm(dict(VISION, num_workers=0), {}, stats=stats(MIB))
    assert c["status"] == "pass" and c["expected"]["required_bytes"] == 0


def lim(soft, hard):
    return {"soft": soft, "hard": hard}


def test_ulimits_fail_only_when_lower():
    have = {"memlock": lim(65536, 65536), "stack": lim(8 << 20, -1), "nofile": lim(1024, 4096)}
    want = {"memlock": lim(-1, -1), "nofile": lim(65536, 65536)}
    c = check_ulimits({"ulimits": want}, limits=have)
    assert c["status"] == "fail"
    assert "--ulimit memlock=-1:-1" in c["remedy"] and "--ulimit nofile=65536:65536" in c["remedy"]
    assert "RLIMIT_MEMLOCK" in c["message"] and "InfiniBand" in c["message"]
    higher = {"memlock": lim(-1, -1), "stack": lim(-1, -1), "nofile": lim(1 << 20, 1 << 20)}
    assert check_ulimits({"ulimits": want}, limits=higher)["status"] == "pass"


def test_ulimits_print_unlimited_as_a_word_not_minus_one():
    have = {"memlock": lim(8388608, 8388608), "stack": lim(8 << 20, -1), "nofile": lim(1024, 4096)}
    c = check_ulimits({"ulimits": {"memlock": lim(-1, -1)}}, limits=have)
    assert c["status"] == "fail"
    assert "memlock soft is 8388608 but the profile asks for unlimited" in c["message"]
    assert "< -1" not in c["message"] and " -1" not in c["message"]
    assert "--ulimit memlock=-1:-1" in c["remedy"] and "-1 means unlimited" in c["remedy"]
    ok = check_ulimits({}, limits=have)
    assert ok["status"] == "pass" and "stack 8388608/unlimited" in ok["message"] and "-1" not in ok["message"]


def test_ulimits_real_getrlimit():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert check_ulimits({"ulimits": {"nofile": lim(soft, None)}})["status"] == "pass"
    c = check_ulimits({"ulimits": {"nofile": lim(hard + 1 if hard != resource.RLIM_INFINITY else None, None)}})
    if hard != resource.RLIM_INFINITY:
        assert c["status"] == "fail" and "nofile" in c["message"]


def test_gpus_skip_or_fail_without_cuda_here():
    info = {"torch": "2.13.0+cpu", "torch_cuda": None, "cuda_available": False, "cuda_device_count": 0}
    skip = check_gpus({}, info=info)
    assert skip["status"] == "skip" and "torch has no CUDA" in skip["message"]
    fail = check_gpus({"gpus": "all"}, info=info)
    assert fail["status"] == "fail" and "--gpus all" in fail["remedy"] and "nvidia-container-toolkit" in fail["remedy"]
    nodrv = dict(info, torch_cuda="12.8")
    assert "CUDA not available: no driver/device" in check_gpus({"gpus": 1}, info=nodrv)["message"]


def test_gpus_counts():
    info = {"torch": "2.13.0", "torch_cuda": "12.8", "cuda_available": True, "cuda_device_count": 1}
    assert check_gpus({"gpus": 2}, info=info)["status"] == "fail"
    assert check_gpus({"gpus": [0]}, info=info)["status"] == "pass"
    assert check_gpus({"gpus": "all"}, info=info)["status"] == "pass"
    assert check_gpus({"gpus": "none"}, info=info)["status"] == "pass"


@pytest.mark.parametrize("doc", [
    [], {"envkit_expect": 2}, {"envkit_expect": 1, "loader": {"num_workers": -1}},
    {"envkit_expect": 1, "loader": {"num_workers": "many"}}, {"envkit_expect": 1, "loader": {"dtype": "float8"}},
    {"envkit_expect": 1, "loader": {"sample_shape": [3, 0]}}, {"envkit_expect": 1, "run": {"gpus": "some"}},
    {"envkit_expect": 1, "run": {"ulimits": {"nofile": {"soft": "x"}}}}, {"envkit_expect": 1, "loader": {"start_method": "thread"}},
])
def test_invalid_expectations(doc):
    with pytest.raises(UsageError):
        validate_expect(doc)


def test_resolve_loader_defaults_overrides_and_auto():
    s = resolve_loader(None, usable=2)
    # No expectation: a bare profile's loader (docs/profile.md), auto workers on this machine's CPUs.
    assert (s["num_workers"], s["batch_size"], s["sample_shape"], s["dtype"], s["prefetch_factor"]) == (1, 32, [3, 224, 224], "float32", 2)
    assert (s["num_workers_requested"], s["persistent_workers"], s["start_method"]) == ("auto", True, "fork")
    s = resolve_loader({"envkit_expect": 1, "loader": {"num_workers": "auto", "batch_size": None}}, usable=4, batch_size=7)
    assert (s["num_workers"], s["batch_size"], s["num_workers_requested"]) == (3, 7, "auto")
    # One CPU leaves none for a worker beside the training loop; the cap bounds a big host.
    assert plan_workers("auto", 1) == 0 and plan_workers("auto", 64) == 8
    assert plan_workers("auto", 16, ranks=8) == 1 and plan_workers("auto", 7, ranks=8) == 0
    # The cgroup quota binds auto too (before: the harness ignored it and ran up to 8 workers under --cpus=2).
    s = resolve_loader({"envkit_expect": 1, "loader": {"num_workers": "auto"}}, usable=16, quota=2.0)
    assert s["num_workers"] == 1
    # Ranks share the CPUs: two training processes on 8 CPUs get 3 workers each, and the node needs both loaders' shm.
    two = resolve_loader({"envkit_expect": 1, "run": {"ranks_per_node": 2}}, usable=8, num_workers="auto")
    one = resolve_loader({"envkit_expect": 1}, usable=4, num_workers="auto")
    assert (two["num_workers"], two["ranks_per_node"], one["num_workers"]) == (3, 2, 3)
    assert two["shm_need_bytes"] == 2 * one["shm_need_bytes"] == 2 * two["rank_shm_need_bytes"]
    assert two["node"]["facts"]["ranks_per_node"] == "the profile's plan"
    with pytest.raises(UsageError, match="--ranks"):
        resolve_loader(None, usable=2, ranks=0)


PYTORCH_TEXTS = [
    ("RuntimeError: unable to allocate shared memory(shm) for file </torch_8_123_0>: No space left on device (28)", "shm_exhausted"),
    ("RuntimeError: DataLoader worker (pid 42) is killed by signal: Bus error. It is possible that dataloader's "
     "workers are out of shared memory. Please try to raise your shared memory limit.", "shm_exhausted"),
    ("ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).", "shm_exhausted"),
    ("RuntimeError: DataLoader worker (pid 42) is killed by signal: Segmentation fault. ", "worker_killed"),
    ("RuntimeError: DataLoader worker (pid 42) exited unexpectedly with exit code 1. Details are lost due to "
     "multiprocessing. Rerunning with num_workers=0 may give better error trace.", "worker_exited"),
    ("RuntimeError: Too many open files. Communication with the workers is no longer possible.", "too_many_open_files"),
    ("RuntimeError: received 0 items of ancdata", "too_many_open_files"),
    ("_pickle.PicklingError: Can't pickle <function <lambda> at 0x7f>: attribute lookup <lambda> on m failed", "unpicklable_dataset"),
    ("AttributeError: Can't get attribute 'MyDataset' on <module '__mp_main__'>", "unpicklable_dataset"),
    ("RuntimeError: DataLoader timed out after 5 seconds", "hang"),
    ("ValueError: Caught ValueError in DataLoader worker process 0.\nOriginal Traceback:\nValueError: bad jpeg", "dataset_error"),
    ("something odd happened\nlast words", "unknown"),
]


@pytest.mark.parametrize("text, want", PYTORCH_TEXTS)
def test_classify_pytorch_messages(text, want):
    assert classify(text)[0] == want


def test_classify_details_and_signals():
    assert classify("DataLoader worker (pid 1) is killed by signal: Killed. ") == ("worker_killed", "Killed")
    assert classify("Caught ValueError in DataLoader worker process 0.\nValueError: bad jpeg")[1] == "ValueError: bad jpeg"
    assert classify("", returncode=-7)[0] == "shm_exhausted"  # SIGBUS in the loader process itself
    assert classify("", returncode=-11) == ("worker_killed", "Segmentation fault (the loader process itself)")
    assert classify("oops\nlast words")[1] == "last words"
    # a full *disk* in the dataset is not a shm problem
    text = "Caught OSError in DataLoader worker process 0.\nOSError: [Errno 28] No space left on device: '/data/x'"
    assert classify(text)[0] == "dataset_error"


@pytest.mark.parametrize("environ, names", [
    ({"KUBERNETES_SERVICE_HOST": "10.96.0.1"}, ["Kubernetes", "LimitMEMLOCK=infinity", "containerd", "#56374"]),
    ({"SLURM_JOB_ID": "42"}, ["Slurm", "ulimit -l", "PropagateResourceLimits", "slurmd", "LimitMEMLOCK=infinity"]),
])
def test_a_low_memlock_names_the_remedy_where_it_runs(environ, names):
    have = {"memlock": lim(65536, 65536), "stack": lim(-1, -1), "nofile": lim(1 << 20, 1 << 20)}
    c = check_ulimits({"ulimits": {"memlock": lim(-1, -1)}}, limits=have, environ=environ)
    assert c["status"] == "fail"
    assert all(n in c["remedy"] for n in names), c["remedy"]
    assert c["remedy"].startswith("memlock: on ") and "--ulimit memlock=-1:-1" in c["remedy"]


def test_the_memlock_remedy_is_docker_s_off_a_cluster_and_for_other_limits():
    have = {"memlock": lim(65536, 65536), "stack": lim(-1, -1), "nofile": lim(1024, 1024)}
    local = check_ulimits({"ulimits": {"memlock": lim(-1, -1)}}, limits=have, environ={})
    assert local["remedy"].startswith("--ulimit memlock=-1:-1") and "LimitMEMLOCK" not in local["remedy"]
    nofile = check_ulimits({"ulimits": {"nofile": lim(4096, 4096)}}, limits=have,
                           environ={"KUBERNETES_SERVICE_HOST": "10.96.0.1"})
    assert nofile["status"] == "fail" and "LimitMEMLOCK" not in nofile["remedy"]


def test_the_harness_without_an_expectation_runs_a_bare_profiles_loader():
    """One set of DataLoader defaults: a profile that leaves loader: unset promises what the harness runs alone."""
    from envkit.plan.expectfile import expectation
    from envkit.profile.model import Profile
    from envkit.profile.sections import Loader
    from tests.conftest import plan_of

    bare = Profile.model_validate({"envkit": 1, "name": "bare", "image": {"base": "none"}})
    plan = plan_of(bare)
    promised = expectation(bare, plan.settings, plan.loader)["loader"]
    alone = resolve_loader(None, usable=4)
    assert {k: alone[k if k != "num_workers" else "num_workers_requested"] for k in promised} == promised
    assert Loader().model_dump(mode="json") == promised
