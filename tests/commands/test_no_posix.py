"""The commands that make sense on native Windows and macOS run where POSIX-only modules cannot be imported.

Each command runs in a subprocess whose ``sys.meta_path`` refuses ``fcntl``, ``pwd``, ``grp``, ``termios``
and ``resource`` (as native Windows Python does); ``lock`` gets a fake uv at its seam
(``envkit.commands.lock.uv_command``). Each must exit 0 and write its files.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BLOCKED = ("fcntl", "pwd", "grp", "termios", "resource")

# Installed before envkit is imported; then the CLI runs with the remaining argv.
BOOT = f"""
import sys
BLOCKED = {BLOCKED!r}
class NoPosix:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"No module named {{name!r}} (blocked: not on Windows)")
        return None
for name in BLOCKED:
    sys.modules.pop(name, None)
sys.meta_path.insert(0, NoPosix())
import os
if os.environ.get("FAKE_UV"):
    import envkit.commands.lock as lock
    lock.uv_command = lambda: [sys.executable, os.environ["FAKE_UV"]]
from envkit.cli import main
sys.exit(main(sys.argv[1:]))
"""

# Writes what `uv pip compile ... -o DEST` writes: one pinned package with a hash.
FAKE_UV = """
import sys
args = sys.argv[1:]
dest = args[args.index("-o") + 1]
with open(dest, "w") as f:
    f.write("pillow==11.0.0 \\\\\\n    --hash=sha256:" + "0" * 64 + "\\n")
"""

PROFILE = """envkit: 1
name: desk
image:
  base: python:3.11-slim-bookworm
  pip_packages: ["pillow>=10,<12"]
wsl:
  memory: 8GB
  processors: 4
"""


def _envkit(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    src = Path(__file__).resolve().parents[2] / "src"
    full = {**os.environ, "PYTHONPATH": str(src), **(env or {})}
    return subprocess.run([sys.executable, "-c", BOOT, *args], cwd=cwd, env=full, capture_output=True, text=True,
                          timeout=120)


def test_the_bootstrap_really_blocks_the_modules(tmp_path):
    res = subprocess.run([sys.executable, "-c", BOOT.split("import os\n")[0] + "import fcntl"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode != 0 and "blocked: not on Windows" in res.stderr


@pytest.fixture
def project(tmp_path) -> Path:
    (tmp_path / "envkit.yaml").write_text(PROFILE)
    return tmp_path


def test_init_writes_a_profile(tmp_path):
    res = _envkit("init", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "envkit.yaml").is_file()


def test_generate_writes_every_file(project):
    res = _envkit("generate", "-o", "out", cwd=project)
    assert res.returncode == 0, res.stderr
    for name in ("Dockerfile", "run.sh", "compose.yaml", "setup-wsl.ps1", ".wslconfig", ".envkit-manifest.json"):
        assert (project / "out" / name).is_file(), name
    again = _envkit("generate", "-o", "out", cwd=project)  # the lock file exists now: taken again
    assert again.returncode == 0, again.stderr


def test_flags_and_schema_print(project):
    flags = _envkit("flags", cwd=project)
    assert flags.returncode == 0 and "--ipc=" in flags.stdout, flags.stderr
    schema = _envkit("schema", cwd=project)
    assert schema.returncode == 0 and '"properties"' in schema.stdout, schema.stderr


def test_lock_with_uv_faked(project):
    fake = project / "fake_uv.py"
    fake.write_text(FAKE_UV)
    res = _envkit("lock", cwd=project, env={"FAKE_UV": str(fake)})
    assert res.returncode == 0, res.stderr
    assert "pillow==11.0.0" in (project / "envkit.lock.txt").read_text()


def test_wsl_apply_merges(project):
    wslconfig = project / "dot.wslconfig"
    wslconfig.write_text("[wsl2]\nswap=0\n")
    res = _envkit("wsl", "apply", "envkit.yaml", "--wslconfig", str(wslconfig), cwd=project)
    assert res.returncode == 0, res.stderr
    text = wslconfig.read_text()
    assert "memory=8GB" in text and "swap=0" in text


def test_doctor_runs_its_checks(project):
    res = _envkit("doctor", cwd=project)
    assert "Traceback" not in res.stderr, res.stderr
    assert res.returncode in (0, 1), res.stderr  # 1: a check failed on this host, not an import error
