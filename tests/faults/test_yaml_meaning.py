"""YAML read as a user means it, and every message safe to print (unit tier).

YAML 1.1's surprises (``yes``/``on`` as booleans, ``010`` as octal 8, ``1:30`` as 90, dates,
``!!set``/``!!binary``) are exit 2 at their position, never a silent 1, 8 or reordered list; a key or
value holding control, bidi or invisible characters is shown escaped, never written raw to stderr.
"""

from __future__ import annotations

import contextlib
import io
import sys
import unicodedata
from pathlib import Path

import pytest

import envkit.cli
from envkit.profile.load import load_profile_bytes
from envkit.termtext import neutralise

HEAD = "envkit: 1\nname: demo\nimage:\n  base: debian:bookworm\n"


def _validate(tmp_path: Path, body: str) -> tuple[int, str]:
    p = tmp_path / "p.yaml"
    p.write_text(HEAD + body, encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = envkit.cli.main(["generate", str(p), "-o", str(tmp_path / "out"), "--target", "run"])
    return rc, err.getvalue()


@pytest.mark.parametrize("body, message", [
    ("loader:\n  num_workers: yes\n", "p.yaml:6:3: loader.num_workers: expected 'auto' or a whole number from 0 to 256, got yes"),
    ("loader:\n  batch_size: on\n", "p.yaml:6:3: loader.batch_size: expected a whole number, got on"),
    ("loader:\n  sample_shape: [3, true, 8]\n", "p.yaml:6:21: loader.sample_shape[1]: expected a whole number, got true"),
    ("run:\n  cpus: true\n", "p.yaml:6:3: run.cpus: expected a number, got true"),
    ("run:\n  gpus: yes\n", "p.yaml:6:3: run.gpus: expected 'all', 'none', a GPU count >= 1, or a list of device ids"),
    ("run:\n  numa: on\n", "p.yaml:6:3: run.numa:"),
    ("  user: {uid: yes}\n", "p.yaml:5:10: image.user.uid: expected a whole number, got yes"),
    ("cluster:\n  nodes: on\n  entrypoint: [train.py]\n", "p.yaml:6:3: cluster.nodes: expected a whole number, got on"),
    ("wsl:\n  processors: yes\n", "p.yaml:6:3: wsl.processors: expected a whole number, got yes"),
    ("loader:\n  pin_memory: 1\n", "p.yaml:6:3: loader.pin_memory: expected true or false, got 1"),
    ("run:\n  mount_project: \"yes\"\n", "p.yaml:6:3: run.mount_project: expected true or false, got \"yes\""),
])
def test_booleans_are_no_numbers_and_numbers_no_booleans(tmp_path, body, message):
    rc, stderr = _validate(tmp_path, body)
    assert rc == 2, stderr
    assert message in stderr, stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("written, number", [("010", "8"), ("1:30", "90"), ("3", "3"), ("0x10", "16")])
def test_a_cpuset_that_yaml_reads_as_a_number_is_refused_with_a_hint_to_quote_it(tmp_path, written, number):
    rc, stderr = _validate(tmp_path, f"run:\n  cpuset: {written}\n")
    assert rc == 2, stderr
    assert (f"p.yaml:6:3: run.cpuset: expected a cpuset list as text, but YAML read {written} as the number "
            f"{number}; put it in quotes: cpuset: \"{written}\"") in stderr, stderr
    assert '"0-3"' in stderr


def test_quoted_cpusets_and_yaml_booleans_still_load():
    lp = load_profile_bytes((HEAD + 'run:\n  cpuset: "010"\n  mount_project: no\nloader:\n  pin_memory: yes\n'
                             '  num_workers: "4"\nwsl:\n  swap: 0\n').encode(), "p.yaml", Path("."))
    assert lp.profile.run.cpuset == "10" and lp.profile.run.mount_project is False
    assert lp.profile.loader.pin_memory is True and lp.profile.loader.num_workers == 4


@pytest.mark.parametrize("body, message", [
    ("  pip_packages: !!set {numpy, pillow}\n", "p.yaml:5:17: image.pip_packages: the YAML tag !!set is not allowed"),
    ("  pip_packages: !!omap [{a: 1}]\n", "p.yaml:5:17: image.pip_packages: the YAML tag !!omap is not allowed"),
    ("  tag: !!binary ZGVtbw==\n", "p.yaml:5:8: image.tag: the YAML tag !!binary is not allowed"),
    ("  torch: {version: 2024-01-01}\n", 'p.yaml:5:20: image.torch.version: YAML reads 2024-01-01 as a date; '
                                        'put it in quotes ("2024-01-01")'),
    ("  env: {BUILT: 2024-01-01 10:00:00}\n", "p.yaml:5:16: image.env.BUILT: YAML reads 2024-01-01 10:00:00 as a date"),
    ("  tag: !!timestamp 2024-01-01\n", "p.yaml:5:8: image.tag: the YAML tag !!timestamp is not allowed"),
    ("  tag: !!python/object:os.system x\n", "p.yaml:5:8: image.tag: the YAML tag !!python/object:os.system is not"),
    ("  tag: !local x\n", "p.yaml:5:8: image.tag: the YAML tag !local is not allowed"),
    ("  env: {2024-01-01: x}\n", "p.yaml:5:9: image.env: YAML reads 2024-01-01 as a date"),
])
def test_non_json_tags_are_refused_at_their_position(tmp_path, body, message):
    rc, stderr = _validate(tmp_path, body)
    assert rc == 2, stderr
    assert message in stderr, stderr


def test_a_set_never_reaches_the_dockerfile(tmp_path):
    # Before: the set's order followed the string hash seed, so each run rendered another Dockerfile.
    rc, stderr = _validate(tmp_path, "  pip_packages: !!set {numpy, pillow, scipy}\n")
    assert rc == 2 and "write a list: [a, b]" in stderr, stderr


# Characters a terminal acts on or hides: C0/C1 controls, bidi embeddings/overrides/isolates,
# zero-width characters, word joiner, BOM, line separators.
HOSTILE = ["\x1b]0;pwned\x07\x1b[8m", "\u200b", "\u200e", "\u202e", "\u2066", "\u2069", "\ufeff", "\u2060",
           "\u00ad", "\u2028", "\x85", "\x9b"]


def _unsafe(text: str) -> list[str]:
    return [c for c in text if c not in "\n\t" and unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp", "Cs", "Cn")]


@pytest.mark.parametrize("chars", HOSTILE, ids=[ascii(c) for c in HOSTILE])
def test_a_key_with_control_bidi_or_invisible_characters_is_printed_escaped(tmp_path, chars):
    # As YAML's double quotes spell them (the raw characters are refused before parsing, or kept: U+200B).
    escaped = "".join(c if c.isascii() and c.isprintable() else f"\\u{ord(c):04x}" for c in chars)
    rc, stderr = _validate(tmp_path, f'run:\n  "shm_size{escaped}": 8g\n')
    assert rc == 2, stderr
    assert not _unsafe(stderr), ascii(stderr)
    assert f"p.yaml:6:3: run.shm_size{neutralise(chars)}: unknown key" in stderr, stderr
    if len(chars) == 1:
        assert "unknown key (did you mean 'shm_size'?)" in stderr, stderr


def test_a_zero_width_space_written_raw_in_a_key_is_shown():
    with pytest.raises(Exception) as info:
        load_profile_bytes((HEAD + "run:\n  shm_size\u200b: 8g\n").encode(), "p.yaml", Path("."))
    assert "run.shm_size\\u200b: unknown key (did you mean 'shm_size'?)" in str(info.value)


@pytest.mark.parametrize("value", ["a\u202eb", "x\u200by", "\ufeffdemo"])
def test_values_written_raw_with_bidi_or_invisible_characters_are_printed_escaped(tmp_path, value):
    p = tmp_path / "p.yaml"
    p.write_text(f"envkit: 1\nname: {value}\nimage: {{base: debian:bookworm}}\n", encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = envkit.cli.main(["flags", str(p)])
    assert rc == 2 and "name:" in err.getvalue(), err.getvalue()
    assert not _unsafe(err.getvalue()), ascii(err.getvalue())


def test_neutralise_escapes_every_control_format_and_separator_character():
    unsafe = [chr(c) for c in range(sys.maxunicode + 1)
              if chr(c) != "\t" and unicodedata.category(chr(c)) in ("Cc", "Cf", "Zl", "Zp", "Cs")]
    text = "".join(unsafe)
    shown = neutralise(text)
    assert shown.isascii() and shown.isprintable(), "every one escaped"
    assert neutralise(shown) == shown, "escaping twice is escaping once"
    assert neutralise("tab\tcafé 中 😀 \u00a0") == "tab\tcafé 中 😀 \u00a0"
    assert neutralise("shm_size\u200b") == "shm_size\\u200b" and neutralise("\x1b[8m") == "\\x1b[8m"


@pytest.mark.parametrize("body, message", [
    ("loader:\n  num_workers: 010\n", 'p.yaml:6:16: loader.num_workers: YAML 1.1 reads 010 as the number 8; write 8 if '
                                     'that is meant, or put it in quotes ("010")'),
    ("loader:\n  num_workers: 1:30\n", "p.yaml:6:16: loader.num_workers: YAML 1.1 reads 1:30 as the number 90"),
    ("loader:\n  sample_shape: [3, 0224, 224]\n", "p.yaml:6:21: loader.sample_shape[1]: YAML 1.1 reads 0224 as the number 148"),
    ("run:\n  cpus: 1:30.5\n", "p.yaml:6:9: run.cpus: YAML 1.1 reads 1:30.5 as the number 90.5"),
    ("  user: {uid: 01000}\n", "p.yaml:5:15: image.user.uid: YAML 1.1 reads 01000 as the number 512"),
    ("loader:\n  <<: {num_workers: 010}\n", "p.yaml:6:21: loader.num_workers: YAML 1.1 reads 010 as the number 8"),
])
def test_octal_and_base_60_numbers_are_refused_wherever_they_would_load(tmp_path, body, message):
    rc, stderr = _validate(tmp_path, body)
    assert rc == 2, stderr
    assert message in stderr, stderr


def test_numbers_yaml_1_2_reads_alike_still_load():
    lp = load_profile_bytes((HEAD + "  user: {uid: 1_000}\nloader:\n  num_workers: 0\n  batch_size: 0x10\n"
                             "run:\n  cpus: 00.5\n").encode(), "p.yaml", Path("."))
    assert (lp.profile.image.user.uid, lp.profile.loader.num_workers, lp.profile.loader.batch_size,
            lp.profile.run.cpus) == (1000, 0, 16, 0.5)
