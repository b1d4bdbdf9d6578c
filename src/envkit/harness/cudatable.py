"""Which GPUs each PyTorch CUDA wheel runs on, and which driver each wheel's CUDA needs.

Data, with its sources, and the two rules that read it. Standard library only: the harness (in the
image) and ``envkit doctor`` (on the host) share it, so it is a Python module, not a JSON file (the
harness zipapp carries only this package's ``.py`` files).

- :data:`ARCHS`: ``TORCH_CUDA_ARCH_LIST`` per wheel variant, from PyTorch's own wheel build scripts
  (file, commit and lines in each entry). ``X.Y`` builds ``sm_XY`` cubins; ``+PTX`` adds ``compute_XY``.
- :data:`DRIVERS`: the minimum driver per CUDA release, from NVIDIA's CUDA Toolkit Release Notes,
  Table 3 "CUDA Toolkit and Corresponding Driver Versions" (toolkit driver) and the CUDA Compatibility
  guide's minor-version table (the driver a whole CUDA major needs, with a limited feature set).
- :func:`runs_on`: PyTorch's own rule (``torch.cuda._check_capability``): a build runs on a device when
  one of its archs has the device's major version and a minor version not above the device's;
  Jetson-only archs (5.3, 6.2, 7.2, 8.7) run on themselves only.

Example:
    >>> runs_on(arch_list("cu124"), (12, 0)), runs_on(arch_list("cu128"), (12, 0))
    (False, True)
    >>> variants_for((12, 0))[0], driver_minimum("12.4")["toolkit"]
    ('cu128', '550.54.14')
"""

from __future__ import annotations

BUILD_CUDA_MAIN = "pytorch/pytorch@799d09f215740cc4fb78e0bd278dce469e33ddcb .ci/manywheel/build_cuda.sh"
BUILD_CUDA_OLD = "pytorch/builder@1ab922dd5b9a59fcf9859dffb1158eb35dfb3c6c manywheel/build_cuda.sh"

# variant -> CUDA release, the arch list per machine, and where it was read. aarch64 lists are the
# x86_64 list through the script's filter_aarch64_archs (it drops 5.0 6.0 7.0 7.5 8.6, lines 74-79, 102).
ARCHS: dict[str, dict] = {
    "cu118": {"cuda": "11.8", "x86_64": "3.7;5.0;6.0;7.0;7.5;8.0;8.6;9.0",
              "source": f"{BUILD_CUDA_OLD}:60,74-75"},
    "cu121": {"cuda": "12.1", "x86_64": "5.0;6.0;7.0;7.5;8.0;8.6;9.0",
              "source": f"{BUILD_CUDA_OLD}:60,70-71"},
    "cu124": {"cuda": "12.4", "x86_64": "5.0;6.0;7.0;7.5;8.0;8.6;9.0+PTX", "aarch64": "9.0",
              "source": f"{BUILD_CUDA_OLD}:60-66"},
    "cu126": {"cuda": "12.6", "x86_64": "5.0;6.0;7.0;7.5;8.0;8.6;9.0", "aarch64": "8.0;9.0",
              "source": f"{BUILD_CUDA_MAIN}:82,85"},
    "cu128": {"cuda": "12.8", "x86_64": "7.0;7.5;8.0;8.6;9.0;10.0;12.0", "aarch64": "8.0;9.0;10.0;12.0",
              "source": f"{BUILD_CUDA_MAIN}:82,86"},
    "cu129": {"cuda": "12.9", "x86_64": "7.0;7.5;8.0;8.6;9.0;10.0;12.0+PTX", "aarch64": "8.0;9.0;10.0;12.0+PTX",
              "source": f"{BUILD_CUDA_MAIN}:82,87"},
    "cu130": {"cuda": "13.0", "x86_64": "7.5;8.0;8.6;9.0;10.0;12.0+PTX", "aarch64": "8.0;9.0;10.0;11.0;12.0+PTX",
              "source": f"{BUILD_CUDA_MAIN}:93-94"},
}

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


def arch_list(variant: str, machine: str = "x86_64") -> list[str] | None:
    """The archs the variant's wheel carries on ``machine`` (``x86_64`` | ``aarch64``), None if unrecorded."""
    entry = ARCHS.get(variant)
    if entry is None:
        return None
    spec = entry.get("aarch64" if machine in ("aarch64", "arm64") else "x86_64")
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


def variants_for(capability: tuple[int, int], machine: str = "x86_64") -> list[str]:
    """The recorded variants whose wheels run on the device, oldest CUDA first."""
    found = []
    for variant in ARCHS:
        archs = arch_list(variant, machine)
        if archs and runs_on(archs, capability):
            found.append(variant)
    return found


def variant_cuda(variant: str) -> str | None:
    """``cu124`` -> ``12.4``; None for cpu/rocm.

    >>> variant_cuda("cu124"), variant_cuda("cu130"), variant_cuda("cpu")
    ('12.4', '13.0', None)
    """
    if not variant.startswith("cu") or not variant[2:].isdigit() or len(variant) < 5:
        return None
    digits = variant[2:]
    return f"{int(digits[:-1])}.{digits[-1]}"


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


def variants_for_driver(driver: str, windows: bool = False) -> list[str]:
    """The recorded variants whose CUDA this driver runs at the toolkit's own level, oldest first."""
    col = 1 if windows else 0
    have = version_key(driver)
    return [v for v, e in ARCHS.items()
            if e["cuda"] in TOOLKIT_DRIVERS and have >= version_key(TOOLKIT_DRIVERS[e["cuda"]][col])]
