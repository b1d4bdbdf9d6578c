"""The ``wsl`` section: .wslconfig keys exactly as Microsoft documents them, and wsl.conf.

Field names are Microsoft's camelCase keys, so what a user reads in the WSL
docs is what they write here. ``WSL_KEY_NOTES`` records keys that need Windows
11 (or 22H2+) or apply to one networking mode only; the wsl target prints them
as comments. Sources: MicrosoftDocs/WSL ``WSL/wsl-config.md`` and WSL's own
parser (``src/windows/common/WslCoreConfig.cpp``).

Example:
    >>> Wsl.model_validate({"memory": "16GB", "experimental": {"sparseVhd": True}}).memory
    17179869184
"""

# No `from __future__ import annotations`: the models' hints are evaluated once, by Python, at class
# creation, instead of by typing.get_type_hints at first validation, which every run would pay.

import re
from typing import Annotated, Literal

from envkit.profile.typed import AfterValidator, BaseModel, ConfigDict, Field

from envkit.profile.types import Size

NetworkingMode = Literal["nat", "none", "bridged", "mirrored", "virtioproxy"]
WIN11 = "Windows 11 only"
WIN11_22H2 = "Windows 11 22H2 or newer"
WSL_KEY_NOTES: dict[str, str] = {
    "safeMode": WIN11,
    "debugConsole": WIN11,
    "nestedVirtualization": WIN11,
    "vmIdleTimeout": WIN11,
    "autoProxy": WIN11,
    "networkingMode": WIN11_22H2 + " (bridged is deprecated)",
    "firewall": WIN11_22H2,
    "dnsTunneling": WIN11_22H2,
    "dnsProxy": "NAT networking only",
    "ignoredPorts": "mirrored networking only",
    "hostAddressLoopback": "mirrored networking only",
}


# Windows builds for WSL2 (MicrosoftDocs/WSL install-manual.md; the 2020 backport KB4566116):
# WSL2 runs on Windows 10 1903/1909 (builds 18362/18363) from update revision (UBR) 1049 on x64;
# `wsl --install` and .wslconfig (wsl-config.md) need 2004, build 19041.
WSL2_MIN_BUILD, WSL2_MIN_UBR, WSL2_BACKPORT_BUILDS = 18362, 1049, (18362, 18363)
WSL_INSTALL_MIN_BUILD = 19041

# A value's own caveat, printed beside the key and repeated as a generate/validate warning.
GRADUAL_RECLAIM_NOTE = ("gradual broke Docker inside the distribution on WSL 2.0.0 (microsoft/WSL#10497, fixed "
                        "in later WSL releases): run `wsl --update` first (`wsl --version` shows the WSL version); "
                        "Microsoft's documented default is dropCache")


def value_note(key: str, value: object) -> str | None:
    """The caveat for one key's value, or None: the key's own note, plus one for a risky value.

    >>> value_note("autoMemoryReclaim", "gradual").startswith("gradual broke Docker")
    True
    >>> value_note("autoMemoryReclaim", "dropCache") is None, value_note("firewall", True)
    (True, 'Windows 11 22H2 or newer')
    """
    notes = [n for n in (WSL_KEY_NOTES.get(key),
                         GRADUAL_RECLAIM_NOTE if (key, value) == ("autoMemoryReclaim", "gradual") else None) if n]
    return "; ".join(notes) or None


# How the wsl target spells values: sizes as "16GB", paths with escaped backslashes.
SIZE_KEYS = frozenset({"memory", "swap", "defaultVhdSize"})
PATH_KEYS = frozenset({"kernel", "kernelModules", "swapFile"})
# Keys whose note makes them need a newer Windows: the bootstrap script checks the build.
WIN11_BUILD = 22000
WIN11_22H2_BUILD = 22621

_WIN_PATH_RE = re.compile(r'^(?:[A-Za-z]:[\\/]|\\\\[^\\/]+[\\/])[^\x00-\x1f"<>|?*]*$')


def _windows_path(value: str) -> str:
    """A Windows path as Windows spells it (``C:\\temp\\kernel``); the target escapes it."""
    if not _WIN_PATH_RE.match(value):
        raise ValueError(f"expected an absolute Windows path such as C:\\temp\\kernel, got {value!r}")
    if "\\\\" in value[2:]:
        # .wslconfig needs doubled backslashes, but envkit doubles them itself: doubling here too
        # would reach WSL as an empty path component.
        raise ValueError(f"write single backslashes ({value.replace(chr(92) * 2, chr(92))!r}); "
                         "envkit escapes them for .wslconfig")
    return value


WindowsPath = Annotated[str, AfterValidator(_windows_path)]
OneLine = Annotated[str, Field(pattern=r"^[^\x00-\x1f]*$")]


def min_windows_build(key: str) -> int | None:
    """The Windows build a key needs (22000 for Windows 11 keys, 22621 for 22H2 ones), or None.

    >>> min_windows_build("dnsTunneling"), min_windows_build("memory")
    (22621, None)
    """
    note = WSL_KEY_NOTES.get(key, "")
    if note.startswith(WIN11_22H2):
        return WIN11_22H2_BUILD
    if note.startswith(WIN11):
        return WIN11_BUILD
    return None


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class WslExperimental(_Section):
    """``[experimental]`` of .wslconfig."""

    autoMemoryReclaim: Literal["disabled", "gradual", "dropCache"] | None = None
    sparseVhd: bool | None = None
    bestEffortDnsParsing: bool | None = None
    dnsTunnelingIpAddress: Annotated[str, Field(pattern=r"^\d{1,3}(\.\d{1,3}){3}$")] | None = None
    initialAutoProxyTimeout: Annotated[int, Field(ge=0)] | None = None
    ignoredPorts: Annotated[str, Field(pattern=r"^\d{1,5}(,\d{1,5})*$")] | None = None
    hostAddressLoopback: bool | None = None
    # Older WSL releases read these under [experimental]; WSL's parser still accepts them there.
    networkingMode: NetworkingMode | None = None
    dnsTunneling: bool | None = None
    firewall: bool | None = None
    autoProxy: bool | None = None


class WslConfBoot(_Section):
    systemd: bool | None = None
    command: OneLine | None = None
    protectBinfmt: bool | None = None


class WslConfAutomount(_Section):
    enabled: bool | None = None
    mountFsTab: bool | None = None
    root: Annotated[str, Field(pattern=r"^/\S*$")] | None = None
    options: Annotated[str, Field(pattern=r"^[A-Za-z0-9=,_-]+$")] | None = None


class WslConfNetwork(_Section):
    generateHosts: bool | None = None
    generateResolvConf: bool | None = None
    hostname: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9-]{0,62}$")] | None = None


class WslConfInterop(_Section):
    enabled: bool | None = None
    appendWindowsPath: bool | None = None


class WslConfUser(_Section):
    default: Annotated[str, Field(pattern=r"^[a-z_][a-z0-9_-]{0,31}$")] | None = None


class WslConfGpu(_Section):
    enabled: bool | None = None


class WslConfTime(_Section):
    useWindowsTimezone: bool | None = None


class WslConf(_Section):
    """/etc/wsl.conf inside the distribution."""

    boot: WslConfBoot | None = None
    automount: WslConfAutomount | None = None
    network: WslConfNetwork | None = None
    interop: WslConfInterop | None = None
    user: WslConfUser | None = None
    gpu: WslConfGpu | None = None
    time: WslConfTime | None = None


class Wsl(_Section):
    """``[wsl2]`` of .wslconfig, plus ``experimental`` and the distribution's ``wsl_conf``."""

    kernel: WindowsPath | None = None
    kernelModules: WindowsPath | None = None
    kernelCommandLine: OneLine | None = None
    memory: Size | None = None
    processors: Annotated[int, Field(ge=1, le=1024)] | None = None
    localhostForwarding: bool | None = None
    safeMode: bool | None = None
    swap: Size | None = None
    swapFile: WindowsPath | None = None
    guiApplications: bool | None = None
    debugConsole: bool | None = None
    maxCrashDumpCount: Annotated[int, Field(ge=-1)] | None = None
    nestedVirtualization: bool | None = None
    vmIdleTimeout: Annotated[int, Field(ge=0)] | None = None
    dnsProxy: bool | None = None
    networkingMode: NetworkingMode | None = None
    firewall: bool | None = None
    dnsTunneling: bool | None = None
    autoProxy: bool | None = None
    defaultVhdSize: Size | None = None
    experimental: WslExperimental | None = None
    wsl_conf: WslConf | None = None
