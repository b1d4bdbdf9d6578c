"""wslmerge and `envkit wsl apply`: foreign keys, comments, CRLF/BOM/UTF-16 survive; backups; idempotence."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from envkit import output
from envkit.commands import wsl_apply
from envkit.errors import EnvkitError, ProfileError
from envkit.wslmerge import decode_config, encode_config, merge_ini

USER = (
    "# my settings\r\n"
    "[wsl2]\r\n"
    "Memory = 8GB   # laptop\r\n"
    "kernelCommandLine = vsyscall=emulate\r\n"
    "\r\n"
    "; old style comment\r\n"
    "[Experimental]\r\n"
    "sparseVhd=false\r\n"
    "\r\n"
    "[custom]\r\n"
    "thing=1\r\n"
)
PROFILE = """envkit: 1
name: w
image: {base: 'debian:bookworm'}
wsl:
  memory: 16GB
  processors: 4
  experimental: {sparseVhd: true, autoMemoryReclaim: gradual}
"""


def _apply(tmp_path: Path, cfg: Path, dry_run: bool = False) -> str:
    prof = tmp_path / "envkit.yaml"
    if not prof.exists():
        prof.write_text(PROFILE)
    out = io.StringIO()
    assert wsl_apply.run(prof, cfg, dry_run, out, io.StringIO()) == 0
    return out.getvalue()


def test_merge_in_place_keeps_everything_else():
    r = merge_ini(USER, [("wsl2", "memory", "16GB"), ("wsl2", "processors", "4"),
                         ("experimental", "sparseVhd", "true"), ("experimental", "autoMemoryReclaim", "gradual"),
                         ("new", "key", "v")])
    assert r.text == (
        "# my settings\r\n"
        "[wsl2]\r\n"
        "Memory = 16GB   # laptop\r\n"
        "kernelCommandLine = vsyscall=emulate\r\n"
        "processors=4\r\n"
        "\r\n"
        "; old style comment\r\n"
        "[Experimental]\r\n"
        "sparseVhd=true\r\n"
        "autoMemoryReclaim=gradual\r\n"
        "\r\n"
        "[custom]\r\n"
        "thing=1\r\n"
        "\r\n"
        "[new]\r\n"
        "key=v\r\n"
    )
    assert [c.describe() for c in r.changes] == [
        "[wsl2] Memory: 8GB -> 16GB", "[experimental] sparseVhd: false -> true",
        "[wsl2] processors: added 4", "[experimental] autoMemoryReclaim: added gradual", "[new] key: added v"]


def test_equal_values_are_not_changes():
    text = "[WSL2]\nmemory = 16384MB\nlocalhostForwarding=True\n"
    r = merge_ini(text, [("wsl2", "memory", "16GB"), ("wsl2", "localhostForwarding", "true")])
    assert r.changes == () and r.text == text


def test_only_first_duplicate_is_replaced_and_no_final_newline():
    r = merge_ini("[wsl2]\nswap=1GB\nswap=2GB", [("wsl2", "swap", "0"), ("wsl2", "processors", "2")])
    assert r.text == "[wsl2]\nswap=0\nswap=2GB\nprocessors=2\n"


def test_continuation_lines_are_replaced_whole():
    r = merge_ini("[wsl2]\nkernelCommandLine = a \\\n  b\nswap=0\n", [("wsl2", "kernelCommandLine", "c")])
    assert r.text == "[wsl2]\nkernelCommandLine = c\nswap=0\n"
    assert r.changes[0].old == "a   b"


@pytest.mark.parametrize("text, line", [("[wsl2]\nmemory\n", 2), ("[ws l2]\n", 1), ("[wsl2]\n=1\n", 2)])
def test_not_ini_is_an_error_with_line(text, line):
    with pytest.raises(ProfileError, match=rf"^cfg:{line}: "):
        merge_ini(text, [("wsl2", "memory", "1GB")], "cfg")


@pytest.mark.parametrize("raw, encoding, bom", [
    (USER.encode("utf-8"), "utf-8", b""),
    (b"\xef\xbb\xbf" + USER.encode("utf-8"), "utf-8", b"\xef\xbb\xbf"),
    (b"\xff\xfe" + USER.encode("utf-16-le"), "utf-16-le", b"\xff\xfe"),
    (USER.encode("utf-16-le"), "utf-16-le", b""),
])
def test_apply_preserves_encoding_bom_and_crlf(tmp_path, raw, encoding, bom):
    cfg = tmp_path / ".wslconfig"
    cfg.write_bytes(raw)
    out = _apply(tmp_path, cfg)
    assert "[wsl2] Memory: 8GB -> 16GB" in out and "wsl --shutdown" in out
    new = cfg.read_bytes()
    assert new.startswith(bom)
    text = new[len(bom):].decode(encoding)
    assert "\n" not in text.replace("\r\n", "")  # CRLF throughout, added lines included
    assert "# my settings\r\n" in text and "[custom]\r\nthing=1\r\n" in text and "processors=4\r\n" in text
    backups = list(tmp_path.glob(".wslconfig.envkit-bak-*"))
    assert len(backups) == 1 and backups[0].read_bytes() == raw


def test_apply_twice_changes_nothing_and_writes_no_second_backup(tmp_path):
    cfg = tmp_path / ".wslconfig"
    cfg.write_bytes(USER.encode())
    _apply(tmp_path, cfg)
    after_first = cfg.read_bytes()
    out = _apply(tmp_path, cfg)
    assert "nothing changed" in out
    assert cfg.read_bytes() == after_first
    assert len(list(tmp_path.glob(".wslconfig.envkit-bak-*"))) == 1


def test_backup_never_overwrites(tmp_path):
    from datetime import datetime, timezone
    cfg = tmp_path / ".wslconfig"
    now = datetime(2025, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    first = output.backup_path(cfg, now)
    first.write_text("old backup")
    second = output.backup_path(cfg, now)
    assert first.name == ".wslconfig.envkit-bak-20250102T030405Z"
    assert second.name == ".wslconfig.envkit-bak-20250102T030405Z-1"


def test_dry_run_writes_nothing(tmp_path):
    cfg = tmp_path / ".wslconfig"
    cfg.write_bytes(USER.encode())
    out = _apply(tmp_path, cfg, dry_run=True)
    assert "would change" in out and "Dry run" in out
    assert cfg.read_bytes() == USER.encode() and not list(tmp_path.glob("*.envkit-bak-*"))


def test_apply_creates_a_missing_file_without_backup(tmp_path):
    cfg = tmp_path / ".wslconfig"
    _apply(tmp_path, cfg)
    assert cfg.read_bytes() == (b"[wsl2]\r\nmemory=16GB\r\nprocessors=4\r\n\r\n"
                                b"[experimental]\r\nautoMemoryReclaim=gradual\r\nsparseVhd=true\r\n")
    assert not list(tmp_path.glob("*.envkit-bak-*"))


@pytest.mark.parametrize("raw, line", [(b"[wsl2]\nmemory=8GB\n\xff\xfe\xfa\n", 3), (b"[wsl2]\n\x00\x01garbage", 2)])
def test_apply_refuses_binary_files(tmp_path, raw, line):
    cfg = tmp_path / ".wslconfig"
    cfg.write_bytes(raw)
    with pytest.raises(EnvkitError, match=rf":{line}: "):
        _apply(tmp_path, cfg)
    assert cfg.read_bytes() == raw


def test_apply_needs_a_wsl_section(tmp_path):
    prof = tmp_path / "envkit.yaml"
    prof.write_text("envkit: 1\nname: w\nimage: {base: 'debian:bookworm'}\n")
    with pytest.raises(ProfileError, match="no 'wsl' section"):
        wsl_apply.run(prof, tmp_path / ".wslconfig", False, io.StringIO(), io.StringIO())


def test_decode_encode_round_trip():
    raw = b"\xff\xfe" + "[wsl2]\r\nmemory=1GB\r\n".encode("utf-16-le")
    d = decode_config(raw, "x")
    assert (d.encoding, d.bom, d.newline) == ("utf-16-le", b"\xff\xfe", "\r\n")
    assert encode_config(d.text, d) == raw





def test_wsl_conf_merges_the_wsl_conf_keys_only(tmp_path):
    # setup-wsl.ps1 runs this inside the distribution, as root, on /etc/wsl.conf.
    prof = tmp_path / "p.yaml"
    prof.write_text(PROFILE + "  wsl_conf: {boot: {systemd: true}}\n")
    conf = tmp_path / "wsl.conf"
    conf.write_bytes(b"[user]\ndefault=me\n")
    out = io.StringIO()
    assert wsl_apply.run(prof, conf, False, out, io.StringIO(), wsl_conf=True) == 0
    assert conf.read_bytes() == b"[user]\ndefault=me\n\n[boot]\nsystemd=true\n"
    assert list(tmp_path.glob("wsl.conf.envkit-bak-*"))
    new = tmp_path / "new.conf"
    assert wsl_apply.run(prof, new, False, io.StringIO(), io.StringIO(), wsl_conf=True) == 0
    assert new.read_bytes() == b"[boot]\nsystemd=true\n"  # a new wsl.conf: LF


def test_wsl_conf_needs_wsl_conf_in_the_profile(tmp_path):
    prof = tmp_path / "p.yaml"
    prof.write_text(PROFILE)
    with pytest.raises(ProfileError, match="wsl.wsl_conf"):
        wsl_apply.run(prof, tmp_path / "wsl.conf", False, io.StringIO(), io.StringIO(), wsl_conf=True)
