"""YAML merge keys (``<<``) read as YAML 1.1's merge spec and Compose read them: the earlier mapping wins.

PyYAML 6.0.4's own flattening tells keys apart by object identity, so ``<<: [*a, *b]`` gave ``b``'s
value for ``shm_size`` (a string PyYAML does not intern) and ``a``'s for a one-letter key.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from envkit.errors import ProfileError
from envkit.profile import load_profile_bytes
from envkit.profile.yamlsrc import read_yaml

ANCHORS = "a: &a {shm_size: 1g, s: 1}\nb: &b {shm_size: 2g, s: 2, cpus: 2}\n"


@pytest.mark.parametrize("order, expected", [("[*a, *b]", ("1g", 1)), ("[*b, *a]", ("2g", 2))])
def test_the_earlier_mapping_wins_whatever_the_key(order, expected):
    data, positions = read_yaml(f"{ANCHORS}run:\n  <<: {order}\n".encode(), "p.yaml")
    assert (data["run"]["shm_size"], data["run"]["s"]) == expected
    assert data["run"]["cpus"] == 2
    # A merged key points at the line where its value is written.
    assert positions[("run", "shm_size")][0] == (1 if expected[0] == "1g" else 2)


def test_a_key_written_in_the_mapping_wins_over_a_merged_one():
    data, positions = read_yaml(f"{ANCHORS}run:\n  shm_size: 4g\n  <<: [*a, *b]\n".encode(), "p.yaml")
    assert data["run"] == {"shm_size": "4g", "s": 1, "cpus": 2}
    assert positions[("run", "shm_size")] == (4, 3)


def test_a_single_merged_mapping_and_a_nested_merge():
    text = "a: &a {shm_size: 1g}\nb: &b\n  <<: *a\n  cpus: 3\nrun:\n  <<: *b\n"
    data, _ = read_yaml(text.encode(), "p.yaml")
    assert data["run"] == {"shm_size": "1g", "cpus": 3}


def test_two_merge_keys_in_one_mapping_are_a_duplicate_key():
    text = "envkit: 1\nname: d\nimage: &i {base: debian:bookworm}\nwsl: &w {memory: 8GB}\nrun:\n  <<: *i\n  <<: *w\n"
    with pytest.raises(ProfileError) as exc:
        load_profile_bytes(text.encode(), "p.yaml", Path("."))
    assert "p.yaml:7:3: duplicate key '<<' (first set on line 6)" in str(exc.value)
    assert "<<: [*a, *b]" in str(exc.value)


def test_merging_a_scalar_is_refused_at_its_place():
    with pytest.raises(ProfileError) as exc:
        read_yaml(b"a: &a 3\nrun:\n  <<: [*a]\n", "p.yaml")
    assert str(exc.value).startswith("p.yaml:1:4: '<<' merges mappings")


def test_a_profile_reads_merged_settings():
    text = "envkit: 1\nname: d\nimage: {base: debian:bookworm}\nrun:\n  <<: [{shm_size: 1g}, {shm_size: 2g}]\n"
    profile = load_profile_bytes(text.encode(), "p.yaml", Path(".")).profile
    assert profile.run.shm_size == 1 << 30
