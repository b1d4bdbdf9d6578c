"""Test doubles. ``FakeEngine``: an in-memory :class:`envkit.engine.Engine` for unit tests.

It records every call in ``calls`` as ``(method, kwargs)`` and plays back scripted results:

    >>> eng = FakeEngine(run_results=[RunResult(0, "ok\\n", "", False)])
    >>> eng.run("img", ["true"], RunSettings.engine_defaults(), labels={}, timeout=5).stdout
    'ok\\n'
    >>> eng.calls[0][0]
    'run'
"""

from __future__ import annotations

from collections import deque
from pathlib import Path
from typing import Any, Callable

from envkit.engine import LABEL, BuildEvent, Engine, RunResult
from envkit.plan.runsettings import RunSettings

DEFAULT_INFO = {
    "server_version": "fake", "api_version": "1.41", "os": "FakeOS", "os_type": "linux",
    "arch": "x86_64", "kernel": "fake", "cgroup_version": "2", "cgroup_driver": "systemd",
    "runtimes": ["runc"], "nvidia_runtime": False, "default_runtime": "runc",
    "ncpu": 2, "mem_total": 8 << 30,
    "host_ulimits": {"memlock": {"soft": 8 << 20, "hard": 8 << 20, "source": "fake"}},
}


class FakeEngine(Engine):
    """Scripted engine.

    - ``info``: what ping() returns.
    - ``build_events``: BuildEvents emitted by build(); ``image_id`` what it returns.
    - ``run_results``: RunResults (or callables ``(image, command, run: RunSettings) -> RunResult``)
      returned by successive run() calls; when exhausted, ``RunResult(0, "", "", False)``.
    - ``failures``: ``{"build"|"run"|"ping": exception or [exceptions]}``; a list is consumed
      one per call, a single exception is raised on every call.
    """

    def __init__(self, *, info: dict | None = None, build_events: list[BuildEvent] | None = None,
                 image_id: str = "sha256:" + "f" * 64, run_results: list | None = None,
                 failures: dict[str, Any] | None = None) -> None:
        self.info = dict(DEFAULT_INFO if info is None else info)
        self.build_events = list(build_events or [])
        self.image_id = image_id
        self.run_results: deque = deque(run_results or [])
        self.failures = {k: (deque(v) if isinstance(v, list) else v)
                         for k, v in (failures or {}).items()}
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.containers: list[dict[str, str]] = []  # label sets of "leaked" containers

    def _maybe_fail(self, method: str) -> None:
        f = self.failures.get(method)
        if isinstance(f, deque):
            if f:
                raise f.popleft()
        elif f is not None:
            raise f

    def ping(self) -> dict[str, Any]:
        self.calls.append(("ping", {}))
        self._maybe_fail("ping")
        return dict(self.info)

    def build(self, context_dir: Path, tag: str, *, labels: dict[str, str] | None = None,
              nocache: bool = False, buildargs: dict[str, str] | None = None,
              on_event: Callable[[BuildEvent], None] | None = None) -> str:
        self.calls.append(("build", {"context_dir": Path(context_dir), "tag": tag,
                                     "labels": {**(labels or {}), LABEL: "1"},
                                     "nocache": nocache, "buildargs": dict(buildargs or {})}))
        for ev in self.build_events:
            if on_event:
                on_event(ev)
        self._maybe_fail("build")
        return self.image_id

    def run(self, image: str, command: list[str], run: RunSettings, *,
            labels: dict[str, str] | None = None, timeout: float = 600) -> RunResult:
        self.calls.append(("run", {"image": image, "command": list(command), "run": run,
                                   "labels": {**(labels or {}), LABEL: "1"},
                                   "timeout": timeout}))
        self._maybe_fail("run")
        if not self.run_results:
            return RunResult(0, "", "", False)
        r = self.run_results.popleft()
        return r(image, command, run) if callable(r) else r

    def remove_labeled(self, label_key: str = LABEL) -> int:
        self.calls.append(("remove_labeled", {"label_key": label_key}))
        key, eq, value = label_key.partition("=")
        keep = [c for c in self.containers if key not in c or (eq and c[key] != value)]
        n = len(self.containers) - len(keep)
        self.containers = keep
        return n
