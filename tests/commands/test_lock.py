"""``envkit lock``: real uv, the real torch wheelhouse, PyPI for the rest; the lock's record and staleness."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import run_envkit

TORCH = "2.13.0"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheels(tmp_path_factory) -> Path:
    """The CPU torch wheel, as the e2e wheelhouse gets it (pip's find-links on local disk)."""
    d = tmp_path_factory.mktemp("wheels")
    res = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-d", str(d),
                          f"torch=={TORCH}"], capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-2000:]
    return d


def _project(tmp_path: Path, wheels: Path, packages: str = '["pillow>=10,<12"]', extra: str = "") -> Path:
    (tmp_path / "wheels").symlink_to(wheels)
    (tmp_path / "envkit.yaml").write_text(
        "envkit: 1\nname: locked\nimage:\n  base: python:3.11-slim-bookworm\n"
        f"  pip_packages: {packages}\n  torch: {{version: '{TORCH}', variant: cpu, find_links: [wheels]}}\n{extra}")
    return tmp_path


def _pins(text: str) -> dict[str, str]:
    return dict(re.findall(r"^([a-z0-9_.-]+)==(\S+) \\$", text, re.M))


def test_lock_pins_every_package_with_hashes_and_is_reproducible(tmp_path, wheels):
    proj = _project(tmp_path, wheels)
    res = run_envkit("lock", "envkit.yaml", cwd=proj, timeout=600)
    assert res.returncode == 0, res.stderr
    lock = (proj / "envkit.lock.txt").read_text()
    assert lock.startswith("# envkit lock of profile locked (inputs sha256 ")
    assert "for Python 3.11 on x86_64-manylinux_2_28" in lock
    pins = _pins(lock)
    assert pins["torch"] == f"{TORCH}+cpu" and "numpy" in pins and pins["pillow"].startswith(("10.", "11."))
    assert {"filelock", "sympy", "networkx"} <= set(pins), "torch's own dependencies are locked too"
    # Every pin carries hashes; torch's is the wheelhouse file's own.
    blocks = re.split(r"\n(?=[a-z])", lock.split("\n", 3)[3])
    assert all("--hash=sha256:" in b for b in blocks), [b for b in blocks if "--hash" not in b]
    (wheel,) = wheels.glob("torch-*.whl")
    assert f"--hash=sha256:{hashlib.sha256(wheel.read_bytes()).hexdigest()}" in lock
    assert "/tmp" not in lock and str(proj) not in lock, "no machine-specific paths"
    # A second lock, cold (uv's cache is off), writes the same bytes.
    again = run_envkit("lock", "envkit.yaml", cwd=proj, timeout=600)
    assert again.returncode == 0, again.stderr
    assert (proj / "envkit.lock.txt").read_text() == lock

    # generate: quiet while the packages match, a warning once they changed (run settings do not count).
    gen = run_envkit("generate", "envkit.yaml", "-o", "out", "--target", "dockerfile", cwd=proj)
    assert gen.returncode == 0 and "envkit.lock.txt" not in gen.stderr, gen.stderr
    (proj / "envkit.yaml").write_text((proj / "envkit.yaml").read_text() + "run: {shm_size: 1g}\n")
    gen = run_envkit("generate", "envkit.yaml", "-o", "out", "--target", "dockerfile", cwd=proj)
    assert "envkit.lock.txt" not in gen.stderr, gen.stderr
    (proj / "envkit.yaml").write_text((proj / "envkit.yaml").read_text().replace("<12", "<11.3"))
    gen = run_envkit("generate", "envkit.yaml", "-o", "out", "--target", "dockerfile", cwd=proj)
    assert gen.returncode == 0
    assert "envkit.lock.txt: the profile's packages (torch, pip_packages, requirements, Python) changed" in gen.stderr


def test_packages_that_do_not_resolve_exit_2_and_write_nothing(tmp_path, wheels):
    proj = _project(tmp_path, wheels, packages='["pillow<0.1"]')
    res = run_envkit("lock", "envkit.yaml", cwd=proj, timeout=600)
    assert res.returncode == 2, res.stderr
    assert "do not resolve for Python 3.11 on x86_64-manylinux_2_28; uv says:" in res.stderr
    assert "pillow" in res.stderr and "Traceback" not in res.stderr
    assert not (proj / "envkit.lock.txt").exists()


def test_a_base_that_does_not_name_its_python_needs_image_python(tmp_path):
    (tmp_path / "envkit.yaml").write_text("envkit: 1\nname: x\nimage:\n  base: team/custom:1\n"
                                          "  pip_packages: [pillow]\n")
    res = run_envkit("lock", "envkit.yaml", cwd=tmp_path)
    assert res.returncode == 2
    assert "image.python: needed for a lock" in res.stderr and "add image.python: '3.Y'" in res.stderr


def test_a_file_envkit_did_not_write_is_not_replaced_without_force(tmp_path):
    (tmp_path / "envkit.yaml").write_text("envkit: 1\nname: x\nimage:\n  base: python:3.12-slim\n"
                                          "  pip_packages: [pillow]\n")
    (tmp_path / "envkit.lock.txt").write_text("mine\n")
    res = run_envkit("lock", "envkit.yaml", cwd=tmp_path)
    assert res.returncode == 2 and "was not written by `envkit lock`" in res.stderr
    assert (tmp_path / "envkit.lock.txt").read_text() == "mine\n"
