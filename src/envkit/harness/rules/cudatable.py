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


# Where each release's wheels were built from: pytorch/builder's release branches up to 2.5, then PyTorch's
# own .ci/manywheel/build_cuda.sh. ``X.Y`` builds ``sm_XY`` cubins, ``+PTX`` adds ``compute_XY``.
_BUILDER = "pytorch/builder@{sha} (release/{rel}) manywheel/build_cuda.sh:{lines}"
_MAIN = "pytorch/pytorch@{sha} .ci/manywheel/build_cuda.sh:{lines}"
_OLD = "5.0;6.0;7.0;7.5;8.0;8.6"  # the builder's base list (line 59/60), each CUDA adding its own


@dataclass(frozen=True)
class Wheel:
    """One (torch release, CUDA variant) wheel: its CUDA and the arch list it was built with, per machine."""

    cuda: str
    x86_64: str
    aarch64: str | None  # None: no aarch64 wheel recorded
    source: str


def _builder(sha: str, rel: str, lines: str, variants: dict[str, tuple[str, str | None]]) -> dict[str, Wheel]:
    return {v: Wheel(variant_cuda(v) or "", x86, arm, _BUILDER.format(sha=sha, rel=rel, lines=lines))
            for v, (x86, arm) in variants.items()}


# release -> variant -> Wheel: the variants download.pytorch.org serves for the release, each with its arch list.
RELEASES: dict[str, dict[str, Wheel]] = {
    "2.1": _builder("55d40b1b", "2.1", "59-71", {"cu118": (f"{_OLD};3.7;9.0", None), "cu121": (f"{_OLD};9.0", None)}),
    "2.2": _builder("af60d114", "2.2", "60-72", {"cu118": (f"{_OLD};3.7;9.0", None), "cu121": (f"{_OLD};9.0", None)}),
    "2.3": _builder("ba10bae9", "2.3", "60-72", {"cu118": (f"{_OLD};3.7;9.0", None), "cu121": (f"{_OLD};9.0", None)}),
    # 2.4 and 2.5 cu124 carry no compute_90 PTX: release/2.5 reverted "+PTX" (pytorch/builder fa48aaf5); the
    # nightlies' +PTX never reached a release.
    "2.4": _builder("4ce1afeb", "2.4", "60-80", {"cu118": (f"{_OLD};3.7;9.0", None), "cu121": (f"{_OLD};9.0", None),
                                                 "cu124": (f"{_OLD};9.0", "9.0")}),
    "2.5": _builder("aec5fb5d", "2.5", "60-80", {"cu118": (f"{_OLD};3.7;9.0", None), "cu121": (f"{_OLD};9.0", None),
                                                 "cu124": (f"{_OLD};9.0", "9.0")}),
    # 2.6 and 2.7: the script moved into pytorch/pytorch; release/2.7's cu128 is the first wheel with sm_100 and
    # sm_120 (its list is the 2.7 special case that downstream build scripts copy: 12.0+PTX, no 7.0).
    "2.6": {"cu118": Wheel("11.8", f"{_OLD};3.7;9.0", None, "pytorch/pytorch@v2.6.0 .ci/manywheel/build_cuda.sh"),
            "cu124": Wheel("12.4", f"{_OLD};9.0", "9.0", "pytorch/pytorch@v2.6.0 .ci/manywheel/build_cuda.sh"),
            "cu126": Wheel("12.6", f"{_OLD};9.0", "9.0", "pytorch/pytorch@v2.6.0 .ci/manywheel/build_cuda.sh")},
    "2.7": {"cu118": Wheel("11.8", f"{_OLD};3.7;9.0", None, "pytorch/pytorch@v2.7.0 .ci/manywheel/build_cuda.sh"),
            "cu126": Wheel("12.6", f"{_OLD};9.0", "9.0", "pytorch/pytorch@v2.7.0 .ci/manywheel/build_cuda.sh"),
            "cu128": Wheel("12.8", "7.5;8.0;8.6;9.0;10.0;12.0+PTX", "9.0;10.0;12.0+PTX",
                           "pytorch/pytorch@v2.7.0 .ci/manywheel/build_cuda.sh")},
    "2.8": {"cu126": Wheel("12.6", f"{_OLD};9.0", None, _MAIN.format(sha="00c7a380", lines="68-70")),
            "cu128": Wheel("12.8", "7.0;7.5;8.0;8.6;9.0;10.0;12.0", None, _MAIN.format(sha="00c7a380", lines="61-63")),
            "cu129": Wheel("12.9", "7.0;7.5;8.0;8.6;9.0;10.0;12.0+PTX", None, _MAIN.format(sha="00c7a380", lines="64-66"))},
    # aarch64 lists: the x86_64 list through the script's filter_aarch64_archs (drops 5.0 6.0 7.0 7.5 8.6, lines 74-79).
    **{rel: {"cu126": Wheel("12.6", f"{_OLD};9.0", "8.0;9.0", _MAIN.format(sha="799d09f2", lines="82,85")),
             "cu128": Wheel("12.8", "7.0;7.5;8.0;8.6;9.0;10.0;12.0", "8.0;9.0;10.0;12.0", _MAIN.format(sha="799d09f2", lines="82,86")),
             "cu130": Wheel("13.0", "7.5;8.0;8.6;9.0;10.0;12.0+PTX", "8.0;9.0;10.0;11.0;12.0+PTX",
                            _MAIN.format(sha="799d09f2", lines="93-94"))} for rel in ("2.9", "2.10")},
    # torch 2.13's own table of its releases' codes (torch/cuda/__init__.py:323-343, PYTORCH_RELEASES_CODE_CC,
    # "kept in sync with .ci/manywheel/build_cuda.sh"): cubins only, so no PTX is recorded.
    "2.13": {v: Wheel(variant_cuda(v) or "", x86, arm, "torch 2.13.0 torch/cuda/__init__.py:326-343 (PYTORCH_RELEASES_CODE_CC)")
             for v, x86, arm in (("cu126", f"{_OLD};9.0", "8.0;9.0"),
                                 ("cu129", "7.5;8.0;8.6;9.0;10.0;12.0", "8.0;9.0;10.0;12.0"),
                                 ("cu130", "7.5;8.0;8.6;9.0;10.0;12.0", "8.0;9.0;10.0;11.0;12.0"),
                                 ("cu132", "7.5;8.0;8.6;9.0;10.0;12.0", "8.0;9.0;10.0;11.0;12.0"))},
}
# The newest patch of each recorded release (PyPI's torch releases; tests check them against
# envkit/data/torch_pythons.json): what a remedy names.
LATEST_PATCH = {"2.1": "2.1.2", "2.2": "2.2.2", "2.3": "2.3.1", "2.4": "2.4.1", "2.5": "2.5.1", "2.6": "2.6.0",
                "2.7": "2.7.1", "2.8": "2.8.0", "2.9": "2.9.1", "2.10": "2.10.0", "2.13": "2.13.0"}

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
