"""Every install line a user can read names envkit's distribution on the index, never the index's `envkit`
(another project: an environment-variable parser with no `envkit` command)."""

from __future__ import annotations

import re
import pytest

from envkit import DISTRIBUTION, install
from tests.conftest import ROOT

# `pip install envkit`, `pipx install 'envkit[x]'`, `py -m pip install -U envkit`: the bare name as a requirement
# (a path such as ./envkit or a longer name such as envkit-torch is not it).
STALE = re.compile(r"""\b(?:pipx?|uv\s+pip|uv\s+tool)\s+install\s+(?:-\S+\s+)*['"]?envkit(?![\w./-])""")


def _user_texts():
    yield ROOT / "README.md"
    yield from sorted((ROOT / "docs").glob("*.md"))
    yield from sorted(p for p in (ROOT / "templates").rglob("*") if p.is_file())
    yield from sorted((ROOT / "src" / "envkit").rglob("*.py"))
    yield from sorted((ROOT / "examples").glob("*.yaml"))


def test_the_pattern_finds_the_stale_forms_only():
    assert STALE.search("pip install envkit") and STALE.search("pipx install 'envkit[harness]'")
    assert STALE.search("py -m pip install -U envkit\n") and STALE.search("`pip install envkit`")
    assert not STALE.search("pip install envkit-torch") and not STALE.search("pipx install ./envkit")
    assert not STALE.search("pip install 'envkit-torch[plot]'")


def test_no_install_line_names_the_index_envkit():
    stale = [f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)}"
             for path in _user_texts() for text in [path.read_text(errors="replace")] for m in STALE.finditer(text)]
    assert not stale, "install lines that fetch the index's unrelated `envkit`:\n" + "\n".join(stale)


def test_the_distribution_is_pyprojects_and_the_docs_say_how_to_install_it():
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == DISTRIBUTION != "envkit"
    assert project["scripts"] == {"envkit": "envkit.cli:main"}
    readme = (ROOT / "README.md").read_text()
    assert install(tool="pipx") in readme and "pipx install ./envkit" in readme
    assert install(tool="pipx") in (ROOT / "docs" / "cli.md").read_text()


def test_the_license_file_holds_the_apache_text():
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text and "APPENDIX: How to apply the Apache License" in text


def _blocks(text: str) -> list[str]:
    import re as _re

    return _re.findall(r"```(?:powershell|sh|bash)\n(.*?)```", text, _re.S)


def test_the_windows_guide_runs_the_script_bypassed_and_installs_envkit_in_the_distribution():
    text = (ROOT / "docs" / "windows.md").read_text()
    blocks = _blocks(text)
    windows = next(b for b in blocks if "setup-wsl.ps1" in b)
    runs = [line for line in windows.splitlines() if "setup-wsl.ps1" in line and not line.startswith("envkit")]
    assert len(runs) == 3 and all(r.startswith("powershell -ExecutionPolicy Bypass -File .\\out\\setup-wsl.ps1") for r in runs)
    # Not on the package index yet: both installs come from the one checkout, Windows' and then WSL's view of it.
    assert "py -m pip install .\\envkit" in windows and windows.index("envkit init") < windows.index(runs[0])
    assert windows.index("git clone <this repository> envkit") < windows.index("py -m pip install .\\envkit")
    inside = next(b for b in blocks if "git clone <your repository>" in b)
    assert "pipx install /mnt/c/Users/<you>/envkit-setup/envkit" in inside and "/mnt/c" not in inside.split("git clone")[0]
    steps = next(b for b in blocks if "envkit validate" in b and "envkit init" in b and "setup-wsl" not in b)
    for word in ("envkit init", "envkit generate", "envkit doctor", "envkit validate"):
        assert word in steps, word
    assert text.index("pipx install /mnt/c/Users/<you>/envkit-setup/envkit") < text.index(steps)
    nvidia = next(b for b in blocks if "nvidia-ctk runtime configure" in b)
    assert nvidia.index("install -y nvidia-container-toolkit") < nvidia.index("nvidia-ctk runtime configure")
