"""Command line: ``python -m envkit.harness`` (or ``python3 envkit_harness.pyz``).

Exit status: 0 no check failed, 1 a check failed, 2 usage error (torch not installed, bad flag,
unreadable/invalid --expect, --dataset not importable, --timeout not a finite
number > 0, --ranks not from 1 to 64, --sample-cost-ms not a number of milliseconds from 0 to 10000 or a
synthetic batch that costs more CPU than --timeout allows, --plot in a folder
that does not exist or is not writable). With ``--json`` stdout holds exactly one
JSON document; progress always goes to stderr.

Example:
    $ python -m envkit.harness --expect envkit_expect.json --quick --json > report.json
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time

from .errors import UsageError, interrupted_status, raise_on_sigterm
from .expectation import load_expect
from .probes.env import quiet_numpy_warning
from .report import FAIL, Report, render_table, to_json
from .rules.defaults import sample_cost_problem
from .rules.sizing import MAX_RANKS
from .network.stage import MAX_BOUND_S, MIN_BOUND_S, NETWORK_BOUND_S, NetworkAsk
from .runner import DEFAULT_TIMEOUT_S, check_timeout, run_checks
from .stdio import document_stdout
from .text import BoundedParser


PROFILE_HELP = "derive the expectation from this envkit profile, as `envkit generate` does (instead of --expect)"


def build_parser(prog: str = "envkit-harness", *, profile_option: bool = False) -> argparse.ArgumentParser:
    """The harness's options; ``profile_option`` adds ``--profile`` (``envkit harness`` reads it before this parser)."""
    p = BoundedParser(prog=prog, description=(
        "Prove a PyTorch training environment works: shm, CPUs, ulimits, GPUs, a real DataLoader, "
        "pinned transfers."))
    if profile_option:
        p.add_argument("--profile", metavar="PROFILE", help=PROFILE_HELP)
    p.add_argument("--expect", metavar="FILE.json", help="expectation written by `envkit generate` (envkit_expect.json)")
    p.add_argument("--dataset", metavar="MODULE:CALLABLE", help="factory returning your torch Dataset (importable from cwd/PYTHONPATH)")
    p.add_argument("--num-workers", type=int, metavar="N", help="override loader.num_workers")
    p.add_argument("--batch-size", type=int, metavar="B", help="override loader.batch_size")
    p.add_argument("--ranks", type=int, metavar="R",
                   help=f"training processes per node (1 to {MAX_RANKS}): the loader check runs R loaders at once, "
                        "as torchrun starts one per rank (default: the expectation's, else 1)")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="S",
                   help=f"seconds without a batch before the loader counts as hung (default {DEFAULT_TIMEOUT_S:g})")
    p.add_argument("--quick", action="store_true", help="fewer batches and smaller transfers")
    p.add_argument("--sweep", action="store_true", help="measure samples/s over num_workers and recommend one")
    p.add_argument("--sample-cost-ms", type=sample_cost, metavar="MS",
                   help="with the sweep: CPU milliseconds each synthetic sample costs (overrides "
                        "loader.sample_cost_ms; 0 to 10000)")
    p.add_argument("--plot", metavar="FILE.png", help="with the sweep: plot samples/s vs num_workers (needs matplotlib)")
    net = p.add_argument_group("network (a job of several nodes: run on every node, as the job will)")
    net.add_argument("--network", action="store_true",
                     help="after the loaders, prove this node reaches the job's other nodes: interface, host name, "
                          "rendezvous, RDMA, then a gloo (and NCCL) all_reduce across the nodes")
    net.add_argument("--rendezvous", type=rendezvous_arg, metavar="HOST:PORT",
                     help="where the nodes meet (default: MASTER_ADDR:MASTER_PORT, or PET_MASTER_ADDR:PET_MASTER_PORT)")
    net.add_argument("--nodes", type=nodes_arg, metavar="N|HOST,HOST",
                     help="the job's node count, or its nodes' host names in order (each node then takes its "
                          "place in the list as its index; default: NNODES, PET_NNODES, SLURM_NNODES, else the "
                          "expectation's run.nodes)")
    net.add_argument("--job-id", metavar="ID", help="the job's id: a node of another job is refused "
                                                     "(default: SLURM_JOB_ID, TORCHELASTIC_RUN_ID)")
    net.add_argument("--network-timeout", type=network_timeout, default=NETWORK_BOUND_S, metavar="S",
                     help=f"the network stage's bound: a verdict within S seconds whatever the fault (default "
                          f"{NETWORK_BOUND_S:g}; {MIN_BOUND_S:g} to {MAX_BOUND_S:g})")
    p.add_argument("--json", action="store_true", help="print one JSON report on stdout")
    return p


def rendezvous_arg(text: str) -> tuple[str, str]:
    """``--rendezvous HOST:PORT`` (an IPv6 address in brackets) as ``(host, port)``.

    >>> rendezvous_arg("n1:29500"), rendezvous_arg("[fd00::1]:29500")
    (('n1', '29500'), ('fd00::1', '29500'))
    """
    host, sep, port = text.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not sep or not host or not port.isdigit() or not 1 <= int(port) <= 65535 or len(host) > 253 \
            or any(c.isspace() for c in host):
        raise argparse.ArgumentTypeError(f"expected HOST:PORT with a port from 1 to 65535, got {text[:80]!r}")
    return host, port


def nodes_arg(text: str) -> list[str] | int:
    """``--nodes``: a count from 1 to 65536, or the nodes' host names, comma-separated, in order.

    >>> nodes_arg("2"), nodes_arg("n1,n2")
    (2, ['n1', 'n2'])
    """
    if text.isdigit():
        if 1 <= int(text) <= 65536:
            return int(text)
        raise argparse.ArgumentTypeError(f"expected a node count or HOST,HOST,..., got {text[:80]!r}")
    hosts = text.split(",")
    if not text or len(hosts) > 65536 or not all(h and len(h) <= 253 and not any(c.isspace() for c in h) for h in hosts):
        raise argparse.ArgumentTypeError(f"expected a node count or HOST,HOST,..., got {text[:80]!r}")
    return hosts


def network_timeout(text: str) -> float:
    """``--network-timeout``: seconds from :data:`MIN_BOUND_S` to :data:`MAX_BOUND_S`.

    >>> network_timeout("45")
    45.0
    """
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not MIN_BOUND_S <= value <= MAX_BOUND_S:
        raise argparse.ArgumentTypeError(f"expected seconds from {MIN_BOUND_S:g} to {MAX_BOUND_S:g}, got {text[:40]!r}")
    return value


def network_ask(args: argparse.Namespace) -> NetworkAsk | None:
    """What ``--network`` and its options ask (None without ``--network``); the profile's part comes from the
    expectation (:func:`.runner.run_checks`)."""
    if not args.network:
        if args.rendezvous or args.nodes or args.job_id:
            raise UsageError("--rendezvous, --nodes and --job-id go with --network")
        return None
    given: dict[str, str] = {}
    if args.rendezvous:
        given["master_addr"], given["master_port"] = args.rendezvous
    hosts = args.nodes if isinstance(args.nodes, list) else []
    if args.nodes:
        given["nodes"] = str(len(hosts) if hosts else args.nodes)
    if args.job_id:
        given["job"] = args.job_id[:200]
    return {"given": given, "hosts": hosts, "bound_s": args.network_timeout, "fabric": "ethernet", "interface": None,
            "hca": None}




def check_ranks(ranks) -> int:
    """Return ``ranks`` if it is an integer from 1 to :data:`MAX_RANKS`, else raise :class:`UsageError`.

    >>> check_ranks(2)
    2
    """
    if isinstance(ranks, bool) or not isinstance(ranks, int) or not 1 <= ranks <= MAX_RANKS:
        raise UsageError(f"--ranks must be an integer from 1 to {MAX_RANKS} (training processes per node), "
                         f"got {ranks!r}")
    return ranks


def sample_cost(text: str) -> float:
    """``--sample-cost-ms``'s value: a number of milliseconds from 0 to 10000 (else argparse's exit 2).

    >>> sample_cost("2.5")
    2.5
    """
    try:
        value: object = float(text)
    except ValueError:
        value = text
    problem = sample_cost_problem(value, shown=repr(text))
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return float(text)


def check_plot_path(path: str) -> None:
    """Refuse a ``--plot`` path that cannot be written, before the sweep runs (:class:`UsageError`)."""
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise UsageError(f"--plot {path}: is a directory; give a file name such as {os.path.join(path, 'sweep.png')}")
    if not os.path.isdir(folder):
        what = "is not a directory" if os.path.exists(folder) else "does not exist"
        raise UsageError(f"--plot {path}: the folder {folder} {what}")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"--plot {path}: the folder {folder} is not writable")


# The harness imports nothing outside its package (it runs as a zipapp): the distribution's name is spelled here.
CPU_INDEX = "https://download.pytorch.org/whl/cpu"  # a plain `torch` from PyPI is the multi-GB CUDA build


def no_torch(prefix: str | None = None, executable: str | None = None) -> str:
    """What to run where torch is missing, for the way this Python was installed: a pipx venv gets ``pipx inject``,
    anything else pip for this very interpreter; both from the CPU wheel's index.

    >>> no_torch("/home/me/.local/share/pipx/venvs/envkit-torch", "/x/bin/python").split(" (")[0]
    'torch is not installed here: pipx inject envkit-torch torch numpy --pip-args=--index-url=https://download.pytorch.org/whl/cpu'
    >>> no_torch("/work/.venv", "/work/.venv/bin/python").split(" --index-url")[0]
    'torch is not installed here: /work/.venv/bin/python -m pip install torch numpy'
    """
    prefix, executable = prefix or sys.prefix, executable or sys.executable
    venv = os.path.basename(prefix.rstrip("/\\"))
    if "pipx" in prefix.replace("\\", "/").split("/"):
        how = f"pipx inject {venv} torch numpy --pip-args=--index-url={CPU_INDEX}"
    else:
        how = f"{executable} -m pip install torch numpy --index-url {CPU_INDEX}"
    return f"torch is not installed here: {how} (the CPU wheel; a cuXYZ index for a GPU), or run the harness inside the container"


def torch_missing() -> bool:
    """True when ``import torch`` fails because torch itself is not installed.

    A torch that is installed but broken (a missing CUDA library, say) is not "missing": the checks
    run and report it.
    """
    quiet_numpy_warning()
    try:
        import torch  # noqa: F401  # the question asked: can torch be imported here?
    except ModuleNotFoundError as exc:
        return exc.name == "torch"  # not torch._C or a dependency: that is a broken install
    except Exception:
        return False
    return False


class _Progress:
    """Progress lines on stderr: overwritten in place on a terminal, throttled to ~1/s otherwise."""

    def __init__(self, stream=sys.stderr):
        self.stream, self.tty, self.last = stream, stream.isatty(), 0.0

    def __call__(self, line: str) -> None:
        batch = ": batch " in line
        if self.tty:
            self.stream.write("\r\033[K" + line + ("" if batch else "\n"))
        else:
            now = time.monotonic()
            done = batch and line.split("/")[0].rsplit(" ", 1)[-1] == line.rsplit("/", 1)[-1]
            if batch and not done and now - self.last < 1.0:
                return
            self.last = now
            self.stream.write(line + "\n")
        self.stream.flush()


def main(argv: list[str] | None = None, *, prog: str = "envkit-harness", profile_option: bool = False) -> int:
    """Parse ``argv``, run the checks, print the report; return the exit status (0, 1 or 2).

    ``prog`` and ``profile_option`` are :func:`build_parser`'s: ``envkit harness`` passes its own name.
    """
    parser = build_parser(prog, profile_option=profile_option)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse already printed the usage error
        return int(exc.code or 0) if exc.code in (0, None) else 2
    raise_on_sigterm()  # docker stop, scancel: the loaders' children are ended in `finally`, then exit 143
    # With --json, stdout holds the document alone: what the dataset module, torch or a worker prints goes to stderr.
    with document_stdout() if args.json else contextlib.nullcontext():
        report = _run(args, prog)
    if isinstance(report, int):
        return report
    print(to_json(report) if args.json else render_table(report))
    return 1 if report["verdict"] == FAIL else 0


def _run(args: argparse.Namespace, prog: str) -> Report | int:
    """The checks' report, or the exit status of a run that could not make one (usage error, interrupted)."""
    try:
        # Bad input is refused before torch is imported (seconds): NaN/inf/0/negative timeouts, a plot path
        # that cannot be written, an expectation that does not load.
        check_timeout(args.timeout)
        if args.ranks is not None:
            check_ranks(args.ranks)
        if args.plot:
            check_plot_path(args.plot)
        expect = load_expect(args.expect) if args.expect else None
        network = network_ask(args)
        if torch_missing():  # before any check: otherwise every torch-based one fails with ModuleNotFoundError
            print(no_torch(), file=sys.stderr)
            return 2
        report = run_checks(expect, dataset=args.dataset, num_workers=args.num_workers,
                            batch_size=args.batch_size, timeout=args.timeout, quick=args.quick,
                            sweep=args.sweep, progress=_Progress(), plot=args.plot,
                            sample_cost_ms=args.sample_cost_ms, ranks=args.ranks, expect_file=args.expect,
                            network=network)
    except UsageError as exc:  # exit 2, or 1 where the file system refused (FileUnreadable)
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt as exc:  # Ctrl-C (130) or SIGTERM (143)
        print(f"{prog}: interrupted", file=sys.stderr)
        return interrupted_status(exc)
    return report
