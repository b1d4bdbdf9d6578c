"""Annotated value types shared by the profile models (sizes, cpusets, names).

Each type parses user syntax once, at the edge, into a canonical value, and
publishes a JSON Schema fragment so editors can complete and check profiles.

Example:
    >>> from envkit.profile.typed import TypeAdapter
    >>> TypeAdapter(Size).validate_python("8GB")
    8589934592
"""

# No `from __future__ import annotations`: the models' hints are evaluated once, by Python, at class
# creation, instead of by typing.get_type_hints at first validation, which every run would pay.

import re
from typing import Annotated

from envkit.profile.typed import AfterValidator, BeforeValidator, Field, StringConstraints, WithJsonSchema

from envkit.profile.dockerref import check_size
from envkit.units import format_cpuset, parse_cpuset, parse_size

_SIZE_SCHEMA = {
    "anyOf": [
        {"type": "integer", "minimum": 0},
        {"type": "string", "pattern": r"^\s*\d+(\.\d+)?\s*[kmgtpKMGTP]?([iI]?[bB])?\s*$"},
    ],
    "description": "A size: bytes, or a number with a binary unit (512m, 8g, 8GB, 1.5GiB).",
}

def _profile_size(value: object) -> int:
    """parse_size, refusing unit-less numbers too small to be meant as bytes (``memory: 32``)."""
    n = parse_size(value)
    bare = isinstance(value, int) or (isinstance(value, str) and value.strip().isdigit())
    if bare and 0 < n < 1024 * 1024:
        raise ValueError(f"{n} is read as {n} bytes, which is almost certainly missing a unit "
                         f"(did you mean {n}g or {n}m?); plain numbers are bytes")
    return check_size(n)  # int64: what Docker stores


Size = Annotated[int, BeforeValidator(_profile_size), WithJsonSchema(_SIZE_SCHEMA)]
"""Bytes, parsed from Docker-style sizes (binary units)."""

Cpuset = Annotated[
    str,
    BeforeValidator(lambda v: format_cpuset(parse_cpuset(v))),
    WithJsonSchema({"type": "string", "pattern": r"^\d+(-\d+)?(,\d+(-\d+)?)*$",
                    "description": "Linux cpuset list, e.g. \"0-7\" or \"0,2,4-6\"."}),
]
"""Canonical cpuset text (ranges collapsed, sorted)."""

Name = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9_.-]*$", max_length=63)]
EnvName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]
# Paths and values that land in Dockerfile RUN lines and mount specs: a conservative
# alphabet, so no value can be read as shell syntax or as an extra mount option.
AbsPath = Annotated[str, StringConstraints(pattern=r"^/[A-Za-z0-9._/+-]*$")]
EnvValue = Annotated[str, StringConstraints(pattern=r"^[^\x00-\x1f\x7f]*$")]

# The Dev Containers CLI replaces these ${...} variables in every string of devcontainer.json
# (runArgs, build.args, mounts) and has no escape for them (devcontainers/cli
# src/spec-common/variableSubstitution.ts; read in the 0.89.0 bundle: /\$\{(.*?)\}/, then a
# switch on the name before the first ':'; unknown names are left alone). A run-time value
# holding one would reach the container changed under devcontainer but literal under run.sh
# and compose, so the profile refuses it once, at load time.
DEVCONTAINER_VARIABLE = re.compile(
    r"\$\{(env|localEnv|containerEnv|localWorkspaceFolder|localWorkspaceFolderBasename|"
    r"containerWorkspaceFolder|containerWorkspaceFolderBasename|devcontainerId)(:[^}]*)?\}")


def literal_for_devcontainer(value: str) -> str:
    """``value`` unchanged, or a ValueError when the Dev Containers CLI would expand part of it.

    >>> literal_for_devcontainer("$HOME and ${X}")
    '$HOME and ${X}'
    >>> literal_for_devcontainer("${localEnv:HOME}/data")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: '${localEnv:HOME}' would be replaced by the Dev Containers CLI (it expands ${...} variables ...
    """
    m = DEVCONTAINER_VARIABLE.search(value)
    if m:
        raise ValueError(f"{m.group(0)!r} would be replaced by the Dev Containers CLI (it expands ${{...}} variables "
                         "in devcontainer.json and has no escape for them), so devcontainer would run with a "
                         "different value than run.sh and compose; write the value out, or use $VAR, which the "
                         "container's shell expands")
    return value


# Run-time text (run.env values, volume specs, proxy settings): also literal for devcontainer.
RunText = AfterValidator(literal_for_devcontainer)
RunEnvValue = Annotated[EnvValue, RunText]
DebPackage = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9+.-]+(=[A-Za-z0-9.+:~-]+)?$")]
# A PEP 508 requirement without environment markers or URLs: enough for pins,
# extras and ranges, and nothing a shell could misread even before quoting.
PipRequirement = Annotated[
    str,
    StringConstraints(
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9._,-]+\])?(\s*(==|!=|<=|>=|<|>|~=)\s*[A-Za-z0-9.*+!-]+\s*,?)*$"
    ),
]
PositiveInt = Annotated[int, Field(ge=1)]
