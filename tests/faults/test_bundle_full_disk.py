"""A full disk under ``envkit bundle`` is the file system refusing (exit 1, docs/cli.md), not the engine.

The engine is replaced in-process by one that streams a real tar (bigger than the disk) to the
real ``tar -x``; the disk is a small tmpfs mounted by the test (root), so the unpack really hits
ENOSPC.
"""

from __future__ import annotations

import io
import tarfile

import pytest

import envkit.cli
import envkit.engine
from tests.faults.smallfs import small_tmpfs
from tests.fakes import FakeEngine


class _ExportingEngine(FakeEngine):
    """Exports a 4 MiB root filesystem, as the Docker engine streams ``docker export``."""

    def export_image(self, image, write, *, labels=None):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            data = b"x" * (4 * 1024 * 1024)
            info = tarfile.TarInfo("usr/lib/big.bin")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        raw = buf.getvalue()
        for i in range(0, len(raw), 64 * 1024):
            write(raw[i:i + 64 * 1024])
        return "sha256:" + "0" * 64, ["PATH=/usr/bin"]


@pytest.fixture
def small_fs(tmp_path):
    yield from small_tmpfs(tmp_path, "1m")


def test_full_disk_during_bundle_is_exit_1_naming_the_folder_and_cause(tmp_path, small_fs, monkeypatch, capsys):
    monkeypatch.setattr(envkit.engine, "connect", lambda labels=None: _ExportingEngine())
    profile = tmp_path / "envkit.yaml"
    profile.write_text("envkit: 1\nname: full\nimage: {base: debian:bookworm}\n")
    out = small_fs / "bun\x1bdle"
    rc = envkit.cli.main(["bundle", str(profile), "-o", str(out)])
    err = capsys.readouterr().err
    assert rc == 1, (rc, err)
    assert "No space left on device" in err and "Traceback" not in err
    assert str(small_fs / "bun\\x1bdle") in err, err  # the folder, its escape made visible
    assert "\x1b" not in err
    assert not out.exists()
    assert [p.name for p in small_fs.iterdir()] == [], "no half-written bundle or staging folder is left"
