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

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool

from envkit.profile.types import Size, WholeText, described

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
    # wsl-config.md's [experimental] table: footnote 1 (Windows 11) on all five, footnote 2 (22H2) on all
    # but initialAutoProxyTimeout.
    "bestEffortDnsParsing": WIN11_22H2,
    "dnsTunnelingIpAddress": WIN11_22H2,
    "initialAutoProxyTimeout": WIN11,
    "ignoredPorts": WIN11_22H2 + ", mirrored networking only",
    "hostAddressLoopback": WIN11_22H2 + ", mirrored networking only",
}


# Windows builds for WSL2 (MicrosoftDocs/WSL install-manual.md; the 2020 backport KB4566116):
# WSL2 runs on Windows 10 1903/1909 (builds 18362/18363) from update revision (UBR) 1049 on x64;
# `wsl --install` and .wslconfig (wsl-config.md) need 2004, build 19041.
WSL2_MIN_BUILD, WSL2_MIN_UBR, WSL2_BACKPORT_BUILDS = 18362, 1049, (18362, 18363)
WSL_INSTALL_MIN_BUILD = 19041

# The Store WSL (`wsl --version` answers; the inbox wsl.exe of Windows 10/11 does not) brought, in 2.0.0
# (September 2023), the [experimental] section and mirrored networking, dnsTunneling, firewall and autoProxy;
# an older WSL ignores those keys. The bootstrap script compares `wsl --version` with this.
STORE_WSL_MIN = "2.0.0"
STORE_WSL_KEYS = frozenset({"networkingMode", "dnsTunneling", "firewall", "autoProxy"})


def needs_store_wsl(section: str, key: str) -> bool:
    """True for a .wslconfig key that WSL before :data:`STORE_WSL_MIN` ignores.

    >>> needs_store_wsl("experimental", "sparseVhd"), needs_store_wsl("wsl2", "dnsTunneling"), needs_store_wsl("wsl2", "memory")
    (True, True, False)
    """
    return section == "experimental" or key in STORE_WSL_KEYS


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

    autoMemoryReclaim: Literal["disabled", "gradual", "dropCache"] | None = Field(None,
        description="Return VM memory to Windows; gradual broke Docker in the distribution on WSL 2.0.0.")
    sparseVhd: StrictBool | None = Field(None, description="New VHDs are sparse.")
    bestEffortDnsParsing: StrictBool | None = Field(None,
        description="With dnsTunneling: strip unknown records from DNS answers instead of failing.")
    dnsTunnelingIpAddress: Annotated[str, Field(pattern=r"^\d{1,3}(\.\d{1,3}){3}$")] | None = Field(None,
        description="The nameserver address the distribution uses with dnsTunneling.")
    initialAutoProxyTimeout: Annotated[int, Field(ge=0), WholeText] | None = Field(None,
        description="Milliseconds to wait for Windows' proxy settings at start (autoProxy).")
    ignoredPorts: Annotated[str, Field(pattern=r"^\d{1,5}(,\d{1,5})*$")] | None = Field(None,
        description="Ports Linux may bind even when Windows uses them, e.g. \"3000,9000\"; mirrored networking only.")
    hostAddressLoopback: StrictBool | None = Field(None,
        description="The host and the VM reach each other by the host's IP addresses; mirrored networking only.")
    # Older WSL releases read these under [experimental]; WSL's parser still accepts them there.
    networkingMode: NetworkingMode | None = Field(None, description="As networkingMode in [wsl2], for older WSL releases.")
    dnsTunneling: StrictBool | None = Field(None, description="As dnsTunneling in [wsl2], for older WSL releases.")
    firewall: StrictBool | None = Field(None, description="As firewall in [wsl2], for older WSL releases.")
    autoProxy: StrictBool | None = Field(None, description="As autoProxy in [wsl2], for older WSL releases.")


class WslConfBoot(_Section):
    systemd: StrictBool | None = Field(None, description="Run systemd in the distribution.")
    command: OneLine | None = Field(None, description="A command run as root when the distribution starts.")
    protectBinfmt: StrictBool | None = Field(None, description="Keep systemd from changing WSL's binfmt registrations.")


class WslConfAutomount(_Section):
    enabled: StrictBool | None = Field(None, description="Mount Windows drives under root.")
    mountFsTab: StrictBool | None = Field(None, description="Mount /etc/fstab's entries at start.")
    root: Annotated[str, Field(pattern=r"^/\S*$"),
        described("an absolute path such as /mnt/")] | None = Field(None, description="Where Windows drives are mounted, e.g. /mnt/.")
    options: Annotated[str, Field(pattern=r"^[A-Za-z0-9=,_-]+$")] | None = Field(None,
        description="Mount options for Windows drives, e.g. metadata.")


class WslConfNetwork(_Section):
    generateHosts: StrictBool | None = Field(None, description="Write /etc/hosts at start.")
    generateResolvConf: StrictBool | None = Field(None, description="Write /etc/resolv.conf at start.")
    hostname: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9-]{0,62}$")] | None = Field(None,
        description="The distribution's hostname.")


class WslConfInterop(_Section):
    enabled: StrictBool | None = Field(None, description="Run Windows programs from the distribution.")
    appendWindowsPath: StrictBool | None = Field(None, description="Add Windows' PATH to the distribution's PATH.")


class WslConfUser(_Section):
    default: Annotated[str, Field(pattern=r"^[a-z_][a-z0-9_-]{0,31}$")] | None = Field(None,
        description="The user the distribution starts as.")


class WslConfGpu(_Section):
    enabled: StrictBool | None = Field(None, description="Give the distribution access to Windows' GPU.")


class WslConfTime(_Section):
    useWindowsTimezone: StrictBool | None = Field(None, description="Take the timezone from Windows.")


class WslConf(_Section):
    """/etc/wsl.conf inside the distribution."""

    boot: WslConfBoot | None = Field(None, description="[boot] of wsl.conf.")
    automount: WslConfAutomount | None = Field(None, description="[automount] of wsl.conf.")
    network: WslConfNetwork | None = Field(None, description="[network] of wsl.conf.")
    interop: WslConfInterop | None = Field(None, description="[interop] of wsl.conf.")
    user: WslConfUser | None = Field(None, description="[user] of wsl.conf.")
    gpu: WslConfGpu | None = Field(None, description="[gpu] of wsl.conf.")
    time: WslConfTime | None = Field(None, description="[time] of wsl.conf.")


class Wsl(_Section):
    """``[wsl2]`` of .wslconfig, plus ``experimental`` and the distribution's ``wsl_conf``."""

    kernel: WindowsPath | None = Field(None, description="A custom kernel (Windows path).")
    kernelModules: WindowsPath | None = Field(None, description="A custom kernel modules VHD (Windows path).")
    kernelCommandLine: OneLine | None = Field(None, description="Kernel arguments.")
    memory: Size | None = Field(None, description="VM memory (default: 50% of RAM); must hold the container's run.memory plus headroom.")
    processors: Annotated[int, Field(ge=1, le=1024), WholeText] | None = Field(None, description="VM processors (default: all).")
    localhostForwarding: StrictBool | None = Field(None, description="Forward the VM's localhost ports to Windows (NAT networking).")
    safeMode: StrictBool | None = Field(None, description="Start WSL with many features off, for recovery; Windows 11.")
    swap: Size | None = Field(None, description="Swap size (default: 25% of memory); 0 disables swap.")
    swapFile: WindowsPath | None = Field(None, description="The swap VHD's location (Windows path).")
    guiApplications: StrictBool | None = Field(None, description="WSLg: Linux GUI applications.")
    debugConsole: StrictBool | None = Field(None, description="Show a dmesg console at start; Windows 11.")
    maxCrashDumpCount: Annotated[int, Field(ge=-1), WholeText] | None = Field(None, description="Crash dumps kept.")
    nestedVirtualization: StrictBool | None = Field(None, description="Let the VM run other VMs; Windows 11.")
    vmIdleTimeout: Annotated[int, Field(ge=0), WholeText] | None = Field(None,
        description="Milliseconds the VM stays idle before it shuts down; Windows 11.")
    dnsProxy: StrictBool | None = Field(None, description="The VM's DNS is forwarded through Windows; NAT networking only.")
    networkingMode: NetworkingMode | None = Field(None,
        description="nat, mirrored, none, virtioproxy or bridged (deprecated); Windows 11 22H2 or newer.")
    firewall: StrictBool | None = Field(None, description="Windows' Hyper-V firewall filters the VM's traffic; Windows 11 22H2 or newer.")
    dnsTunneling: StrictBool | None = Field(None, description="DNS requests are tunnelled to Windows; Windows 11 22H2 or newer.")
    autoProxy: StrictBool | None = Field(None, description="Use Windows' proxy settings; Windows 11.")
    defaultVhdSize: Size | None = Field(None, description="The size of new distributions' VHDs.")
    experimental: WslExperimental | None = Field(None, description="[experimental] of .wslconfig.")
    wsl_conf: WslConf | None = Field(None, description="The distribution's /etc/wsl.conf (written as wsl.conf).")
    # envkit's own key, not .wslconfig's: which Docker the distribution talks to decides how a C:\ path reaches it.
    docker: Literal["desktop", "engine"] = Field("desktop",
        description="The Docker the distribution uses: desktop (Docker Desktop's WSL integration: C:\\data reaches it "
                    "as //c/data) or engine (Docker Engine installed in the distribution: C:\\data is /mnt/c/data).")
