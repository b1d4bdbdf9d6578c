"""envkit doctor on fixture hosts: WSL2, WSL1 and plain Linux (tests/doctor/fixtures/*)."""

from __future__ import annotations

import io
import json
import os
import shutil
from pathlib import Path

import pytest

from envkit.commands import doctor as doctor_cmd
from envkit.doctor import diagnose, render_table
from envkit.doctor.checks import detect_wsl
from envkit.doctor.host import Host
from envkit.profile import load_profile, load_profile_bytes

FIXTURES = Path(__file__).resolve().parent / "fixtures"
PROFILE = """envkit: 1
name: d
image: {base: 'debian:bookworm'}
run: {shm_size: 2g, memory: 12g, cpuset: "0-7", gpus: all, ulimits: {memlock: -1}}
loader: {num_workers: 4, batch_size: 32}
"""
GOOD_SCRIPT = """from torch.utils.data import DataLoader
def main():
    for _ in DataLoader(ds, num_workers=4):
        pass
if __name__ == "__main__":
    main()
"""


def _host(name: str, tmp_path: Path, cwd: str = "/home/me/project", **kw) -> Host:
    root = tmp_path / name
    shutil.copytree(FIXTURES / name, root)
    env = {"linux": {}, "wsl1": {"WSL_DISTRO_NAME": "Ubuntu"},
           "wsl2": {"WSL_DISTRO_NAME": "Ubuntu", "WSL_INTEROP": "/run/WSL/1_interop"}}[name]
    return Host(root, environ=env, cwd=cwd, **kw)


def _profile(text: str = PROFILE):
    return load_profile_bytes(text.encode(), "p.yaml", Path.cwd())


def _by_name(doc: dict) -> dict:
    return {c["name"]: c for c in doc["checks"]}


def test_check_records_have_the_harness_shape(tmp_path):
    doc = diagnose(_host("linux", tmp_path), _profile(), [], [])
    assert set(doc) == {"envkit_doctor", "verdict", "host", "loader", "checks"}
    for c in doc["checks"]:
        assert set(c) == {"name", "status", "measured", "expected", "message", "remedy"}
        assert c["status"] in ("pass", "warn", "fail", "skip")
    json.dumps(doc)


def test_wsl2_host(tmp_path):
    host = _host("wsl2", tmp_path, cwd="/mnt/c/Users/me/project")
    data = host.path("/mnt/c/data")
    data.mkdir(parents=True)
    (data / "part0.bin").write_bytes(b"\0" * (3 << 20))
    doc = diagnose(host, _profile(), [], [Path("/mnt/c/data")])
    checks = _by_name(doc)
    assert doc["host"]["wsl"] == 2 and doc["host"]["distro"] == "Ubuntu"
    assert checks["os"]["status"] == "pass" and "WSL 2" in checks["os"]["message"]
    assert checks["workdir"]["status"] == "warn" and "9p" in checks["workdir"]["message"]
    assert "~/" in checks["workdir"]["remedy"]
    data_check = checks["data:/mnt/c/data"]
    assert data_check["status"] == "warn" and data_check["measured"]["read"]["bytes"] == 3 << 20
    assert "MB/s" in data_check["message"]
    assert checks["gpu"]["status"] == "pass" and "libcuda" in checks["gpu"]["message"]
    assert checks["gpu_runtime"]["status"] == "pass"
    assert checks["memory"]["status"] == "pass"  # ~15.6 GiB for a 12g container
    assert checks["cpus"]["status"] == "pass"
    assert checks["memlock"]["status"] == "warn" and "NCCL" in checks["memlock"]["message"]
    assert "pinned memory" in checks["memlock"]["message"]


def test_wsl2_memory_too_small_points_at_wslconfig(tmp_path):
    doc = diagnose(_host("wsl2", tmp_path), _profile(PROFILE.replace("memory: 12g", "memory: 24g")), [], [])
    mem = _by_name(doc)["memory"]
    assert mem["status"] == "fail" and ".wslconfig" in mem["remedy"]
    assert doc["verdict"] == "fail"


def test_wsl1_host(tmp_path):
    doc = diagnose(_host("wsl1", tmp_path, cwd="/mnt/c/src"), _profile(), [], [])
    checks = _by_name(doc)
    assert doc["host"]["wsl"] == 1
    assert checks["os"]["status"] == "fail" and "wsl --set-version" in checks["os"]["remedy"]
    assert checks["docker"]["status"] == "fail" and "WSL integration" in checks["docker"]["remedy"]
    assert checks["workdir"]["status"] == "warn" and "drvfs" in checks["workdir"]["message"]
    assert checks["gpu"]["status"] == "fail"
    assert doc["verdict"] == "fail"


def test_linux_host(tmp_path):
    doc = diagnose(_host("linux", tmp_path, cwd="/mnt/c/src"), _profile(), [], [])
    checks = _by_name(doc)
    assert doc["host"]["wsl"] is None and doc["host"]["cpus"] == 16
    assert checks["os"]["status"] == "pass" and "Linux" in checks["os"]["message"]
    # /mnt/c on plain Linux is just a disk: no 9P warning.
    assert checks["workdir"]["status"] == "pass"
    assert checks["gpu"]["status"] == "pass" and checks["memlock"]["status"] == "pass"
    assert doc["verdict"] == "pass"


def test_cpuset_beyond_the_machine_fails(tmp_path):
    doc = diagnose(_host("wsl2", tmp_path), _profile(PROFILE.replace('"0-7"', '"0-11"')), [], [])
    cpus = _by_name(doc)["cpus"]
    assert cpus["status"] == "fail" and "Requested CPUs are not available" in cpus["message"]


@pytest.mark.parametrize("release, want", [("6.6.0-microsoft-custom", 2), ("4.4.0-19041-Microsoft", 1),
                                           ("5.15.167.4-microsoft-standard-WSL2", 2), ("6.8.0-45-generic", None)])
def test_doctor_and_harness_share_the_wsl_rule(tmp_path, release, want):
    from envkit.harness.probes.env import detect_wsl as harness_detect_wsl
    (tmp_path / "proc/sys/kernel").mkdir(parents=True)
    (tmp_path / "proc/sys/kernel/osrelease").write_text(release + "\n")
    assert detect_wsl(Host(tmp_path, environ={}))["version"] == want
    assert harness_detect_wsl(tmp_path, environ={}) == want


def test_doctor_reads_the_tightest_ancestor_quota(tmp_path):
    # Before: doctor read only /sys/fs/cgroup/cpu.max and missed a quota on the process's own slice.
    from envkit.doctor.checks import cpu_quota
    (tmp_path / "proc/self").mkdir(parents=True)
    (tmp_path / "proc/self/cgroup").write_text("0::/user.slice/session.scope\n")
    (tmp_path / "sys/fs/cgroup/user.slice/session.scope").mkdir(parents=True)
    (tmp_path / "sys/fs/cgroup/cgroup.controllers").write_text("cpu\n")
    (tmp_path / "sys/fs/cgroup/cpu.max").write_text("max 100000\n")
    (tmp_path / "sys/fs/cgroup/user.slice/cpu.max").write_text("200000 100000\n")
    assert cpu_quota(Host(tmp_path, environ={})) == 2.0


def test_custom_kernel_wsl2_is_detected_from_env():
    h = Host(Path("/nonexistent"), environ={"WSL_INTEROP": "/run/WSL/1_interop"})
    assert detect_wsl(h)["version"] == 2


@pytest.mark.parametrize("script, status", [(GOOD_SCRIPT, "pass"),
                                            ("from torch.utils.data import DataLoader\nDataLoader(ds, num_workers=2)\n", "fail")])
def test_scripts_and_exit_code(tmp_path, script, status):
    path = tmp_path / "train.py"
    path.write_text(script)
    out = io.StringIO()
    rc = doctor_cmd.run(None, [path], [], True, out, io.StringIO(),
                        host=_host("linux", tmp_path, docker_probe=lambda: {"reachable": True, "runtimes": ["nvidia"]}))
    doc = json.loads(out.getvalue())
    check = _by_name(doc)[f"script:{path}"]
    assert check["status"] == status
    if status == "fail":
        assert "line 2" in check["message"] and '__name__ == "__main__"' in check["remedy"]
    # The default profile's other checks pass on the linux fixture, so the script decides the exit code.
    assert rc == (1 if status == "fail" else 0)


def test_missing_script_fails(tmp_path):
    doc = diagnose(_host("linux", tmp_path), _profile(), [tmp_path / "nope.py"], [])
    assert _by_name(doc)[f"script:{tmp_path / 'nope.py'}"]["status"] == "fail"


def test_table_output(tmp_path):
    doc = diagnose(_host("wsl2", tmp_path, cwd="/mnt/c/x"), _profile(), [], [])
    text = render_table(doc)
    assert text.splitlines()[0].startswith("envkit doctor: verdict WARN (WSL 2, 8 CPUs")
    assert "CHECK" in text and "How to fix:" in text and "workdir" in text


def test_docker_probe_is_injectable(tmp_path):
    doc = diagnose(_host("linux", tmp_path, docker_probe=lambda: None), _profile(), [], [])
    assert _by_name(doc)["docker"]["status"] == "skip"


# -- the docker check goes through envkit.engine (the one engine seam) ------------------------------

PING = {"server_version": "27.3.1", "os": "Docker Desktop", "runtimes": ["nvidia", "runc"], "nvidia_runtime": True,
        "host_ulimits": {}, "cgroup_version": "2"}


def test_engine_ping_is_injectable_and_feeds_the_docker_checks(tmp_path):
    doc = diagnose(_host("wsl1", tmp_path, engine_ping=lambda: dict(PING)), _profile(), [], [])
    checks = _by_name(doc)  # the wsl1 fixture's docker.json says unreachable: the ping wins
    assert checks["docker"]["status"] == "pass" and "27.3.1" in checks["docker"]["message"]
    assert checks["docker"]["measured"]["server_version"] == "27.3.1"
    assert checks["gpu_runtime"]["status"] == "pass"


def test_engine_error_from_the_seam_is_a_failed_docker_check(tmp_path):
    from envkit.errors import EngineError

    def no_daemon():
        raise EngineError("cannot reach a Docker engine at the default socket: refused", hint="start it")

    doc = diagnose(_host("linux", tmp_path, engine_ping=no_daemon), _profile(), [], [])
    checks = _by_name(doc)
    assert checks["docker"]["status"] == "fail" and "cannot reach a Docker engine" in checks["docker"]["message"]
    assert checks["docker"]["measured"]["reachable"] is False
    assert checks["gpu_runtime"]["status"] == "skip"


def _docker_py_failure(os_error):
    """An EngineError chained like docker-py's: DockerException <- requests <- urllib3 <- the OSError."""
    from envkit.errors import EngineError

    class ProtocolError(Exception):
        pass

    class DockerException(Exception):
        pass

    try:
        try:
            try:
                raise ProtocolError("Connection aborted.", os_error)
            except ProtocolError as e:
                raise DockerException(f"Error while fetching server API version: {e.args}") from e
        except DockerException as exc:
            raise EngineError(f"cannot reach a Docker engine at the default socket (/var/run/docker.sock): {exc}",
                              hint="Start a Docker engine: sudo systemctl start docker") from None
    except EngineError as final:
        return final


@pytest.mark.parametrize("os_error, environ, sentence", [
    (FileNotFoundError(2, "No such file or directory"), {},
     "no Docker engine answers at /var/run/docker.sock (file not found)"),
    (PermissionError(13, "Permission denied"), {},
     "the Docker engine's socket /var/run/docker.sock is there, but this user may not open it (permission denied)"),
    (ConnectionRefusedError(111, "Connection refused"), {"DOCKER_HOST": "unix:///run/user/1000/docker.sock"},
     "no Docker engine answers at /run/user/1000/docker.sock (connection refused)"),
])
def test_docker_check_shows_one_readable_sentence_and_the_hint(tmp_path, os_error, environ, sentence):
    # before: "no Docker engine answers: cannot reach ...: ('Connection aborted.', FileNotFoundError(2, ...))"
    error = _docker_py_failure(os_error)
    assert "('Connection aborted.'" in str(error)

    def ping():
        raise error

    host = Host(tmp_path, environ=environ, cwd="/home/me", engine_ping=ping)
    docker = _by_name(diagnose(host, _profile(), [], []))["docker"]
    assert docker["status"] == "fail"
    assert docker["message"] == sentence
    assert "Connection aborted" not in docker["message"] and "Error(" not in docker["message"]
    assert docker["remedy"] == "Start a Docker engine: sudo systemctl start docker"
    assert "Connection aborted" in docker["measured"]["detail"]  # the engine's own text stays as evidence
    table = render_table(diagnose(host, _profile(), [], []))
    assert sentence in " ".join(table.split()) and "sudo systemctl start docker" in table


def test_docker_error_text_without_a_chain_is_still_readable():
    from envkit.doctor.host import readable_engine_error
    from envkit.errors import EngineError

    text = ("cannot reach a Docker engine at the default socket: Error while fetching server API version: "
            "('Connection aborted.', FileNotFoundError(2, 'No such file or directory'))")
    assert readable_engine_error(EngineError(text), {}) == \
        "no Docker engine answers at /var/run/docker.sock (file not found)"
    assert readable_engine_error(EngineError("something else"), {}) == "something else"


def test_real_host_asks_the_engine_seam(monkeypatch):
    import envkit.engine
    from envkit.errors import EngineError
    calls = []

    class FakeEngine:
        def __init__(self):
            self.client = self

        @classmethod
        def connect(cls, labels=None):
            calls.append("connect")
            if fail:
                raise EngineError("no daemon", hint="start one")
            return cls()

        def ping(self):
            calls.append("ping")
            return {**PING, "runtimes": ["runc"], "nvidia_runtime": False}

        def close(self):
            calls.append("close")

    monkeypatch.setattr(envkit.engine, "connect", FakeEngine.connect)
    fail = False
    info = Host(Path("/"), environ={}).docker()
    assert calls == ["connect", "ping", "close"]
    assert info["reachable"] is True and info["runtimes"] == ["runc"] and info["nvidia_runtime"] is False
    fail = True
    info = Host(Path("/"), environ={}).docker()
    assert info["reachable"] is False and info["error"] == "no daemon" and info["hint"] == "start one"


def test_doctor_host_does_not_talk_to_docker_itself():
    import ast
    import envkit.doctor.host as host_mod
    tree = ast.parse(Path(host_mod.__file__).read_text())
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert "docker" not in imported and "subprocess" not in imported
    assert not any(isinstance(n, ast.Constant) and n.value == "info" for n in ast.walk(tree))  # no `docker info`


# -- scripts that cannot be checked are failed checks, not crashes ---------------------------------

def _script_check(tmp_path, path, host_name="linux"):
    doc = diagnose(_host(host_name, tmp_path), _profile(), [path], [])
    return _by_name(doc)[f"script:{path}"]


def test_script_that_is_a_directory_says_so(tmp_path):
    d = tmp_path / "project"
    d.mkdir()
    c = _script_check(tmp_path, d)
    assert c["status"] == "fail" and "is a directory" in c["message"] and "no such file" not in c["message"]
    assert c["remedy"]


def test_script_that_is_not_utf8_says_so(tmp_path):
    p = tmp_path / "train.py"
    p.write_bytes(b"x = 1\ns = '\xff\xfe caf\xe9'\n")
    c = _script_check(tmp_path, p)
    assert c["status"] == "fail" and "not UTF-8" in c["message"] and "line 2" in c["message"]


def test_script_with_a_coding_line_is_decoded_as_python_does(tmp_path):
    p = tmp_path / "train.py"
    p.write_bytes(b"# -*- coding: latin-1 -*-\nname = 'caf\xe9'\n" + GOOD_SCRIPT.encode())
    assert _script_check(tmp_path, p)["status"] == "pass"


def test_unreadable_script_says_so(tmp_path, monkeypatch):
    import envkit.doctor as doctor_pkg
    p = tmp_path / "train.py"
    p.write_text(GOOD_SCRIPT)

    def denied(path):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(doctor_pkg, "check_file", denied)  # chmod 000 does not stop root
    c = _script_check(tmp_path, p)
    assert c["status"] == "fail" and "cannot be read" in c["message"] and "Permission denied" in c["message"]


def test_script_that_is_a_fifo_is_not_opened(tmp_path):
    import os
    p = tmp_path / "train.py"
    os.mkfifo(p)  # opening it for reading would block forever
    c = _script_check(tmp_path, p)
    assert c["status"] == "fail" and "not a regular file" in c["message"]


def test_directory_script_through_the_command_exits_1(tmp_path):
    out = io.StringIO()
    rc = doctor_cmd.run(None, [tmp_path], [], True, out, io.StringIO(),
                        host=_host("linux", tmp_path / "h", docker_probe=lambda: None))
    assert rc == 1
    assert "is a directory" in _by_name(json.loads(out.getvalue()))[f"script:{tmp_path}"]["message"]


def test_script_check_message_and_remedy_name_the_unpicklable_object(tmp_path):
    # before: "line 8: DataLoader collate_fn is a lambda (line 8); ..." / "define it at module level ..."
    p = tmp_path / "train.py"
    p.write_text("import torch\nfrom torch.utils.data import DataLoader\n\n\n\n\ndef main():\n"
                 "    DataLoader(ds, num_workers=2, collate_fn=lambda b: b)\n"
                 "if __name__ == '__main__':\n    main()\n")
    c = _script_check(tmp_path, p)
    assert c["status"] == "fail"
    assert c["message"].startswith("line 8: DataLoader collate_fn is a lambda;") and c["message"].count("line 8") == 1
    assert c["remedy"] == "collate_fn=lambda at line 8: define a function at module level and pass its name"


def _windows_pc(tmp_path: Path, cpus: int, memory_gib: int) -> Host:
    root = tmp_path / "pc"
    (root / ".envkit-fixture").mkdir(parents=True)
    (root / ".envkit-fixture" / "host.json").write_text(
        json.dumps({"platform": "win32", "cpus": cpus, "memory_bytes": memory_gib << 30}))
    return Host(root, environ={}, cwd="C:/Users/me/project", docker_probe=lambda: None)


def test_on_native_windows_the_profiles_vm_is_checked_against_the_pc(tmp_path):
    """The default profile's 40GB / 8-processor VM on a 16 GB, 4-core laptop: a fail naming both."""
    doc = diagnose(_windows_pc(tmp_path, 4, 16), load_profile(None), [], [])
    fit = next(c for c in doc["checks"] if c["name"] == "wsl_fit")
    assert fit["status"] == "fail" and doc["verdict"] == "fail"
    assert "wsl.processors 8 is more than this PC's 4 logical CPUs" in fit["message"]
    assert "wsl.memory 40.0 GiB is more than this PC's 16.0 GiB" in fit["message"]
    assert "envkit init --force" in fit["remedy"]


def test_a_profile_init_sized_for_the_pc_fits_it(tmp_path):
    from envkit.fitted_profile import fitted_profile, this_machine

    pc = _windows_pc(tmp_path, 4, 16)
    text, _ = fitted_profile(this_machine(pc))
    doc = diagnose(pc, _profile(text), [], [])
    fit = next(c for c in doc["checks"] if c["name"] == "wsl_fit")
    assert fit["status"] == "pass", fit
    assert "wsl_fit" not in [c["name"] for c in diagnose(_host("linux", tmp_path), _profile(text), [], [])["checks"]]


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root to drop to another user")
def test_a_socket_the_user_may_not_open_is_answered_with_the_docker_group_first():
    # Before: "sudo systemctl start docker (or sudo dockerd &)" first: a second daemon, where one runs.
    import socket
    import subprocess
    import sys
    import tempfile

    with tempfile.TemporaryDirectory(prefix="envkit-sock-") as top:  # pytest's own folders are root's alone (0700)
        folder = Path(top)
        os.chmod(folder, 0o755)
        res = _doctor_as_nobody(folder, socket, subprocess, sys)
    docker = {c["name"]: c for c in json.loads(res.stdout)["checks"]}["docker"]
    assert docker["status"] == "fail" and "may not open it (permission denied)" in docker["message"]
    assert docker["remedy"].startswith("The Docker socket exists but this user may not open it: add yourself to the "
                                       "docker group")
    assert "dockerd &" not in docker["remedy"] and "systemctl start" not in docker["remedy"]


def _doctor_as_nobody(folder, socket, subprocess, sys):
    """``envkit doctor --json`` run as nobody, against a listening socket only root may open."""
    path = folder / "docker.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(str(path))
        listener.listen(1)
        os.chmod(path, 0o600)  # root's, as /var/run/docker.sock is root:docker 0660 to a user outside the group
        src = Path(__file__).resolve().parents[2] / "src"
        res = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", sys.executable, "-m",
                              "envkit", "doctor", "--json"], cwd=folder, capture_output=True, text=True, timeout=120,
                             env={"PATH": os.environ["PATH"], "PYTHONPATH": str(src), "HOME": str(folder),
                                  "DOCKER_HOST": f"unix://{path}"})
    return res
