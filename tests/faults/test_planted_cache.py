"""Nothing envkit ships or runs comes from a cache folder: files planted where compiled templates and the harness
zipapp could be cached (including a world-writable folder, compiled code, and a .pyz wrapped with a valid hash
of itself) are neither executed nor shipped; ``generate`` renders from envkit's own sources."""

from __future__ import annotations

import hashlib
import io
import marshal
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import jinja2
import jinja2.bccache

from envkit import __version__
from envkit.harness.zipapp import zip_bytes
from envkit.render import templates_dir
from tests.conftest import call_envkit

HARNESS = Path(__file__).resolve().parents[2] / "src" / "envkit" / "harness"


def _payload(marker: Path) -> str:
    return f"import pathlib; pathlib.Path({str(marker)!r}).write_text('executed')\n"


def _planted_pyz(marker: Path) -> bytes:
    buf = io.BytesIO()
    buf.write(b"#!/usr/bin/env python3\n")
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("__main__.py", _payload(marker))
        zf.writestr("envkit_harness/__init__.py", _payload(marker))
        zf.writestr("envkit_harness/cli.py", _payload(marker) + "def main():\n    return 0\n")
    return buf.getvalue()


def _harness_sources_key() -> str:
    """The name a harness cache entry had: the hash of every harness source's name and bytes."""
    names = sorted(p.name for p in HARNESS.glob("*.py"))
    sources = b"".join(n.encode() + b"\0" + (HARNESS / n).read_bytes() + b"\0" for n in names)
    return hashlib.sha256(sources).hexdigest()[:32]


def _plant(base: Path, marker: Path) -> None:
    """Every former cache location under ``base`` (an XDG cache folder), each entry named as it was looked up."""
    code = compile(_payload(marker), "<planted>", "exec")
    templates = sorted(p.name for p in templates_dir().iterdir() if p.suffix == ".j2")
    assert templates

    compiled = base / "envkit" / f"templates-{__version__}"
    compiled.mkdir(parents=True)
    for name in templates:
        key = hashlib.sha256(name.encode() + b"\0" + (templates_dir() / name).read_bytes()).hexdigest()[:32]
        (compiled / f"{key}.code").write_bytes(marshal.dumps(code))
    (compiled / "planted.code").write_bytes(marshal.dumps(code))

    # Jinja2's own bytecode cache format, as a FileSystemBytecodeCache in the older jinja-<version> folder.
    jinja_dir = base / "envkit" / f"jinja-{__version__}"
    jinja_dir.mkdir(parents=True)
    cache = jinja2.FileSystemBytecodeCache(str(jinja_dir))
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(templates_dir())))
    for name in templates:
        filename = str(templates_dir() / name)
        source = (templates_dir() / name).read_text(encoding="utf-8")
        bucket = jinja2.bccache.Bucket(env, cache.get_cache_key(name, filename), cache.get_source_checksum(source))
        bucket.code = code
        cache.dump_bytecode(bucket)

    harness = base / "envkit" / f"harness-{__version__}"
    harness.mkdir(parents=True)
    data = _planted_pyz(marker)
    wrapped = hashlib.sha256(data).hexdigest().encode() + data  # a self-hash that checks out
    (harness / f"{_harness_sources_key()}.pyz").write_bytes(wrapped)
    (harness / "planted.pyz").write_bytes(wrapped)
    (harness / "envkit_harness.pyz").write_bytes(data)

    for folder in [base / "envkit", *(p for p in (base / "envkit").rglob("*") if p.is_dir())]:
        os.chmod(folder, 0o777)  # world-writable: anyone on the machine could have planted these


def _tree(base: Path) -> dict[str, bytes]:
    return {str(p.relative_to(base)): p.read_bytes() for p in sorted(base.rglob("*")) if p.is_file()}


def test_the_planted_payloads_would_create_the_marker(tmp_path):
    """The payloads are live: run directly, they do create the marker (so its absence below means something)."""
    marker = tmp_path / "marker"
    _plant(tmp_path / "cache", marker)
    exec(marshal.loads((tmp_path / "cache" / "envkit" / f"templates-{__version__}" / "planted.code").read_bytes()))
    assert marker.read_text() == "executed"
    marker.unlink()
    pyz = tmp_path / "cache" / "envkit" / f"harness-{__version__}" / "envkit_harness.pyz"
    subprocess.run([sys.executable, str(pyz)], check=True, timeout=60)
    assert marker.exists()


def test_generate_neither_runs_nor_ships_what_a_cache_folder_holds(tmp_path):
    marker = tmp_path / "marker"
    cache, home = tmp_path / "cache", tmp_path / "home"
    _plant(cache, marker)
    _plant(home / ".cache", marker)  # the default location when XDG_CACHE_HOME is unset
    before = {"cache": _tree(cache), "home": _tree(home)}
    project = tmp_path / "project"
    project.mkdir()

    for name, env in (("xdg", {"XDG_CACHE_HOME": str(cache), "HOME": str(home)}),
                      ("home", {"XDG_CACHE_HOME": "", "HOME": str(home)})):
        res = call_envkit("generate", "-o", f"out-{name}", cwd=project, env={**env, "ENVKIT_NO_CACHE": ""})
        assert res.returncode == 0, res.stderr
        assert not marker.exists(), f"a planted payload ran ({name})"
        assert (project / f"out-{name}" / "envkit_harness.pyz").read_bytes() == zip_bytes()
    assert {"cache": _tree(cache), "home": _tree(home)} == before, "a cache folder was written to"

    clean = {"XDG_CACHE_HOME": str(tmp_path / "empty"), "HOME": str(tmp_path / "empty-home")}
    res = call_envkit("generate", "-o", "out-clean", cwd=project, env=clean)
    assert res.returncode == 0, res.stderr
    for name in ("xdg", "home"):
        planted = _tree(project / f"out-{name}")
        planted.pop(".envkit-manifest.json", None)
        reference = _tree(project / "out-clean")
        reference.pop(".envkit-manifest.json", None)
        assert planted == reference
    assert not (tmp_path / "empty").exists() and not (tmp_path / "empty-home").exists(), "generate made a cache"
