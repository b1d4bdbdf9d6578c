"""Build time cold and warm, and validate's time beyond the build, against a real Docker engine.

Runs in one go, side by side:
  1. cold:  `envkit build --no-cache`
  2. warm:  rebuild after changing only image.env     (cached layers up to the env layer)
  3. warm:  rebuild after changing only pip_packages   (cached layers up to the pip layer)
  4. validate --image (the harness in a container) and validate --compare-default
and prints each time and its ratio to the cold build.

Needs an engine and the local base image: `bash docker/with-engine.sh python benchmarks/bench_build.py`.
Uses the same local setup as the end-to-end tests: the local Debian base image, an offline
torch wheelhouse (pip finds the CPU wheel on local disk) and the host CA bundle.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TORCH = "2.13.0"
BASE = os.environ.get("ENVKIT_BASE_IMAGE", "envkit/bookworm-python:local")


def profile(env_value: str, pip: str) -> str:
    return f"""envkit: 1
name: bench-build
image:
  base: {BASE}
  tag: envkit/bench-build:latest
  torch: {{version: "{TORCH}", variant: cpu, find_links: [wheels]}}
  pip_packages: [{pip}]
  ca_certificates: [certs/host-ca.pem]
  env: {{BENCH: "{env_value}"}}
run: {{shm_size: 512m, cpuset: "0-1", memory: 4g}}
loader: {{num_workers: 2, batch_size: 32, sample_shape: [3, 224, 224]}}
"""


def timed(args: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    res = subprocess.run([sys.executable, "-m", "envkit", *args], cwd=cwd, capture_output=True, text=True)
    took = time.perf_counter() - start
    if res.returncode not in (0, 1):
        sys.exit(f"envkit {' '.join(args)} failed ({res.returncode}):\n{res.stderr[-3000:]}")
    return took


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="envkit-bench-") as tmp:
        root = Path(tmp)
        (root / "wheels").mkdir()
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                        "-d", str(root / "wheels"), f"torch=={TORCH}"], check=True)
        (root / "certs").mkdir()
        shutil.copy("/etc/ssl/certs/ca-certificates.crt", root / "certs" / "host-ca.pem")
        p = root / "envkit.yaml"
        rows = []
        p.write_text(profile("a", "six"))
        rows.append(("cold build (--no-cache)", timed(["build", str(p), "--no-cache"], root)))
        p.write_text(profile("b", "six"))
        rows.append(("warm: env changed", timed(["build", str(p)], root)))
        p.write_text(profile("b", "six, packaging"))
        rows.append(("warm: pip_packages changed", timed(["build", str(p)], root)))
        rows.append(("warm: nothing changed", timed(["build", str(p)], root)))
        rows.append(("validate --image (harness only)",
                     timed(["validate", str(p), "--image", "envkit/bench-build:latest"], root)))
        rows.append(("validate --image --compare-default",
                     timed(["validate", str(p), "--image", "envkit/bench-build:latest", "--compare-default"], root)))
    cold = rows[0][1]
    print(f"{'case':<38} {'seconds':>8} {'vs cold':>8}")
    for name, secs in rows:
        print(f"{name:<38} {secs:>8.1f} {secs / cold:>7.2f}x")


if __name__ == "__main__":
    main()
