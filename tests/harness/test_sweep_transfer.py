"""--sweep (real runs over num_workers, recommendation, --plot PNG) and the pinned_transfer check."""

import sys

import pytest

from envkit.harness.checks import sweep
from envkit.harness.runner import run_checks
from envkit.harness.expectation import resolve_loader
from envkit.harness.checks.transfer import check_pinned_transfer, measure_h2d

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_recommend_is_smallest_within_5_percent():
    assert sweep.recommend({0: 100.0, 1: 190.0, 2: 200.0, 4: 198.0}) == 1
    assert sweep.recommend({0: 100.0, 1: 150.0, 2: 200.0}) == 2
    assert sweep.recommend({}) is None
    assert sweep.worker_counts(1) == [0, 1, 2]
    assert sweep.worker_counts(64)[-1] == 32


@pytest.mark.slow
def test_sweep_and_plot_through_run_checks(tmp_path):
    pytest.importorskip("matplotlib")  # the [plot] extra; the test command installs it
    png = tmp_path / "sweep.png"
    expect = {"envkit_expect": 1, "loader": {"num_workers": 1, "batch_size": 16, "sample_shape": [3, 32, 32]}}
    lines = []
    report = run_checks(expect, quick=True, sweep=True, plot=str(png), timeout=30, progress=lines.append)
    c = next(c for c in report["checks"] if c["name"] == "workers_sweep")
    m = c["measured"]
    assert c["status"] in ("pass", "warn")
    assert [r["num_workers"] for r in m["table"]] == sweep.worker_counts(c["expected"]["max_workers_per_rank"])
    assert m["recommended"] <= c["expected"]["max_workers_per_rank"] or m["recommended"] == 0
    assert all(r["samples_per_s"] > 0 for r in m["table"])
    assert m["recommended"] in c["expected"]["counts"]
    assert m["recommended_samples_per_s"] >= 0.95 * m["best_samples_per_s"]
    assert f"num_workers={m['recommended']}" in c["message"]
    assert png.read_bytes()[:8] == PNG_MAGIC and png.stat().st_size > 1000
    assert any(line.startswith("workers_sweep: batch") for line in lines)


@pytest.mark.slow  # real processes for seconds: CI's slow tier keeps the unit tier under 90 s
def test_plot_without_matplotlib_gives_clear_message(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    s = resolve_loader({"envkit_expect": 1, "loader": {"batch_size": 4, "sample_shape": [4]}}, usable=1)
    c = sweep.check_workers_sweep(s, usable=1, quick=True, timeout=30, plot=str(tmp_path / "x.png"), counts=[0, 1])
    assert "matplotlib is not installed" in c["measured"]["plot_error"]
    assert "matplotlib is not installed" in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()


def test_pinned_transfer_skips_without_cuda(monkeypatch):
    # runs on every machine: cuda_available=False is injected, and measure_h2d sees no CUDA either
    import torch
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    s = resolve_loader(None, usable=2)
    c = check_pinned_transfer(s, cuda_available=False)
    assert c["status"] == "skip" and "CUDA" in c["message"]
    with pytest.raises(RuntimeError, match="CUDA"):
        measure_h2d(1 << 20, loops=1, trials=1)


def test_pinned_transfer_skip_test_runs_where_cuda_is_present(monkeypatch):
    # the test above must not skip itself on a CUDA host (it tests the skip path, not the host)
    import torch
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    try:
        test_pinned_transfer_skips_without_cuda(monkeypatch)
    except pytest.skip.Exception as exc:
        pytest.fail(f"the skip-path test skipped itself on a CUDA host: {exc}")


@pytest.mark.slow
def test_plot_to_unwritable_path_records_plot_error(tmp_path, capsys):
    pytest.importorskip("matplotlib")  # without it the plot fails earlier, with "not installed"
    s = resolve_loader({"envkit_expect": 1, "loader": {"batch_size": 4, "sample_shape": [4]}}, usable=1)
    target = tmp_path / "missing" / "x.png"
    c = sweep.check_workers_sweep(s, usable=1, quick=True, timeout=30, plot=str(target), counts=[0, 1])
    assert c["status"] in ("pass", "warn") and c["measured"]["recommended"] in (0, 1)
    assert "plot" not in c["measured"]
    assert "cannot write the plot" in c["measured"]["plot_error"] and str(target) in c["measured"]["plot_error"]
    assert "cannot write the plot" in capsys.readouterr().err


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf"), 0, -1.0, "60", None, True])
def test_non_finite_or_non_positive_timeout_is_refused_everywhere(bad):
    from envkit.harness.expectation import UsageError
    from envkit.harness.checks.loader import run_loader_child
    with pytest.raises(UsageError, match="timeout"):
        run_checks(None, timeout=bad, quick=True)
    # the watchdog itself refuses a deadline that could never fire (before starting a child)
    with pytest.raises(ValueError, match="timeout"):
        run_loader_child([], timeout=bad)


@pytest.mark.skipif("not __import__('torch').cuda.is_available()", reason="needs a CUDA GPU")
def test_measure_h2d_on_gpu():
    bw = measure_h2d(64 << 20, loops=4, trials=3)
    assert bw["pinned_gbps"] > 0 and bw["pageable_gbps"] > 0
    assert bw["pinned_gbps"] > bw["pageable_gbps"]  # page-locked sources skip the staging copy
    assert len(bw["pinned_trials_gbps"]) == 3
