"""Report building blocks: check statuses, the verdict, the JSON document and the table.

Contract: every check is a :class:`Check` (exactly the keys ``name``, ``status``, ``measured``,
``expected``, ``message`` and ``remedy``; ``envkit doctor``'s checks are the same records); the
report is a :class:`Report` (``envkit_harness``: 1, ``verdict``, ``environment``, ``checks``,
``loader``, ``workload``). Both are standard-library ``TypedDict`` s: envkit derives the JSON
Schema that docs/cli.md shows from them (``envkit.jsonout``).

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
from collections.abc import Iterable, Mapping
from typing import Annotated, Any, Literal, TypedDict

from .expectation import LoaderSettings
from .probes.env import Environment
from .rules.bytesize import human_bytes  # noqa: F401 (the checks' formatter, re-exported)
from .rules.sizing import LoaderJson

Status = Literal["pass", "warn", "fail", "skip"]
Verdict = Literal["pass", "warn", "fail"]
PASS: Literal["pass"] = "pass"
WARN: Literal["warn"] = "warn"
FAIL: Literal["fail"] = "fail"
SKIP: Literal["skip"] = "skip"
STATUSES: tuple[Status, ...] = (PASS, WARN, FAIL, SKIP)
SCHEMA_VERSION: Literal[1] = 1
CHECK_NAMES = ("shm", "cpus", "ulimits", "gpus", "gpu_arch", "gpu_driver", "loader", "pinned_transfer", "network",
               "workers_sweep")


class Check(TypedDict):
    """one check: what was measured, against what was expected, and what to do about it"""

    name: Annotated[str, "stable: shm, cpus, ulimits, gpus, gpu_arch, gpu_driver, numa, loader, pinned_transfer, "
                         "network, workers_sweep (the harness); doctor's own names"]
    status: Status
    measured: Annotated[dict[str, Any], "what this machine showed; each check its own keys"]
    expected: Annotated[dict[str, Any], "what the profile asked, or the rule; each check its own keys"]
    message: str
    remedy: Annotated[str | None, "what to change; null: nothing to do"]


class Workload(TypedDict):
    """which workload ran, and where it came from"""

    dataset: str
    sample_shape: list[int]
    dtype: str
    batch_size: int
    num_workers: int
    source: Literal["expectation", "built-in defaults"]
    expect_file: Annotated[str | None, "the --expect file, absolute; null: the built-in defaults"]


class HarnessEnvironment(Environment):
    """where the harness ran, and the loader it resolved there"""

    loader_settings: LoaderSettings


class Report(TypedDict):
    """envkit harness --json: every check of the container, in order, and the verdict"""

    envkit_harness: Literal[1]
    verdict: Verdict
    environment: HarnessEnvironment
    checks: list[Check]
    loader: LoaderJson
    workload: Workload


def make_check(name: str, status: Status, measured: Mapping[str, Any] | None = None,
               expected: Mapping[str, Any] | None = None, message: str = "", remedy: str | None = None) -> Check:
    """Build one check record; ``remedy`` is None when there is nothing to do."""
    if status not in STATUSES:
        raise ValueError(f"bad status {status!r}")
    return {"name": name, "status": status, "measured": dict(measured) if measured is not None else {},
            "expected": dict(expected) if expected is not None else {}, "message": message,
            "remedy": remedy}


def verdict(checks: Iterable[Check]) -> Verdict:
    """``fail`` if any check failed, else ``warn`` if any warned, else ``pass`` (skips are neutral)."""
    statuses = {c["status"] for c in checks}
    if FAIL in statuses:
        return FAIL
    if WARN in statuses:
        return WARN
    return PASS


def make_report(environment: HarnessEnvironment, checks: list[Check], loader: LoaderJson, workload: Workload) -> Report:
    """Assemble the versioned report document."""
    return {"envkit_harness": SCHEMA_VERSION, "verdict": verdict(checks), "environment": environment,
            "checks": list(checks), "loader": loader, "workload": workload}


def to_json(report: Report) -> str:
    """One JSON document (sorted keys are NOT used: the schema's order reads better)."""
    return json.dumps(report, indent=2, default=str)


def describe_workload(settings: LoaderSettings, expect_file: str | None) -> Workload:
    """Which workload a run used and where it came from, for the report's ``workload`` key.

    >>> w = describe_workload({"dataset": "synthetic", "sample_shape": [3, 8, 8], "dtype": "uint8",
    ...                        "batch_size": 4, "num_workers": 2}, None)
    >>> w["source"], workload_line(w)
    ('built-in defaults', 'workload: synthetic uint8[3, 8, 8], batch 4, 2 workers (built-in defaults: no --expect file)')
    """
    return {"dataset": settings["dataset"], "sample_shape": settings["sample_shape"],
            "dtype": settings["dtype"], "batch_size": settings["batch_size"],
            "num_workers": settings["num_workers"],
            "source": "expectation" if expect_file else "built-in defaults",
            "expect_file": os.path.abspath(expect_file) if expect_file else None}


def plural(n, word: str) -> str:
    """``n`` and ``word``, with an s (es after an s) unless ``n`` is 1: the one spelling of counts in messages.

    >>> plural(1, "worker"), plural(3, "worker"), plural(0, "worker"), plural(2, "process")
    ('1 worker', '3 workers', '0 workers', '2 processes')
    """
    return f"{n} {word}" if n == 1 else f"{n} {word}{'es' if word.endswith('s') else 's'}"


def workload_line(w: Workload) -> str:
    """One human line naming the workload and the expectation file it came from."""
    shape = ", ".join(str(d) for d in w["sample_shape"])
    origin = (f"from {w['expect_file']}" if w["expect_file"] else "built-in defaults: no --expect file")
    return (f"workload: {w['dataset']} {w['dtype']}[{shape}], batch {w['batch_size']}, "
            f"{plural(w['num_workers'], 'worker')} ({origin})")


def render_table(report: Report, width: int = 100) -> str:
    """A readable table: one row per check, then the remedies of the checks that did not pass.

    >>> w = describe_workload({"dataset": "synthetic", "sample_shape": [3], "dtype": "uint8", "batch_size": 4,
    ...                        "num_workers": 0}, None)
    >>> print(render_table(make_report({}, [make_check("cpus", PASS, message="2 usable CPUs")], {}, w)))
    ... # doctest: +NORMALIZE_WHITESPACE
    envkit harness: verdict PASS
    workload: synthetic uint8[3], batch 4, 0 workers (built-in defaults: no --expect file)
    CHECK            STATUS  DETAIL
    cpus             pass    2 usable CPUs
    """
    lines = [f"envkit harness: verdict {report['verdict'].upper()}"]
    env = report["environment"]
    if env:  # (empty only in an example like the one above)
        bits = [f"python={env['python']}", f"torch={env['torch']}", f"start_method={env['start_method']}",
                f"usable_cpus={env['usable_cpus']}", f"container={env['container']['detected']}"]
        if env["wsl"]:
            bits.append(f"wsl={env['wsl']}")
        lines.append("environment: " + ", ".join(bits))
    lines.append(workload_line(report["workload"]))
    lines.append(f"{'CHECK':<16} {'STATUS':<7} DETAIL")
    detail_width = max(30, width - 25)
    for c in report["checks"]:
        wrapped = textwrap.wrap(c["message"] or "", detail_width) or [""]
        lines.append(f"{c['name']:<16} {c['status']:<7} {wrapped[0]}")
        lines.extend(" " * 25 + w for w in wrapped[1:])
    todo = [(c["name"], c["remedy"]) for c in report["checks"] if c["status"] in (FAIL, WARN) and c["remedy"]]
    if todo:
        lines.append("")
        lines.append("How to fix:")
        for name, remedy in todo:
            for i, w in enumerate(textwrap.wrap(remedy, width - 20)):
                lines.append(f"  {name + ':' if i == 0 else '':<16} {w}")
    return "\n".join(lines)
