"""Report building blocks: check statuses, the verdict, the JSON document and the table.

Contract: every check is a dict with exactly the keys ``name``, ``status``,
``measured``, ``expected``, ``message`` and ``remedy``; the report is
``{"envkit_harness": 1, "verdict", "environment", "checks"}``.

Example:
    >>> c = make_check("shm", FAIL, {"size_bytes": 1}, {"required_bytes": 2},
    ...                "too small", "--shm-size=1g")
    >>> verdict([c])
    'fail'
"""

from __future__ import annotations

import json
import os
import textwrap

from .rules.bytesize import human_bytes  # noqa: F401 (the checks' formatter, re-exported)

PASS, WARN, FAIL, SKIP = "pass", "warn", "fail", "skip"
STATUSES = (PASS, WARN, FAIL, SKIP)
SCHEMA_VERSION = 1
CHECK_NAMES = ("shm", "cpus", "ulimits", "gpus", "gpu_arch", "gpu_driver", "loader", "pinned_transfer", "workers_sweep")


def make_check(name: str, status: str, measured=None, expected=None,
               message: str = "", remedy: str | None = None) -> dict:
    """Build one check entry; ``remedy`` is None when there is nothing to do."""
    if status not in STATUSES:
        raise ValueError(f"bad status {status!r}")
    return {"name": name, "status": status, "measured": measured if measured is not None else {},
            "expected": expected if expected is not None else {}, "message": message,
            "remedy": remedy}


def verdict(checks) -> str:
    """``fail`` if any check failed, else ``warn`` if any warned, else ``pass`` (skips are neutral)."""
    statuses = {c["status"] for c in checks}
    if FAIL in statuses:
        return FAIL
    if WARN in statuses:
        return WARN
    return PASS


def make_report(environment: dict, checks: list) -> dict:
    """Assemble the versioned report document."""
    return {"envkit_harness": SCHEMA_VERSION, "verdict": verdict(checks),
            "environment": environment, "checks": list(checks)}


def to_json(report: dict) -> str:
    """One JSON document (sorted keys are NOT used: the schema's order reads better)."""
    return json.dumps(report, indent=2, default=str)


def describe_workload(settings: dict, expect_file: str | None) -> dict:
    """Which workload a run used and where it came from, for the report's ``workload`` key.

    >>> w = describe_workload({"dataset": "synthetic", "sample_shape": [3, 8, 8], "dtype": "uint8",
    ...                        "batch_size": 4, "num_workers": 2}, None)
    >>> w["source"], workload_line(w)
    ('built-in defaults', 'workload: synthetic uint8[3, 8, 8], batch 4, 2 workers (built-in defaults: no --expect file)')
    """
    return {"dataset": settings.get("dataset"), "sample_shape": settings.get("sample_shape"),
            "dtype": settings.get("dtype"), "batch_size": settings.get("batch_size"),
            "num_workers": settings.get("num_workers"),
            "source": "expectation" if expect_file else "built-in defaults",
            "expect_file": os.path.abspath(expect_file) if expect_file else None}


def plural(n, word: str) -> str:
    """``n`` and ``word``, with an s (es after an s) unless ``n`` is 1: the one spelling of counts in messages.

    >>> plural(1, "worker"), plural(3, "worker"), plural(0, "worker"), plural(2, "process")
    ('1 worker', '3 workers', '0 workers', '2 processes')
    """
    return f"{n} {word}" if n == 1 else f"{n} {word}{'es' if word.endswith('s') else 's'}"


def workload_line(w: dict) -> str:
    """One human line naming the workload and the expectation file it came from."""
    shape = ", ".join(str(d) for d in w.get("sample_shape") or [])
    origin = (f"from {w['expect_file']}" if w.get("expect_file") else "built-in defaults: no --expect file")
    return (f"workload: {w.get('dataset')} {w.get('dtype')}[{shape}], batch {w.get('batch_size')}, "
            f"{plural(w.get('num_workers'), 'worker')} ({origin})")


def render_table(report: dict, width: int = 100) -> str:
    """A readable table: one row per check, then the remedies of the checks that did not pass.

    >>> print(render_table(make_report({}, [make_check("cpus", PASS, message="2 usable CPUs")])))
    ... # doctest: +NORMALIZE_WHITESPACE
    envkit harness: verdict PASS
    CHECK            STATUS  DETAIL
    cpus             pass    2 usable CPUs
    """
    lines = [f"envkit harness: verdict {report['verdict'].upper()}"]
    env = report.get("environment") or {}
    if env:
        bits = [f"{k}={env[k]}" for k in ("python", "torch", "start_method", "usable_cpus") if k in env]
        if env.get("container"):
            bits.append(f"container={env['container'].get('detected')}")
        if env.get("wsl"):
            bits.append(f"wsl={env['wsl']}")
        lines.append("environment: " + ", ".join(bits))
    if report.get("workload"):
        lines.append(workload_line(report["workload"]))
    lines.append(f"{'CHECK':<16} {'STATUS':<7} DETAIL")
    detail_width = max(30, width - 25)
    for c in report["checks"]:
        wrapped = textwrap.wrap(c["message"] or "", detail_width) or [""]
        lines.append(f"{c['name']:<16} {c['status']:<7} {wrapped[0]}")
        lines.extend(" " * 25 + w for w in wrapped[1:])
    todo = [c for c in report["checks"] if c["status"] in (FAIL, WARN) and c.get("remedy")]
    if todo:
        lines.append("")
        lines.append("How to fix:")
        for c in todo:
            for i, w in enumerate(textwrap.wrap(c["remedy"], width - 20)):
                lines.append(f"  {c['name'] + ':' if i == 0 else '':<16} {w}")
    return "\n".join(lines)
