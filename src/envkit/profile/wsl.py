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

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

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
    command: str | None = None
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

    kernel: str | None = None
    kernelModules: str | None = None
    kernelCommandLine: str | None = None
    memory: Size | None = None
    processors: Annotated[int, Field(ge=1, le=1024)] | None = None
    localhostForwarding: bool | None = None
    safeMode: bool | None = None
    swap: Size | None = None
    swapFile: str | None = None
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
