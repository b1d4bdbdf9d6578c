"""docs/cluster.md's worked example is real output: the blocks hold exactly what generate writes
(the ``golden`` fixture checks the page with the real files put in its blocks)."""

from __future__ import annotations

import re

from envkit.generation import render_all
from envkit.profile import load_profile
from tests.conftest import ROOT, copy_example

DOC = ROOT / "docs" / "cluster.md"
BLOCK = re.compile(r"(<!-- cluster:(\S+) -->\n```\w*\n)(.*?)(```\n)", re.S)


def test_worked_example_is_real_output(tmp_path, golden):
    files = {"out/" + f.path: f.content.decode()
             for f in render_all(load_profile(copy_example("cluster-2node.yaml", tmp_path)), tmp_path / "out",
                                 ("k8s", "trainjob"))}
    text = DOC.read_bytes().decode()
    assert {m.group(2) for m in BLOCK.finditer(text)} == {"out/k8s.yaml", "out/trainjob.yaml"}
    golden.check(DOC, BLOCK.sub(lambda m: m.group(1) + files[m.group(2)] + m.group(4), text).encode())


def test_readme_links_the_cluster_page():
    assert "(docs/cluster.md)" in (ROOT / "README.md").read_text()
