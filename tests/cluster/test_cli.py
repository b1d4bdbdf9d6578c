"""The cluster targets through the real CLI: bad input exits 2 with a located message; warnings name keys."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from envkit.cli import main
from envkit.targets.kube import kube_warnings as _kube_warnings
from tests.conftest import plan_of
from envkit.profile import load_profile, load_profile_bytes
from envkit.render import DataMap, Flow, Note, Word, to_kube_yaml
from tests.conftest import call_envkit, copy_example

BASE = "envkit: 1\nname: demo\nimage:\n  base: debian:bookworm\n  tag: reg.example.com/demo:1\n"
CLUSTER = "cluster:\n  entrypoint: [train.py]\n  kubernetes:\n    volumes: [{claim: code, mount: /workspace}]\n"


def test_generate_writes_both_manifests(tmp_path):
    copy_example("cluster-2node.yaml", tmp_path)
    res = call_envkit("generate", "cluster-2node.yaml", "-o", "out", "--target", "k8s", "--target", "trainjob",
                     cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert sorted(p.name for p in (tmp_path / "out").iterdir() if not p.name.startswith(".")) == \
        ["k8s.yaml", "trainjob.yaml"]
    # The example's memlock (uid 1001) is the one thing a non-root pod cannot get: the nodes' runtime sets it.
    (line,) = [w for w in res.stderr.splitlines() if "warning:" in w]  # the shm sizing is a note
    assert "cluster-2node.yaml: run.ulimits.memlock: Kubernetes (k8s, trainjob) cannot raise memlock" in line


def test_all_targets_include_the_cluster_ones_only_with_a_cluster_section(tmp_path):
    (tmp_path / "plain.yaml").write_text(BASE)
    (tmp_path / "c.yaml").write_text(BASE + "run: {cpus: 4, memory: 8g}\n" + CLUSTER)
    assert call_envkit("generate", "plain.yaml", "-o", "a", cwd=tmp_path).returncode == 0
    assert call_envkit("generate", "c.yaml", "-o", "b", cwd=tmp_path).returncode == 0
    assert not (tmp_path / "a" / "k8s.yaml").exists() and not (tmp_path / "a" / "trainjob.yaml").exists()
    assert (tmp_path / "b" / "k8s.yaml").is_file() and (tmp_path / "b" / "trainjob.yaml").is_file()


@pytest.mark.parametrize("target", ["k8s", "trainjob"])
def test_cluster_target_without_cluster_section_exits_2(target, tmp_path):
    (tmp_path / "p.yaml").write_text(BASE)
    res = call_envkit("generate", "p.yaml", "-o", "out", "--target", target, cwd=tmp_path)
    assert res.returncode == 2
    assert f"p.yaml: --target {target} needs a cluster: section" in res.stderr and "Traceback" not in res.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("snippet, where, hint", [
    ("cluster:\n  nodse: 2\n  entrypoint: [t.py]\n", "p.yaml:7:3: cluster.nodse", "did you mean 'nodes'?"),
    ("cluster:\n  entrypoint: [t.py]\n  kubernetes: {namespce: ml}\n", "p.yaml:8:16: cluster.kubernetes.namespce",
     "did you mean 'namespace'?"),
    ("cluster:\n  entrypoint: [t.py]\n  kubernetes:\n    volumes: [{claim: d, mount: /d, readonly: true}]\n",
     "p.yaml:9:37: cluster.kubernetes.volumes[0].readonly", "did you mean 'read_only'?"),
])
def test_cluster_typo_is_located_with_did_you_mean(snippet, where, hint, tmp_path, monkeypatch, capsys):
    (tmp_path / "p.yaml").write_text(BASE + snippet)
    monkeypatch.chdir(tmp_path)
    rc = main(["generate", "p.yaml", "-o", "out", "--target", "k8s"])  # in-process: the same exit path, faster
    err = capsys.readouterr().err
    assert rc == 2 and where in err and hint in err, err


def _warnings(run: str = "", cluster: str = CLUSTER, image_tag: str | None = "reg.example.com/demo:1") -> list[str]:
    text = BASE if image_tag else BASE.replace("  tag: reg.example.com/demo:1\n", "")
    profile = load_profile_bytes((text + run + cluster).encode(), "p.yaml", "/").profile
    return _kube_warnings(plan_of(profile))


GUARANTEED = "run:\n  cpus: 4\n  memory: 8g\n"


@pytest.mark.parametrize("run, cluster, image_tag, key", [
    ("run:\n  cpuset: '0-3'\n  memory: 8g\n", CLUSTER, "x.io/d:1", "run.cpuset: "),
    (GUARANTEED + "  ulimits: {nofile: 1024}\n", CLUSTER, "x.io/d:1", "run.ulimits.nofile: "),
    (GUARANTEED + "  ulimits: {memlock: -1}\n", CLUSTER, "x.io/d:1", "run.ulimits.memlock: "),
    (GUARANTEED + "  ipc: host\n", CLUSTER, "x.io/d:1", "run.ipc: "),
    (GUARANTEED + "  gpus: [0, 1]\n", CLUSTER, "x.io/d:1", "run.gpus: "),
    (GUARANTEED + "  numa: 1\n", CLUSTER, "x.io/d:1", "run.numa: "),
    (GUARANTEED, CLUSTER, None, "image.tag: "),
    (GUARANTEED, CLUSTER.replace("  entrypoint:", "  image: team/demo:1\n  entrypoint:"), "x.io/d:1", "cluster.image: "),
    (GUARANTEED + "  volumes: ['/data:/data']\n", CLUSTER, "x.io/d:1", "run.volumes: "),
    ("run:\n  cpus: 4\n", CLUSTER, "x.io/d:1", "run.memory: "),
])
def test_each_warning_names_its_key(run, cluster, image_tag, key):
    warnings = _warnings(run, cluster, image_tag)
    assert [w for w in warnings if w.startswith(key)], warnings
    assert len(warnings) == 1, warnings  # one line per thing, nothing else for these profiles


def test_code_neither_in_the_image_nor_on_a_volume_is_warned():
    """A cluster section copies the project into the image by default (Profile.copies_project); with
    image.copy_project: false and no claim at image.workdir, the nodes would have no code."""
    bare = "cluster:\n  entrypoint: [train.py]\n"
    assert _warnings(GUARANTEED, bare) == []
    text = BASE.replace("  tag: reg.example.com/demo:1\n", "  tag: reg.example.com/demo:1\n  copy_project: false\n")
    profile = load_profile_bytes((text + GUARANTEED + bare).encode(), "p.yaml", "/").profile
    warnings = _kube_warnings(plan_of(profile))
    assert len(warnings) == 1 and warnings[0].startswith("cluster.entrypoint: "), warnings
    assert "image.copy_project: true" in warnings[0]


def test_warnings_reach_the_user_and_strict_refuses(tmp_path):
    (tmp_path / "p.yaml").write_text(BASE + "run: {cpus: 4, memory: 8g, cpuset: '0-3'}\n" + CLUSTER)
    res = call_envkit("generate", "p.yaml", "-o", "out", "--target", "k8s", cwd=tmp_path)
    assert res.returncode == 0 and "envkit: warning: p.yaml: run.cpuset: Kubernetes" in res.stderr
    # Only when a cluster target is rendered: run.sh honours the cpuset.
    assert "warning: p.yaml: run.cpuset" not in call_envkit("generate", "p.yaml", "-o", "o2", "--target", "run",
                                                           cwd=tmp_path).stderr
    res = call_envkit("generate", "p.yaml", "-o", "o3", "--target", "k8s", "--strict", cwd=tmp_path)
    assert res.returncode == 2 and not (tmp_path / "o3").exists()


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",))))
def test_kube_yaml_round_trips_any_text(text):
    """The dumper the Kubernetes targets use: any string reads back exactly, as a value, a data key and in a
    one-line list, next to a Word and under a Note key."""
    doc = {"key": text, "labels": DataMap({text: text}), "list": Flow([text, text]), "kind": Word("Job"),
           Note("n", "a note"): [{"name": text}]}
    assert yaml.safe_load(to_kube_yaml([doc])) == {"key": text, "labels": {text: text}, "list": [text, text],
                                                   "kind": "Job", "n": [{"name": text}]}


def test_default_profile_has_no_cluster_section():
    assert load_profile(None).profile.cluster is None
