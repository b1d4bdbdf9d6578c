"""Writing outputs: byte-identical, atomic, and never over a user's edits without --force."""

from __future__ import annotations

import os
from pathlib import Path

from tests.conftest import call_envkit, copy_example


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_byte_identical_across_runs(tmp_path):
    profile = copy_example("ngc-style.yaml", tmp_path)
    for out in ("a", "b"):
        res = call_envkit("generate", str(profile), "-o", str(tmp_path / out))
        assert res.returncode == 0, res.stderr
    assert _tree(tmp_path / "a") == _tree(tmp_path / "b")


def test_a_copied_output_folder_regenerates_with_a_byte_identical_manifest(tmp_path):
    """The manifest holds what a clone reproduces (paths, owners, digests): a copy of the folder (new
    inodes, new times, as ``cp -r`` or ``git clone`` make it), regenerated into, keeps it byte for byte."""
    import shutil

    profile = copy_example("corporate.yaml", tmp_path)  # a wheelhouse: copies linked into the context
    text = profile.read_text()
    profile.write_text(text.replace("image:\n", "image:\n  copy_project: true\n", 1))
    (tmp_path / "train.py").write_text("print(1)\n")
    (tmp_path / "wheels" / "torch-2.5.1+cu121-cp312-cp312-linux_x86_64.whl").write_bytes(b"PK" * 100)
    assert call_envkit("generate", profile.name, "-o", "a", cwd=tmp_path).returncode == 0
    manifest = (tmp_path / "a" / ".envkit-manifest.json").read_bytes()
    assert b".envkit/wheels/" in manifest and b".envkit/project/train.py" in manifest
    shutil.copytree(tmp_path / "a", tmp_path / "b")  # cp -r: new inodes and times
    res = call_envkit("generate", profile.name, "-o", "b", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "b" / ".envkit-manifest.json").read_bytes() == manifest
    # A second run into the original, and a first into a new folder, write it the same.
    for out in ("a", "c"):
        assert call_envkit("generate", profile.name, "-o", out, cwd=tmp_path).returncode == 0
        assert (tmp_path / out / ".envkit-manifest.json").read_bytes() == manifest, out


def test_rerun_is_a_noop(tmp_path):
    profile = copy_example("cpu-minimal.yaml", tmp_path)
    out = tmp_path / "out"
    call_envkit("generate", str(profile), "-o", str(out))
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()}
    res = call_envkit("generate", str(profile), "-o", str(out))
    assert res.returncode == 0 and "wrote" not in res.stdout and "unchanged" in res.stdout
    assert before == {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()}


def test_edited_file_is_not_overwritten_without_force(tmp_path):
    profile = copy_example("cpu-minimal.yaml", tmp_path)
    out = tmp_path / "out"
    assert call_envkit("generate", str(profile), "-o", str(out)).returncode == 0
    compose = out / "compose.yaml"
    compose.write_text(compose.read_text() + "# my edit\n")
    # Change the profile so that every file would be rewritten.
    profile.write_text(profile.read_text().replace("shm_size: 1g", "shm_size: 2g"))
    before = _tree(out)
    res = call_envkit("generate", str(profile), "-o", str(out))
    assert res.returncode == 1
    assert str(compose) in res.stderr and "--force" in res.stderr
    assert _tree(out) == before, "nothing may be written when one file is in conflict"

    res = call_envkit("generate", str(profile), "-o", str(out), "--force")
    assert res.returncode == 0, res.stderr
    (backup,) = out.glob("compose.yaml.envkit-bak-*")
    assert backup.read_text().endswith("# my edit\n")
    assert "shm_size: '2g'" in compose.read_text()
    # A second forced run keeps the first backup and makes a new one.
    compose.write_text("edited again\n")
    assert call_envkit("generate", str(profile), "-o", str(out), "--force").returncode == 0
    assert backup.read_text().endswith("# my edit\n")
    backups = sorted(out.glob("compose.yaml.envkit-bak-*"))
    assert len(backups) == 2 and "edited again\n" in [b.read_text() for b in backups]


def test_foreign_file_is_not_overwritten(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "Dockerfile").write_text("FROM my-own-image\n")
    res = call_envkit("generate", "-o", str(out), "--target", "dockerfile")
    assert res.returncode == 1 and "Dockerfile" in res.stderr
    assert (out / "Dockerfile").read_text() == "FROM my-own-image\n"


def test_no_temporary_files_left_and_modes(tmp_path):
    out = tmp_path / "out"
    assert call_envkit("generate", "-o", str(out)).returncode == 0
    assert not [p for p in out.rglob("*") if p.name.endswith(".tmp")]
    assert os.access(out / "run.sh", os.X_OK)
    assert not os.access(out / "compose.yaml", os.X_OK)


def test_strict_turns_warnings_into_errors(tmp_path):
    p = tmp_path / "p.yaml"
    p.write_text("envkit: 1\nname: s\nimage: {base: debian:bookworm}\n"
                 "run: {shm_size: 64m}\nloader: {num_workers: 4, batch_size: 256, sample_shape: [3, 224, 224]}\n")
    res = call_envkit("generate", str(p), "-o", str(tmp_path / "o"))
    assert res.returncode == 0 and "warning: " + str(p) + ": run.shm_size: 64m is below the" in res.stderr
    assert "use shm_size: 2g" in res.stderr
    assert "--shm-size=64m" in (tmp_path / "o" / "run.sh").read_text()  # the user's value stays theirs
    res = call_envkit("generate", str(p), "-o", str(tmp_path / "o2"), "--strict")
    assert res.returncode == 2 and not (tmp_path / "o2").exists()


def test_a_profile_without_shm_size_is_sized_in_every_target_with_a_note_and_strict_passes(tmp_path):
    p = tmp_path / "p.yaml"
    p.write_text("envkit: 1\nname: s\nimage: {base: debian:bookworm}\n"
                 "loader: {num_workers: 4, batch_size: 256, sample_shape: [3, 224, 224]}\n")
    res = call_envkit("generate", str(p), "-o", str(tmp_path / "o"), "--strict")
    assert res.returncode == 0, res.stderr
    assert "warning" not in res.stderr and "note: " + str(p) + ": run.shm_size: not set, so envkit sized it: 2g for the" in res.stderr
    out = tmp_path / "o"
    assert "--shm-size=2g" in (out / "run.sh").read_text()
    assert "shm_size: '2g'" in (out / "compose.yaml").read_text()
    assert "--shm-size=2g" in (out / ".devcontainer" / "devcontainer.json").read_text()
    flags = call_envkit("flags", str(p)).stdout
    assert "--shm-size=2g" in flags


def test_generating_into_the_profiles_folder_leaves_its_certs_and_wheels_alone(tmp_path):
    profile = copy_example("corporate.yaml", tmp_path)
    before = _tree(tmp_path / "certs")
    res = call_envkit("generate", str(profile), "-o", str(tmp_path))
    assert res.returncode == 0, res.stderr
    assert _tree(tmp_path / "certs") == before
    assert (tmp_path / ".envkit" / "certs" / "00-corp-root.crt").read_bytes() == before["corp-root.pem"]
    # The example wheelhouse is empty: say so now, not at build time.
    assert "image.torch.find_links: no torch 2.5.1+cu121 wheel in wheels" in res.stderr
