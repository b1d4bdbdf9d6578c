"""Every documented .wslconfig / wsl.conf key validates; typos get a located did-you-mean."""

from __future__ import annotations

from pathlib import Path

import pytest

from envkit.errors import ProfileError
from envkit.profile import load_profile_bytes
from envkit.profile.wsl import Wsl, WslConf, WslExperimental

BASE = "envkit: 1\nname: w\nimage: {base: 'debian:bookworm'}\n"

# One valid value per documented key (MicrosoftDocs/WSL wsl-config.md), in YAML.
WSL2_VALUES = {
    "kernel": "'C:\\temp\\kernel'", "kernelModules": "'C:\\temp\\modules.vhdx'", "kernelCommandLine": "vsyscall=emulate",
    "memory": "16GB", "processors": "8", "localhostForwarding": "true", "safeMode": "false", "swap": "8GB",
    "swapFile": "'C:\\temp\\swap.vhdx'", "guiApplications": "false", "debugConsole": "false",
    "maxCrashDumpCount": "10", "nestedVirtualization": "true", "vmIdleTimeout": "60000", "dnsProxy": "true",
    "networkingMode": "mirrored", "firewall": "true", "dnsTunneling": "true", "autoProxy": "true",
    "defaultVhdSize": "1TB",
}
EXPERIMENTAL_VALUES = {
    "autoMemoryReclaim": "gradual", "sparseVhd": "true", "bestEffortDnsParsing": "false",
    "dnsTunnelingIpAddress": "10.255.255.254", "initialAutoProxyTimeout": "1000", "ignoredPorts": "'3000,4000'",
    "hostAddressLoopback": "false", "networkingMode": "nat", "dnsTunneling": "true", "firewall": "true",
    "autoProxy": "true",
}
WSLCONF_VALUES = {
    ("boot", "systemd"): "true", ("boot", "command"): "'service docker start'", ("boot", "protectBinfmt"): "true",
    ("automount", "enabled"): "true", ("automount", "mountFsTab"): "true", ("automount", "root"): "/mnt/",
    ("automount", "options"): "'metadata,uid=1000,gid=1000,umask=022'",
    ("network", "generateHosts"): "true", ("network", "generateResolvConf"): "false",
    ("network", "hostname"): "devbox", ("interop", "enabled"): "true", ("interop", "appendWindowsPath"): "false",
    ("user", "default"): "dev", ("gpu", "enabled"): "true", ("time", "useWindowsTimezone"): "true",
}


def _load(yaml_text: str):
    return load_profile_bytes(yaml_text.encode(), "p.yaml", Path.cwd()).profile


def test_tables_cover_every_model_field():
    from envkit.plan.wslconfig import ENVKIT_KEYS

    assert set(WSL2_VALUES) == set(Wsl.model_fields) - set(ENVKIT_KEYS)
    assert set(EXPERIMENTAL_VALUES) == set(WslExperimental.model_fields)
    assert {s for s, _ in WSLCONF_VALUES} == set(WslConf.model_fields)


@pytest.mark.parametrize("key", sorted(WSL2_VALUES))
def test_every_wsl2_key_validates(key):
    p = _load(BASE + f"wsl:\n  {key}: {WSL2_VALUES[key]}\n")
    assert getattr(p.wsl, key) is not None


@pytest.mark.parametrize("key", sorted(EXPERIMENTAL_VALUES))
def test_every_experimental_key_validates(key):
    p = _load(BASE + f"wsl:\n  experimental:\n    {key}: {EXPERIMENTAL_VALUES[key]}\n")
    assert getattr(p.wsl.experimental, key) is not None


@pytest.mark.parametrize("section, key", sorted(WSLCONF_VALUES))
def test_every_wsl_conf_key_validates(section, key):
    p = _load(BASE + f"wsl:\n  wsl_conf:\n    {section}:\n      {key}: {WSLCONF_VALUES[(section, key)]}\n")
    assert getattr(getattr(p.wsl.wsl_conf, section), key) is not None


@pytest.mark.parametrize("snippet, location, suggestion", [
    ("wsl:\n  memmory: 8GB\n", "p.yaml:5:3: wsl.memmory", "'memory'"),
    ("wsl:\n  experimental:\n    sparseVHD: true\n", "p.yaml:6:5: wsl.experimental.sparseVHD", "'sparseVhd'"),
    ("wsl:\n  processor: 4\n", "p.yaml:5:3: wsl.processor", "'processors'"),
    ("wsl:\n  wsl_conf:\n    boot:\n      sytemd: true\n", "p.yaml:7:7: wsl.wsl_conf.boot.sytemd", "'systemd'"),
])
def test_misspelled_keys_get_located_did_you_mean(snippet, location, suggestion):
    with pytest.raises(ProfileError) as e:
        _load(BASE + snippet)
    msg = str(e.value)
    assert msg.startswith(location + ": unknown key"), msg
    assert f"did you mean {suggestion}?" in msg


@pytest.mark.parametrize("snippet, needle", [
    ("wsl:\n  networkingMode: bridge\n", "did you mean 'bridged'?"),
    ("wsl:\n  kernel: 'C:\\\\temp\\\\kernel'\n", "write single backslashes"),
    ("wsl:\n  kernel: kernel.bin\n", "absolute Windows path"),
    ("wsl:\n  memory: 16GX\n", "expected a size"),
    ("wsl:\n  processors: 0\n", "p.yaml:5:3: wsl.processors"),
])
def test_bad_values_are_located(snippet, needle):
    with pytest.raises(ProfileError, match=None) as e:
        _load(BASE + snippet)
    assert needle in str(e.value), str(e.value)


@pytest.mark.parametrize("docker, source", [("desktop", "C:\\data"), ("engine", "/mnt/c/data")])
def test_a_drive_path_follows_the_docker_the_distribution_uses(docker, source):
    # Docker Engine inside the distribution has no C:\ (nor //c/): it made an empty folder and mounted it.
    from envkit.plan.image import ImageUser
    from envkit.plan.loader import loader_plan
    from envkit.plan.network import network_plan
    from envkit.plan.runsettings import RunSettings

    p = _load(BASE + f'run:\n  volumes: ["C:\\\\data:/data"]\nwsl:\n  docker: {docker}\n')
    settings = RunSettings.from_profile(p, loader_plan(p), ImageUser.of(p.image.user), network_plan(p))
    (vol,) = [v for v in settings.volumes if not v.project]
    assert vol.source == source
    from envkit.plan.wslconfig import wslconfig_sections

    assert all(e.key != "docker" for s in wslconfig_sections(p.wsl) for e in s.entries)  # not a .wslconfig key
