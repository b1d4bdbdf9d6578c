"""``envkit bundle``'s rootfs export through the engine seam (no engine: a fake one streams a tar)."""

from __future__ import annotations

import io
import tarfile

import pytest

import envkit.engine
from envkit.commands import bundle
from envkit.errors import EngineError
from tests.fakes import FakeEngine


def _tar(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


class ExportingEngine(FakeEngine):
    def __init__(self, data: bytes | None) -> None:
        super().__init__()
        self.data, self.closed = data, False

    def export_image(self, image, write, *, labels=None):
        self.calls.append(("export_image", {"image": image, "labels": dict(labels or {})}))
        if self.data is None:
            raise EngineError(f"image {image}: not found", hint="build it first")
        for i in range(0, len(self.data), 1000):
            write(self.data[i:i + 1000])
        return "sha256:" + "a" * 64, ["PATH=/usr/bin"]

    def close(self):
        self.closed = True


def test_the_image_is_unpacked_and_the_engine_closed(tmp_path, monkeypatch):
    eng = ExportingEngine(_tar({"etc/os-release": b"ID=debian\n", "opt/big.bin": b"x" * 5000}))
    monkeypatch.setattr(envkit.engine, "connect", lambda labels=None: eng)
    image_id, env = bundle.export_rootfs("some/img:1", tmp_path / "rootfs")
    assert (image_id, env) == ("sha256:" + "a" * 64, ["PATH=/usr/bin"])
    assert (tmp_path / "rootfs/etc/os-release").read_bytes() == b"ID=debian\n"
    assert (tmp_path / "rootfs/opt/big.bin").stat().st_size == 5000
    assert eng.calls == [("export_image", {"image": "some/img:1", "labels": {bundle.BUNDLE_LABEL: "1"}})]
    assert eng.closed


def test_a_missing_image_keeps_the_engines_own_error(tmp_path, monkeypatch):
    eng = ExportingEngine(None)
    monkeypatch.setattr(envkit.engine, "connect", lambda labels=None: eng)
    with pytest.raises(EngineError, match="not found") as e:
        bundle.export_rootfs("nope:1", tmp_path / "rootfs")
    assert e.value.hint == "build it first" and eng.closed


def test_a_broken_stream_is_tars_error(tmp_path, monkeypatch):
    eng = ExportingEngine(b"not a tar archive at all" * 100)
    monkeypatch.setattr(envkit.engine, "connect", lambda labels=None: eng)
    with pytest.raises(EngineError, match="unpacking nope:1 into"):
        bundle.export_rootfs("nope:1", tmp_path / "rootfs")
    assert eng.closed


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("tty", [False, True])
def test_the_bytes_exported_are_shown_as_the_export_runs(tmp_path, monkeypatch, tty):
    """On a pipe: plain lines (the last with the total); on a terminal: one line redrawn, cleared at the end."""
    eng = ExportingEngine(_tar({"opt/big.bin": b"x" * 300_000}))
    monkeypatch.setattr(envkit.engine, "connect", lambda labels=None: eng)
    err = _Tty() if tty else io.StringIO()
    bundle.export_rootfs("some/img:1", tmp_path / "rootfs", err)
    text = err.getvalue()
    # The last line, after the redrawn one is cleared: the total.
    assert text.split("\r\033[K")[-1].rstrip("\n").split("\n")[-1].startswith("envkit: exported some/img:1: ")
    if tty:
        assert "\r\033[Kenvkit: exporting some/img:1: " in text
    else:
        assert "\r" not in text and "\033" not in text
