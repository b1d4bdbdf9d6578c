"""``run_checks``: resolve the settings, run every check in order, return the report dict.

Example:
    >>> report = run_checks({"envkit_expect": 1, "loader": {"num_workers": 0}}, quick=True)  # doctest: +SKIP
    >>> report["verdict"], [c["name"] for c in report["checks"]]                              # doctest: +SKIP
    ('pass', ['shm', 'cpus', 'ulimits', 'gpus', 'gpu_arch', 'gpu_driver', 'loader', 'pinned_transfer'])
"""

from __future__ import annotations

import math

from .checks.gpu import check_gpu_arch, check_gpu_driver
from .checks.loader import check_loader
from .checks.loader_child import resolve_factory
from .checks.numa import check_numa
from .checks.sweep import check_workers_sweep
from .checks.shm import check_shm
from .checks.system import check_cpus, check_gpus, check_ulimits
from .checks.transfer import check_pinned_transfer
from .errors import UsageError
from .network.stage import NetworkAsk, run_network_stage
from .expectation import Expectation, ExpectRun, LoaderSettings, LoaderSize, resolve_loader, validate_expect
from .probes import env as envmod
from .report import Check, HarnessEnvironment, Report, describe_workload, make_report
from .rules.defaults import sample_cost_problem
from .rules.sizing import batch_bytes

DEFAULT_TIMEOUT_S = 60.0


def check_timeout(timeout) -> float:
    """Return ``timeout`` as a float if it is a finite number of seconds > 0, else raise :class:`UsageError`.

    NaN and infinity are refused: a deadline of ``now + nan`` or ``now + inf`` never fires, so the
    watchdog could never report a hang.

    >>> check_timeout(30)
    30.0
    """
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not math.isfinite(timeout) \
            or timeout <= 0:
        raise UsageError(f"--timeout must be a finite number of seconds > 0, got {timeout!r}")
    return float(timeout)


def _check_dataset(spec: str) -> None:
    """Import the user's factory now so a typo is a usage error (exit 2), not a loader failure."""
    try:
        resolve_factory(spec)
    except Exception as exc:
        raise UsageError(f"--dataset {spec}: cannot import it ({type(exc).__name__}: {exc}); the module must "
                         "be importable from the current directory or PYTHONPATH") from None


def check_batch_memory(settings: LoaderSize, available: int | None) -> None:
    """Refuse (exit 2) a batch that cannot fit in the memory left, before anything allocates it.

    >>> check_batch_memory({"batch_size": 10**6, "sample_shape": [3, 224, 224], "dtype": "float32"},
    ...                    8 << 30)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    envkit.harness.errors.UsageError: one batch is 602112000000 bytes (602.1 GB: ...), more than the 8589934592 bytes ...
    """
    need = batch_bytes(settings["batch_size"], settings["sample_shape"], settings["dtype"])
    if available is not None and need > available:
        raise UsageError(f"one batch is {need} bytes ({need / 1e9:.1f} GB: batch_size {settings['batch_size']} x "
                         f"{list(settings['sample_shape'])} {settings['dtype']}), more than the {available} bytes "
                         f"({available / 1e9:.1f} GB) of memory available; lower --batch-size or loader.batch_size")


def check_sample_cost(settings: LoaderSettings, sample_cost_ms, timeout: float) -> None:
    """Apply ``--sample-cost-ms`` to ``settings``; refuse (exit 2) a cost that is none, or whose
    synthetic batch (``batch_size x sample_cost_ms`` of CPU) could not arrive within ``timeout``.

    >>> s = {"batch_size": 32, "sample_cost_ms": 4.0, "dataset": "synthetic"}
    >>> check_sample_cost(s, 2, 60.0); s["sample_cost_ms"]
    2.0
    >>> check_sample_cost(s, 5000, 60.0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    envkit.harness.errors.UsageError: one synthetic batch costs 160 s of CPU (batch_size 32 x 5000 ms), ...
    """
    if sample_cost_ms is not None:
        problem = sample_cost_problem(sample_cost_ms)
        if problem:
            raise UsageError(f"--sample-cost-ms {problem}")
        settings["sample_cost_ms"] = float(sample_cost_ms)
    per_batch = settings["batch_size"] * (settings["sample_cost_ms"] or 0) / 1000
    if settings["dataset"] == "synthetic" and per_batch >= timeout:
        raise UsageError(f"one synthetic batch costs {per_batch:g} s of CPU (batch_size {settings['batch_size']} x "
                         f"{settings['sample_cost_ms']:g} ms), more than --timeout {timeout:g} s allows a batch; "
                         "lower loader.sample_cost_ms (--sample-cost-ms) or the batch, or raise --timeout")


def run_checks(expect: Expectation | None, *, dataset: str | None = None, num_workers=None, batch_size=None,
               timeout: float = DEFAULT_TIMEOUT_S, quick: bool = False, sweep: bool = False,
               progress=None, plot: str | None = None, cgroup_root: str = "/",
               sample_cost_ms: float | None = None, ranks: int | None = None,
               expect_file: str | None = None, network: NetworkAsk | None = None) -> Report:
    """Run all checks against an expectation dict (None = defaults) and return the report.

    ``sample_cost_ms`` overrides ``loader.sample_cost_ms``, the CPU each synthetic sample costs the sweep.
    ``expect_file``: the file the expectation came from, for the report's ``workload``.
    Raises :class:`UsageError` for an invalid expectation, override or dataset spec.
    ``progress`` is called with short lines like ``"loader: batch 12/40"``.
    ``network``: run the network stage after the loaders (``--network``), with the expectation's
    ``run.network`` filling what the command line leaves out.
    """
    envmod.quiet_numpy_warning()  # torch without numpy warns on import; the harness never uses numpy
    if expect is not None:
        validate_expect(expect)
    check_timeout(timeout)
    if dataset:
        _check_dataset(dataset)
    say = progress or (lambda line: None)
    usable = envmod.usable_cpus()
    quota = envmod.read_cgroup_cpu_quota(cgroup_root)
    settings = resolve_loader(expect, usable=usable, quota=quota["quota_cpus"], num_workers=num_workers,
                              batch_size=batch_size, dataset=dataset, ranks=ranks)
    if sweep or plot:  # only the sweep's synthetic samples cost CPU (the loader check proves the pipeline)
        check_sample_cost(settings, sample_cost_ms, timeout)
    elif sample_cost_ms is not None:
        check_sample_cost(settings, sample_cost_ms, float("inf"))
    check_batch_memory(settings, envmod.available_memory(cgroup_root))
    run: ExpectRun = (expect.get("run") if expect else None) or {}
    say("environment")
    environment: HarnessEnvironment = {**envmod.collect_environment(settings["start_method"], root=cgroup_root,
                                                                      cgroup=quota), "loader_settings": settings}
    checks = _system_checks(settings, run, usable, environment, cgroup_root)
    for c in checks:
        say(f"{c['name']}: {c['status']}")
    checks.append(check_loader(settings, timeout=timeout, quick=quick, progress=progress))
    say(f"loader: {checks[-1]['status']}")
    checks.append(check_pinned_transfer(settings, cuda_available=environment["cuda_available"], quick=quick,
                                        timeout=timeout, progress=progress, wsl=environment["wsl"]))
    if network is not None:
        checks.append(run_network_stage(_with_profile(network, run), planned_nodes=run.get("nodes"), progress=say))
        say(f"network: {checks[-1]['status']}")
    if sweep or plot:
        checks.append(check_workers_sweep(settings, usable=usable, quota=quota["quota_cpus"], timeout=timeout,
                                          quick=quick, progress=progress, plot=plot))
        say(f"workers_sweep: {checks[-1]['status']}")
    # the loader object every command prints (docs/cli.md), and which workload ran from which file
    return make_report(environment, checks, settings["node"], describe_workload(settings, expect_file))


def _with_profile(ask: NetworkAsk, run: ExpectRun) -> NetworkAsk:
    """The command line's ask, with the profile's fabric, interface and HCA (the expectation's run.network)."""
    planned = run.get("network") or {}
    return {**ask, "fabric": planned.get("fabric") or ask["fabric"], "interface": planned.get("interface"),
            "hca": planned.get("hca")}


def _system_checks(settings: LoaderSettings, run: ExpectRun, usable: int, environment: HarnessEnvironment,
                   cgroup_root: str) -> list[Check]:
    """The checks that read the system, in the report's order (numa only when the profile asks for placement)."""
    checks = [check_shm(settings, run), check_cpus(settings, run, usable=usable, quota=environment["cgroup"]),
              check_ulimits(run), check_gpus(run, info=environment), check_gpu_arch(),
              check_gpu_driver(wsl=environment["wsl"])]
    numa = check_numa(run, root=cgroup_root)
    if numa is not None:  # only when the profile asks for placement (run.numa)
        checks.append(numa)
    return checks
