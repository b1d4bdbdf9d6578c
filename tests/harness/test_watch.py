"""The shm watch: real worker processes, the CLI's JSON lines, and when it warns."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import torch.utils.data as tud

from envkit.harness.runtime.shmwatch import ShmWatch, line, sample, seconds_to_full, warning_for
from tests.conftest import run_envkit
from tests.harness.runtime_datasets import Tensors

MIB = 2**20


def _s(t, used, size=64 * MIB):
    return {"t": t, "shm_size": size, "shm_used": used, "workers": 2, "workers_rss": 0}


def test_sample_counts_a_real_loaders_workers_and_their_memory():
    it = iter(tud.DataLoader(Tensors(n=64), batch_size=4, num_workers=2))
    next(it)
    try:
        s = sample(os.getpid())
        assert s["workers"] >= 2 and s["workers_rss"] > 10 * MIB and s["shm_size"] > 0
        assert "2 workers" in line(s) or f"{s['workers']} workers" in line(s)
    finally:
        it._shutdown_workers()


def test_warns_over_the_threshold_and_on_projected_exhaustion_naming_the_setting():
    assert warning_for([_s(0, 10 * MIB)]) is None
    over = warning_for([_s(0, 52 * MIB)])
    assert over.startswith("/dev/shm is 81% full") and "--shm-size" in over and "sizeLimit" in over
    rising = [_s(0, 10 * MIB), _s(1, 20 * MIB), _s(2, 30 * MIB)]  # 10 MiB/s, 34 MiB left
    assert round(seconds_to_full(rising)) == 3
    assert "full in about 3 s" in warning_for(rising)
    assert warning_for(rising, horizon_s=1) is None


def test_background_thread_writes_lines_and_stops():
    import io
    out = io.StringIO()
    with ShmWatch(interval=0.05, stream=out, json_lines=True) as w:
        time.sleep(0.3)
    recs = [json.loads(x) for x in out.getvalue().splitlines()]
    assert len(recs) >= 2 and recs[0]["pid"] == os.getpid()
    assert not w._thread.is_alive()


def test_cli_follows_a_pid_until_it_exits():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1.0)"])
    res = run_envkit("watch", "--pid", str(child.pid), "--interval", "0.1", "--json", timeout=30)
    child.wait()
    assert res.returncode == 0, res.stderr
    recs = [json.loads(x) for x in res.stdout.splitlines()]
    assert 3 <= len(recs) <= 15 and all(r["pid"] == child.pid for r in recs)


def test_cli_bad_input_is_exit_2_with_one_line():
    res = run_envkit("watch", "--pid", "999999999", timeout=30)
    assert res.returncode == 2 and "no process 999999999" in res.stderr and "Traceback" not in res.stderr
    res = run_envkit("watch", "--interval", "0", timeout=30)
    assert res.returncode == 2 and "--interval" in res.stderr


def test_terminal_gets_one_redrawn_line_and_the_warning_on_its_own_line(tmp_path):
    import io

    class Tty(io.StringIO):
        def isatty(self):
            return True

    out = Tty()
    # statvfs of the test's folder (a disk that is never empty) with a tiny threshold: over it at once
    w = ShmWatch(pid=0, stream=out, threshold=0.000001, shm_path=str(tmp_path))
    w.step()
    w.step()
    text = out.getvalue()
    assert text.startswith("\rshm [") and text.count("envkit: warning: /dev/shm is") == 1
    # the first sample warns (line ends, warning below); the second redraws in place, no newline
    assert text.count("\r") == 2 and not text.endswith("\n")


def test_a_huge_finite_interval_is_refused_not_a_crash():
    # 1e300 is finite: it passed the check and time.sleep raised OverflowError (exit 70)
    res = run_envkit("watch", "--interval", "1e300", "--count", "2", timeout=30)
    assert res.returncode == 2 and "at most 86400" in res.stderr and "Traceback" not in res.stderr


def test_count_1_returns_after_its_sample_without_waiting_an_interval():
    started = time.monotonic()
    res = run_envkit("watch", "--count", "1", "--interval", "30", "--json", timeout=60)
    assert res.returncode == 0, res.stderr
    assert len(res.stdout.splitlines()) == 1
    assert time.monotonic() - started < 25  # it slept the full 30 s after its last sample


def test_sigterm_ends_a_watch_with_143_and_ctrl_c_with_0():
    import signal

    for signum, status in ((signal.SIGTERM, 143), (signal.SIGINT, 0)):
        with subprocess.Popen([sys.executable, "-m", "envkit", "watch", "--interval", "0.2", "--json"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
            try:
                assert proc.stdout.readline().startswith("{")  # it is watching
                proc.send_signal(signum)
                _, err = proc.communicate(timeout=30)
            finally:
                proc.kill()
        assert proc.returncode == status, (signum, err)
