"""Which GPUs each PyTorch CUDA wheel runs on, and which driver each wheel's CUDA needs.

Data, with its sources, and the two rules that read it. Standard library only: the harness (in the
image) and ``envkit doctor`` (on the host) share it, so it is a Python module, not a JSON file (the
harness zipapp carries only this package's ``.py`` files).

- :data:`RELEASES`: per torch release, the CUDA variants it ships and each wheel's ``TORCH_CUDA_ARCH_LIST``,
  from PyTorch's own wheel build scripts (repository, commit and lines in each entry): the lists change
  between releases (2.7's cu128 has no sm_70, 2.8's has; 2.4's cu124 has no PTX), so a variant alone
  does not say which GPUs a wheel runs on. ``X.Y`` builds ``sm_XY`` cubins; ``+PTX`` adds ``compute_XY``.
- :func:`pairs_for`: the (release, variant) wheels that exist together and run on every given GPU: what a
  remedy may name (cu128 starts at torch 2.7).
- :data:`DRIVERS`: the minimum driver per CUDA release, from NVIDIA's CUDA Toolkit Release Notes,
  Table 3 "CUDA Toolkit and Corresponding Driver Versions" (toolkit driver) and the CUDA Compatibility
  guide's minor-version table (the driver a whole CUDA major needs, with a limited feature set).
- :func:`runs_on`: PyTorch's own rule (``torch.cuda._check_capability``): a build runs on a device when
  one of its archs has the device's major version and a minor version not above the device's;
  Jetson-only archs (5.3, 6.2, 7.2, 8.7) run on themselves only.

Example:
    >>> runs_on(arch_list("cu124", release="2.5"), (12, 0)), runs_on(arch_list("cu128", release="2.7"), (12, 0))
    (False, True)
    >>> pairs_for([(12, 0)], since="2.5")[0], driver_minimum("12.8")["toolkit"]
    (('2.7', 'cu128'), '570.26')
"""

from __future__ import annotations

from dataclasses import dataclass

def variant_cuda(variant: str) -> str | None:
    """``cu124`` -> ``12.4``; None for cpu/rocm.

    >>> variant_cuda("cu124"), variant_cuda("cu130"), variant_cuda("cpu")
    ('12.4', '13.0', None)
    """
    if not variant.startswith("cu") or not variant[2:].isdigit() or len(variant) < 5:
        return None
    digits = variant[2:]
    return f"{int(digits[:-1])}.{digits[-1]}"


# Per release, the CUDA variants download.pytorch.org serves (pytorch/test-infra's release branches,
# .github/scripts/generate_binary_build_matrix.py) and each wheel's arch list, with where it was read and how
# sure it is: "verified-build-script" (pytorch/builder's release branch, lines cited), "verified-wheel" (the
# cubins and PTX found in the released wheel's libtorch_cuda.so), "documented" (PyTorch's RELEASE.md support
# matrix), "observed" (torch.cuda.get_arch_list() printed in a cited issue), "UNVERIFIED" (no list recorded:
# the variant exists but the checks skip it). Collected 2026-12-04 (/work/research in the session's notes).
# 2.4 and 2.5's cu124 carry no compute_90 PTX: release/2.5 reverted it (pytorch/builder fa48aaf5). cu128 starts
# at 2.7 and ends after 2.11; 2.11's cu128 drops sm_70 (pytorch/pytorch#182250). ``X.Y`` builds ``sm_XY``
# cubins, ``+PTX`` adds ``compute_XY``.


@dataclass(frozen=True)
class Wheel:
    """One (torch release, CUDA variant) wheel: its CUDA, the arch list it was built with per machine (None: not
    recorded, or no wheel for that machine), where that was read, and how sure it is."""

    cuda: str
    x86_64: str | None
    aarch64: str | None
    source: str
    status: str = ""


RELEASES: dict[str, dict[str, Wheel]] = {
    "2.1": {
        "cu118": Wheel("11.8", '3.7;5.0;6.0;7.0;7.5;8.0;8.6;9.0', None,
                    'pytorch/builder@55d40b1b (branch release/2.1) manywheel/build_cuda.sh:59-68',
                    'verified-build-script'),
        "cu121": Wheel("12.1", '5.0;6.0;7.0;7.5;8.0;8.6;9.0', None,
                    'pytorch/builder@55d40b1b (branch release/2.1) manywheel/build_cuda.sh:59-68',
                    'verified-build-script'),
    },
    "2.2": {
        "cu118": Wheel("11.8", '3.7;5.0;6.0;7.0;7.5;8.0;8.6;9.0', None,
                    'pytorch/builder@af60d114 (branch release/2.2) manywheel/build_cuda.sh:60-69',
                    'verified-build-script'),
        "cu121": Wheel("12.1", '5.0;6.0;7.0;7.5;8.0;8.6;9.0', None,
                    'pytorch/builder@af60d114 (branch release/2.2) manywheel/build_cuda.sh:60-69',
                    'verified-build-script'),
    },
    "2.3": {
        "cu118": Wheel("11.8", '3.7;5.0;6.0;7.0;7.5;8.0;8.6;9.0', None,
                    'pytorch/builder@ba10bae9 (branch release/2.3) manywheel/build_cuda.sh:60-69',
                    'verified-build-script'),
        "cu121": Wheel("12.1", '5.0;6.0;7.0;7.5;8.0;8.6;9.0', None,
                    'pytorch/builder@ba10bae9 (branch release/2.3) manywheel/build_cuda.sh:60-69',
                    'verified-build-script'),
    },
    "2.4": {
        "cu118": Wheel("11.8", '3.7;5.0;6.0;7.0;7.5;8.0;8.6;9.0', None,
                    'pytorch/builder@4ce1afeb (branch release/2.4) manywheel/build_cuda.sh:60,74-77',
                    'verified-build-script'),
        "cu121": Wheel("12.1", '5.0;6.0;7.0;7.5;8.0;8.6;9.0', None,
                    'pytorch/builder@4ce1afeb (branch release/2.4) manywheel/build_cuda.sh:60,70-73',
                    'verified-build-script'),
        "cu124": Wheel("12.4", '5.0;6.0;7.0;7.5;8.0;8.6;9.0', '9.0',
                    'pytorch/builder@4ce1afeb (branch release/2.4) manywheel/build_cuda.sh:60-69',
                    'verified-build-script'),
    },
    "2.5": {
        "cu118": Wheel("11.8", '3.7;5.0;6.0;7.0;7.5;8.0;8.6;9.0', None,
                    'pytorch/builder@aec5fb5d (branch release/2.5) manywheel/build_cuda.sh:60,74-77',
                    'verified-build-script'),
        "cu121": Wheel("12.1", '5.0;6.0;7.0;7.5;8.0;8.6;9.0', None,
                    'pytorch/builder@aec5fb5d (branch release/2.5) manywheel/build_cuda.sh:60,70-73',
                    'verified-build-script'),
        "cu124": Wheel("12.4", '5.0;6.0;7.0;7.5;8.0;8.6;9.0', '9.0',
                    'pytorch/builder@aec5fb5d (branch release/2.5) manywheel/build_cuda.sh:60-69',
                    'verified-build-script'),
    },
    "2.6": {
        "cu118": Wheel("11.8", None, None,
                    'pytorch/pytorch v2.6.0 .ci/manywheel/build_cuda.sh (file at tag not readable here)',
                    'UNVERIFIED'),
        "cu124": Wheel("12.4", '5.0;6.0;7.0;7.5;8.0;8.6;9.0', None,
                    'PyPI torch==2.6.0 cp311 manylinux x86_64 wheel (2.6.0+cu124, git_version 2236df17), fatbin scan of torch/lib/libtorch'
                    '_cuda.so; also pytorch/pytorch#14',
                    'verified-wheel'),
        "cu126": Wheel("12.6", None, None,
                    'pytorch/pytorch v2.6.0 .ci/manywheel/build_cuda.sh (not readable here); aarch64 CUDA build of 2.6 is 12.6 (test-infra'
                    ' release/2.6 generate_binary_buil',
                    'UNVERIFIED'),
    },
    "2.7": {
        "cu118": Wheel("11.8", None, None,
                    'UNVERIFIED (not readable here)',
                    'UNVERIFIED'),
        "cu126": Wheel("12.6", '5.0;6.0;7.0;7.5;8.0;8.6;9.0', None,
                    'PyPI torch==2.7.1 cp311 manylinux x86_64 wheel (2.7.1+cu126, git_version e2d141db), fatbin scan of torch/lib/libtorch'
                    '_cuda.so (2 extra sm_89 kernels)',
                    'verified-wheel'),
        "cu128": Wheel("12.8", '7.5;8.0;8.6;9.0;10.0;12.0+PTX', None,
                    "independent get_arch_list outputs of 2.7.0+cu128 and 2.7.1+cu128: ['sm_75','sm_80','sm_86','sm_90','sm_100','sm_120'"
                    ",'compute_120'] (e.g. find_string ",
                    'observed-third-party'),
    },
    "2.8": {
        "cu126": Wheel("12.6", None, None,
                    'UNVERIFIED (RELEASE.md-style matrix for 2.8 not found upstream); Whisper-WebUI#653 comment measured 5.0;6.0;7.0;7.5;8'
                    '.0;8.6;9.0',
                    'observed-third-party-weak'),
        "cu128": Wheel("12.8", '7.0;7.5;8.0;8.6;9.0;10.0;12.0', None,
                    'PyPI torch==2.8.0 cp311 manylinux x86_64 wheel (2.8.0+cu128, git_version a1cb3cc0), fatbin scan of torch/lib/libtorch'
                    '_cuda.so; pytorch/pytorch#160269 ',
                    'verified-wheel'),
        "cu129": Wheel("12.9", '7.0;7.5;8.0;8.6;9.0;10.0;12.0+PTX', None,
                    'pytorch/pytorch@00c7a380 .ci/manywheel/build_cuda.sh 12.9 case (commit not tied to release/2.8 here)',
                    'UNVERIFIED'),
    },
    "2.9": {
        "cu126": Wheel("12.6", '5.0;6.0;7.0;7.5;8.0;8.6;9.0', '8.0;9.0',
                    "pytorch/pytorch PR #164471 / #175253 RELEASE.md 'PyTorch CUDA Support Matrix' for 2.9 and 2.10: 12.6.3 Maxwell(5.0)."
                    '.Hopper(9.0)',
                    'documented'),
        "cu128": Wheel("12.8", '7.0;7.5;8.0;8.6;9.0;10.0;12.0', None,
                    'PyPI torch==2.9.1 cp311 manylinux x86_64 wheel (2.9.1+cu128, git_version 5811a8d7), fatbin scan of torch/lib/libtorch'
                    '_cuda.so (397 fatbins, one extra ',
                    'verified-wheel'),
        "cu130": Wheel("13.0", '7.5;8.0;8.6;9.0;10.0;12.0+PTX', '8.0;9.0;10.0;11.0;12.0+PTX',
                    "pytorch/pytorch PR #164471 (RELEASE.md, 2025-10-02): 13.0.0 Turing(7.5)..Blackwell(10.0, 12.0+PTX), '+PTX available "
                    "on linux builds only'; pytorch/pyt",
                    'documented'),
    },
    "2.10": {
        "cu126": Wheel("12.6", '5.0;6.0;7.0;7.5;8.0;8.6;9.0', '8.0;9.0',
                    "pytorch/pytorch PR #164471 / #175253 RELEASE.md 'PyTorch CUDA Support Matrix' for 2.9 and 2.10: 12.6.3 Maxwell(5.0)."
                    '.Hopper(9.0)',
                    'documented'),
        "cu128": Wheel("12.8", '7.0;7.5;8.0;8.6;9.0;10.0;12.0', None,
                    'PyPI torch==2.10.0 cp311 manylinux x86_64 wheel (2.10.0+cu128, git_version 449b1768), fatbin scan of torch/lib/libtor'
                    'ch_cuda.so (456 fatbins, one extr',
                    'verified-wheel'),
        "cu130": Wheel("13.0", '7.5;8.0;8.6;9.0;10.0;12.0+PTX', '8.0;9.0;10.0;11.0;12.0+PTX',
                    "pytorch/pytorch PR #164471 (RELEASE.md, 2025-10-02): 13.0.0 Turing(7.5)..Blackwell(10.0, 12.0+PTX), '+PTX available "
                    "on linux builds only'; pytorch/pyt",
                    'documented'),
    },
    "2.11": {
        "cu126": Wheel("12.6", '5.0;6.0;7.0;7.5;8.0;8.6;9.0', None,
                    "pytorch/pytorch#182250 (2026-05-03): 2.11.0+cu126 get_arch_list ['sm_50','sm_60','sm_70','sm_75','sm_80','sm_86','sm"
                    "_90']",
                    'observed'),
        "cu128": Wheel("12.8", '7.5;8.0;8.6;9.0;10.0;12.0', None,
                    "pytorch/pytorch#182250: 2.11.0+cu128 get_arch_list ['sm_75','sm_80','sm_86','sm_90','sm_100','sm_120']; Volta droppe"
                    'd from cu128 for 2.11: pytorch/pyt',
                    'observed'),
        "cu130": Wheel("13.0", '7.5;8.0;8.6;9.0;10.0;12.0', None,
                    'PyPI torch==2.11.0 cp311 manylinux x86_64 wheel (2.11.0+cu130, git_version 70d99e99), fatbin scan of torch/lib/libtor'
                    'ch_cuda.so (plus 59 sm_103 and 1 ',
                    'verified-wheel (PyPI build)'),
    },
    "2.12": {
        "cu126": Wheel("12.6", '5.0;6.0;7.0;7.5;8.0;8.6;9.0', '8.0;9.0',
                    "RELEASE.md 'For Release 2.12, 2.13 and 2.14' matrix (pytorch/pytorch PR #182849 diff; text copy id 66643764700); tor"
                    'ch UNVERIFIED beyond the doc',
                    'documented'),
        "cu130": Wheel("13.0", '7.5;8.0;8.6;9.0;10.0;12.0', '8.0;9.0;10.0;11.0;12.0+PTX',
                    'PyPI torch==2.12.1 cp311 manylinux x86_64 wheel (2.12.1+cu130, git_version 7269437d), fatbin scan of torch/lib/libtor'
                    'ch_cuda.so (plus 59 sm_103, 1 sm_',
                    'verified-wheel (PyPI build)'),
        "cu132": Wheel("13.2", '7.5;8.0;8.6;9.0;10.0;12.0+PTX', '8.0;9.0;10.0;11.0;12.0+PTX',
                    "RELEASE.md matrix 13.2.1 row (PR #182849); 2.13.0+cu132 nightly get_arch_list ['sm_75',...,'sm_120','compute_120'] ("
                    'find_string id 53298247964, a 2.13',
                    'documented'),
    },
    "2.13": {
        "cu126": Wheel("12.6", '5.0;6.0;7.0;7.5;8.0;8.6;9.0', '8.0;9.0',
                    "RELEASE.md 'For Release 2.12, 2.13 and 2.14' matrix (pytorch/pytorch PR #182849 diff; text copy id 66643764700); tor"
                    'ch 2.13.0 torch/cuda/__init__.py:3',
                    'documented'),
        "cu130": Wheel("13.0", '7.5;8.0;8.6;9.0;10.0;12.0', '8.0;9.0;10.0;11.0;12.0+PTX',
                    'PyPI torch==2.13.0 cp311 manylinux x86_64 wheel (2.13.0+cu130, git_version cf30153c), fatbin scan of torch/lib/libtor'
                    'ch_cuda.so (plus 59 sm_103, 1 sm_',
                    'verified-wheel (PyPI build)'),
        "cu132": Wheel("13.2", '7.5;8.0;8.6;9.0;10.0;12.0+PTX', '8.0;9.0;10.0;11.0;12.0+PTX',
                    "RELEASE.md matrix 13.2.1 row (PR #182849); 2.13.0+cu132 nightly get_arch_list ['sm_75',...,'sm_120','compute_120'] ("
                    'find_string id 53298247964, a 2.13',
                    'documented'),
        "cu129": Wheel("12.9", None, '8.0;9.0;10.0;12.0',
                    "torch 2.13.0 torch/cuda/__init__.py:331-334 PYTORCH_RELEASES_CODE_CC['12.9'] (x86 75..120, aarch64 80,90,100,120); t"
                    'est-infra release/2.13 CUDA_AARCH6',
                    'aarch64-only'),
    },
    "2.14": {
        "cu126": Wheel("12.6", '5.0;6.0;7.0;7.5;8.0;8.6;9.0', '8.0;9.0',
                    "RELEASE.md 'For Release 2.12, 2.13 and 2.14' matrix (pytorch/pytorch PR #182849 diff; text copy id 66643764700); tor"
                    'ch UNVERIFIED beyond the doc',
                    'documented'),
        "cu130": Wheel("13.0", '7.5;8.0;8.6;9.0;10.0;12.0', '8.0;9.0;10.0;11.0;12.0+PTX',
                    'PyPI torch==2.14.1 cp311 manylinux x86_64 wheel (2.14.1+cu130, git_version 5c488690), fatbin scan of torch/lib/libtor'
                    'ch_cuda.so (plus 59 sm_103, 1 sm_',
                    'verified-wheel (PyPI build)'),
        "cu132": Wheel("13.2", '7.5;8.0;8.6;9.0;10.0;12.0+PTX', '8.0;9.0;10.0;11.0;12.0+PTX',
                    "RELEASE.md matrix 13.2.1 row (PR #182849); 2.13.0+cu132 nightly get_arch_list ['sm_75',...,'sm_120','compute_120'] ("
                    'find_string id 53298247964, a 2.13',
                    'documented'),
    },
}
# The newest patch of each recorded release (PyPI's torch releases; tests check them against
# envkit/data/torch_pythons.json): what a remedy names.
LATEST_PATCH = {"2.1": "2.1.2", "2.2": "2.2.2", "2.3": "2.3.1", "2.4": "2.4.1", "2.5": "2.5.1", "2.6": "2.6.0",
                "2.7": "2.7.1", "2.8": "2.8.0", "2.9": "2.9.1", "2.10": "2.10.0", "2.11": "2.11.0", "2.12": "2.12.1",
                "2.13": "2.13.0", "2.14": "2.14.1"}

RELEASE_NOTES = ("NVIDIA CUDA Toolkit Release Notes, Table 3 'CUDA Toolkit and Corresponding Driver Versions' "
                 "(https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/)")
MINOR_COMPAT = ("CUDA Compatibility, 'Minor Version Compatibility' table "
                "(https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html)")
# CUDA release -> (Linux x86_64, Windows x86_64) driver of the toolkit's GA release (Table 3).
TOOLKIT_DRIVERS: dict[str, tuple[str, str]] = {
    "11.8": ("520.61.05", "520.06"),
    "12.1": ("530.30.02", "531.14"),
    "12.4": ("550.54.14", "551.61"),
    "12.6": ("560.28.03", "560.76"),
    "12.8": ("570.26", "570.65"),
    "12.9": ("575.51.03", "576.02"),
    "13.0": ("580.65.06", "580.88"),
}
# CUDA major -> (Linux, Windows) minimum driver for minor-version compatibility; the range ends where
# the next major's begins, newer drivers still run it through backward compatibility.
COMPAT_DRIVERS: dict[str, tuple[str, str]] = {
    "11": ("450.80.02", "452.39"),
    "12": ("525.60.13", "527.41"),
    "13": ("580.65.06", "580.88"),
}
JETSON_ONLY = {53, 62, 72, 87}


def version_key(version: str) -> tuple[int, ...]:
    """``"550.54.14"`` -> ``(550, 54, 14)``; non-numeric parts end the key.

    >>> version_key("570.124.04") > version_key("570.26"), version_key("560.35.03")
    (True, (560, 35, 3))
    """
    out: list[int] = []
    for part in version.strip().split("."):
        if not part.isdigit():
            break
        out.append(int(part))
    return tuple(out)


def parse_arch_list(spec: str) -> list[str]:
    """A ``TORCH_CUDA_ARCH_LIST`` as the names ``torch.cuda.get_arch_list()`` reports.

    >>> parse_arch_list("8.6;9.0+PTX")
    ['sm_86', 'sm_90', 'compute_90']
    """
    out: list[str] = []
    for item in spec.split(";"):
        item = item.strip()
        if not item:
            continue
        ptx = item.endswith("+PTX")
        cc = item.removesuffix("+PTX").replace(".", "")
        out.append(f"sm_{cc}")
        if ptx:
            out.append(f"compute_{cc}")
    return out


def release_of(version: str | None) -> str | None:
    """``"2.5.1+cu124"`` -> ``"2.5"`` (the key of :data:`RELEASES`); None for text that is no version.

    >>> release_of("2.5.1+cu124"), release_of("2.10.0"), release_of("2.7.0a0+git1234"), release_of("nightly")
    ('2.5', '2.10', '2.7', None)
    """
    parts = (version or "").split("+")[0].split(".")
    return f"{parts[0]}.{parts[1]}" if len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit() else None


def _release_order(release: str) -> tuple[int, ...]:
    return tuple(int(p) for p in release.split("."))


def wheel(variant: str, release: str | None = None) -> Wheel | None:
    """The recorded wheel of ``variant`` for ``release`` (None: the newest release that has the variant)."""
    if release is not None:
        return RELEASES.get(release, {}).get(variant)
    found = [r for r in RELEASES if variant in RELEASES[r]]
    return RELEASES[max(found, key=_release_order)][variant] if found else None


def arch_list(variant: str, machine: str = "x86_64", release: str | None = None) -> list[str] | None:
    """The archs ``variant``'s wheel of ``release`` (None: its newest) carries on ``machine``, None if unrecorded."""
    w = wheel(variant, release)
    spec = (w.aarch64 if machine in ("aarch64", "arm64") else w.x86_64) if w else None
    return parse_arch_list(spec) if spec else None


def arch_cc(name: str) -> int | None:
    """``sm_90`` / ``compute_90`` / ``sm_90a`` -> 90; None for anything else.

    >>> arch_cc("sm_120"), arch_cc("compute_90"), arch_cc("sm_90a"), arch_cc("gfx90a")
    (120, 90, 90, None)
    """
    _, _, rest = name.partition("_")
    rest = rest.removesuffix("a").removesuffix("f")
    return int(rest) if name.startswith(("sm_", "compute_")) and rest.isdigit() else None


def runs_on(archs: list[str], capability: tuple[int, int]) -> bool:
    """Does a build with these archs run on a device of this compute capability (PyTorch's rule)?"""
    major, minor = capability
    device = major * 10 + minor
    for name in archs:
        cc = arch_cc(name)
        if cc is None:
            continue
        if cc in JETSON_ONLY or device in JETSON_ONLY:
            if cc == device:
                return True
            continue
        if cc // 10 == major and cc % 10 <= minor:
            return True
    return False


def pairs_for(capabilities, machine: str = "x86_64", since: str | None = None) -> list[tuple[str, str]]:
    """The recorded (release, variant) wheels that run on EVERY one of ``capabilities``, oldest release first
    (within one, oldest CUDA first); with ``since``, releases older than it are left out.

    >>> pairs_for([(12, 0)], since="2.5")[0], pairs_for([(12, 0), (6, 1)])
    (('2.7', 'cu128'), [])
    """
    floor = _release_order(since) if since and release_of(since) else (0,)
    out = []
    for rel in sorted(RELEASES, key=_release_order):
        if _release_order(rel) < floor:
            continue
        for variant in sorted(RELEASES[rel], key=lambda v: version_key(RELEASES[rel][v].cuda)):
            archs = arch_list(variant, machine, rel)
            if archs and all(runs_on(archs, c) for c in capabilities):
                out.append((rel, variant))
    return out


def variants_for(capability: tuple[int, int], machine: str = "x86_64", release: str | None = None) -> list[str]:
    """The variants of ``release`` (None: of any recorded release) whose wheels run on the device, oldest CUDA first."""
    pairs = pairs_for([capability], machine)
    found = {v for r, v in pairs if release is None or r == release}
    return sorted(found, key=lambda v: version_key(variant_cuda(v) or "0"))


def driver_minimum(cuda: str, windows: bool = False) -> dict:
    """``{"cuda", "toolkit", "compat", "source"}``: the toolkit's own driver and the major's minor-version minimum.

    ``windows``: the Windows column (WSL2's nvidia-smi reports the Windows driver). ``toolkit`` is
    None for a release Table 3 is not recorded for here.
    """
    col = 1 if windows else 0
    major = cuda.split(".")[0]
    toolkit = TOOLKIT_DRIVERS.get(".".join(cuda.split(".")[:2]))
    compat = COMPAT_DRIVERS.get(major)
    return {"cuda": cuda, "toolkit": toolkit[col] if toolkit else None, "compat": compat[col] if compat else None,
            "source": f"{RELEASE_NOTES}; {MINOR_COMPAT}", "platform": "Windows" if windows else "Linux"}


def variants_for_driver(driver: str, windows: bool = False, release: str | None = None) -> list[str]:
    """The variants (of ``release``; None: of any) whose CUDA this driver runs at the toolkit's own level, oldest first."""
    col = 1 if windows else 0
    have = version_key(driver)
    variants = RELEASES.get(release, {}) if release else {v: w for r in RELEASES.values() for v, w in r.items()}
    return sorted((v for v, w in variants.items()
                   if w.cuda in TOOLKIT_DRIVERS and have >= version_key(TOOLKIT_DRIVERS[w.cuda][col])),
                  key=lambda v: version_key(variant_cuda(v) or "0"))
