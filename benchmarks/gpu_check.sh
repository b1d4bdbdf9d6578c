#!/usr/bin/env bash
# One prepared GPU check, at most 5 minutes, for the few minutes a GPU host is lent:
#   1. `envkit harness --json`: every check (gpu_arch, gpu_driver, pinned_transfer with its NUMA placement
#      and, on WSL, its pin budget) on GPU 0;
#   2. ../shared/gpu/reference_h2d.py: an independent H2D/D2H reference (torch only), on the same GPU;
#   3. benchmarks/bench_worker_rss.py --cuda: a CUDA training process's host memory beside a loader worker's
#      (the basis of sizing.PROCESS_RSS, measured on the CPU wheel only until a GPU run records it);
#   4. the network stage's NCCL path: two "nodes" (two harness processes on this host's loopback, both on GPU 0;
#      NCCL >= 2.30 lets two ranks share a GPU with NCCL_MULTI_RANK_GPU_ENABLE=1, an older NCCL refuses it and
#      the record says so): the transport NCCL names from its own INFO lines and the NCCL all_reduce bandwidth;
#   5. the ratio of envkit's pinned/pageable H2D to the reference's.
# On a host without CUDA it still runs the harness (quick) and says, in one line, which GPU parts it skipped.
#
# Usage: benchmarks/gpu_check.sh              (OUT=folder keeps the JSON documents; PYTHON=... picks the interpreter)
# Exit status: 0 when it ran (whatever the checks found), 1 when a step could not run at all.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PY=${PYTHON:-$ROOT/.venv/bin/python}
[ -x "$PY" ] || PY=python3
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/envkit-gpu-check.XXXXXX")}
mkdir -p "$OUT"
export PYTHONPATH="$ROOT/src${PYTHONPATH:+:$PYTHONPATH}"
export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}  # one GPU for both measurements
REF=${ENVKIT_REFERENCE_H2D:-}
for candidate in "$ROOT/../shared/gpu/reference_h2d.py" "$ROOT/shared/gpu/reference_h2d.py"; do
    if [ -z "$REF" ] && [ -f "$candidate" ]; then REF=$candidate; fi
done

echo "gpu_check: results in $OUT"
cuda=$("$PY" -c 'import torch; print(int(torch.cuda.is_available()))' 2>/dev/null || echo 0)
if [ "$cuda" = 1 ]; then
    "$PY" -c 'import torch; print("gpu_check: GPU 0:", torch.cuda.get_device_name(0), "torch", torch.__version__)'
    command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total \
        --format=csv,noheader > "$OUT/nvidia-smi.csv" 2>&1
    harness_args=(--json)
else
    echo "gpu_check: no CUDA device (torch.cuda.is_available() is False): skipping the GPU parts" \
         "(pinned_transfer timing, reference_h2d.py, their ratio); the harness runs its other checks (quick)"
    harness_args=(--json --quick --num-workers 0)
fi

# 1. the harness, every check (bounded: 240 s of the 5 minutes). `envkit harness` without a profile is the
#    harness itself; where envkit's own dependencies are missing (a bare GPU host) run it as python -m envkit.harness.
harness=(-m envkit harness)
"$PY" -c 'import envkit.cli' 2>/dev/null || harness=(-m envkit.harness)
timeout 240 "$PY" "${harness[@]}" "${harness_args[@]}" > "$OUT/harness.json" 2> "$OUT/harness.err"
harness_rc=$?
if [ "$harness_rc" -gt 1 ]; then
    echo "gpu_check: envkit harness could not run (exit $harness_rc); see $OUT/harness.err" >&2
    tail -5 "$OUT/harness.err" >&2
    exit 1
fi

# 2. the independent reference, same GPU (bounded: 50 s)
if [ "$cuda" = 1 ]; then
    if [ -z "$REF" ]; then
        echo "gpu_check: reference_h2d.py not found (../shared/gpu/ or ENVKIT_REFERENCE_H2D): no reference" >&2
    else
        timeout 50 "$PY" "$REF" --device 0 > "$OUT/reference.json" 2> "$OUT/reference.err" \
            || echo "gpu_check: reference_h2d.py failed; see $OUT/reference.err" >&2
    fi
fi

# 3. a CUDA process's host memory (bounded: 60 s): what PROCESS_RSS must cover for a GPU rank
if [ "$cuda" = 1 ]; then
    timeout 60 "$PY" "$ROOT/benchmarks/bench_worker_rss.py" --cuda > "$OUT/worker_rss.txt" 2>&1 \
        || echo "gpu_check: bench_worker_rss.py --cuda failed; see $OUT/worker_rss.txt" >&2
    sed 's/^/gpu_check: rss: /' "$OUT/worker_rss.txt"
fi

# 4. the network stage with NCCL (bounded: 70 s): two nodes on loopback, each its own harness process
if [ "$cuda" = 1 ]; then
    port=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    for r in 0 1; do
        MASTER_ADDR=127.0.0.1 MASTER_PORT=$port NODE_RANK=$r NNODES=2 ENVKIT_JOB_ID=gpu-check \
        NCCL_MULTI_RANK_GPU_ENABLE=1 timeout 70 "$PY" -m envkit.harness --network --quick --num-workers 0 --json \
            > "$OUT/network-$r.json" 2> "$OUT/network-$r.err" &
    done
    wait
fi

# 5. the summary and the ratio
"$PY" - "$OUT" <<'PYEOF'
import json, sys
from pathlib import Path

out = Path(sys.argv[1])
report = json.loads((out / "harness.json").read_text())
checks = {c["name"]: c for c in report["checks"]}
summary = {"verdict": report["verdict"],
           "checks": {n: {"status": c["status"], "message": c["message"]} for n, c in checks.items()}}
for r in (0, 1):  # the network stage's NCCL path (step 4)
    f = out / f"network-{r}.json"
    try:
        net = {c["name"]: c for c in json.loads(f.read_text())["checks"]}.get("network", {})
    except (OSError, ValueError):
        continue
    m = net.get("measured", {})
    summary[f"network_{r}"] = {"status": net.get("status"), "message": net.get("message"),
                               "transport": m.get("transport"), "gloo_gbps": m.get("bandwidth_gbps"),
                               "nccl_gbps": m.get("nccl_bandwidth_gbps"), "elapsed_s": m.get("elapsed_s")}
for name in ("gpu_arch", "gpu_driver", "pinned_transfer"):
    c = checks.get(name, {})
    print(f"gpu_check: {name}: {c.get('status')}: {c.get('message', '')[:300]}")
pt = checks.get("pinned_transfer", {}).get("measured", {})
ref_path = out / "reference.json"
ref = json.loads(ref_path.read_text()) if ref_path.is_file() and ref_path.stat().st_size else None
if pt.get("pinned_gbps") and ref and ref.get("cuda"):
    ratio = {"h2d_pinned": round(pt["pinned_gbps"] / ref["h2d_pinned_GBps"], 3),
             "h2d_pageable": round(pt["pageable_gbps"] / ref["h2d_pageable_GBps"], 3)}
    summary.update(envkit={k: pt.get(k) for k in ("device", "size_bytes", "pinned_gbps", "pageable_gbps", "affinity",
                                                  "pin_budget")},
                   reference={k: ref.get(k) for k in ("device", "numa_cpus", "size_bytes", "h2d_pinned_GBps",
                                                      "h2d_pageable_GBps", "d2h_pinned_GBps")},
                   ratio=ratio)
    print(f"gpu_check: envkit/reference H2D pinned {pt['pinned_gbps']} / {ref['h2d_pinned_GBps']} GB/s = "
          f"{ratio['h2d_pinned']}; pageable {pt['pageable_gbps']} / {ref['h2d_pageable_GBps']} GB/s = {ratio['h2d_pageable']}")
else:
    print("gpu_check: ratio skipped: no CUDA measurement on this host (pinned_transfer and reference_h2d.py need a GPU)")
(out / "summary.json").write_text(json.dumps(summary, indent=2))
PYEOF
