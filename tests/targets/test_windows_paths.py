"""Docker Desktop's host path forms in run.volumes: read, and written as Docker Desktop expects.

``C:\\data`` and ``C:/data`` stay as written in compose.yaml, devcontainer's runArgs and ``envkit flags``
(Docker Desktop reads them from PowerShell and cmd); run.sh, run by bash under WSL or Git Bash, names them
``//c/data``. ``//c/data`` is a POSIX absolute path and is written as it is. Linux paths are unchanged.
"""

from __future__ import annotations

from pathlib import PureWindowsPath

import pytest
import yaml

from envkit.generation import render_all
from envkit.profile import load_profile
from envkit.hostpaths import bash_path, is_drive_path, split_volume
from envkit.planner import build_plan
from envkit.targets.run import docker_flags

PROFILE = """envkit: 1
name: winpaths
image: {base: 'debian:bookworm'}
run:
  mount_project: false
  volumes: ['C:\\data:/data', 'C:/Users/me/My Data:/d2:ro', '//c/data:/d3', './rel:/rel', '/srv/x:/x']
"""


@pytest.fixture
def loaded(tmp_path):
    (tmp_path / "rel").mkdir()
    (tmp_path / "envkit.yaml").write_text(PROFILE)
    return load_profile(tmp_path / "envkit.yaml")


def test_the_volume_grammar_reads_docker_desktop_forms(loaded):
    vols = build_plan(loaded).settings.volumes
    assert [(v.source, v.target, v.mode, v.is_relative) for v in vols] == [
        ("C:\\data", "/data", None, False), ("C:/Users/me/My Data", "/d2", "ro", False),
        ("//c/data", "/d3", None, False), ("./rel", "/rel", None, True), ("/srv/x", "/x", None, False)]


def test_docker_run_flags_keep_the_drive_form(loaded):
    flags = docker_flags(build_plan(loaded).settings)
    assert "--volume=C:\\data:/data" in flags and "--volume=C:/Users/me/My Data:/d2:ro" in flags
    assert "--volume=//c/data:/d3" in flags and "--volume=/srv/x:/x" in flags


def test_compose_keeps_the_drive_form_and_run_sh_writes_slash_slash_c(loaded, tmp_path):
    files = {f.path: f.content.decode() for f in render_all(loaded, tmp_path / "out", ("compose", "run"))}
    volumes = next(iter(yaml.safe_load(files["compose.yaml"])["services"].values()))["volumes"]
    assert volumes == ["C:\\data:/data", "C:/Users/me/My Data:/d2:ro", "//c/data:/d3", "../rel:/rel", "/srv/x:/x"]
    run_sh = files["run.sh"]
    assert "--volume=//c/data:/data\n" in run_sh and "'--volume=//c/Users/me/My Data:/d2:ro'" in run_sh
    assert "--volume=//c/data:/d3\n" in run_sh and '"${here}"/../rel:/rel' in run_sh
    assert "C:" not in run_sh.split("flags=(")[1]


@pytest.mark.parametrize("windows", [r"C:\data", r"C:\Users\me\My Data", "D:/work/x", r"c:\x\y\z"])
def test_bash_path_of_a_windows_path(windows):
    p = PureWindowsPath(windows)
    assert is_drive_path(str(p)) and is_drive_path(p.as_posix())
    expected = "//" + p.drive[0].lower() + "/" + "/".join(p.parts[1:])
    assert bash_path(str(p)) == bash_path(p.as_posix()) == expected
    assert split_volume(f"{p}:/data:ro") == (str(p), "/data", "ro")


@pytest.mark.parametrize("posix", ["/srv/data", "//c/data", "./c", "data", "../x"])
def test_posix_paths_are_unchanged(posix):
    assert not is_drive_path(posix) and bash_path(posix) == posix
    assert split_volume(f"{posix}:/data") == (posix, "/data", None)


def test_a_project_folder_on_a_drive_may_be_mounted():
    # Native Windows: the profile's folder is C:\...; its drive's ':' is one Docker Desktop reads.
    from envkit.profile.rules import mount_source_problems

    loaded_default = load_profile(None)
    assert mount_source_problems(loaded_default.profile.run, None, PureWindowsPath(r"C:\Users\me\proj")) == []  # type: ignore[arg-type]
    problems = mount_source_problems(loaded_default.profile.run, None, PureWindowsPath(r"C:\Users\me\a:b"))  # type: ignore[arg-type]
    assert any("contains ':'" in message for _, message in problems)
