"""image.requirements, the lock, image.copy_project / install_project: what generate writes (real files)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from envkit.errors import ProfileError
from envkit.profile import load_profile, load_profile_bytes
from tests.conftest import project_files
from tests.conftest import call_envkit

HEAD = "envkit: 1\nname: team\nimage:\n  base: debian:bookworm\n"


def _gen(proj: Path, text: str, out: str = "out") -> tuple[str, list[str]]:
    (proj / "envkit.yaml").write_text(text)
    res = call_envkit("generate", "envkit.yaml", "-o", out, "--target", "dockerfile", cwd=proj)
    assert res.returncode == 0, res.stderr
    root = proj / out
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    return (root / "Dockerfile").read_text(), files


@pytest.mark.parametrize("wheels", [False, True], ids=["direct", "staged"])
def test_requirements_files_are_copied_and_installed_as_they_are(tmp_path, wheels):
    (tmp_path / "requirements.txt").write_text("pillow>=11\n")
    (tmp_path / "locked.txt").write_text("six==1.17.0 \\\n    --hash=sha256:" + "0" * 64 + "\n")
    (tmp_path / "wheels").mkdir()
    source = ", find_links: [wheels]" if wheels else ""
    dockerfile, files = _gen(tmp_path, HEAD + f"  torch: {{version: '2.13.0'{source}}}\n"
                                              "  requirements: [requirements.txt, locked.txt]\n")
    assert {".envkit/requirements/00-requirements.txt", ".envkit/requirements/01-locked.txt"} <= set(files)
    # Direct: one RUN for the profile's packages (uv installed once for it), each file its own install and reason;
    # the files stay in /opt/envkit as the record. Staged: a RUN each, in the packages stage.
    folder, pin = ("/opt/envkit-build", "/opt/envkit-build/constraints.txt") if wheels else \
        ("/opt/envkit", "/tmp/envkit-constraints.txt")
    plain, hashed = [line for line in dockerfile.splitlines() if f"-r {folder}/requirements/0" in line]
    assert f"--constraint {pin}" in plain and "--require-hashes" not in plain
    assert "--require-hashes" in hashed and hashed.endswith(f"-r {folder}/requirements/01-locked.txt \\")
    assert f"COPY .envkit/requirements/ {folder}/requirements/" in dockerfile
    assert dockerfile.index("torch==2.13.0") < dockerfile.index("00-requirements.txt")
    ignore = (tmp_path / "out" / ".dockerignore").read_text()
    assert "!.envkit/requirements/" in ignore


def test_a_missing_requirements_file_is_located(tmp_path):
    with pytest.raises(ProfileError) as e:
        load_profile_bytes((HEAD + "  requirements: [nope.txt]\n").encode(), "p.yaml", tmp_path)
    assert "p.yaml:5:18: image.requirements[0]: 'nope.txt' is not a requirements file" in str(e.value)


def test_an_existing_lock_is_installed_exactly_instead_of_resolving(tmp_path):
    (tmp_path / "envkit.lock.txt").write_text("# envkit lock of profile team (inputs sha256 " + "a" * 64 + ")\n"
                                              "six==1.17.0 \\\n    --hash=sha256:" + "0" * 64 + "\n")
    dockerfile, files = _gen(tmp_path, HEAD + "  torch: {version: '2.13.0', variant: cpu}\n  pip_packages: [six]\n")
    assert ".envkit/envkit.lock.txt" in files
    assert ("&& { uv pip install --require-hashes --no-deps --extra-index-url "
            "https://download.pytorch.org/whl/cpu -r /opt/envkit/envkit.lock.txt") in dockerfile
    assert "COPY .envkit/envkit.lock.txt /opt/envkit/envkit.lock.txt" in dockerfile
    assert "constraints.txt" not in dockerfile and "--constraint" not in dockerfile


def test_copy_project_takes_the_code_and_leaves_secrets_outputs_and_wheels(tmp_path):
    for rel, text in {"train.py": "print(1)\n", "pkg/model.py": "x = 1\n", "pkg/.env": "KEY=1\n",
                      ".env.local": "KEY=2\n", "deploy/id_ed25519": "k\n", "tls/server.pem": "p\n",
                      "data/big.bin": "d\n", "notes.log": "l\n", "keep.log": "k\n",
                      "wheels/x-1-py3-none-any.whl": "w\n", ".git/config": "g\n", "__pycache__/a.pyc": "c\n",
                      ".dockerignore": "data/\n*.log\n!keep.log\n!pkg/.env\n"}.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    text = HEAD + "  torch: {version: '2.13.0', find_links: [wheels]}\n  copy_project: true\n"
    # Into a folder of the project: the user's own .dockerignore stays theirs (envkit writes its own there).
    dockerfile, files = _gen(tmp_path, text, out="docker")
    copied = sorted(f.removeprefix(".envkit/project/") for f in files if f.startswith(".envkit/project/"))
    assert copied == ["envkit.yaml", "keep.log", "pkg/model.py", "train.py"]
    # A second generate copies none of the first one's outputs (the output folder holds envkit's manifest).
    assert sorted(project_files(tmp_path, exclude_dirs=(tmp_path / "wheels",))) == copied
    assert (tmp_path / ".dockerignore").read_text().startswith("data/")
    lines = dockerfile.splitlines()
    copy = lines.index("COPY --chown=1000:1000 .envkit/project/ /workspace/")
    assert copy > max(i for i, line in enumerate(lines) if line.startswith(("RUN ", "COPY --from", "LABEL")))


def test_copy_project_defaults_on_with_a_cluster_and_off_without(tmp_path):
    (tmp_path / "train.py").write_text("print(1)\n")
    plain, _ = _gen(tmp_path, HEAD)
    assert ".envkit/project/" not in plain
    cluster, _ = _gen(tmp_path, HEAD + "cluster:\n  entrypoint: [train.py]\n")
    assert "COPY --chown=1000:1000 .envkit/project/ /workspace/" in cluster
    off = load_profile_bytes((HEAD + "  copy_project: false\ncluster:\n  entrypoint: [train.py]\n").encode(),
                             "p.yaml", tmp_path)
    assert not off.profile.copies_project


def test_install_project_needs_the_copy_and_a_pyproject(tmp_path):
    with pytest.raises(ProfileError) as e:
        load_profile_bytes((HEAD + "  install_project: true\n").encode(), "p.yaml", tmp_path)
    assert "set image.copy_project: true" in str(e.value)
    with pytest.raises(ProfileError) as e:
        load_profile_bytes((HEAD + "  copy_project: true\n  install_project: true\n").encode(), "p.yaml", tmp_path)
    assert "image.install_project: no pyproject.toml or setup.py" in str(e.value)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'team'\nversion = '0'\n")
    dockerfile, _ = _gen(tmp_path, HEAD + "  copy_project: true\n  install_project: true\n")
    assert "&& pip install --no-deps /tmp/envkit-project \\" in dockerfile
    assert load_profile(tmp_path / "envkit.yaml").profile.image.install_project


@pytest.mark.parametrize("lock", [False, True])
@pytest.mark.parametrize("installer", ["uv", "pip"])
def test_hadolint_accepts_the_team_dockerfile(tmp_path, installer, lock):
    from tests.targets.test_dockerfile import _hadolint

    exe = _hadolint()
    (tmp_path / "requirements.txt").write_text("six==1.17.0 \\\n    --hash=sha256:" + "0" * 64 + "\n")
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'team'\nversion = '0'\n")
    if lock:
        (tmp_path / "envkit.lock.txt").write_text("six==1.17.0 \\\n    --hash=sha256:" + "0" * 64 + "\n")
    dockerfile, _ = _gen(tmp_path, HEAD + f"  installer: {installer}\n  torch: {{version: '2.13.0'}}\n"
                                          "  requirements: [requirements.txt]\n  install_project: true\n"
                                          "cluster:\n  entrypoint: [train.py]\n")
    assert ("--require-hashes --no-deps" in dockerfile) == lock
    res = subprocess.run([exe, str(tmp_path / "out" / "Dockerfile")], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
