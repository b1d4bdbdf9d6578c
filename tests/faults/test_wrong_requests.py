"""Requests that cannot mean what they say are refused at load, at their line (exit 2, nothing written).

- ``run.gpus`` listing one id twice: Docker gives the container the device once, the cluster targets
  count two (envkit.profile.load._check_gpu_ids).
- ``image.proxy`` with a scheme or port the build's tools cannot use: apt and pip read http:// and
  https:// only (envkit.profile.types.PROXY_SCHEMES), and a bad port fails only inside the build.
"""

from __future__ import annotations

import pytest

from tests.conftest import call_envkit

HEAD = "envkit: 1\nname: demo\nimage:\n  base: debian:bookworm\n"


def _generate(tmp_path, body: str):
    p = tmp_path / "p.yaml"
    p.write_text(HEAD + body)
    out = tmp_path / "out"
    res = call_envkit("generate", str(p), "-o", str(out))
    return res, out


@pytest.mark.parametrize("body, where, what", [
    ("run:\n  gpus: [0, 0]\n", "p.yaml:6:13: run.gpus[1]", "GPU 0 is listed twice (first as run.gpus[0])"),
    ("run:\n  gpus:\n    - 1\n    - 2\n    - \"1\"\n", "p.yaml:9:7: run.gpus[2]", "GPU 1 is listed twice"),
    ("run:\n  gpus: [GPU-4a7c, gpu-4A7C]\n", "p.yaml:6:20: run.gpus[1]", "GPU gpu-4A7C is listed twice"),
])
def test_a_gpu_listed_twice_is_refused_at_its_line(tmp_path, body, where, what):
    res, out = _generate(tmp_path, body)
    assert res.returncode == 2, res.stderr
    assert f"{where}: {what}" in res.stderr, res.stderr
    assert "on a workstation but" in res.stderr and "Traceback" not in res.stderr
    assert not out.exists(), "nothing written"


def test_distinct_gpu_ids_still_load(tmp_path):
    res, _ = _generate(tmp_path, "run:\n  gpus: [0, 1, GPU-4a7c]\n")
    assert res.returncode == 0, res.stderr


@pytest.mark.parametrize("url, what", [
    ("socks5://proxy.corp:1080", "the proxy's scheme 'socks5' is not one the image build can use (pip reads a SOCKS"),
    ("socks5h://proxy.corp:1080", "the proxy's scheme 'socks5h' is not one"),
    ("htp://proxy.corp:3128", "(did you mean 'http'?)"),
    ("ftp://proxy.corp:21", "apt and pip read http and https"),
    ("HTTP://proxy.corp:3128", "in lower case ('http')"),
    ("proxy.corp:3128", "a proxy URL needs a scheme"),
    ("http://proxy.corp:99999", "the proxy's port '99999' is not a port number from 1 to 65535"),
    ("http://proxy.corp:0", "the proxy's port '0' is not a port number"),
    ("http://proxy.corp:31x8", "the proxy's port '31x8' is not a port number"),
    ("http://deploy:s3cret@:3128", "names no host"),
])
@pytest.mark.parametrize("key", ["http", "https"])
def test_a_proxy_url_the_build_cannot_use_is_refused_at_its_line(tmp_path, url, what, key):
    res, out = _generate(tmp_path, f"  proxy:\n    {key}: \"{url}\"\n")
    assert res.returncode == 2, res.stderr
    assert f"p.yaml:6:5: image.proxy.{key}: " in res.stderr and what in res.stderr, res.stderr
    assert "write it as http://HOST:PORT" in res.stderr or "lower case" in res.stderr
    assert "s3cret" not in res.stderr, "the proxy's password is never printed"
    assert "Traceback" not in res.stderr and not out.exists()


@pytest.mark.parametrize("url", ["http://proxy.corp:3128", "http://proxy.corp:3128/", "https://proxy.corp",
                                 "http://deploy:p%40ss@proxy.corp:8080", "http://[fd00::1]:3128", "http://10.0.0.1:80"])
def test_proxy_urls_the_build_reads_still_load(tmp_path, url):
    res, _ = _generate(tmp_path, f"  proxy:\n    http: \"{url}\"\n    https: \"{url}\"\n")
    assert res.returncode == 0, res.stderr
