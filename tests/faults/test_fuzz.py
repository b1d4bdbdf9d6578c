"""Property tier: generated profiles, .wslconfig texts and expectation JSON.

For every input: no exit 70, no traceback, exit 0 or 2 only, nothing written on error, and no
control, bidi or invisible character on stderr (YAML 1.1 scalars, tags and keys holding such
characters are among the generated profiles). 200 examples per input kind by default, 2 000 in CI
(the README's test command passes ``--fuzz-examples=2000``; ``ENVKIT_FUZZ_EXAMPLES`` also sets it; tests/conftest.py registers the
profile), derandomized so CI is stable; the commands run in-process through
``envkit.cli.main`` (a subprocess per example would take minutes).
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import string
import tempfile
import unicodedata
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import envkit.cli
from envkit.harness.checks.shm import check_shm
from envkit.harness.checks.system import check_cpus, check_gpus, check_ulimits
from envkit.harness.errors import UsageError as HarnessUsageError
from envkit.harness.expectation import load_expect, resolve_loader
from envkit.wslmerge import decode_config, merge_ini
from tests.conftest import FUZZ_PROFILE

FUZZ = settings(settings.get_profile(FUZZ_PROFILE), deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))

_parser = envkit.cli.build_parser()


@pytest.fixture(autouse=True)
def _one_parser(monkeypatch):
    # argparse setup costs more than a whole profile load; one parser serves every example.
    monkeypatch.setattr(envkit.cli, "build_parser", lambda only=None: _parser)


_SCRATCH: list[Path] = []


def _scratch() -> Path:
    """One folder for every example (a fresh temporary folder per example costs more than the example)."""
    if not _SCRATCH:
        _SCRATCH.append(Path(tempfile.mkdtemp(prefix="envkit-hardening-fuzz-")))
    return _SCRATCH[0]


@pytest.fixture(autouse=True, scope="module")
def _scratch_cleanup():
    yield
    for d in _SCRATCH:
        shutil.rmtree(d, ignore_errors=True)
    _SCRATCH.clear()


def _main(args: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = envkit.cli.main(args)
    return rc, err.getvalue()


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# Characters that broke envkit before: C0 controls, DEL, NEL, bidi, U+2028, U+FFFE, surrogate-free astral.
NASTY = "\x00\x01\x07\x08\x0b\x0c\x1b\x7f\x85\u2028\u2029\u202e\ufeff\ufffe\uffff\U0001f600"
TEXT = st.text(alphabet=string.printable + NASTY + "é中", max_size=30)
SCALAR = st.one_of(TEXT, st.integers(min_value=-(2**80), max_value=2**80), st.none(), st.booleans(),
                   st.floats(allow_nan=True, allow_infinity=True),
                   st.sampled_from(["8g", "1e3", "0.001", "1.0000000001", "-1", "9223372036854775808b", "a.", "/",
                                    "..", "/workspace/../..", "data:/", "auto", "all", "nan"]))
VALUE = st.recursive(SCALAR, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                      st.dictionaries(TEXT, inner, max_size=4)), max_leaves=6)
KEYS = [("name",), ("image", "base"), ("image", "tag"), ("run", "shm_size"), ("run", "memory"), ("run", "cpus"),
        ("run", "gpus"), ("run", "ipc"), ("run", "volumes"), ("run", "env"), ("run", "ulimits"),
        ("run", "cpuset_cpus"), ("loader", "num_workers"), ("loader", "batch_size"), ("loader", "sample_shape"),
        ("loader", "dtype"), ("image", "workdir"), ("image", "user"), ("image", "system_packages"),
        ("image", "pip_packages"), ("image", "torch"), ("wsl", "memory"), ("wsl", "processors"), ("proxy",),
        ("unknown",), ("envkit",)]


# YAML 1.1's surprises, written raw: booleans, octal and sexagesimal numbers, dates, non-finite floats.
YAML11 = ["yes", "no", "on", "off", "y", "n", "Y", "N", "YES", "On", "010", "-010", "0o10", "0x1f", "1:30", "-1:30",
          "1_000", "0b101", "190:20:30.15", "2024-01-01", "2024-01-01 10:00:00", "2001-12-14t21:59:43.10-05:00",
          ".inf", "-.inf", ".nan", ".NaN", "~", "1e3", "+1", "0.", "-0", "[1:30, 010, yes]", "{a: 2024-01-01}",
          "{<<: {soft: 010, hard: 1:30}}", "{1: 010, 2024-01-01: x}"]
# Tags: JSON's kinds spelled explicitly, and everything else (refused; !!python/... safe_load refuses too).
TAGS = ["!!set {a, b}", "!!binary ZGVtbw==", "!!timestamp 2024-01-01", "!!python/object:os.system x",
        "!!python/name:os.system", "!!python/tuple [1]", "!!omap [{a: 1}]", "!!pairs [{a: 1}]", "!local x",
        "!<tag:yaml.org,2002:set> {a}", "!!str 5", "!!int '8'", "!!float 1", "!!bool yes", "!!null ''", "!!seq [a]",
        "!!map {a: 1}", "&x !!set {a} ", "!!merge x"]
RAW_KEYS = [("run", "shm_size"), ("run", "cpuset"), ("run", "cpus"), ("run", "gpus"), ("run", "numa"),
            ("run", "mount_project"), ("run", "ulimits"), ("run", "env"), ("loader", "num_workers"),
            ("loader", "batch_size"), ("loader", "pin_memory"), ("loader", "sample_shape"), ("image", "tag"),
            ("image", "pip_packages"), ("image", "user"), ("image", "cuda_devel"), ("image", "env"),
            ("wsl", "processors"), ("wsl", "swap"), ("cluster", "nodes")]
# Characters a key may carry that a terminal acts on or hides: controls, bidi, zero-width, BOM.
# As YAML's double quotes spell them: the raw controls are refused before parsing, the escapes reach keys.
HIDDEN = [r"\x1b]0;x\x07", r"\x1b[8m", r"\x00", r"\x85", r"\x9b", r"\u200b", r"\u200f", r"\u202e", r"\u2066",
          r"\u2069", r"\ufeff", r"\u2060", r"\u00ad", r"\u2028", r"\ud800"]
RAW_HIDDEN = ["\u200b", "\u200d", "\u202a", "\u202e", "\u2067", "\ufeff", "\u2060", "\u00ad", "\u061c"]


def _unsafe(text: str) -> list[str]:
    """Characters of ``text`` a terminal would act on or hide (every message line must have none)."""
    return [c for c in text if c not in "\n\t" and unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp", "Cs", "Cn")]


@st.composite
def yaml11_profiles(draw) -> str:
    """A valid profile but for one raw YAML 1.1 scalar or tag, or one key holding hidden characters."""
    section, key = draw(st.sampled_from(RAW_KEYS))
    value = draw(st.sampled_from(YAML11 + TAGS))
    if draw(st.booleans()):
        hidden = draw(st.lists(st.sampled_from(HIDDEN), min_size=1, max_size=3))
        key = f'"{key}{"".join(hidden)}"' if draw(st.booleans()) else f'"{"".join(hidden)}{key}"'
        value = draw(st.sampled_from(["8g", "1", "yes", "x"]))
    elif draw(st.booleans()):
        key = key + "".join(draw(st.lists(st.sampled_from(RAW_HIDDEN), min_size=1, max_size=2)))
    head = "envkit: 1\nname: fuzz\n"
    image = "image:\n  base: debian:bookworm\n"
    if section == "image":
        return head + image + f"  {key}: {value}\n"
    return head + image + f"{section}:\n  {key}: {value}\n"


@st.composite
def profiles(draw) -> bytes:
    """Mostly near-valid profiles with one to three fuzzed values; sometimes raw text, deep nesting,
    YAML 1.1 scalars, tags or keys with hidden characters."""
    kind = draw(st.integers(0, 11))
    if kind >= 10:
        return draw(yaml11_profiles()).encode("utf-8")
    if kind == 0:
        return draw(st.binary(max_size=200))
    if kind == 1:
        return ("envkit: 1\n" + draw(st.text(alphabet=string.printable + NASTY, max_size=120))
                ).encode("utf-8", "surrogatepass")
    if kind == 2:
        depth = draw(st.sampled_from([101, 999, 1001, 3000]))  # around both limits
        opener, closer = draw(st.sampled_from([("[", "]"), ("{a: ", "}"), ("- ", "")]))
        return f"envkit: 1\nname: deep\nx: {opener * depth}1{closer * depth}\n".encode()
    doc: dict = {"envkit": 1, "name": "fuzz", "image": {"base": "debian:bookworm"}}
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(KEYS))
        node = doc
        for seg in path[:-1]:
            node = node.setdefault(seg, {}) if isinstance(node.get(seg, {}), dict) else {}
        node[path[-1]] = draw(VALUE)
    text = yaml.safe_dump(doc, allow_unicode=draw(st.booleans()), default_flow_style=draw(st.booleans()))
    if kind == 3:  # a raw control character or stray quote spliced into the YAML text
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.sampled_from(list(NASTY) + ['"', "'", ":", "&a", "*a", "!!python/object"])) + text[at:]
    return text.encode("utf-8", "surrogatepass")


@FUZZ
@given(raw=profiles())
def test_generated_profiles_never_crash_and_never_half_write(raw):
    root = _scratch()
    (root / "p.yaml").write_bytes(raw)
    out = root / "out"
    shutil.rmtree(out, ignore_errors=True)
    rc, err = _main(["generate", str(root / "p.yaml"), "-o", str(out), "--target", "run"])
    assert rc in (0, 2), (rc, err)
    assert "Traceback" not in err and "internal error" not in err, err
    assert not _unsafe(err), ascii(err)
    if rc == 2:
        assert err.startswith("envkit: error: "), err
        assert not out.exists(), "nothing written on bad input"


WSL_PROFILE = b"envkit: 1\nname: w\nimage: {base: debian:bookworm}\nwsl: {memory: 8GB, processors: 4, swap: 0}\n"
INI_ALPHABET = st.sampled_from(list("[]=#;\"\\ \t\r\nwslWSL2memoryprocessorsGB81") + ["\r\n", "\u2028", "\x0c",
                                                                                         "\x85", "\x00", "\x1b", "é"])


@st.composite
def wslconfigs(draw) -> bytes:
    text = "".join(draw(st.lists(INI_ALPHABET, max_size=80)))
    if draw(st.booleans()):
        text = "[wsl2]\n" + text
    encoding = draw(st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "utf-16-le", "latin-1"]))
    try:
        return text.encode(encoding)
    except UnicodeEncodeError:
        return text.encode("utf-8")


@FUZZ
@given(raw=wslconfigs())
def test_generated_wslconfig_never_crash_and_apply_is_idempotent(raw):
    root = _scratch()
    (root / "p.yaml").write_bytes(WSL_PROFILE)
    cfg_dir = root / "cfg"
    shutil.rmtree(cfg_dir, ignore_errors=True)
    cfg_dir.mkdir()
    cfg = cfg_dir / ".wslconfig"
    cfg.write_bytes(raw)
    rc, err = _main(["wsl", "apply", str(root / "p.yaml"), "--wslconfig", str(cfg)])
    assert rc in (0, 2), (rc, err)
    assert "Traceback" not in err and "internal error" not in err, err
    if rc == 2:
        assert _files(cfg_dir) == {".wslconfig": raw}, "nothing written on bad input"
        return
    # What was written reads back with every key set: a second merge changes nothing.
    decoded = decode_config(cfg.read_bytes(), str(cfg))
    again = merge_ini(decoded.text, [("wsl2", "memory", "8GB"), ("wsl2", "processors", "4"),
                                     ("wsl2", "swap", "0")], str(cfg), decoded.newline)
    assert not again.changes, again.changes


JSON = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(), TEXT),
                    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(TEXT, inner, max_size=4)),
                    max_leaves=8)
LOADER_KEYS = ["num_workers", "batch_size", "sample_shape", "dtype", "pin_memory", "prefetch_factor",
               "persistent_workers", "start_method"]
RUN_KEYS = ["shm_size_bytes", "ipc", "cpuset", "cpuset_count", "cpus", "memory_bytes", "gpus", "ulimits", "user"]


@st.composite
def expectations(draw) -> bytes:
    kind = draw(st.integers(0, 5))
    if kind == 0:
        return draw(st.binary(max_size=100))
    if kind == 1:
        depth = draw(st.sampled_from([100, 999, 1001, 100_000]))
        return ('{"envkit_expect": 1, "loader": ' + "[" * depth + "]" * depth + "}").encode()
    doc = {"envkit_expect": draw(st.sampled_from([1, 1, 1, 2, "1", True, None])),
           "loader": draw(st.dictionaries(st.sampled_from(LOADER_KEYS), JSON, max_size=4)),
           "run": draw(st.dictionaries(st.sampled_from(RUN_KEYS), JSON, max_size=4))}
    return json.dumps(doc, allow_nan=draw(st.booleans()) or True).encode()


@FUZZ
@given(raw=expectations())
def test_generated_expectations_are_accepted_or_refused_cleanly(raw):
    # The harness reads the expectation and resolves its loader settings before anything runs:
    # every failure there must be its UsageError (exit 2), never another exception.
    path = _scratch() / "envkit_expect.json"
    path.write_bytes(raw)
    try:
        doc = load_expect(str(path))
        settings_ = resolve_loader(doc, usable=4)
    except HarnessUsageError as e:
        assert str(e), "a message"
        return
    # An accepted expectation is then compared with the container: those checks must cope with it.
    run = doc.get("run") or {}
    check_shm(settings_, run, stats={"size_bytes": 64 << 20, "free_bytes": 60 << 20})
    check_cpus(settings_, run, usable=4, quota={"quota_cpus": 2.0, "version": 2, "source": "fixture"})
    check_ulimits(run, limits={n: {"soft": 1024, "hard": -1} for n in ("memlock", "nofile", "stack")})
    check_gpus(run, info={"torch": "2.13.0", "torch_cuda": None, "cuda_available": False,
                          "cuda_device_count": 0})
