"""Every class of bad input: exit 2, one clear located message, no traceback, nothing written."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from envkit.errors import ProfileError
from envkit.profile import load_profile_bytes
from tests.conftest import call_envkit

GOOD = "envkit: 1\nname: demo\nimage:\n  base: debian:bookworm\n"


def _error(text: bytes | str) -> str:
    raw = text.encode() if isinstance(text, str) else text
    with pytest.raises(ProfileError) as exc:
        load_profile_bytes(raw, "p.yaml", Path("."))
    return str(exc.value)


@pytest.mark.parametrize(
    "text, expected",
    [
        (b"", "p.yaml: the profile is empty"),
        (b"# only a comment\n", "the profile is empty"),
        (b"envkit: 1\nname: \xff\xfe\n", "p.yaml:2: not UTF-8 text (byte 0xff"),
        (b"- a\n- b\n", "p.yaml:1:1: expected a mapping"),
        (b"just a string", "expected a mapping"),
        (b"envkit: 1\nname: [unclosed\n", "p.yaml:3:1: invalid YAML"),
        (b"envkit: 1\nname: a\nname: b\n", "p.yaml:3:1: name: duplicate key (first set on line 2)"),
        (b"name: demo\n", "p.yaml:1:1: envkit: required key missing"),
        (b"envkit: 2\nname: demo\n", "p.yaml:1:1: envkit: profile version 2 is not supported"),
        (b"envkit: 1\nimage: {base: debian}\n", "name"),
    ],
)
def test_structural_errors(text, expected):
    assert expected in _error(text)


@pytest.mark.parametrize(
    "snippet, location, expected",
    [
        ("imgae:\n  base: x\n", "p.yaml:5:1: imgae", "did you mean 'image'?"),
        ("  tourch: {version: '2.5'}\n", "p.yaml:5:3: image.tourch", "did you mean 'torch'?"),
        ("run:\n  shm_sise: 8g\n", "p.yaml:6:3: run.shm_sise", "did you mean 'shm_size'?"),
        ("run:\n  ulimits: {memlok: -1}\n", "p.yaml:6:13: run.ulimits.memlok", "did you mean 'memlock'?"),
        ("run:\n  shm_size: 8gg\n", "p.yaml:6:3: run.shm_size", "did you mean 8g?"),
        ("run:\n  ipc: hosst\n", "p.yaml:6:3: run.ipc", "did you mean 'host'?"),
        ("run:\n  cpuset: '7-3'\n", "p.yaml:6:3: run.cpuset", "runs backwards"),
        ("run:\n  gpus: some\n", "p.yaml:6:3: run.gpus", "'all', 'none', a GPU count"),
        ("loader:\n  num_wrokers: 4\n", "p.yaml:6:3: loader.num_wrokers", "did you mean 'num_workers'?"),
        ("loader:\n  dtype: flaot32\n", "p.yaml:6:3: loader.dtype", "did you mean 'float32'?"),
        ("loader:\n  start_method: spwan\n", "p.yaml:6:3: loader.start_method", "did you mean 'spawn'?"),
        ("wsl:\n  memmory: 8GB\n", "p.yaml:6:3: wsl.memmory", "did you mean 'memory'?"),
        ("wsl:\n  experimental: {sparseVHD: true}\n", "p.yaml:6:18: wsl.experimental.sparseVHD", "did you mean 'sparseVhd'?"),
        ("wsl:\n  networkingMode: mirror\n", "p.yaml:6:3: wsl.networkingMode", "did you mean 'mirrored'?"),
        ("loader:\n  batch_size: '0-3'\n", "p.yaml:6:3: loader.batch_size", "expected a whole number, got '0-3'"),
        ("run:\n  ulimits: {nofile: {soft: '0-0', hard: 5}}\n", "p.yaml:6:22: run.ulimits.nofile.soft",
         "expected a whole number, got '0-0'"),
    ],
)
def test_located_errors_with_did_you_mean(snippet, location, expected):
    text = GOOD + snippet if not snippet.startswith("  ") else GOOD + snippet
    msg = _error(text)
    assert location in msg and expected in msg, msg


def test_all_errors_reported_sorted_by_line():
    msg = _error(GOOD + "run:\n  ipc: hosst\nloader:\n  batch_size: 0\n")
    lines = msg.splitlines()
    assert lines[0].startswith("p.yaml:6:3: run.ipc") and lines[1].startswith("p.yaml:8:3: loader.batch_size")


def test_anchor_bomb_is_refused_quickly():
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n"
    for i in range(1, 10):
        prev = chr(ord("a") + i - 1)
        cur = chr(ord("a") + i)
        bomb += f"{cur}: &{cur} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}]\n"
    start = time.perf_counter()
    msg = _error(bomb)
    assert time.perf_counter() - start < 2.0
    assert "anchors and aliases" in msg


def test_oversized_file_refused():
    assert "a profile is at most" in _error(b"#" * (2 * 1024 * 1024))


def test_missing_certificate_file_is_located(tmp_path):
    text = GOOD + "  ca_certificates: [certs/nope.pem]\n"
    with pytest.raises(ProfileError) as exc:
        load_profile_bytes(text.encode(), "p.yaml", tmp_path)
    assert "p.yaml:5:21: image.ca_certificates[0]: 'certs/nope.pem' is not a PEM certificate file" in str(exc.value)


@pytest.mark.parametrize("content", [b"", b"\xff\xfe", b"envkit: 1\nname: BAD\nimage: {base: x}\n", b"[1, 2]"])
def test_cli_exit_2_no_traceback_nothing_written(tmp_path, content):
    profile = tmp_path / "bad.yaml"
    profile.write_bytes(content)
    out = tmp_path / "out"
    res = call_envkit("generate", str(profile), "-o", str(out))
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr
    assert res.stderr.startswith("envkit: error: ") and str(profile) in res.stderr
    assert not out.exists()


def test_cli_missing_file(tmp_path):
    res = call_envkit("generate", str(tmp_path / "nope.yaml"))
    assert res.returncode == 2 and "no such file" in res.stderr and "envkit init" in res.stderr


def test_cli_usage_error_exit_2():
    res = call_envkit("generate", "--target", "dockerfle")
    assert res.returncode == 2 and "invalid choice" in res.stderr and "Traceback" not in res.stderr


@pytest.mark.parametrize("value", ["nan", "inf", "0", "-5", "soon"])
def test_validate_timeout_must_be_finite_and_positive(value):
    res = call_envkit("validate", "--timeout", value)
    assert res.returncode == 2 and "--timeout" in res.stderr and "Traceback" not in res.stderr


def test_pattern_words_come_from_the_field_not_its_key_name():
    """An env key named like a described field ('http') is still an env value: its words are its own."""
    message = _error(GOOD + '  env: {http: "x\\u0001"}\n')
    assert "image.env.http:" in message and "a proxy URL" not in message
    assert "expected text matching" in message


def test_union_words_stay_with_the_union_and_items_keep_their_own():
    message = _error(GOOD + "run:\n  gpus: [0, 'bad id!']\n")
    assert "run.gpus: expected 'all', 'none', a GPU count >= 1" in message
    assert "run.gpus[1]: expected a whole number, got 'bad id!'" in message


def test_cross_section_rules_are_the_models_own():
    """The model refuses, on its own, what only the loader used to: a GPU listed twice, a huge run.env."""
    from pydantic import ValidationError

    from envkit.profile.model import Profile

    base = {"envkit": 1, "name": "demo", "image": {"base": "debian:bookworm"}}
    with pytest.raises(ValidationError) as exc:
        Profile.model_validate({**base, "run": {"gpus": [0, "0"]}})
    (err,) = exc.value.errors()
    assert err["type"] == "gpu_listed_twice" and err["ctx"]["at"] == ("run", "gpus", 1)
    with pytest.raises(ValidationError) as exc:
        Profile.model_validate({**base, "run": {"env": {"A": "x" * 70_000}}})
    assert exc.value.errors()[0]["ctx"]["hint"].startswith("put large values in a file")


@pytest.mark.parametrize("snippet", ["run:\n  shm_size: {v}\n", "run:\n  ipc: {v}\n", "run:\n  ulimits: {{nofile: {v}}}\n",
                                     "image:\n  base: {v}\n"])
def test_an_over_long_value_is_shown_by_its_start_and_length(snippet):
    value = "x" * 5000
    text = GOOD.replace("image:\n  base: debian:bookworm\n", "") + snippet.format(v=value)
    if "image:" not in snippet:
        text = GOOD + snippet.format(v=value)
    message = _error(text)
    assert value not in message and "(5000 characters)" in message
    assert len(message) < 600


@pytest.mark.parametrize("argv", [("generate", "--target", "y" * 5000), ("watch", "--interval", "y" * 5000),
                                  ("harness", "--timeout", "y" * 5000)])
def test_an_over_long_argument_is_shown_by_its_start_and_length(argv):
    res = call_envkit(*argv)
    assert res.returncode == 2
    assert "y" * 200 not in res.stderr and "characters)" in res.stderr and len(res.stderr) < 1500


def test_an_absurd_prefetch_is_refused_at_load_not_a_crash_or_an_int64_overflow():
    # prefetch_factor had no ceiling: 10**23 wrote --shm-size=2190470695495605504t (exit 0), 10**400 exited 70.
    for prefetch in ("100000000000000000000000", "1" + "0" * 400):
        message = _error(GOOD + f"loader:\n  num_workers: 4\n  prefetch_factor: {prefetch}\n")
        assert message.startswith("p.yaml:7:3: loader.prefetch_factor: expected a number of at most 256")


BIGGEST = """envkit: 1
name: big
image: {base: ubuntu:22.04, torch: {version: "2.5.1", variant: cu124}}
run: {gpus: all}
loader: {num_workers: 256, batch_size: 1, sample_shape: [1048576, 262144], dtype: float32, prefetch_factor: 256}
cluster: {nodes: 4096, gpus_per_node: 64, image: r.example/x:1, entrypoint: [train.py]}
"""


def test_the_largest_valid_workload_writes_only_sizes_docker_can_store(tmp_path):
    import re

    from envkit.harness.rules.sizing import MAX_BYTES
    from envkit.units import parse_size

    (tmp_path / "envkit.yaml").write_text(BIGGEST)
    res = call_envkit("generate", "-o", "out", "--json", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    texts = [p.read_text(errors="replace") for p in (tmp_path / "out").rglob("*") if p.is_file() and p.suffix != ".pyz"]
    sizes = [parse_size(m) for t in texts for m in re.findall(r"\b\d+[kmgtp]?\b", t, re.IGNORECASE)]
    assert sizes and max(sizes) <= MAX_BYTES
    flags = call_envkit("flags", cwd=tmp_path)
    shm = re.search(r"--shm-size=(\S+)", flags.stdout)
    assert shm and parse_size(shm.group(1)) <= MAX_BYTES


@pytest.mark.parametrize("cluster, env, refused", [
    ("{procs_per_node: 4, gpus_per_node: 2, entrypoint: [t.py]}", "", True),   # rendered --nproc-per-node=4 on 2 GPUs
    ("{procs_per_node: 3, entrypoint: [t.py]}", "", True),                     # run.gpus: 2 counts as 2 per node
    ("{procs_per_node: 2, gpus_per_node: 2, entrypoint: [t.py]}", "", False),
    ("{procs_per_node: 4, gpus_per_node: 0, entrypoint: [t.py]}", "", False),  # a CPU job (gloo): any number
    ("{procs_per_node: 4, gpus_per_node: 2, entrypoint: [t.py]}", "  env: {NCCL_MULTI_RANK_GPU_ENABLE: '1'}\n", False),
])
def test_more_ranks_than_gpus_per_node_is_refused_where_nccl_would(cluster, env, refused):
    text = GOOD + f"run:\n  gpus: 2\n{env}cluster: {cluster}\n"
    if not refused:
        load_profile_bytes(text.encode(), "p.yaml", Path("."))
        return
    message = _error(text)
    assert "cluster.procs_per_node" in message and "Multiple Ranks are using the same GPU" in message
    assert "at most 2 (one per GPU)" in message
