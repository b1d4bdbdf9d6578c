"""One plan per run: generate decides each thing once and reads each input file once."""

from __future__ import annotations

import builtins
import io
import os
from pathlib import Path

from envkit.cli import main
from envkit.plan.image import Layout
from envkit.plan.loader import LoaderPlan
from envkit.plan.runsettings import RunSettings
from tests.conftest import copy_example


def _counting(monkeypatch, cls) -> list[int]:
    calls = [0]
    init = cls.__init__

    def counted(self, *a, **kw):
        calls[0] += 1
        init(self, *a, **kw)

    monkeypatch.setattr(cls, "__init__", counted)
    return calls


def test_one_generate_of_the_cluster_example_decides_once_and_reads_each_file_once(tmp_path, monkeypatch, capsys):
    profile = copy_example("cluster-2node.yaml", tmp_path)
    text = profile.read_text()
    profile.write_text(text.replace("  torch: {version", "  requirements: [requirements.txt]\n  torch: {version", 1))
    req = tmp_path / "requirements.txt"
    req.write_text("pillow==11.0.0\n")
    settings, loader = _counting(monkeypatch, RunSettings), _counting(monkeypatch, LoaderPlan)
    opened: list[str] = []
    real_os_open, real_open = os.open, builtins.open

    def os_open(path, *a, **kw):
        opened.append(os.path.realpath(path))
        return real_os_open(path, *a, **kw)

    def open_(path, *a, **kw):
        if isinstance(path, (str, bytes, os.PathLike)):
            opened.append(os.path.realpath(path))
        return real_open(path, *a, **kw)

    monkeypatch.setattr(os, "open", os_open)
    monkeypatch.setattr(builtins, "open", open_)
    monkeypatch.setattr(io, "open", open_)  # pathlib's read_bytes/read_text open through io.open
    monkeypatch.chdir(tmp_path)
    assert main(["generate", str(profile), "-o", "out"]) == 0, capsys.readouterr().err
    monkeypatch.undo()
    assert (tmp_path / "out" / "k8s.yaml").is_file() and (tmp_path / "out" / "slurm.sbatch").is_file()
    assert settings[0] == 1, f"RunSettings built {settings[0]} times"
    assert loader[0] == 1, f"the loader plan built {loader[0]} times"
    assert opened.count(os.path.realpath(req)) == 1, f"requirements.txt opened {opened.count(os.path.realpath(req))} times"
    assert (tmp_path / "out" / ".envkit" / "requirements" / "00-requirements.txt").read_text() == "pillow==11.0.0\n"


def test_the_layout_is_an_enum_the_plan_decides(tmp_path):
    from envkit.planner import build_plan
    from envkit.profile import load_profile

    assert build_plan(load_profile(copy_example("cpu-minimal.yaml", tmp_path))).image.layout is Layout.DIRECT
    assert build_plan(load_profile(copy_example("corporate.yaml", tmp_path))).image.layout in (
        Layout.STAGED, Layout.STAGED_PACKAGES)
    assert Path(build_plan(load_profile(None)).out_dir) == Path(".")
