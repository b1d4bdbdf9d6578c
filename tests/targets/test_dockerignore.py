"""The project's .dockerignore selects what docker-py's own ``exclude_paths`` selects (unit tier).

A tree of files and one .dockerignore per case; envkit's selection (:func:`envkit.project.project_files`)
must equal docker-py's, less what envkit leaves out on its own (the top-level .dockerignore, which
docker-py always keeps, and folders docker-py lists beside the files).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from docker.utils.build import exclude_paths

from envkit.project import project_files, read_dockerignore

TREE = ("train.py", "token1.json", "tokenA.json", "token12.json", "a.txt", "b.txt", "d.txt", "x*y.txt", "xzy.txt", "x\\zy.txt",
        "data/keep.txt", "data/big.bin", "data/sub/deep.bin", "data/sub/keep.txt", "src/pkg/mod.py",
        "src/pkg/test_mod.py", "src/data/x.bin", "logs/run1.log", "logs/runA.log", "notes.log", "build/out.o",
        "docs/index.md", "docs/build/page.html", "c1/f.txt", "cx/f.txt", "?.txt")

CASES = {
    "classes": ["token[0-9].json", "[a-c].txt"],
    "negated class": ["token[!0-9].json", "logs/run[!0-9].log"],
    # docker-py keeps a backslash literal (Go's filepath.Match would escape the star with it).
    "escape": ["x\\*y.txt"],
    "re-include": ["*.log", "!notes.log", "data", "!data/keep.txt"],
    "re-include deep": ["data/**", "!data/**/keep.txt"],
    "double star": ["**/*.bin", "**/build"],
    "leading slash": ["/build", "/docs/build/", "/src/pkg/test_*.py"],
    "trailing slash": ["data/", "logs/"],
    "question mark": ["c?/f.txt", "token?.json", "?.txt"],
    "comments and blanks": ["# train.py", "", "   ", "#*.txt", "b.txt  "],
    "exclude all but": ["*", "!train.py", "!src/", "src/**/test_*"],
    "dot": [".", "./a.txt", "docs/../b.txt"],
}


def _docker_selection(root: Path, rules: list[str]) -> set[str]:
    chosen = exclude_paths(str(root), list(rules))
    return {p for p in chosen if os.path.isfile(root / p) and not os.path.islink(root / p)} - {".dockerignore"}


@pytest.mark.parametrize("rules", list(CASES.values()), ids=list(CASES))
def test_the_selection_is_docker_pys(tmp_path, rules):
    for rel in TREE:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(rel)
    (tmp_path / ".dockerignore").write_text("\n".join(rules) + "\n")
    # Lines as docker-py's build reads them: stripped, blank and `#` lines dropped.
    docker_rules = read_dockerignore(tmp_path)
    assert docker_rules == [r.strip() for r in rules if r.strip() and not r.strip().startswith("#")]
    expected = _docker_selection(tmp_path, docker_rules)
    assert set(project_files(tmp_path)) == expected
    assert expected != set(TREE)  # every case excludes something


def test_a_character_class_excludes_what_docker_excludes(tmp_path):
    for rel in ("token1.json", "tokenA.json"):
        (tmp_path / rel).write_text("{}")
    (tmp_path / ".dockerignore").write_text("token[0-9].json\n")
    assert project_files(tmp_path) == ["tokenA.json"]


def test_a_dockerignore_over_the_cap_is_refused(tmp_path):
    from envkit.errors import ProfileError

    (tmp_path / ".dockerignore").write_bytes(b"#" * (1024 * 1024 + 1))
    with pytest.raises(ProfileError, match=r"\.dockerignore"):
        project_files(tmp_path)
