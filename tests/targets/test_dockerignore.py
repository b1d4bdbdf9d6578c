"""The project's .dockerignore selects what docker-py's own ``exclude_paths`` selects (unit tier).

A tree of files and one .dockerignore per case; envkit's selection (:func:`envkit.project.project_files`)
must equal docker-py's, less what envkit leaves out on its own (the top-level .dockerignore, which
docker-py always keeps, and folders docker-py lists beside the files).
"""

from __future__ import annotations

import os
import re
import warnings
from pathlib import Path

import pytest
from docker.utils import fnmatch as docker_fnmatch
from docker.utils.build import exclude_paths
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envkit.errors import ProfileError
from envkit.project import compile_glob, read_dockerignore
from tests.conftest import project_files

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
    # Backtracking regexes take seconds on runs of double stars; RE2 the same selection, in linear time.
    "runs of double stars": ["**/**/**/**/**/**/**/**/*.bin", "**/**/sub/**/**", "docs/****", "*****.log"],
    "double stars before a dot-dot": ["**/**/../**/**/build/**/**"],
    # Many wildcards.
    "many wildcards": ["**/s*/p*/*_*.py", "d*/**/*e*p*.bin", "!**/d*/**/k*p*.*t"],
    "stars in a class": ["[**/]*.txt", "x[*]*y.txt"],
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


# Short patterns and paths over the characters that matter to docker-py's translate.
_GLOBS = st.text(alphabet="ab/*?[]!^\\.-\n", max_size=10)
_PATHS = st.text(alphabet="abAB/.*[]!-\n", max_size=10)


@settings(max_examples=1000, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
@given(pattern=_GLOBS, paths=st.lists(_PATHS, min_size=1, max_size=8))
def test_compiled_globs_match_what_docker_pys_fnmatch_matches(pattern, paths):
    with warnings.catch_warnings():  # "[[": Python's re warns of a future nested set, in docker-py too
        warnings.simplefilter("ignore")
        _same_as_docker_py(pattern, paths)


def _same_as_docker_py(pattern: str, paths: list[str]) -> None:
    try:
        glob = compile_glob(pattern)
    except ProfileError:  # a bracket class Python's re refuses ([b-a]): docker-py raises re.error on it
        with pytest.raises(re.error):
            docker_fnmatch.fnmatch("a", pattern)
        return
    for path in paths:
        assert glob(path) == docker_fnmatch.fnmatch(path, pattern), (pattern, path)


@pytest.mark.parametrize("pattern", ["[[:alpha:]]*.py", "src/[[:digit:]x]*", "[[:bogus:]]", "[![:a]b"])
def test_a_posix_looking_class_means_what_it_means_to_docker_py(pattern):
    """"[[:alpha:]]" is a class of "[", ":", "a"... then a literal "]" to Python's re (and so to docker-py);
    to RE2 it would be a POSIX class."""
    with warnings.catch_warnings():  # Python's re warns of a future nested set
        warnings.simplefilter("ignore")
        _same_as_docker_py(pattern, ["a]x.py", "[]x.py", "b.py", "src/1", "src/:]q", "src/x]", "[bogus:]]", ":b", "[b"])


@pytest.mark.parametrize("pattern, depth, name", [
    ("**/**/**/**/**/**/**/**/x", 20, "d"),  # more than 20 s in docker-py's backtracking regex
    ("**/" + "a**/" * 8 + "x", 40, "a"),  # more than 50 s there
])
def test_a_pattern_that_makes_docker_pys_regex_backtrack_is_matched_by_re2(pattern, depth, name):
    """The bound itself (time) is benchmarks/bench_dockerignore.py's; here: RE2 gives docker-py's answer
    on the short path, and takes the deep one, which Python's regex would not finish in minutes."""
    glob = compile_glob(pattern)
    assert glob("/".join([name] * 3 + ["x"])) == docker_fnmatch.fnmatch("/".join([name] * 3 + ["x"]), pattern)
    assert glob("/".join([name] * depth + ["file"])) is False


def test_docker_pys_patterns_are_read_not_patched(monkeypatch):
    """DockerIgnore uses docker-py's parsed patterns (exclusion, dirs, cleaned_pattern) and never calls
    or replaces ``Pattern.match``, a private method an upgrade may change."""
    from docker.utils import build

    from envkit.project import DockerIgnore

    class Guarded(build.Pattern):
        def match(self, filepath):
            raise AssertionError("Pattern.match called")

        def __setattr__(self, name, value):
            assert name != "match", "Pattern.match replaced"
            super().__setattr__(name, value)

    monkeypatch.setattr(build, "Pattern", Guarded)
    ignore = DockerIgnore(["data/", "*.log", "!keep.log"])
    assert ignore.excluded("data/x.bin") and ignore.excluded("a.log") and not ignore.excluded("keep.log")
    assert ignore.excluded("dätä/data/x.bin") is False and ignore.excluded("data/dätä.bin") is True


def test_each_pattern_is_compiled_once_however_long_the_dockerignore(tmp_path, monkeypatch):
    # docker-py caches 100 compiled expressions: with more patterns it recompiled them for every path.
    for d in range(5):
        for f in range(5):
            (tmp_path / f"d{d}" / f"f{f}.py").parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / f"d{d}" / f"f{f}.py").write_text("")
    patterns = [f"d{i}/*/f{i}.py" for i in range(150)]
    (tmp_path / ".dockerignore").write_text("\n".join(patterns) + "\n")
    compiled: list[str] = []
    real = docker_fnmatch.translate
    monkeypatch.setattr(docker_fnmatch, "translate", lambda pat: compiled.append(pat) or real(pat))
    assert len(project_files(tmp_path)) == 25
    assert len(compiled) <= len(patterns) + 2  # with !Dockerfile and !.dockerignore


def test_an_invalid_class_in_a_dockerignore_is_refused_not_a_crash(tmp_path):
    (tmp_path / "a.txt").write_text("")
    (tmp_path / ".dockerignore").write_text("[b-a].txt\n")
    with pytest.raises(ProfileError, match=r"\.dockerignore: pattern '\[b-a\]\.txt' is not valid"):
        project_files(tmp_path)


@settings(max_examples=500, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
@given(rules=st.lists(st.text(alphabet="ab/*?[]!.", min_size=1, max_size=8), min_size=1, max_size=5),
       paths=st.lists(st.text(alphabet="abAB/.", min_size=1, max_size=10), min_size=1, max_size=8))
def test_excluded_decides_as_docker_pys_pattern_matcher(rules, paths):
    from docker.utils.build import PatternMatcher

    from envkit.project import DockerIgnore

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            ours = DockerIgnore(rules)
        except ProfileError:
            return  # a bracket class re refuses (compared with docker-py above)
        theirs = PatternMatcher([*rules, "!Dockerfile"])
        for path in paths:
            assert ours.excluded(path) == bool(theirs.matches(path)), (rules, path)
