"""envkit's Dockerfile against a reference single-stage pip Dockerfile, built side by side in one run.

For the NGC-style example's image (examples/ngc-style.yaml: its system packages, pip packages
and non-root user; torch from an index), both Dockerfiles are built with the classic builder (the
one docker-py uses), in this order:
  1. cold:  --no-cache, each
  2. warm:  rebuild after changing only image.env            (each)
  3. warm:  rebuild after changing only image.pip_packages   (each)
  4. warm:  rebuild after changing only the code (train.py; envkit: image.copy_project, the
            reference: its COPY last)                          (each)
  5. cold:  --no-cache, torch from a wheelhouse in the build context instead of an index (envkit's
            staged layout, which keeps the wheelhouse out of the image; the reference deletes it in
            the install's RUN, but its COPY layer stays)
and it prints each time with its ratio (envkit / reference, and warm / cold), the image sizes,
and for envkit's image: image size minus base size against the installed environment's size
(the venv plus what apt installed beyond the base, from dpkg's Installed-Size).

What differs from the example, because this machine has no registry, no GPU and no route to the
PyTorch index: the base is the local Debian image (``ENVKIT_BASE_IMAGE``, built by
docker/base-image.sh) instead of ubuntu:22.04, and torch is 2.13.0, served with its dependencies by
a local index (tests/localindex.py) on the Docker bridge, as the PyTorch index serves them; the
profile's other packages come from PyPI through the host CA bundle. By default torch is the CPU
wheel (about 1 GB installed); with ``--cuda`` it is PyPI's CUDA build of the same version with its
``nvidia-*`` wheels (cu130, about 2.6 GB to download once into ~/.cache/envkit/bench-cuda-wheels,
several GB installed), which is what the example's cu124 image is like; ``--cuda`` leaves out row 5.

With ``--runs N`` the cold builds are done N times, alternating which of the two goes first, and the
warm rows are taken against the median cold build.

    bash docker/with-engine.sh python benchmarks/bench_build.py [--cuda] [--runs N]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TORCH = "2.13.0"
BASE = os.environ.get("ENVKIT_BASE_IMAGE", "envkit/bookworm-python:local")
TAG_ENVKIT = "envkit-image-bench-envkit:latest"
TAG_REF = "envkit-image-bench-reference:latest"
TAG_ENVKIT_WHEELS = "envkit-image-bench-envkit-wheelhouse:latest"
TAG_REF_WHEELS = "envkit-image-bench-reference-wheelhouse:latest"
ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "ngc-style.yaml"
HOST_CA = "/etc/ssl/certs/ca-certificates.crt"
sys.path.insert(0, str(ROOT))
from tests.localindex import LocalIndex, bridge_gateway  # noqa: E402 (the repository root is on the path now)


def example_image() -> tuple[list[str], list[str], str, int]:
    """The example's system packages, pip packages, user name and uid (read from the YAML)."""
    import yaml

    image = yaml.safe_load(EXAMPLE.read_text())["image"]
    return (list(image.get("system_packages", [])), list(image.get("pip_packages", [])),
            image["user"]["name"], image["user"]["uid"])


VARIANT = "cpu"  # "cu130" with --cuda (main() sets it)


def profile(env_value: str, pip: list[str], index_url: str | None, tag: str = TAG_ENVKIT) -> str:
    """The example's image section on the local base; torch from ``index_url``, else from the wheelhouse."""
    apt, _, user, uid = example_image()
    source = f'index_url: "{index_url}"' if index_url else "find_links: [wheels]"
    return f"""envkit: 1
name: ngc-style
image:
  base: {BASE}
  tag: {tag}
  system_packages: {json.dumps(apt)}
  pip_packages: {json.dumps(pip)}
  torch: {{version: "{TORCH}", variant: {VARIANT}, {source}}}
  user: {{name: {user}, uid: {uid}, gid: {uid}}}
  ca_certificates: [certs/host-ca.pem]
  copy_project: true
  env: {{BENCH: "{env_value}"}}
run: {{shm_size: 16g, ipc: private, memory: 128g}}
loader: {{num_workers: 12, batch_size: 256, sample_shape: [3, 224, 224], dtype: uint8, prefetch_factor: 4}}
"""


def reference_dockerfile(env_value: str, pip: list[str], index_url: str | None) -> str:
    """What a careful hand-written single-stage Dockerfile does: apt, venv, pip install torch from the index
    (or from the wheelhouse, deleted in the same layer), pip packages, the user, env last."""
    apt, _, user, uid = example_image()
    pkgs = " ".join(sorted({"ca-certificates", "python3", "python3-venv", *apt}))
    reqs = " ".join(f"'{p}'" for p in pip)
    if index_url:
        # pip trusts plain http only on localhost; the local index stands in for https://download.pytorch.org.
        host = index_url.split("/")[2].split(":")[0]
        torch = f"RUN pip install --index-url {index_url} --trusted-host {host} torch=={TORCH} numpy"
    else:
        torch = f"COPY wheels/ /tmp/wheels/\nRUN pip install --find-links /tmp/wheels torch=={TORCH}+cpu numpy && rm -rf /tmp/wheels"
    # Its first step differs from envkit's (COPY before ARG): the classic builder's cache picks the
    # newest of identical sibling layers, so a shared first step built --no-cache by one Dockerfile
    # would divert the other's next lookup onto a chain it never built (measured: a full rebuild).
    return f"""FROM {BASE}
COPY certs/ /usr/local/share/ca-certificates/bench/
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update && apt-get install -y --no-install-recommends {pkgs} \\
 && update-ca-certificates && rm -rf /var/lib/apt/lists/*
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_CERT={HOST_CA} SSL_CERT_FILE={HOST_CA}
RUN python3 -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
{torch}
RUN pip install {reqs}
RUN groupadd --gid {uid} {user} && useradd --uid {uid} --gid {uid} --create-home {user} && mkdir -p /workspace
ENV BENCH="{env_value}"
COPY train.py /workspace/
USER {user}
WORKDIR /workspace
"""


def build(context: Path, tag: str, no_cache: bool = False) -> float:
    """Seconds for a classic-builder build (DOCKER_BUILDKIT=0: the builder docker-py uses)."""
    args = ["docker", "build", "-q", "-t", tag, *(["--no-cache"] if no_cache else []), str(context)]
    dangling = dangling_images()
    start = time.perf_counter()
    res = subprocess.run(args, capture_output=True, text=True, env={**os.environ, "DOCKER_BUILDKIT": "0"})
    took = time.perf_counter() - start
    if res.returncode != 0:
        sys.exit(f"build of {tag} failed:\n{res.stdout[-2000:]}\n{res.stderr[-3000:]}")
    BUILT.add(res.stdout.strip().splitlines()[-1])  # -q prints the image's id
    # and what the build left untagged: a multi-stage build's stage images, the image a rebuild replaced.
    BUILT.update(dangling_images() - dangling)
    return took


BUILT: set[str] = set()  # every image the benchmark made, removed at the end


def dangling_images() -> set[str]:
    out = subprocess.run(["docker", "images", "-q", "--no-trunc", "-f", "dangling=true"], capture_output=True,
                         text=True, check=True).stdout
    return set(out.split())


def generate_envkit(root: Path, text: str) -> Path:
    (root / "envkit.yaml").write_text(text)
    out = root / "envkit-ctx"
    res = subprocess.run([sys.executable, "-m", "envkit", "generate", str(root / "envkit.yaml"), "-o", str(out),
                          "--target", "dockerfile", "--force"], capture_output=True, text=True)
    if res.returncode not in (0, 1):
        sys.exit(f"envkit generate failed:\n{res.stderr}")
    return out


def write_reference(root: Path, text: str) -> Path:
    ctx = root / "ref-ctx"
    (ctx / "Dockerfile").write_text(text)
    return ctx


def image_size(tag: str) -> int:
    out = subprocess.run(["docker", "image", "inspect", "-f", "{{.Size}}", tag], capture_output=True, text=True,
                         check=True).stdout
    return int(out.strip())


def in_image(tag: str, script: str) -> str:
    return subprocess.run(["docker", "run", "--rm", "--user", "0", "--entrypoint", "sh", tag, "-c", script],
                          capture_output=True, text=True, check=True).stdout


def dpkg_sizes(tag: str) -> dict[str, int]:
    out = in_image(tag, "dpkg-query -W -f '${Package} ${Installed-Size}\\n'")
    return {name: int(kib or 0) * 1024 for name, kib in (line.split(" ") for line in out.splitlines() if line)}


def installed_bytes(tag: str) -> tuple[int, int]:
    """(venv bytes, bytes of the Debian packages apt added beyond the base)."""
    venv = int(in_image(tag, "du -sb /opt/venv").split()[0])
    base, image = dpkg_sizes(BASE), dpkg_sizes(tag)
    apt = sum(size for name, size in image.items() if name not in base)
    return venv, apt


def layers_with(tag: str, needle: str) -> list[str]:
    out = subprocess.run(["docker", "history", "--no-trunc", "--format", "{{.Size}}\t{{.CreatedBy}}", tag],
                         capture_output=True, text=True, check=True).stdout
    return [line[:120] for line in out.splitlines() if needle in line]


def remove_images(tags) -> None:
    """The benchmark's images and the layers under them (with --cuda, several GB each), the ones a later
    build of the same tag left untagged included."""
    subprocess.run(["docker", "rmi", "-f", *tags, *sorted(BUILT)], capture_output=True)


def gb(n: float) -> str:
    return f"{n / 1e9:.2f} GB"


def cuda_wheels() -> Path:
    """PyPI's CUDA build of torch with its nvidia-* wheels, downloaded once (``--isolated``: this machine's pip
    configuration finds the CPU wheel on local disk first)."""
    folder = Path.home() / ".cache" / "envkit" / "bench-cuda-wheels"
    if not list(folder.glob(f"torch-{TORCH}-*.whl")):
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--isolated", "--cert", HOST_CA,
                        "--index-url", "https://pypi.org/simple", "--only-binary=:all:", "-d", str(folder),
                        f"torch=={TORCH}", "numpy"], check=True)
    return folder


def main() -> None:
    global VARIANT
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cuda", action="store_true", help="PyPI's CUDA build of torch instead of the CPU wheel")
    parser.add_argument("--runs", type=int, default=1, metavar="N",
                        help="cold builds of each, alternating which goes first (the median is the reference)")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs takes at least 1")
    cuda, n_cold = args.cuda, args.runs
    _, pip, _, _ = example_image()
    with tempfile.TemporaryDirectory(prefix="envkit-image-bench-") as tmp:
        root = Path(tmp)
        # torch and its dependencies (numpy included), as the PyTorch index serves them.
        if cuda:
            VARIANT = "cu130"
            shutil.copytree(cuda_wheels(), root / "wheels", copy_function=os.link)
        else:
            (root / "wheels").mkdir()
            subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:",
                            "-d", str(root / "wheels"), f"torch=={TORCH}", "numpy"], check=True)
        (root / "certs").mkdir()
        shutil.copy(HOST_CA, root / "certs" / "host-ca.pem")
        ref_ctx = root / "ref-ctx"
        ref_ctx.mkdir()
        if not cuda:
            shutil.copytree(root / "wheels", ref_ctx / "wheels", copy_function=os.link)
        (ref_ctx / "certs").mkdir()
        shutil.copy(HOST_CA, ref_ctx / "certs" / "host-ca.crt")  # update-ca-certificates reads only *.crt
        # The code both images carry; the project copy leaves out the reference's context (.dockerignore).
        for d in (root, ref_ctx):
            (d / "train.py").write_text("print('epoch 1')\n")
        (root / ".dockerignore").write_text("ref-ctx/\nwheels/\n")
        rows: list[tuple[str, float, float]] = []

        def both(case: str, env_value: str, pip_now: list[str], index_url: str | None, no_cache: bool = False,
                 tags: tuple[str, str] = (TAG_ENVKIT, TAG_REF), reference_first: bool = False) -> None:
            def envkit() -> float:
                return build(generate_envkit(root, profile(env_value, pip_now, index_url, tags[0])), tags[0],
                             no_cache)

            def reference() -> float:
                return build(write_reference(root, reference_dockerfile(env_value, pip_now, index_url)), tags[1],
                             no_cache)

            if reference_first:
                r = reference()
                e = envkit()
            else:
                e = envkit()
                r = reference()
            rows.append((case, e, r))
            print(f"  {case}: envkit {e:.1f} s, reference {r:.1f} s", file=sys.stderr, flush=True)

        with LocalIndex(root / "wheels", host=bridge_gateway()) as index:
            # Cold builds alternate which goes first (the first warms the apt mirror's and the kernel's caches).
            for i in range(n_cold):
                both("cold build (--no-cache)" + (f", run {i + 1}" if n_cold > 1 else ""), "a", pip, index.url,
                     no_cache=True, reference_first=i % 2 == 1)
            both("warm: image.env changed", "b", pip, index.url)
            both("warm: pip_packages changed", "b", [*pip, "six"], index.url)
            for d in (root, ref_ctx):
                (d / "train.py").write_text("print('epoch 2')\n")
            both("warm: only code changed", "b", [*pip, "six"], index.url)
        if not cuda:
            both("cold, torch from a wheelhouse", "b", [*pip, "six"], None, no_cache=True,
                 tags=(TAG_ENVKIT_WHEELS, TAG_REF_WHEELS))

        tags = (TAG_ENVKIT, TAG_REF) + (() if cuda else (TAG_ENVKIT_WHEELS, TAG_REF_WHEELS))
        sizes = {tag: image_size(tag) for tag in tags}
        base = image_size(BASE)
        installed = {tag: installed_bytes(tag) for tag in tags}
        wheel_layers = {t: layers_with(t, "wheels") for t in tags[2:]}
        remove_images(tags)

    colds = rows[:n_cold]
    cold_e, cold_r = statistics.median(e for _, e, _ in colds), statistics.median(r for _, _, r in colds)
    if n_cold > 1:
        rows.insert(n_cold, (f"cold, median of {n_cold}", cold_e, cold_r))
    flavour = "CUDA build (cu130) from PyPI" if cuda else "CPU wheel"
    print(f"NGC-style example (base {BASE}, torch {TORCH}, its {flavour}, from a local index), classic builder, "
          + ("one run" if n_cold == 1 else f"{n_cold} cold builds each, alternating which goes first"))
    print(f"{'case':<30} {'envkit s':>9} {'reference s':>12} {'envkit/ref':>11} {'envkit/cold':>12} {'ref/cold':>9}")
    for name, e, r in rows:
        warm = name.startswith("warm")
        print(f"{name:<30} {e:>9.1f} {r:>12.1f} {e / r:>10.2f}x "
              + (f"{e / cold_e:>11.2f}x {r / cold_r:>8.2f}x" if warm else f"{'':>12} {'':>9}"))
    print()
    print(f"{'image':<30} {'size':>9} {'minus base':>12} {'installed':>11} {'ratio':>7}")
    labels = {TAG_ENVKIT: "envkit", TAG_REF: "reference", TAG_ENVKIT_WHEELS: "envkit, wheelhouse",
              TAG_REF_WHEELS: "reference, wheelhouse"}
    for tag in tags:
        v, a = installed[tag]
        extra = sizes[tag] - base
        print(f"{labels[tag]:<30} {gb(sizes[tag]):>9} {gb(extra):>12} {gb(v + a):>11} {extra / (v + a):>6.2f}x")
    print(f"(base {gb(base)}; installed = the venv + the apt packages beyond the base: "
          + "; ".join(f"{labels[t]} {gb(installed[t][0])} + {gb(installed[t][1])}" for t in tags) + ")")
    print(f"envkit/reference image size: {sizes[TAG_ENVKIT] / sizes[TAG_REF]:.2f}x (index)"
          + ("" if cuda else f", {sizes[TAG_ENVKIT_WHEELS] / sizes[TAG_REF_WHEELS]:.2f}x (wheelhouse)"))
    for tag, found in wheel_layers.items():
        print(f"layers of {tag} that mention the wheelhouse: {len(found)}")
        for line in found:
            print("    " + re.sub(r"\s+", " ", line))


if __name__ == "__main__":
    main()
