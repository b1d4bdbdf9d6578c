"""Watch /dev/shm and a DataLoader's worker processes; warn before shared memory runs out.

Each sample (:func:`envkit.harness.probes.procs.sample`) reads /dev/shm (statvfs) and the process tree
under ``pid`` (/proc/<pid>/task/*/children, RSS from /proc/<pid>/status). :class:`ShmWatch`
keeps samples, draws one compact line per sample (carriage-return style on a
terminal, JSON lines otherwise) and warns once when use crosses the threshold
(80 %) or, at the recent growth rate, /dev/shm would be full within
``horizon_s`` seconds. The warning names the setting to raise. ``envkit watch``
and the companion's background thread (``ShmWatch(...).start()``) are this code.

Example:
    >>> bar(0.5, 10)
    '[#####.....]'
    >>> s = {"t": 0, "shm_size": 100, "shm_used": 85, "workers": 2, "workers_rss": 2048}
    >>> warning_for([s], threshold=0.8, horizon_s=10)[:26]
    '/dev/shm is 85% full (85 B'
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time

from ..errors import interrupted_status, raise_on_sigterm
from ..probes.env import SHM_PATH
from ..probes.procs import alive, sample
from ..report import human_bytes, plural
from ..text import BoundedParser

REMEDY = ("raise the shm size: docker run --shm-size (compose: shm_size, Kubernetes: an emptyDir with "
          "medium: Memory and a larger sizeLimit), or lower num_workers/prefetch_factor/batch_size")


# A day between samples: a longer interval watches nothing (and time.sleep overflows on huge ones).
MAX_INTERVAL_S = 86400.0


def bar(fraction: float, width: int = 20) -> str:
    filled = max(0, min(width, int(round(fraction * width))))
    return "[" + "#" * filled + "." * (width - filled) + "]"


def line(s: dict) -> str:
    """The compact live line: ``shm [####....] 41.0/64.0 MiB 64% | 2 workers, RSS 812.0 MiB``."""
    frac = s["shm_used"] / s["shm_size"] if s["shm_size"] else 0.0
    return (f"shm {bar(frac)} {human_bytes(s['shm_used'])}/{human_bytes(s['shm_size'])} {frac:4.0%} | "
            f"{plural(s['workers'], 'worker')}, RSS {human_bytes(s['workers_rss'])}")


def seconds_to_full(samples: list[dict]) -> float | None:
    """At the growth rate over the recent samples, seconds until /dev/shm is full (None: not growing)."""
    if len(samples) < 2:
        return None
    a, b = samples[max(0, len(samples) - 5)], samples[-1]
    dt, grow = b["t"] - a["t"], b["shm_used"] - a["shm_used"]
    if dt <= 0 or grow <= 0:
        return None
    return (b["shm_size"] - b["shm_used"]) / (grow / dt)


def warning_for(samples: list[dict], threshold: float = 0.8, horizon_s: float = 10.0) -> str | None:
    """The warning text when the latest sample is over ``threshold`` or full within ``horizon_s``, else None."""
    s = samples[-1]
    if not s["shm_size"]:
        return None
    frac = s["shm_used"] / s["shm_size"]
    eta = seconds_to_full(samples)
    if frac >= threshold:
        why = f"/dev/shm is {frac:.0%} full ({human_bytes(s['shm_used'])} of {human_bytes(s['shm_size'])})"
    elif eta is not None and eta <= horizon_s:
        why = (f"/dev/shm will be full in about {eta:.0f} s at the current rate "
               f"({human_bytes(s['shm_used'])} of {human_bytes(s['shm_size'])} used)")
    else:
        return None
    return f"{why}; DataLoader workers will die with 'Bus error' when it is; {REMEDY}"


class ShmWatch:
    """Sample every ``interval`` seconds until stopped (or ``pid`` exits); warn once, before shm runs out.

    ``with ShmWatch(stream=sys.stderr): train()`` runs it as a daemon thread in the training process
    (``pid`` defaults to this process, so its workers are counted).
    """

    def __init__(self, pid: int | None = None, interval: float = 1.0, stream=None, json_lines: bool = False,
                 threshold: float = 0.8, horizon_s: float = 10.0, shm_path: str = SHM_PATH):
        self.pid = os.getpid() if pid is None else pid
        self.interval, self.threshold, self.horizon_s, self.shm_path = interval, threshold, horizon_s, shm_path
        self.stream = sys.stderr if stream is None else stream
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.json_lines = bool(json_lines)
        self.samples: list[dict] = []
        self.warnings: list[str] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def alive(self) -> bool:
        return alive(self.pid)

    def step(self) -> dict:
        """Take one sample, print it, and print the warning the first time it applies."""
        s = sample(self.pid, self.shm_path)
        self.samples = (self.samples + [s])[-50:]
        warn = None if self.warnings else warning_for(self.samples, self.threshold, self.horizon_s)
        if warn:
            self.warnings.append(warn)
        if self.json_lines:
            rec = dict(s)
            if warn:
                rec["warning"] = warn
            self.stream.write(json.dumps(rec) + "\n")
        else:
            # A terminal gets one line redrawn in place; a pipe or file gets one line per sample.
            self.stream.write("\r" + line(s) + ("\n" if warn else "") if self.tty else line(s) + "\n")
            if warn:
                self.stream.write(f"envkit: warning: {warn}\n")
        self.stream.flush()
        return s

    def run(self) -> None:
        while not self._stop.is_set() and self.alive():
            self.step()
            self._stop.wait(self.interval)
        if self.tty and not self.json_lines:
            self.stream.write("\n")
            self.stream.flush()

    def start(self) -> "ShmWatch":
        self._thread = threading.Thread(target=self.run, name="envkit-shm-watch", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=5)

    def __enter__(self) -> "ShmWatch":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def build_parser(prog: str = "envkit watch") -> argparse.ArgumentParser:
    p = BoundedParser(prog=prog, description="Watch /dev/shm and a DataLoader's workers; warn before "
                                                        "shared memory runs out.")
    p.add_argument("--pid", type=int, default=None, help="the training process (default: none, shm only)")
    p.add_argument("--interval", type=float, default=1.0,
                   help=f"seconds between samples (default 1, at most {MAX_INTERVAL_S:g})")
    p.add_argument("--json", action="store_true", help="JSON lines instead of the live line")
    p.add_argument("--threshold", type=float, default=0.8, help="warn at this fraction used (default 0.8)")
    p.add_argument("--count", type=int, default=None, help="stop after this many samples")
    return p


def main(argv=None, stream=None) -> int:
    """``envkit watch``: runs until ``--pid`` exits, ``--count`` samples, or Ctrl-C. Exit 0 (Ctrl-C is its
    normal end); 143 on SIGTERM; 1 without a readable /dev/shm; 2 on bad input."""
    args = build_parser().parse_args(argv)
    # NaN compares false with everything: each bound is written so that NaN fails it.
    if not (0 < args.interval <= MAX_INTERVAL_S) or not (0 < args.threshold <= 1):
        print(f"envkit watch: --interval must be a number of seconds > 0 and at most {MAX_INTERVAL_S:g}, "
              "and --threshold in (0, 1]", file=sys.stderr)
        return 2
    if args.count is not None and args.count < 1:
        print(f"envkit watch: --count must be at least 1, got {args.count}", file=sys.stderr)
        return 2
    try:
        os.statvfs(SHM_PATH)
    except OSError as e:
        print(f"envkit watch: cannot read {SHM_PATH} ({e.strerror or e}): there is no shared memory to watch "
              "(DataLoader workers need it to hand over batches)", file=sys.stderr)
        return 1
    if args.pid is not None and not alive(args.pid):
        print(f"envkit watch: no process {args.pid}", file=sys.stderr)
        return 2
    out = sys.stdout if stream is None else stream
    w = ShmWatch(pid=0 if args.pid is None else args.pid, interval=args.interval, stream=out,
                 json_lines=args.json, threshold=args.threshold)
    if args.pid is None:
        w.alive = lambda: True  # type: ignore[method-assign]  # shm only: run until --count or Ctrl-C
    raise_on_sigterm()
    status, n = 0, 0
    try:
        while w.alive():
            w.step()
            n += 1
            if args.count is not None and n >= args.count:
                break  # the last sample: no interval to wait after it
            time.sleep(args.interval)
    except KeyboardInterrupt as exc:  # Ctrl-C ends a watch normally (0); SIGTERM is 143
        status = 0 if interrupted_status(exc) == 130 else interrupted_status(exc)
    if w.tty and not w.json_lines:
        out.write("\n")
    return status
