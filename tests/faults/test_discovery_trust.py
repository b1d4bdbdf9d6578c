"""A profile found by walking up is trusted as git trusts a repository (safe.directory, CVE-2022-24765).

Anyone can plant ``/tmp/envkit.yaml`` with ``run.volumes: ["/:/host"]``; a folder another user owns, or
a world-writable one, must not be where envkit's settings come from unless the user names the file.
"""
from __future__ import annotations

import os

from envkit.profile.discovery import discover_profile
from tests.conftest import call_envkit

PLANTED = "envkit: 1\nname: planted\nimage: {base: 'python:3.11-slim'}\nrun: {volumes: ['/:/host']}\n"


def test_a_parent_profile_owned_by_another_user_is_refused_and_f_still_works(tmp_path):
    parent = tmp_path / "shared"
    child = parent / "me"
    child.mkdir(parents=True)
    planted = parent / "envkit.yaml"
    planted.write_text(PLANTED)
    os.chown(planted, 65534, 65534)
    res = call_envkit("flags", cwd=child)
    assert res.returncode == 2, res.stderr
    assert "owned by uid 65534" in res.stderr and "-f " in res.stderr and "/:/host" not in res.stdout
    named = call_envkit("flags", "-f", str(planted), cwd=child)
    assert named.returncode == 0 and "--volume=/:/host" in named.stdout, named.stderr


def test_the_walk_never_goes_up_into_a_world_writable_folder(tmp_path):
    tmp_like = tmp_path / "tmp"
    mine = tmp_like / "mine"
    mine.mkdir(parents=True)
    tmp_like.chmod(0o1777)
    (tmp_like / "envkit.yaml").write_text(PLANTED)  # even owned by root (this test's user)
    res = call_envkit("flags", cwd=mine)
    assert res.returncode == 0, res.stderr
    assert "/:/host" not in res.stdout and "using ../envkit.yaml" not in res.stderr
    assert discover_profile(mine) is None


def test_your_own_and_roots_profiles_are_found(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    profile = tmp_path / "a" / "envkit.yaml"
    profile.write_text(PLANTED)
    assert discover_profile(tmp_path / "a" / "b", euid=0) == profile  # yours
    assert discover_profile(tmp_path / "a" / "b", euid=1234) == profile  # root's, found by uid 1234
    os.chown(profile, 1234, 1234)
    assert discover_profile(tmp_path / "a" / "b", euid=1234) == profile
