"""Generate-time advice on the image section: CUDA stored twice, and ``image.cuda_devel``'s base.

A ``nvidia/cuda:*-runtime``/``-devel`` base ships CUDA libraries (cublas, cudnn, nccl, ...) that
torch's CUDA wheels install again as ``nvidia-*-cu12`` packages and load in preference, so the
base's copy is dead weight in every pull. The sizes are estimates, stated as constants:

* ``CUDA_RUNTIME_LIBS`` (2.5 GiB): the uncompressed size of ``nvidia/cuda:12.x-runtime-ubuntu22.04``
  (~2.6 GB) minus its ``ubuntu:22.04`` base (~0.08 GB); a ``-devel`` image holds the same runtime
  libraries (its compilers and headers are not duplicated by the wheels, so they are not counted).
* ``CUDNN_LIBS`` (1.0 GiB): what ``-cudnn-runtime`` adds over ``-runtime`` (~3.6 GB vs ~2.6 GB).

Example:
    >>> from envkit.profile import load_profile
    >>> image_warnings(load_profile(None).profile)
    []
"""

from __future__ import annotations

from envkit.findings import Finding
from envkit.harness.rules.sizing import GIB
from envkit.profile.model import Profile

CUDA_RUNTIME_LIBS = 2.5 * GIB
"""Bytes of CUDA runtime libraries in a ``nvidia/cuda`` runtime/devel base (basis: module docstring)."""
CUDNN_LIBS = 1.0 * GIB
"""Bytes cuDNN adds in a ``-cudnn-`` tag (basis: module docstring)."""


def cuda_twice_bytes(base: str) -> float:
    """Estimated bytes a ``nvidia/cuda`` base stores again next to a CUDA torch wheel (0 for others).

    >>> round(cuda_twice_bytes("nvidia/cuda:12.4.1-cudnn-runtime-ubuntu22.04") / GIB, 1)
    3.5
    >>> cuda_twice_bytes("ubuntu:24.04")
    0
    """
    repo, _, tag = base.partition(":")
    if repo.rsplit("/", 2)[-2:] != ["nvidia", "cuda"] or not any(f in tag for f in ("runtime", "devel")):
        return 0  # -base images hold only cudart: nothing worth a warning
    return CUDA_RUNTIME_LIBS + (CUDNN_LIBS if "cudnn" in tag else 0)


def image_warnings(profile: Profile) -> list[Finding]:
    """CUDA stored twice (a nvidia/cuda base under a CUDA torch wheel) and cuda_devel's base."""
    image, out = profile.image, []
    torch = image.torch
    twice = cuda_twice_bytes(image.base)
    is_devel = "devel" in image.base.partition(":")[2] and twice > 0
    if image.cuda_devel and not is_devel:
        out.append(Finding("image.cuda_devel", f"true, but image.base {image.base!r} is not a nvidia/cuda:*-devel image: "
                   "compiling CUDA extensions needs its nvcc and headers (e.g. nvidia/cuda:12.4.1-devel-ubuntu22.04)"))
    if twice and torch is not None and torch.is_cuda and not (is_devel and image.cuda_devel):
        out.append(Finding("image.base", f"{image.base} stores CUDA twice: torch's {torch.variant} wheels install their own "
                   f"CUDA libraries (nvidia-*-cu12) and load those, so about {twice / GIB:.1f} GB of the base's "
                   "copy is dead weight in every pull; use a plain base such as ubuntu:22.04 (the driver comes "
                   "from the host), or a -devel base with image.cuda_devel: true only to compile CUDA extensions"))
    return out
