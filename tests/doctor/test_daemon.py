"""doctor compares with the Docker daemon, not this shell: memlock, --gpus, default-shm-size.

Fixture tree tests/doctor/fixtures/dockerd: a dockerd (pid 4242) with an 8 MiB memlock limit and
Docker's default container capabilities (no CAP_SYS_RESOURCE: a nested daemon, as on this
project's CI machine), nvidia-container-runtime-hook in /usr/bin on its PATH, and daemon.json
setting default-shm-size 1G. Each test copies it and changes one fact.
"""

from __future__ import annotations

import re
from dataclasses import replace

import shutil
from pathlib import Path

from envkit.engine.dockerd import read_daemon
from envkit.doctor import diagnose
from envkit.doctor.host import Host
from envkit.profile import load_profile_bytes

FIXTURES = Path(__file__).resolve().parent / "fixtures"
PROFILE = """envkit: 1
name: d
image: {base: 'debian:bookworm'}
run: {shm_size: 2g, gpus: [0, 1], ulimits: {memlock: -1}}
loader: {num_workers: 2, batch_size: 8}
"""
NO_RUNTIME = {"reachable": True, "runtimes": ["runc"], "error": None}


def _host(tmp_path, *, shell_memlock=(-1, -1), docker=NO_RUNTIME) -> Host:
    root = tmp_path / "host"
    shutil.copytree(FIXTURES / "linux", root)
    shutil.copytree(FIXTURES / "dockerd", root, dirs_exist_ok=True)
    (root / ".envkit-fixture" / "rlimits.json").write_text(f'{{"memlock": [{shell_memlock[0]}, {shell_memlock[1]}]}}')
    return Host(root, environ={}, cwd="/home/me", docker_probe=lambda: dict(docker))


def _checks(host, text=PROFILE) -> dict:
    loaded = load_profile_bytes(text.encode(), "p.yaml", Path.cwd())
    return {c["name"]: c for c in diagnose(host, loaded, [], [])["checks"]}


def test_memlock_compares_with_the_daemon_not_the_shell(tmp_path):
    # The shell is unlimited, the daemon is not and cannot raise: the container would not start.
    check = _checks(_host(tmp_path, shell_memlock=(-1, -1)))["memlock"]
    assert check["status"] == "fail"
    assert check["measured"]["hard_bytes"] == 8 << 20 and check["measured"]["daemon_pid"] == 4242
    assert "daemon" in check["message"] and "CAP_SYS_RESOURCE" in check["message"] and "will not start" in check["message"]


# What runc said on this project's machine, to a dockerd holding CAP_SYS_RESOURCE (docker 20.10, runc 1.1):
REFUSED = ("failed to create shim task: OCI runtime create failed: runc create failed: unable to start container "
           "process: error during container init: error setting rlimits for ready process: error setting rlimit "
           "type 8: operation not permitted: unknown")


def test_above_the_daemons_limit_the_engines_answer_decides(tmp_path):
    host = _host(tmp_path, shell_memlock=(65536, 65536))  # a low shell limit no longer matters
    status = host.path("/proc/4242/status")
    status.write_text(status.read_text().replace("00000000a80425fb", "000001ffffffffff"))
    asked = []
    granted = replace(host, ulimit_probe=lambda u: (asked.append(u), (True, "the engine set the ulimits"))[1])
    check = _checks(granted)["memlock"]
    assert check["status"] == "pass" and "granted" in check["message"] and asked
    # CAP_SYS_RESOURCE did not let this machine's dockerd raise it: the capability is no proof.
    refused = _checks(replace(host, ulimit_probe=lambda u: (False, REFUSED)))["memlock"]
    assert refused["status"] == "fail" and "error setting rlimit type 8" in refused["message"]
    assert "LimitMEMLOCK=infinity" in refused["remedy"]
    unknown = _checks(replace(host, ulimit_probe=lambda u: (None, "no local image")))["memlock"]
    assert unknown["status"] == "warn" and "may not start" in unknown["message"]


def test_memlock_falls_back_to_the_shell_and_says_so(tmp_path):
    host = _host(tmp_path, shell_memlock=(65536, 65536))
    host.path("/proc/4242/limits").unlink()
    check = _checks(host)["memlock"]
    assert check["status"] == "warn" and "this shell's" in check["message"] and "may not start" in check["message"]


def test_gpus_work_with_the_hook_on_dockerds_path_without_an_nvidia_runtime(tmp_path):
    check = _checks(_host(tmp_path))["gpu_runtime"]
    assert check["status"] == "pass"
    assert "/usr/bin/nvidia-container-runtime-hook" in check["message"] and "nvidia_linux.go" in check["message"]


def test_a_registered_runtime_without_the_hook_is_not_enough(tmp_path):
    host = _host(tmp_path, docker={"reachable": True, "runtimes": ["nvidia", "runc"], "error": None})
    host.path("/usr/bin/nvidia-container-runtime-hook").unlink()
    check = _checks(host)["gpu_runtime"]
    assert check["status"] == "warn" and "not on dockerd's PATH" in check["message"]
    assert "nvidia runtime does not change" in check["message"]


def test_cdi_specs_serve_gpu_requests(tmp_path):
    host = _host(tmp_path)
    host.path("/usr/bin/nvidia-container-runtime-hook").unlink()
    cdi = host.path("/etc/cdi")
    cdi.mkdir(parents=True)
    (cdi / "nvidia.yaml").write_text("cdiVersion: 0.5.0\nkind: nvidia.com/gpu\n")
    check = _checks(host)["gpu_runtime"]
    assert check["status"] == "pass" and "/etc/cdi/nvidia.yaml" in check["message"]


def test_default_shm_size_from_daemon_json_and_the_command_line(tmp_path):
    host = _host(tmp_path)
    facts = read_daemon(host.root, {})
    assert (facts.default_shm_size, facts.default_shm_source) == (1 << 30, "/etc/docker/daemon.json")
    host.path("/proc/4242/cmdline").write_bytes(b"/usr/sbin/dockerd\x00--default-shm-size\x00256m\x00")
    facts = read_daemon(host.root, {})
    assert (facts.default_shm_size, facts.default_shm_source) == (256 << 20, "dockerd --default-shm-size")


def test_a_remote_daemon_is_not_read_from_this_proc(tmp_path):
    host = _host(tmp_path)
    assert read_daemon(host.root, {"DOCKER_HOST": "tcp://10.0.0.5:2375"}).pid is None


def test_doctor_names_the_daemons_default_shm(tmp_path):
    check = _checks(_host(tmp_path))["docker"]
    assert "1.0 GiB /dev/shm" in check["message"] and "/etc/docker/daemon.json" in check["message"]
    assert check["measured"]["default_shm_bytes"] == 1 << 30


def test_a_nofile_above_the_daemons_limit_fails_naming_the_key_and_the_limit(tmp_path):
    host = _host(tmp_path)
    limits = host.path("/proc/4242/limits")
    limits.write_text(re.sub(r"^Max open files .*$", "Max open files            20000                20000                files",
                             limits.read_text(), flags=re.M))
    refused = replace(host, ulimit_probe=lambda u: (False, REFUSED.replace("type 8", "type 7")))
    text = PROFILE.replace("ulimits: {memlock: -1}", "ulimits: {nofile: 65536}")
    check = _checks(refused, text)["ulimits"]
    assert check["status"] == "fail"
    assert "run.ulimits.nofile 65536 is above the Docker daemon's (dockerd pid 4242) hard limit 20000" in check["message"]
    assert "LimitNOFILE=infinity" in check["remedy"] and "at most 20000" in check["remedy"]
    fits = _checks(refused, text.replace("nofile: 65536", "nofile: 20000"))["ulimits"]
    assert fits["status"] == "pass"  # within the daemon's limit: no probe needed
