"""The network flags refuse bad input with exit 2 and one line, before torch is imported."""

from __future__ import annotations

import pytest

from envkit.harness.cli import main


@pytest.mark.parametrize("argv, words", [
    (["--network", "--rendezvous", "n1"], "expected HOST:PORT"),
    (["--network", "--rendezvous", "n1:99999"], "expected HOST:PORT"),
    (["--network", "--rendezvous", "a b:1"], "expected HOST:PORT"),
    (["--network", "--nodes", "0"], "expected a node count or HOST,HOST"),
    (["--network", "--nodes", "n1,,n2"], "expected a node count or HOST,HOST"),
    (["--network", "--network-timeout", "5"], "expected seconds from 10 to 600"),
    (["--network", "--network-timeout", "nan"], "expected seconds from 10 to 600"),
    (["--rendezvous", "n1:29500"], "go with --network"),
])
def test_bad_network_flags_exit_2_with_one_line(argv, words, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err
