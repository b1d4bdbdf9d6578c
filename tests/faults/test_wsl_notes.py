"""The [experimental] .wslconfig keys carry the Windows they need, as MicrosoftDocs/WSL
``WSL/wsl-config.md`` marks them (footnote 1: Windows 11; footnote 2: 22H2 or newer)."""
import pytest

from envkit.profile.wsl import WIN11_22H2_BUILD, WIN11_BUILD, min_windows_build, value_note


@pytest.mark.parametrize("key", ["bestEffortDnsParsing", "dnsTunnelingIpAddress", "ignoredPorts",
                                 "hostAddressLoopback"])
def test_these_experimental_keys_need_windows_11_22h2(key):
    assert min_windows_build(key) == WIN11_22H2_BUILD
    assert value_note(key, True).startswith("Windows 11 22H2 or newer")


def test_initial_auto_proxy_timeout_needs_windows_11():
    assert min_windows_build("initialAutoProxyTimeout") == WIN11_BUILD
    assert value_note("hostAddressLoopback", True).endswith("mirrored networking only")
