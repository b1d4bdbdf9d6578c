"""docs/cluster.md's worked example is real output: the blocks hold exactly what generate writes."""

from __future__ import annotations

import os
import re

from envkit.generation import render_all
from envkit.profile import load_profile
from tests.conftest import ROOT, copy_example

DOC = ROOT / "docs" / "cluster.md"
BLOCK = r"(<!-- cluster:{name} -->\n```\w*\n)(.*?)(```\n)"


def test_worked_example_is_real_output(tmp_path):
    files = {"out/" + f.path: f.content.decode()
             for f in render_all(load_profile(copy_example("cluster-2node.yaml", tmp_path)), tmp_path / "out",
                                 ("k8s", "trainjob"))}
    text = DOC.read_text()
    if os.environ.get("ENVKIT_UPDATE_GOLDEN") == "1":  # the same switch as the golden files
        for name, content in files.items():
            text = re.sub(BLOCK.format(name=re.escape(name)), lambda m, c=content: m.group(1) + c + m.group(3), text,
                          count=1, flags=re.S)
        DOC.write_text(text)
    blocks = dict(re.findall(r"<!-- cluster:(\S+) -->\n```\w*\n(.*?)```\n", text, re.S))
    assert set(blocks) == {"out/k8s.yaml", "out/trainjob.yaml"}
    for name, content in files.items():
        assert blocks[name] == content, f"docs/cluster.md's {name} is stale (ENVKIT_UPDATE_GOLDEN=1 to update)"


def test_readme_links_the_cluster_page():
    assert "(docs/cluster.md)" in (ROOT / "README.md").read_text()
