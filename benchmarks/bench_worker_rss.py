"""Measure the resident memory of one DataLoader worker (the basis of ``sizing.PROCESS_RSS``).

Starts a real ``torch.utils.data.DataLoader`` with 2 workers for each start method,
pulls batches of the harness's default shape (32 x 3 x 64 x 64 float32), and while
the workers are alive reads each worker's ``VmRSS`` and ``Pss`` from /proc (Linux
only). Also prints the main process's RSS after ``import torch``.

With ``--cuda`` it also measures a training process's host memory once CUDA is initialised (the context,
a cuBLAS handle and one matmul on GPU 0): what PROCESS_RSS must cover for a GPU rank, which the CPU wheel
cannot show. ``benchmarks/gpu_check.sh`` runs it so on a lent GPU machine.

Run: ``.venv/bin/python benchmarks/bench_worker_rss.py [--cuda]``
"""

from __future__ import annotations

import multiprocessing
import os
import sys


def _kib(pid: int, field: str, name: str = "status") -> int:
    path = f"/proc/{pid}/{name}"
    with open(path) as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def _pss(pid: int) -> int:
    try:
        return _kib(pid, "Pss", "smaps_rollup")
    except OSError:
        return 0


class Synthetic:
    def __len__(self):
        return 10_000

    def __getitem__(self, i):
        import torch
        return torch.randn(3, 64, 64), i % 10


def measure(method: str) -> list[tuple[int, int, int]]:
    import torch.utils.data as tud
    dl = tud.DataLoader(Synthetic(), batch_size=32, num_workers=2, prefetch_factor=2,
                        multiprocessing_context=method, persistent_workers=True)
    it = iter(dl)
    for _ in range(8):
        next(it)
    me = os.getpid()
    kids = [int(p) for p in os.listdir("/proc") if p.isdigit() and _ppid(int(p)) == me]
    out = [(pid, _kib(pid, "VmRSS"), _pss(pid)) for pid in kids]
    del it, dl
    return out


def _ppid(pid: int) -> int:
    try:
        return _kib(pid, "PPid")
    except OSError:
        return -1


def cuda_rss() -> None:
    """The main process's VmRSS after CUDA starts (context, cuBLAS, one matmul), or why it was not measured."""
    import torch
    if not torch.cuda.is_available():
        print("cuda process: not measured (torch.cuda.is_available() is False)")
        return
    x = torch.randn(1024, 1024, device="cuda")
    (x @ x).sum().item()
    torch.cuda.synchronize()
    print(f"cuda process after CUDA init + a matmul on {torch.cuda.get_device_name(0)}: "
          f"VmRSS {_kib(os.getpid(), 'VmRSS') / 1024:.0f} MiB")


def main() -> int:
    import torch
    print(f"torch {torch.__version__}, Python {sys.version.split()[0]}, {os.uname().machine}")
    print(f"main process after import torch: VmRSS {_kib(os.getpid(), 'VmRSS') / 1024:.0f} MiB")
    if "--cuda" in sys.argv[1:]:
        cuda_rss()  # before the loaders: their workers fork from a process without a CUDA context
    for method in ("fork", "spawn", "forkserver"):
        if method not in multiprocessing.get_all_start_methods():
            continue
        for pid, rss, pss in measure(method):
            print(f"{method:10s} worker pid {pid}: VmRSS {rss / 1024:.0f} MiB, Pss {pss / 1024:.0f} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
