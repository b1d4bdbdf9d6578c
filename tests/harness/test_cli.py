"""``python -m envkit.harness``: exit codes 0/1/2, one JSON document with --json, the table otherwise."""

import json
import os
import subprocess
import sys
import time

import jsonschema
import pytest

from pathlib import Path

from envkit.jsonout import SCHEMAS


@pytest.mark.slow
def test_json_report_healthy_exit_0(run_cli, write_expect, small_loader):
    p = run_cli("--json", "--quick", "--expect", write_expect(small_loader, {"gpus": "none"}))
    assert p.returncode == 0, p.stderr
    report = json.loads(p.stdout)  # exactly one document: json.loads rejects trailing data
    jsonschema.Draft202012Validator(SCHEMAS["harness"]).validate(report)  # the schema docs/cli.md shows
    names = [c["name"] for c in report["checks"]]
    assert names == ["shm", "cpus", "ulimits", "gpus", "gpu_arch", "gpu_driver", "loader", "pinned_transfer"]
    by = {c["name"]: c for c in report["checks"]}
    # this machine's torch is the CPU build: gpu_arch is skipped and says why
    assert by["gpu_arch"]["status"] == "skip" and "CPU-only build" in by["gpu_arch"]["message"]
    assert by["loader"]["status"] == "pass" and by["loader"]["measured"]["samples_per_s"] > 0
    assert by["pinned_transfer"]["status"] == "skip" and "CUDA" in by["pinned_transfer"]["message"]
    assert report["verdict"] in ("pass", "warn")
    assert "loader: batch" in p.stderr  # progress goes to stderr, never stdout
    # Which workload ran, and from which expectation file (the built-in one would hide failures).
    w = report["workload"]
    assert w["source"] == "expectation" and os.path.isabs(w["expect_file"])
    assert w["expect_file"].endswith(".json") and w["batch_size"] == small_loader["batch_size"]


@pytest.mark.slow
def test_failing_check_exits_1(run_cli, write_expect):
    # the profile wants a GPU; this machine has none (the loader part is kept tiny)
    p = run_cli("--json", "--quick", "--num-workers", "0", "--expect", write_expect({"batch_size": 4}, {"gpus": "all"}))
    assert p.returncode == 1, p.stderr
    report = json.loads(p.stdout)
    assert report["verdict"] == "fail"
    gpus = next(c for c in report["checks"] if c["name"] == "gpus")
    assert gpus["status"] == "fail" and "--gpus all" in gpus["remedy"]


@pytest.mark.slow
def test_table_without_json(run_cli, small_loader, write_expect):
    p = run_cli("--quick", "--num-workers", "1", "--expect", write_expect(small_loader))
    assert p.returncode == 0, p.stderr
    assert "verdict" in p.stdout and "CHECK" in p.stdout and "loader" in p.stdout
    assert "workload: synthetic " in p.stdout and "1 worker (from /" in p.stdout
    with pytest.raises(json.JSONDecodeError):
        json.loads(p.stdout)


@pytest.mark.parametrize("args, needle", [
    (["--bogus"], "unrecognized arguments"),
    (["--num-workers", "x"], "invalid int value"),
    (["--expect", "/nonexistent/envkit_expect.json"], "no such file; expected an expectation JSON file"),
    (["--dataset", "no_such_module_xyz:make"], "--dataset no_such_module_xyz:make"),
    (["--dataset", "harness_datasets:not_there"], "cannot import"),
    (["--dataset", "no_colon"], "MODULE:CALLABLE"),
    (["--timeout", "0"], "--timeout"),
    (["--timeout", "nan"], "--timeout"),
    (["--timeout", "inf"], "--timeout"),
    (["--timeout", "-5"], "--timeout"),
    (["--timeout=-inf"], "--timeout"),
    (["--plot", "/nonexistent/dir/x.png"], "/nonexistent/dir"),
    (["--sweep", "--plot", "/nonexistent/dir/x.png"], "does not exist"),
])
def test_usage_errors_exit_2_without_traceback(run_cli, args, needle):
    p = run_cli(*args)
    assert p.returncode == 2
    assert needle in p.stderr
    assert "Traceback" not in p.stderr and p.stdout == ""


@pytest.mark.parametrize("args", [["--timeout", "nan"], ["--timeout", "inf"], ["--timeout", "-1"],
                                  ["--plot", "/nonexistent/dir/x.png"]])
def test_refused_before_anything_runs_in_one_line(run_cli, args):
    # before the fix: nan/inf ran with a watchdog that never fires, and a bad --plot folder ran the
    # whole sweep, then crashed in savefig with a traceback
    p = run_cli("--quick", *args, timeout=60)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("envkit-harness: error: "), p.stderr
    assert "environment" not in p.stderr and "loader" not in p.stderr


def test_plot_path_that_is_a_file_folder_or_directory_is_refused(run_cli, tmp_path):
    (tmp_path / "afile").write_text("x")
    p = run_cli("--plot", str(tmp_path / "afile" / "x.png"))
    assert p.returncode == 2 and "is not a directory" in p.stderr and "Traceback" not in p.stderr
    p = run_cli("--plot", str(tmp_path))
    assert p.returncode == 2 and "is a directory" in p.stderr and "Traceback" not in p.stderr


@pytest.mark.parametrize("content", ["{not json", '{"envkit_expect": 1, "loader": {"dtype": "float8"}}',
                                     '{"profile": "x"}'])
def test_invalid_expect_exits_2(run_cli, tmp_path, content):
    path = tmp_path / "bad.json"
    path.write_text(content)
    p = run_cli("--json", "--expect", str(path))
    assert p.returncode == 2 and "Traceback" not in p.stderr and p.stdout == ""
    assert str(path) in p.stderr or "expect" in p.stderr


@pytest.mark.slow
def test_failing_dataset_via_cli_reports_classification(run_cli, small_loader, write_expect):
    p = run_cli("--json", "--quick", "--dataset", "harness_datasets:segfault", "--expect", write_expect(small_loader))
    assert p.returncode == 1
    loader = next(c for c in json.loads(p.stdout)["checks"] if c["name"] == "loader")
    assert loader["measured"]["failure"] == "worker_killed" and "Segmentation fault" in loader["message"]


HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SRC = REPO / "src"


def harness_env(**extra):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(SRC), str(HERE)]))
    env.update(extra)
    return env

def no_torch_for(python: str) -> str:
    return (f"torch is not installed here: {python} -m pip install torch numpy --index-url "
            "https://download.pytorch.org/whl/cpu (the CPU wheel; a cuXYZ index for a GPU), or run the harness inside "
            "the container")


def _fake_package(root, name, message):
    """A package ``name`` under root whose import fails like an absent module (ModuleNotFoundError)."""
    (root / name).mkdir(parents=True)
    (root / name / "__init__.py").write_text(
        f"raise ModuleNotFoundError({message!r}, name={name!r})\n")
    return root


def test_without_torch_exits_2_with_one_line_naming_the_extra(tmp_path):
    # `python -S` with PYTHONPATH=src only: the standard library and envkit.harness, no site-packages,
    # so no torch. Before the fix: every check ran, verdict FAIL, "loader: ModuleNotFoundError", exit 1.
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(SRC), "HOME": str(tmp_path)}
    probe = subprocess.run([sys.executable, "-S", "-c", "import torch"], env=env, capture_output=True, cwd=tmp_path)
    assert probe.returncode != 0, "python -S must not see torch for this test"
    p = subprocess.run([sys.executable, "-S", "-m", "envkit.harness", "--quick", "--json"], env=env,
                       capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert p.returncode == 2, p.stderr
    assert p.stderr.strip().splitlines() == [no_torch_for(sys.executable)] and p.stdout == ""
    # --help still works without torch
    h = subprocess.run([sys.executable, "-S", "-m", "envkit.harness", "--help"], env=env, capture_output=True,
                       text=True, cwd=tmp_path, timeout=60)
    assert h.returncode == 0 and "--expect" in h.stdout


def test_envkit_harness_with_profile_without_torch(tmp_path):
    # the `envkit harness --profile` route, with an importable envkit but a torch that is not installed
    hide = _fake_package(tmp_path / "hide", "torch", "No module named 'torch'")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(hide), str(SRC)]))
    p = subprocess.run([sys.executable, "-m", "envkit", "harness", "--profile", str(REPO / "examples" / "cpu-minimal.yaml"),
                        "--quick"], env=env, capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert p.returncode == 2, p.stderr
    assert p.stderr.strip().splitlines() == [no_torch_for(sys.executable)] and p.stdout == ""


def test_torch_missing_only_when_torch_itself_is_absent(monkeypatch):
    from envkit.harness import cli

    monkeypatch.setitem(sys.modules, "torch", None)  # import torch -> ModuleNotFoundError(name="torch")
    assert cli.torch_missing()
    monkeypatch.delitem(sys.modules, "torch")
    monkeypatch.setitem(sys.modules, "torch", __import__("os"))  # importable: not missing
    assert not cli.torch_missing()


@pytest.mark.slow
def test_torch_numpy_warning_does_not_leak_without_numpy(tmp_path, write_expect, small_loader):
    # numpy "absent": importing torch then warns "Failed to initialize NumPy: No module named 'numpy'"
    hide = _fake_package(tmp_path / "hide", "numpy", "No module named 'numpy'")
    probe = subprocess.run([sys.executable, "-c", "import torch"], env=harness_env(PYTHONPATH=str(hide)),
                           capture_output=True, text=True, cwd=tmp_path)
    assert "Failed to initialize NumPy" in probe.stderr, "the fake numpy must trigger torch's warning"
    env = harness_env()
    env["PYTHONPATH"] = os.pathsep.join([str(hide), env["PYTHONPATH"]])
    expect = write_expect(dict(small_loader, num_workers=1, start_method="spawn"), {"gpus": "none"})
    p = subprocess.run([sys.executable, "-m", "envkit.harness", "--quick", "--json", "--expect", expect],
                       env=env, capture_output=True, text=True, cwd=tmp_path, timeout=180)
    assert p.returncode == 0, p.stderr
    assert "NumPy" not in p.stderr and "UserWarning" not in p.stderr, p.stderr
    assert "NumPy" not in p.stdout


@pytest.mark.slow
def test_loader_child_and_spawned_workers_do_not_warn_about_numpy(tmp_path, monkeypatch, small_loader):
    from envkit.harness.expectation import resolve_loader
    from envkit.harness.checks.loader import make_run, run_loader_child

    hide = _fake_package(tmp_path / "hide", "numpy", "No module named 'numpy'")
    monkeypatch.syspath_prepend(str(hide))  # the child gets the parent's sys.path
    settings = resolve_loader({"loader": dict(small_loader, num_workers=1, start_method="spawn")}, usable=2)
    child = run_loader_child([make_run(settings, quick=True)], timeout=60)
    assert child["results"] and not child["error"], child
    assert "NumPy" not in child["stderr_tail"], child["stderr_tail"]


@pytest.mark.slow
def test_json_stdout_holds_the_document_alone_whatever_the_dataset_prints(run_cli, write_expect, small_loader):
    # The module prints on import, in its factory and in its workers, through print() and os.write(1, ...):
    # before, each line landed on stdout ahead of the document and json.loads failed.
    p = run_cli("--json", "--quick", "--dataset", "chatty_dataset:make", "--expect", write_expect(small_loader))
    report = json.loads(p.stdout)
    assert report["envkit_harness"] == 1, p.stderr
    assert "chatty:" not in p.stdout
    # The harness's own import of the module prints to stderr (the loader's child keeps what it prints).
    assert "chatty: imported" in p.stderr and "chatty: raw write to fd 1 on import" in p.stderr


@pytest.mark.slow
def test_sigterm_exits_143_and_leaves_no_worker(run_cli, tmp_path, write_expect, small_loader):
    proc = subprocess.Popen([sys.executable, "-m", "envkit.harness", "--quick", "--dataset", "harness_datasets:hang",
                             "--timeout", "60", "--expect", write_expect(small_loader)],
                            cwd=tmp_path, env=harness_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        _wait_for_line(proc, "gpu_driver")  # the next check is the loader's
        time.sleep(3)  # its children have started and hang in the dataset
        proc.terminate()
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 9)
    assert proc.returncode == 143, err  # docs/cli.md: SIGTERM is 143, Ctrl-C 130
    assert "interrupted" in err
    left = subprocess.run(["pgrep", "-s", str(proc.pid)], capture_output=True, text=True).stdout.split()
    assert left == [], f"processes of the harness's session outlived it: {left}"


def _wait_for_line(proc, word, limit=60.0):
    """Read the harness's stderr until it names ``word``; returns what was read."""
    import selectors

    sel = selectors.DefaultSelector()
    sel.register(proc.stderr.fileno(), selectors.EVENT_READ)
    seen, end = "", time.monotonic() + limit
    while time.monotonic() < end:
        if sel.select(timeout=1):
            seen += os.read(proc.stderr.fileno(), 65536).decode(errors="replace")
            if word in seen:
                return seen
        assert proc.poll() is None, f"the harness ended before naming {word}: {seen}"
    raise AssertionError(f"no progress line naming {word} within {limit} s: {seen}")
