"""wsl_warnings: the VM must fit the container."""

from __future__ import annotations

from tests.conftest import wsl_warnings_of
from envkit.profile.model import Profile


def _p(run=None, loader=None, wsl=None) -> Profile:
    return Profile.model_validate({"envkit": 1, "name": "w", "image": {"base": "debian:bookworm"},
                                   "run": run or {}, "loader": loader or {}, **({"wsl": wsl} if wsl is not None else {})})


def test_no_wsl_no_warnings():
    assert wsl_warnings_of(_p()) == []


def test_fitting_profile_is_quiet():
    assert wsl_warnings_of(_p({"memory": "32g", "cpuset": "0-7"}, {"num_workers": 6}, {"memory": "40GB", "processors": 8})) == []


def test_memory_below_run_memory_names_both_and_the_fix():
    (w,) = wsl_warnings_of(_p({"memory": "32g"}, None, {"memory": "16GB"}))
    assert "16GB" in w and "32GB" in w and "run.memory" in w and "at least 34GB" in w


def test_memory_below_shm_plus_workers_when_memory_unset():
    # The loader's shm pages (0.2GB here), not the 8g cap, plus 512 MiB (sizing.PROCESS_RSS) per process.
    (w,) = wsl_warnings_of(_p({"shm_size": "8g"}, {"num_workers": 4}, {"memory": "2GB"}))
    assert "the loaders' shm 0.2GB" in w and "5 processes" in w and "at least 5GB" in w
    assert wsl_warnings_of(_p({"shm_size": "8g"}, {"num_workers": 4}, {"memory": "8GB"})) == []


def test_shm_size_dropped_under_ipc_host_is_not_counted():
    # Before: run.shm_size 8g was counted although ipc: host drops it ("asks for 13GB ... at least 15GB").
    (w,) = wsl_warnings_of(_p({"shm_size": "8g", "ipc": "host"},
                           {"num_workers": 4, "batch_size": 256, "sample_shape": [3, 224, 224]}, {"memory": "4GB"}))
    assert "asks for 4.1GB" in w and "the loaders' shm 1.6GB" in w and "8GB" not in w


def test_huge_values_exceed_typical_hosts():
    ws = wsl_warnings_of(_p(None, {"num_workers": 0}, {"memory": "512GB", "processors": 256}))
    assert sum("exceeds what most hosts have" in w for w in ws) == 2


def test_processors_below_cpuset_and_workers():
    ws = wsl_warnings_of(_p({"cpuset": "0-7", "cpus": 6}, {"num_workers": 6}, {"processors": 4}))
    assert any("run.cpuset 0-7" in w and "at least 8" in w for w in ws)
    assert any("run.cpus is 6" in w for w in ws)
    assert any("loader.num_workers is 6" in w and "at least 7" in w for w in ws)


def test_swap_zero_and_bridged():
    ws = wsl_warnings_of(_p(None, None, {"swap": 0, "networkingMode": "bridged", "experimental": {"networkingMode": "bridged"}}))
    assert any("wsl.swap is 0" in w for w in ws)
    assert sum("bridged is deprecated" in w for w in ws) == 2


def test_mirrored_networking_ignores_localhost_forwarding():
    (w,) = wsl_warnings_of(_p(None, None, {"networkingMode": "mirrored", "localhostForwarding": True}))
    assert "wsl.localhostForwarding" in w and "wsl.networkingMode is mirrored" in w and "ignores" in w
    (w,) = wsl_warnings_of(_p(None, None, {"experimental": {"networkingMode": "mirrored"}, "localhostForwarding": False}))
    assert "wsl.experimental.networkingMode is mirrored" in w
    assert wsl_warnings_of(_p(None, None, {"networkingMode": "mirrored"})) == []
    assert wsl_warnings_of(_p(None, None, {"networkingMode": "nat", "localhostForwarding": True})) == []


def test_wsl_conf_default_user_must_exist_in_the_distribution():
    (w,) = wsl_warnings_of(_p(None, None, {"wsl_conf": {"user": {"default": "alice"}}}))
    assert "wsl.wsl_conf.user.default is alice" in w and "must already exist in the distribution" in w
    assert "image.user.name (dev)" in w and "sudo adduser alice" in w and "cannot log in as the default user" in w
    (same,) = wsl_warnings_of(_p(None, None, {"wsl_conf": {"user": {"default": "dev"}}}))
    assert "does not exist in the distribution" in same
    assert wsl_warnings_of(_p(None, None, {"wsl_conf": {"boot": {"systemd": True}}})) == []
