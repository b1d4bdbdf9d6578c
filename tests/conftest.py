"""Shared test helpers: repository paths, the official schemas, CLI runners, and the test tiers.

Isolation (pipx's conftest style): every test runs with a clean ENVKIT_* environment
and inside its own temporary directory, so no test sees another's files.

Tiers (pypa/build's style): the unit tier runs by default; each other tier runs only when its
flag is given (``--run-docker``, ``--run-clients``, ``--run-slurm``, ``--run-e2e``, ``--run-slow``,
or ``--run-all``) and is skipped with a reason naming the flag otherwise. ``TIERS`` maps each tier to
what selects it, in one place; a test belongs to the first tier that selects it. Within a tier that
was asked for, ENVKIT_REQUIRE_DOCKER=1 / ENVKIT_REQUIRE_SLURM=1 turn a missing engine or cluster
into a failure instead of a skip.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from envkit.leftovers import start_time

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
# Vendored copies with their source commits and licences (schemas/README.md, schemas/update.sh).
SCHEMAS = ROOT / "schemas"


def in_ci() -> bool:
    return os.environ.get("ENVKIT_REQUIRE_DOCKER") == "1" or os.environ.get("CI") == "true"


# tier -> (its flag, its marker). tests/e2e is the e2e tier by location (marked `e2e` here). The first
# match wins: tests/e2e and the Slurm tests also carry `docker` and `slow`, but --run-e2e alone runs tests/e2e.
TIERS = {
    "e2e": ("--run-e2e", "e2e"),
    "slurm": ("--run-slurm", "slurm"),
    "clients": ("--run-clients", "clients"),
    "docker": ("--run-docker", "docker"),
    "slow": ("--run-slow", "slow"),
}
E2E_DIR = Path(__file__).resolve().parent / "e2e"
# Fixtures that reach a real engine: a test using one must be in a tier that is not the unit tier.
ENGINE_FIXTURES = {"e2e_dir", "e2e_image", "engine", "docker_engine", "slurm_project"}
# Generated inputs per kind in tests/faults/test_fuzz.py: a quick default, 2 000 in CI (the README's test command).
FUZZ_EXAMPLES_DEFAULT = 200


def pytest_addoption(parser):
    group = parser.getgroup("envkit tiers")
    for tier, (flag, _marker) in TIERS.items():
        group.addoption(flag, action="store_true", default=False, help=f"run the {tier} tier (skipped by default)")
    group.addoption("--run-all", action="store_true", default=False, help="run every tier")
    group.addoption("--fuzz-examples", type=int, default=None, metavar="N",
                    help=f"hypothesis examples per input kind in tests/faults/test_fuzz.py (default "
                         f"$ENVKIT_FUZZ_EXAMPLES or {FUZZ_EXAMPLES_DEFAULT}; CI passes 2000)")


def fuzz_examples(config) -> int:
    given = config.getoption("--fuzz-examples")
    if given is None:
        given = int(os.environ.get("ENVKIT_FUZZ_EXAMPLES", FUZZ_EXAMPLES_DEFAULT))
    if given < 1:
        raise pytest.UsageError(f"--fuzz-examples must be at least 1, not {given}")
    return given


FUZZ_PROFILE = "envkit-fuzz"


def pytest_configure(config):
    from hypothesis import settings

    # tests/faults/test_fuzz.py builds its settings on this profile (max_examples only; the rest is its own).
    settings.register_profile(FUZZ_PROFILE, max_examples=fuzz_examples(config))
    # A test run started in the background of a non-interactive shell (`cmd &`, nohup) inherits SIGINT
    # ignored, and so would every envkit it starts: the Ctrl-C tests could never interrupt one. A
    # Python handler here is reset to the default in each child at exec, where SIG_IGN would persist.
    import signal

    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def tier_of(item) -> str:
    """The test's tier: the first in TIERS that selects it, else "unit"."""
    in_e2e = E2E_DIR in Path(str(item.fspath)).parents
    for tier, (_flag, marker) in TIERS.items():
        if (tier == "e2e" and in_e2e) or item.get_closest_marker(marker) is not None:
            return tier
    return "unit"


def pytest_collection_modifyitems(config, items):
    run_all = config.getoption("--run-all")
    for item in items:
        if E2E_DIR in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.e2e)
        tier = tier_of(item)
        if tier == "unit":
            engine = ENGINE_FIXTURES.intersection(getattr(item, "fixturenames", ()))
            if engine:
                raise pytest.UsageError(f"{item.nodeid} uses {sorted(engine)} (a real engine) but is in no tier: "
                                        f"mark it docker, clients or slurm")
            continue
        flag = TIERS[tier][0]
        if not (run_all or config.getoption(flag)):
            item.add_marker(pytest.mark.skip(reason=f"{tier} tier: not run without {flag} (or --run-all)"))


@pytest.fixture(scope="session", autouse=True)
def _bytecode(tmp_path_factory):
    """Bytecode for the tests that start envkit: compiled once per run, reused by every child.

    A shell with ``PYTHONDONTWRITEBYTECODE=1`` makes each ``python -m envkit`` compile every module it
    imports again. Here the children read and write their bytecode under one folder of this run
    (``PYTHONPYCACHEPREFIX``, which Python uses for every module, the standard library's too): envkit's
    sources are compiled into it first (``compileall``), the rest by the first child that imports them.
    Nothing is written beside the sources.
    """
    prefix = tmp_path_factory.mktemp("pycache")
    env = {**os.environ, "PYTHONPYCACHEPREFIX": str(prefix)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run([sys.executable, "-m", "compileall", "-q", "-j", "0", str(ROOT / "src")], env=env,
                   stdout=subprocess.DEVNULL, check=False)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PYTHONPYCACHEPREFIX", str(prefix))
        mp.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
        yield prefix


KEEP_ENV = ("ENVKIT_REQUIRE_DOCKER", "ENVKIT_REQUIRE_SLURM", "ENVKIT_BASE_IMAGE", "ENVKIT_UPDATE_GOLDEN")


@pytest.fixture(autouse=True)
def _isolate(monkeypatch, tmp_path_factory):
    for key in list(os.environ):
        if key.startswith("ENVKIT_") and key not in KEEP_ENV:
            monkeypatch.delenv(key, raising=False)
    # envkit.statcache: each test's own cache of copy signatures, never the user's.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
    monkeypatch.chdir(tmp_path_factory.mktemp("cwd"))


@pytest.fixture
def golden(file_regression, tmp_path_factory):
    """The one golden-file check (tests/goldenfiles.py): pytest-regressions' ``file_regression``, with
    ENVKIT_UPDATE_GOLDEN=1 meaning its ``--force-regen`` (rewrite each differing golden, fail the test)."""
    from tests.goldenfiles import SWITCH, Golden

    file_regression.force_regen = os.environ.get(SWITCH) == "1"
    return Golden(file_regression, tmp_path_factory.mktemp("golden"))


@pytest.fixture(scope="session")
def official_schema():
    """Load one of the format owners' schemas from the vendored copies in schemas/.

    They are part of the repository, so a missing one is a broken checkout: fail, never skip.
    """

    def load(name: str) -> dict:
        path = SCHEMAS / name
        if not path.is_file():
            pytest.fail(f"{path} not found: the vendored schemas are missing (schemas/update.sh restores them)")
        return json.loads(path.read_text())

    return load


def example_profiles() -> list[Path]:
    return sorted(EXAMPLES.glob("*.yaml"))


def copy_example(name: str, dest: Path) -> Path:
    """Copy an example profile and the files it references next to it, so relative paths stay stable."""
    src = EXAMPLES / name
    shutil.copy(src, dest / name)
    for sub in ("certs", "wheels"):
        if (EXAMPLES / sub).is_dir() and not (dest / sub).exists():
            shutil.copytree(EXAMPLES / sub, dest / sub)
    return dest / name


# (pid, start time) of every envkit process this session started. Containers carry their owner's
# (envkit.leftovers), so teardown can tell this session's containers from other runs' on a shared daemon.
SESSION_OWNERS: set[tuple[str, str]] = set()


def spawn_envkit(*args: str, cwd: Path | None = None, env: dict | None = None, **popen_kw) -> subprocess.Popen:
    """Start the real console entry point (stdout/stderr piped, text) and record it in SESSION_OWNERS."""
    full_env = {**os.environ, **(env or {})}
    proc = subprocess.Popen([sys.executable, "-m", "envkit", *args], cwd=cwd, env=full_env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen_kw)
    # Until we wait for it the child is alive or a zombie, so /proc still has its start time.
    start = start_time(proc.pid)
    if start is not None:
        SESSION_OWNERS.add((str(proc.pid), start))
    return proc


def run_envkit(*args: str, cwd: Path | None = None, env: dict | None = None, timeout: float = 120):
    """Run the real console entry point in a subprocess (what a user runs)."""
    proc = spawn_envkit(*args, cwd=cwd, env=env)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def project_files(base_dir: Path, **kw) -> list[str]:
    """:func:`envkit.project.project_files` as the image plan calls it: envkit's outputs and output folders left out."""
    from envkit.plan.paths import MANIFEST
    from envkit.plan.registry import output_names
    from envkit.project import project_files as files

    return files(base_dir, outputs=output_names(), manifest=MANIFEST, **kw)


def call_envkit(*args: str, cwd: Path | None = None, env: dict | None = None,
                timeout: float | None = None) -> subprocess.CompletedProcess:
    """``envkit ARGS`` run in this process (``envkit.cli.main``): what :func:`run_envkit` returns (exit code,
    stdout, stderr), without starting an interpreter. For tests where the process itself proves nothing
    (no signal, no stdin, no exit of the interpreter): cwd and ``env`` are set for the call and put back,
    and so is the SIGTERM handler ``main`` installs. A ``SystemExit`` (argparse's usage errors) is its code.
    ``timeout`` is :func:`run_envkit`'s, unused here (nothing to kill).
    """
    import contextlib
    import io
    import signal

    from envkit.cli import main

    out, err = io.StringIO(), io.StringIO()
    saved_env, saved_cwd, saved_term = dict(os.environ), Path.cwd(), signal.getsignal(signal.SIGTERM)
    try:
        os.environ.update(env or {})
        os.environ.setdefault("COLUMNS", "80")  # argparse's width, as in a child whose stdout is a pipe
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        signal.signal(signal.SIGTERM, saved_term)
    return subprocess.CompletedProcess(["envkit", *args], code, out.getvalue(), err.getvalue())


@pytest.fixture(scope="session")
def e2e_dir(tmp_path_factory) -> Path:
    """The e2e project folder: NGC-style profile, an offline torch wheelhouse and the host CA bundle.

    Shared by the e2e and clients tiers (both need the same image; see ``e2e_image``).
    """
    from tests.dockerutil import base_image, require_base_image, require_docker
    from tests.e2e.conftest import CONFLICTS_TORCH, HOST_CA, NEEDS_TORCH, TORCH, make_wheel, ngc_profile

    require_base_image(require_docker())
    root = tmp_path_factory.mktemp("e2e")
    wheels = root / "wheels"
    wheels.mkdir()
    # pip finds the CPU wheel on local disk (its find-links); no CUDA build is downloaded.
    res = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                          "-d", str(wheels), f"torch=={TORCH}"], capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-2000:]
    assert list(wheels.glob("torch-*.whl")), "no torch wheel in the wheelhouse"
    make_wheel(wheels, NEEDS_TORCH, ["torch>=2"])
    make_wheel(wheels, CONFLICTS_TORCH, ["torch==2.0.0"])
    (root / "certs").mkdir()
    shutil.copy(HOST_CA, root / "certs" / "host-ca.pem")
    (root / "envkit.yaml").write_text(ngc_profile(base_image()))
    return root


@pytest.fixture(scope="session")
def e2e_image(e2e_dir) -> str:
    """The ONE torch image the docker tiers use, built once per session with `envkit build`."""
    from tests.dockerutil import base_image
    from tests.e2e.conftest import E2E_TAG

    res = run_envkit("build", str(e2e_dir / "envkit.yaml"), cwd=e2e_dir, timeout=1800)
    assert res.returncode == 0, res.stderr[-4000:]
    assert res.stdout.strip() == E2E_TAG
    assert "[step 1/" in res.stderr and "FROM " + base_image() in res.stderr  # progress is streamed
    return E2E_TAG


# The run's plan for a bare Profile (tests that build one with Profile.model_validate): what
# envkit.planner.build_plan decides for a profile loaded from a file in the current folder.
def plan_of(profile, out_dir: Path = Path("out")):
    """The run's plan of a bare Profile, or of a LoadedProfile as it is (its files read at load)."""
    from envkit.planner import build_plan
    from envkit.profile import LoadedProfile

    loaded = profile if isinstance(profile, LoadedProfile) else LoadedProfile(profile, "profile.yaml", Path.cwd(), "0" * 64)
    return build_plan(loaded, out_dir)


def loader_plan_of(profile, **host):
    from envkit.plan.loader import loader_plan

    return loader_plan(profile, **host)


def profile_warnings_of(profile) -> list[str]:
    """profile_warnings of a Profile or a LoadedProfile, from its plan's settings and loaders."""
    from envkit.advice.profile import profile_warnings

    plan = plan_of(profile)
    return profile_warnings(getattr(profile, "profile", profile), plan.settings, plan.loader)


def wsl_warnings_of(profile) -> list[str]:
    from envkit.advice.wslvm import wsl_warnings

    return wsl_warnings(profile, loader_plan_of(profile))


def expectation_of(profile) -> dict:
    """The expectation of a Profile or a LoadedProfile, from its plan's settings and loaders."""
    from envkit.plan.expectfile import expectation

    plan = plan_of(profile)
    return expectation(getattr(profile, "profile", profile), plan.settings, plan.loader)
