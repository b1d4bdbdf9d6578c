"""generate says what its files need from their folder, and the Dockerfile's comments are true to the profile."""

from __future__ import annotations

from envkit.generation import render_all
from envkit.profile import load_profile_bytes
from tests.conftest import run_envkit

PROFILE = "envkit: 1\nname: demo\nimage: {base: 'python:3.11-slim'}\n"


def test_compose_without_its_dockerfile_warns(tmp_path):
    (tmp_path / "envkit.yaml").write_text(PROFILE)
    res = run_envkit("generate", "-o", "out", "--target", "compose", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "envkit: warning: compose.yaml builds from out/Dockerfile, which is not there, so it cannot build" in res.stderr
    res = run_envkit("generate", "-o", "out", "--target", "compose", "--target", "dockerfile", cwd=tmp_path)
    assert "cannot build" not in res.stderr
    res = run_envkit("generate", "-o", "out", "--target", "compose", cwd=tmp_path)  # the Dockerfile is there now
    assert "cannot build" not in res.stderr


def test_a_dev_container_in_another_folder_says_where_vs_code_finds_it(tmp_path):
    (tmp_path / "envkit.yaml").write_text(PROFILE)
    res = run_envkit("generate", "-o", "out", cwd=tmp_path)
    assert "envkit: note: VS Code finds the dev container in the folder it opens: open out" in res.stderr
    assert "VS Code" not in run_envkit("generate", "-o", ".", cwd=tmp_path).stderr


def _dockerfile(text: str, tmp_path) -> str:
    files = render_all(load_profile_bytes(text.encode(), "p.yaml", tmp_path), tmp_path / "out", ("dockerfile",))
    return next(f.content.decode() for f in files if f.path == "Dockerfile")


def test_the_uid_comment_names_ubuntu_only_for_ubuntu_2404(tmp_path):
    assert 'ubuntu:24.04 ships "ubuntu" as 1000' not in _dockerfile(PROFILE, tmp_path)
    ubuntu = PROFILE.replace("python:3.11-slim", "ubuntu:24.04")
    assert 'ubuntu:24.04 ships "ubuntu" as 1000' in _dockerfile(ubuntu, tmp_path)
