"""The direct layout against the real engine: torch from an index (as the NGC-style example takes it from
the PyTorch index), installed in place in one chain of layers.

The index is tests/localindex.py on the Docker bridge, serving the torch CPU wheel and its dependencies;
the team's requirements file and pip_packages come from PyPI through the host CA bundle. One cold build
(about 30 s here) and one rebuild after a pip_packages change, which must reuse torch's layer.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import run_envkit
from tests.dockerutil import base_image
from tests.e2e.conftest import BUILD_TIMEOUT, TORCH
from tests.localindex import LocalIndex, bridge_gateway

pytestmark = [pytest.mark.docker, pytest.mark.slow]

TAG = "envkit/e2e-direct:test"


def _profile(index_url: str, pip: str) -> str:
    return f"""\
envkit: 1
name: e2e-direct
image:
  base: {base_image()}
  tag: {TAG}
  torch: {{version: "{TORCH}", variant: cpu, index_url: "{index_url}"}}
  system_packages: [numactl]
  requirements: [requirements.txt]
  pip_packages: [{pip}]
  user: {{name: trainer, uid: 1234, gid: 1234}}
  ca_certificates: [certs/host-ca.pem]
run: {{shm_size: 512m}}
loader: {{num_workers: 2, batch_size: 8, sample_shape: [3, 32, 32]}}
"""


def _layers(engine, tag: str) -> list[dict]:
    return engine.client.api.history(tag)


def _installed(engine, tag: str) -> tuple[int, int]:
    """(venv bytes, bytes of the Debian packages beyond the base), as benchmarks/bench_build.py counts them."""
    def sizes(image: str) -> dict[str, int]:
        out = engine.client.containers.run(image, ["dpkg-query", "-W", "-f", "${Package} ${Installed-Size}\\n"],
                                           remove=True, user="root", entrypoint=[]).decode()
        return {n: int(k or 0) * 1024 for n, k in (line.split(" ") for line in out.splitlines() if line)}
    venv = int(engine.client.containers.run(tag, ["du", "-sb", "/opt/venv"], remove=True, user="root",
                                            entrypoint=[]).decode().split()[0])
    base, image = sizes(base_image()), sizes(tag)
    return venv, sum(size for name, size in image.items() if name not in base)


def test_torch_from_an_index_builds_in_place_and_ships_nothing_dead(tmp_path, e2e_dir, engine):
    wheels = tmp_path / "index"
    wheels.mkdir()
    res = subprocess.run([sys.executable, "-m", "pip", "download", "--only-binary=:all:", "-d", str(wheels),
                          f"torch=={TORCH}", "numpy"], capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-2000:]
    proj = tmp_path / "proj"
    (proj / "certs").mkdir(parents=True)
    (proj / "certs" / "host-ca.pem").write_bytes((e2e_dir / "certs" / "host-ca.pem").read_bytes())
    (proj / "requirements.txt").write_text("six==1.17.0\n")
    try:
        with LocalIndex(wheels, host=bridge_gateway()) as index:
            (proj / "envkit.yaml").write_text(_profile(index.url, '"idna==3.10"'))
            res = run_envkit("build", "envkit.yaml", cwd=proj, timeout=BUILD_TIMEOUT)
            assert res.returncode == 0, res.stderr[-4000:]
            first = _layers(engine, TAG)

            # One chain: no stage copied anything, torch's environment is written once (its RUN's layer), and
            # nothing of the installer is in any layer or in the image.
            made_by = "\n".join(layer["CreatedBy"] for layer in first)
            assert "COPY --from" not in made_by and "envkit-build" not in made_by and "envkit-wheels" not in made_by
            own = first[:len(first) - len(_layers(engine, base_image()))]  # history lists the newest layer first
            big = [(layer["CreatedBy"], layer["Size"]) for layer in own if layer["Size"] > 100e6]
            assert len(big) == 1 and "torch==" in big[0][0] and big[0][1] > 500e6, big
            out = engine.client.containers.run(TAG, ["sh", "-c", "echo tmp: $(ls -A /tmp); echo opt: $(ls /opt); "
                                                     "ls /opt/envkit/requirements; command -v uv || echo no-uv; "
                                                     "python -m pip freeze --all; "
                                                     "python -c 'from envkit_runtime import loader_kwargs; print(1)'; "
                                                     "python -c 'import torch; print(torch.ones(2).sum().item())'"],
                                               remove=True, user="root", entrypoint=[]).decode()
            # /tmp is empty (uv and the torch pin were removed in their RUNs); the requirements file is the record.
            assert out.startswith("tmp:\n") and "opt: envkit venv\n" in out, out
            assert "00-requirements.txt" in out and "no-uv" in out and out.strip().endswith("2.0")
            assert f"torch=={TORCH}+cpu" in out and "six==1.17.0" in out and "idna==3.10" in out
            # numpy (torch warns without it) in the packages' layer, not torch's: a numpy pin leaves torch cached.
            assert "\nnumpy==" in out
            assert [layer for layer in own if "idna==3.10" in layer["CreatedBy"] and " numpy" in layer["CreatedBy"]]
            venv_run = [layer["CreatedBy"] for layer in own if "python3 -m venv" in layer["CreatedBy"]]
            assert len(venv_run) == 1 and "torch==" in venv_run[0] and "numpy" not in venv_run[0], venv_run
            assert "\n1\n" in out  # the .pth written with the venv finds the harness copied after it

            # The venv holds what `python3 -m venv` puts in one (pip, and setuptools before Python 3.12), seeded
            # by uv from the same wheels: the same pip, its bytecode compiled, working for the image's user.
            seeded = ("python3 -m venv /tmp/ref && /tmp/ref/bin/python -m pip freeze --all && echo --- "
                      "&& pip --version && python -c 'import pathlib, pip; d = pathlib.Path(pip.__file__).parent; "
                      "print(\"uncompiled:\", [str(f) for f in d.rglob(\"*.py\") if not list((f.parent / \"__pycache__\")"
                      ".glob(f.stem + \".*.pyc\"))])'")
            ref, _, ours = engine.client.containers.run(TAG, ["sh", "-c", seeded], remove=True,
                                                        entrypoint=[]).decode().partition("---\n")
            standard = dict(line.split("==") for line in ref.split())
            assert f"pip=={standard['pip']}" in out and ("setuptools" in standard) == ("\nsetuptools==" in out), out
            assert ours.startswith(f"pip {standard['pip']} from /opt/venv/") and "uncompiled: []" in ours, ours

            # The image minus its base is the environment (venv + apt packages) and a few MB of envkit's files: no
            # second copy, no installer, no cache (apt's binary caches alone were 76 MB on this base).
            venv, apt = _installed(engine, TAG)
            extra = engine.client.images.get(TAG).attrs["Size"] - engine.client.images.get(base_image()).attrs["Size"]
            assert extra <= venv + apt + 20e6, (extra, venv, apt)
            home = ["sh", "-c", "ls -A /root /var/cache/apt"]
            assert engine.client.containers.run(TAG, home, remove=True, user="root", entrypoint=[]) == \
                engine.client.containers.run(base_image(), home, remove=True, user="root")

            # A pip_packages change: torch's layer comes from the cache, the packages' layer is new.
            (proj / "envkit.yaml").write_text(_profile(index.url, '"idna==3.10", "packaging==24.2"'))
            res = run_envkit("build", "envkit.yaml", cwd=proj, timeout=BUILD_TIMEOUT)
            assert res.returncode == 0, res.stderr[-4000:]
        second = _layers(engine, TAG)
        torch_layer = [layer for layer in first if "torch==" in layer["CreatedBy"] and layer["Size"] > 500e6]
        assert torch_layer and torch_layer[0]["Id"].startswith("sha256:")  # built here: a real id, not <missing>
        assert [layer["Id"] for layer in torch_layer] == [
            layer["Id"] for layer in second if "torch==" in layer["CreatedBy"] and layer["Size"] > 500e6]
        # The new packages' layer: numpy (~70 MB), six, idna, packaging; not torch again.
        packages = [layer for layer in second if "packaging==24.2" in layer["CreatedBy"]]
        assert len(packages) == 1 and packages[0]["Size"] < torch_layer[0]["Size"] / 5, packages
    finally:
        engine.client.images.remove(TAG, force=True)
