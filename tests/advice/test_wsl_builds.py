"""WSL advice that holds: the Windows builds setup-wsl.ps1 accepts, and the autoMemoryReclaim=gradual caveat.

Sources: WSL2 runs on Windows 10 1903/1909 from build 18362.1049 (x64; KB4566116), `wsl --install`
needs 19041 (MicrosoftDocs/WSL install-manual.md); gradual broke Docker in the distribution on
WSL 2.0.0 (microsoft/WSL#10497).
"""

from __future__ import annotations

import re

from tests.conftest import wsl_warnings_of
from envkit.generation import render_all
from envkit.profile import load_profile

PROFILE = """envkit: 1
name: w
image: {{base: 'debian:bookworm'}}
wsl:
  memory: 16GB
  experimental: {{autoMemoryReclaim: {reclaim}}}
"""


def _files(tmp_path, reclaim="gradual"):
    p = tmp_path / "p.yaml"
    p.write_text(PROFILE.format(reclaim=reclaim))
    loaded = load_profile(p)
    files = {f.path: f.content for f in render_all(loaded, tmp_path / "out", ("wsl",))}
    return loaded, files


def test_setup_wsl_accepts_windows_10_1903_and_1909_with_the_backport(tmp_path):
    _, files = _files(tmp_path)
    script = files["setup-wsl.ps1"].decode("utf-8-sig")
    # The hard refusal is below 18362, or 18362/18363 before update revision 1049; not below 19041.
    assert not re.search(r"if \(\$build -lt 19041\) \{\s*throw", script)
    assert "$build -lt 18362 -or ($backport -and $ubr -lt 1049)" in script
    assert "$backport = @(18362, 18363) -contains $build" in script
    assert ".UBR" in script
    # Below 19041 `wsl --install` is unavailable: the script says how to install by hand instead.
    assert "$legacyWindows = $build -lt 19041" in script and "aka.ms/wsl2kernel" in script


def test_gradual_reclaim_carries_the_wsl_version_caveat(tmp_path):
    loaded, files = _files(tmp_path)
    wslconfig = files[".wslconfig"].decode()
    comment = wslconfig.split("autoMemoryReclaim=gradual")[0].rstrip().splitlines()[-1]
    assert comment.startswith("# autoMemoryReclaim:") and "WSL 2.0.0" in comment and "10497" in comment
    assert any("autoMemoryReclaim" in w and "10497" in w for w in wsl_warnings_of(loaded.profile))


def test_drop_cache_has_no_caveat(tmp_path):
    loaded, files = _files(tmp_path, "dropCache")
    assert "10497" not in files[".wslconfig"].decode()
    assert not any("autoMemoryReclaim" in w for w in wsl_warnings_of(loaded.profile))
