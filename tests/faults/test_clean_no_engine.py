"""``envkit clean`` with no engine still lists the build folders it removed, then exits 3 (no daemon).

A stale build folder is faked as tests/faults/test_leftovers.py does: this process's pid with
another start time, so its owner is gone. The engine is a socket that does not exist.
"""

from __future__ import annotations

import json

import pytest

from envkit.leftovers import OWNER_FILE, START_LABEL, owner_labels
from tests.conftest import run_envkit


def _stale(folder):
    folder.mkdir()
    (folder / OWNER_FILE).write_text(json.dumps({**owner_labels(), START_LABEL: "1"}))
    return folder


@pytest.mark.parametrize("as_json", [False, True])
def test_clean_without_engine_names_the_folders_it_removed_and_exits_3(tmp_path, as_json):
    plain = _stale(tmp_path / "envkit-build-stale")
    odd = _stale(tmp_path / "envkit-build-\x1b[2Jodd")
    res = run_envkit("clean", *(["--json"] if as_json else []),
                     env={"TMPDIR": str(tmp_path), "DOCKER_HOST": "unix:///nonexistent"}, timeout=120)
    assert res.returncode == 3, (res.returncode, res.stdout, res.stderr)
    assert "Traceback" not in res.stderr
    listing = res.stderr if as_json else res.stdout
    assert f"removed build folder {plain}\n" in listing, listing
    assert f"removed build folder {tmp_path}/envkit-build-\\x1b[2Jodd\n" in listing, listing
    assert "\x1b" not in res.stdout + res.stderr
    assert "containers and superseded images were not swept (removed 2 build folder(s), listed above)" in res.stderr
    if as_json:
        assert res.stdout == "", "an error has no document"
    assert not plain.exists() and not odd.exists()
