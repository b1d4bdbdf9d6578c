"""A starved /dev/shm: a private mount namespace with an 8 MiB tmpfs over /dev/shm (needs root).

Skips when not root or unshare/mount is unavailable, except when
ENVKIT_REQUIRE_DOCKER=1 (CI, which is root): then it fails instead (conftest's ``need_unshare``).
"""

import json

import pytest

from envkit.harness.rules.sizing import docker_size, recommended_shm_bytes, shm_required_bytes


@pytest.mark.slow
def test_starved_shm_is_shm_exhausted(need_unshare, run_cli, write_expect):
    loader = {"num_workers": 2, "batch_size": 64, "sample_shape": [3, 128, 128], "dtype": "float32",
              "prefetch_factor": 2}  # one batch alone is 12 MiB > 8 MiB
    expect = write_expect(loader)
    script = 'mount -t tmpfs -o size=8m tmpfs /dev/shm && exec "$@"'
    p = run_cli("--json", "--quick", "--timeout", "30", "--expect", expect,
                prefix=("unshare", "-m", "sh", "-c", script, "sh"))
    assert p.returncode == 1, p.stderr
    checks = {c["name"]: c for c in json.loads(p.stdout)["checks"]}
    size = docker_size(recommended_shm_bytes(shm_required_bytes(**{k: loader[k] for k in loader})))
    shm, ld = checks["shm"], checks["loader"]
    assert shm["status"] == "fail" and shm["measured"]["size_bytes"] == 8 << 20
    assert f"--shm-size={size}" in shm["remedy"]
    assert ld["status"] == "fail" and ld["measured"]["failure"] == "shm_exhausted"
    assert "shm" in ld["message"] and f"--shm-size={size}" in ld["remedy"]


@pytest.mark.slow
def test_pipeline_peak_is_reached_on_every_run(need_unshare, run_cli, write_expect):
    """/dev/shm that holds three 6 MiB batches but not the pipeline's five (2 workers x prefetch 2 + the held one).

    A consumer that drains the queue as fast as the workers fill it passed here by chance (CI saw
    Docker's 64 MB pass for a loader that needs 115 MiB); the loader check holds the first batch until
    every outstanding batch is ready, so the peak is reached and the failure is certain.
    """
    loader = {"num_workers": 2, "batch_size": 32, "sample_shape": [3, 128, 128], "dtype": "float32",
              "prefetch_factor": 2}
    expect = write_expect(loader)
    script = 'mount -t tmpfs -o size=20m tmpfs /dev/shm && exec "$@"'
    for _ in range(3):
        p = run_cli("--json", "--quick", "--timeout", "30", "--expect", expect,
                    prefix=("unshare", "-m", "sh", "-c", script, "sh"))
        ld = {c["name"]: c for c in json.loads(p.stdout)["checks"]}["loader"]
        assert ld["status"] == "fail" and ld["measured"]["failure"] == "shm_exhausted", ld


@pytest.mark.slow
def test_loader_check_fills_the_pipeline(run_cli, write_expect):
    loader = {"num_workers": 2, "batch_size": 8, "sample_shape": [3, 32, 32], "dtype": "float32",
              "prefetch_factor": 3}
    p = run_cli("--json", "--quick", "--expect", write_expect(loader))
    ld = {c["name"]: c for c in json.loads(p.stdout)["checks"]}["loader"]
    assert ld["status"] == "pass", ld
    fill = ld["measured"]["pipeline_fill"]
    # After the first batch 2 x 3 are asked for; before it went on, every one was in hand: ready in the queue, or
    # received ahead of its turn (reordered: worker 1's batches can all come in before worker 0's first; outstanding
    # was 3, not 6, in 1 run of ~50).
    assert fill["method"] == "queue" and fill["ready"] + fill["reordered"] == 6, fill
