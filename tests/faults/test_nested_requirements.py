"""A requirements file naming another file or a folder (-r, -c, -e) is refused at load.

Only the files image.requirements lists enter the build context, each alone: ``-r /etc/shadow``,
``-r ../x.txt`` or ``-e .`` inside one cannot work in the build, and would be a silent failure there.
"""
from __future__ import annotations

import pytest

from tests.conftest import call_envkit


@pytest.mark.parametrize("line", ["-r /etc/shadow", "-r ../x.txt", "-e .", "--requirement=base.txt",
                                  "-c constraints.txt", "--editable ./pkg", "-rbase.txt"])
def test_a_nested_reference_is_exit_2_at_the_requirements_line(line, tmp_path):
    (tmp_path / "requirements.txt").write_text(f"numpy\n{line}\n")
    (tmp_path / "envkit.yaml").write_text(
        "envkit: 1\nname: t\nimage:\n  base: 'python:3.11-slim'\n  requirements: [requirements.txt]\n")
    res = call_envkit("generate", "-o", "out", cwd=tmp_path)
    assert res.returncode == 2, res.stderr
    assert f"envkit.yaml:5:18: image.requirements[0]: requirements.txt:2: {line!r} names another file" in res.stderr
    assert "Traceback" not in res.stderr and not (tmp_path / "out").exists()


def test_index_options_and_plain_requirements_still_load(tmp_path):
    (tmp_path / "requirements.txt").write_text("--extra-index-url https://pypi.example.com/simple\n"
                                               "--no-binary :none:\nrequests  # -r not.txt\n")
    (tmp_path / "envkit.yaml").write_text(
        "envkit: 1\nname: t\nimage:\n  base: 'python:3.11-slim'\n  requirements: [requirements.txt]\n")
    res = call_envkit("generate", "-o", "out", "--target", "dockerfile", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
