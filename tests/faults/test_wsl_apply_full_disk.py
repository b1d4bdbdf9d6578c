"""``wsl apply`` on a full disk reports truthfully: exit 1, no "changed" line, the file as it was.

The disk is a small tmpfs mounted by the test (root). Filled to the last byte, the backup fails;
with room for the backup only, the new file fails. Either way nothing claims a change, and no
backup is left beside a file that did not change.
"""

from __future__ import annotations


import pytest

import envkit.cli
from tests.faults.smallfs import fill, small_tmpfs

WSL_PROFILE = "envkit: 1\nname: w\nimage: {base: debian:bookworm}\nwsl: {memory: 8GB, processors: 4}\n"
# Other keys and comments of the user's: about 6 KiB, two tmpfs pages.
WSLCONFIG = b"[wsl2]\r\nmemory=4GB\r\n" + b"".join(b"# note %04d: kept as the user wrote it\r\n" % i for i in range(150))


@pytest.fixture
def small_fs(tmp_path):
    yield from small_tmpfs(tmp_path, "1m")


@pytest.mark.parametrize(("leave", "failing"), [(0, "the backup"), (8192, "the new file")])
def test_full_disk_wsl_apply_claims_no_change(tmp_path, small_fs, capsys, leave, failing):
    profile = tmp_path / "w.yaml"
    profile.write_text(WSL_PROFILE)
    cfg = small_fs / ".wslconfig"
    cfg.write_bytes(WSLCONFIG)
    fill(small_fs, leave=leave)
    rc = envkit.cli.main(["wsl", "apply", str(profile), "--wslconfig", str(cfg)])
    cap = capsys.readouterr()
    assert rc == 1, (rc, cap.out, cap.err)
    assert "No space left on device" in cap.err and "nothing was changed" in cap.err
    assert ("backup" in cap.err) == (failing == "the backup"), cap.err
    assert "changed" not in cap.out and "key(s)" not in cap.out and "Backup:" not in cap.out, cap.out
    assert cfg.read_bytes() == WSLCONFIG
    assert sorted(p.name for p in small_fs.iterdir()) == [".wslconfig", "filler"], "no backup or temporary is left"
