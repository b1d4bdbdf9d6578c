"""Annotated value types shared by the profile models (sizes, cpusets, names).

Each type parses user syntax once, at the edge, into a canonical value, and
publishes a JSON Schema fragment so editors can complete and check profiles.

Example:
    >>> from pydantic import TypeAdapter
    >>> TypeAdapter(Size).validate_python("8GB")
    8589934592
"""

from __future__ import annotations

import re
from typing import Annotated

from collections.abc import Callable

from pydantic import AfterValidator, BeforeValidator, Field, StringConstraints, ValidationError, WithJsonSchema, WrapValidator
from pydantic_core import PydanticCustomError, PydanticKnownError
from pydantic_core import ValidationError as CoreValidationError

from envkit.profile.dockerref import check_size
from envkit.termtext import neutralise
from envkit.units import format_cpuset, parse_cpuset, parse_size

def _own_level(err) -> bool:
    """An error about the value itself (a union member's tag at most), not about one of its items."""
    return not any(isinstance(seg, int) for seg in err["loc"])


def _rewrap(exc: ValidationError, convert: Callable[[dict], PydanticCustomError | None]) -> CoreValidationError:
    """``exc`` again, each error that ``convert`` turns into a custom error replaced by it (its loc kept)."""
    details = []
    for err in exc.errors():
        custom = convert(dict(err))
        details.append({"type": custom, "loc": err["loc"], "input": err["input"]} if custom is not None else err)
    return CoreValidationError.from_exception_data(exc.title, details)  # type: ignore[arg-type]


def _converting(convert: Callable[[dict], PydanticCustomError | None]) -> WrapValidator:
    """A validator that runs the field's own validation and rewrites its errors with ``convert``."""
    def wrap(value: object, handler):
        try:
            return handler(value)
        except ValidationError as e:
            raise _rewrap(e, convert) from None

    return WrapValidator(wrap)


def described(expected: str | Callable[[object], str]) -> WrapValidator:
    """After a ``pattern`` constraint: its mismatch carries, in ``ctx["expected"]``, what a user should write
    (``expected`` may be a function of the value, for a hint that depends on it); the pattern stays in
    ``ctx["pattern"]`` and in the JSON Schema.

    >>> from pydantic import TypeAdapter
    >>> try: TypeAdapter(Annotated[str, Field(pattern="^a$"), described("the letter a")]).validate_python("b")
    ... except ValidationError as e: print(e.errors()[0]["ctx"])
    {'pattern': '^a$', 'expected': 'the letter a'}
    """
    def convert(err: dict) -> PydanticCustomError | None:
        if err["type"] != "string_pattern_mismatch" or not _own_level(err):
            return None
        words = expected(err["input"]) if callable(expected) else expected
        return PydanticCustomError("string_pattern_mismatch", "String should match pattern '{pattern}'",
                                   {**err["ctx"], "expected": words})

    return _converting(convert)


def expecting(expected: str) -> WrapValidator:
    """Around a union: its own-level failures become one ``expected`` error saying ``expected`` in plain words
    (rather than one error per member); an item's failure inside a member stays as it is.

    >>> from typing import Literal, Union
    >>> from pydantic import TypeAdapter
    >>> try: TypeAdapter(Annotated[Union[int, Literal["x"]], expecting("a number or 'x'")]).validate_python("y")
    ... except ValidationError as e: print({err["type"] for err in e.errors()}, e.errors()[0]["ctx"])
    {'expected'} {'expected': "a number or 'x'"}
    """
    def convert(err: dict) -> PydanticCustomError | None:
        if not _own_level(err):
            return None
        return PydanticCustomError("expected", "expected {expected}", {"expected": expected})

    return _converting(convert)


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

def _cpuset_text(value: object) -> str:
    """A cpuset list, given as text: YAML reads ``010`` as 8 and ``1:30`` as 90, so a number is refused.

    >>> _cpuset_text("0-3,2")
    '0-3'
    >>> _cpuset_text(8)
    Traceback (most recent call last):
    ...
    pydantic_core._pydantic_core.PydanticKnownError: Input should be a valid string
    """
    if not isinstance(value, str):
        raise PydanticKnownError("string_type")
    return format_cpuset(parse_cpuset(value))


Cpuset = Annotated[
    str,
    BeforeValidator(_cpuset_text),
    WithJsonSchema({"type": "string", "pattern": r"^\d+(-\d+)?(,\d+(-\d+)?)*$",
                    "description": "Linux cpuset list, e.g. \"0-7\" or \"0,2,4-6\"."}),
]
"""Canonical cpuset text (ranges collapsed, sorted)."""

NAME_WORDS = "lowercase letters, digits, '_', '.', '-' (starting with a letter or digit), e.g. vision-train"
Name = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9_.-]*$", max_length=63), described(NAME_WORDS)]
# An environment variable's name: a POSIX shell name (XBD 3.216 "Name": underscores, digits and letters of
# the portable character set, not starting with a digit), because the Slurm script sets run.env with the
# batch shell's `export` and the entrypoint's shell reads it back; docker's --env would take more, the shells not.
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _env_name(value: object) -> object:
    """``value`` unchanged when it is a valid env key, else a ValueError that names the key as the problem.

    >>> _env_name("MY_VAR")
    'MY_VAR'
    >>> _env_name("MY-VAR")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: env key 'MY-VAR' is not a valid name: an env key must match ^[A-Za-z_][A-Za-z0-9_]*$ ... (did you mean 'MY_VAR'?)
    """
    if isinstance(value, str) and ENV_NAME.match(value):
        return value
    text = str(value).lower() if isinstance(value, bool) else str(value)
    read = ""
    if not isinstance(value, str):
        kind = "boolean" if isinstance(value, bool) else "number" if isinstance(value, (int, float)) else "value"
        read = f" (YAML reads it as a {kind})"
    fixed = re.sub(r"[^A-Za-z0-9_]", "_", text)
    fixed = "_" + fixed if fixed[:1].isdigit() or not fixed else fixed
    suggestion = f" (did you mean {fixed!r}?)" if fixed.strip("_") else ""
    raise ValueError(f"env key '{neutralise(text)}'{read} is not a valid name: an env key must match "
                     f"{ENV_NAME.pattern} (letters, digits and '_', not starting with a digit){suggestion}")


# The pattern stays in the JSON Schema for editors; the check before it names the key, not its value.
EnvName = Annotated[str, BeforeValidator(_env_name), StringConstraints(pattern=ENV_NAME.pattern)]
# Paths and values that land in Dockerfile RUN lines and mount specs: a conservative
# alphabet, so no value can be read as shell syntax or as an extra mount option.
AbsPath = Annotated[str, StringConstraints(pattern=r"^/[A-Za-z0-9._/+-]*$")]
PROXY_WORDS = "a proxy URL without spaces"
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

# The schemes every tool of the build reads from http_proxy/https_proxy: apt's http method takes http and
# https (apt methods/connect.cc: anything else is "Unsupported proxy configured"; socks5h only), and pip
# takes http and https, SOCKS only with PySocks, which pip does not vendor (pypa/pip#6668). uv and curl
# take both. A value outside them passes the profile and fails in the middle of the image build.
PROXY_SCHEMES = ("http", "https")


def check_proxy_url(value: str) -> str:
    """``value`` unchanged when it is a proxy URL the build's tools read, else a ValueError saying why.

    The message never repeats the URL's user and password (they are credentials).

    >>> check_proxy_url("http://user:pw@proxy.corp:3128/")
    'http://user:pw@proxy.corp:3128/'
    >>> check_proxy_url("socks5://proxy.corp:1080")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: the proxy's scheme 'socks5' is not one the image build can use...
    >>> check_proxy_url("http://proxy.corp:99999")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: the proxy's port '99999' is not a port number from 1 to 65535...
    """
    from urllib.parse import urlsplit

    from envkit.units import did_you_mean

    form = "; write it as http://HOST:PORT (or https://HOST:PORT for a TLS proxy)"
    if "://" not in value:
        raise ValueError(f"a proxy URL needs a scheme: apt reads HOST:PORT without one as a scheme of its own "
                         f"(\"Unsupported proxy configured\"){form}")
    scheme, rest = value.split("://", 1)
    if scheme.lower() in PROXY_SCHEMES and scheme not in PROXY_SCHEMES:
        raise ValueError(f"write the proxy's scheme '{neutralise(scheme)}' in lower case "
                         f"('{scheme.lower()}'): apt compares it as written")
    if scheme not in PROXY_SCHEMES:
        why = (" (pip reads a SOCKS proxy only with PySocks installed, which it does not ship)"
               if scheme.lower().startswith("socks") else "")
        raise ValueError(f"the proxy's scheme '{neutralise(scheme)}' is not one the image build can use{why}; "
                         f"apt and pip read {' and '.join(PROXY_SCHEMES)}"
                         f"{did_you_mean(scheme.lower(), PROXY_SCHEMES)}{form}")
    hostport = rest.split("/", 1)[0].rpartition("@")[2]  # the user and password left out of every message
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:
        port = -1
    written = hostport.rpartition("]")[2].rpartition(":")[2] if ":" in hostport.rpartition("]")[2] else ""
    if port == -1 or port == 0 or (written and not written.isdigit()):
        raise ValueError(f"the proxy's port '{neutralise(written)}' is not a port number from 1 to 65535{form}")
    if not parts.hostname:
        raise ValueError(f"the proxy URL names no host{form}")
    return value


ProxyUrl = AfterValidator(check_proxy_url)
DebPackage = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9+.-]+(=[A-Za-z0-9.+:~-]+)?$"),
                      described("a Debian package name, optionally '=version' (e.g. numactl, git=1:2.39.5-0+deb12u1)")]
# A PEP 508 requirement without environment markers or URLs: enough for pins,
# extras and ranges, and nothing a shell could misread even before quoting.
PipRequirement = Annotated[
    str,
    StringConstraints(
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9._,-]+\])?(\s*(==|!=|<=|>=|<|>|~=)\s*[A-Za-z0-9.*+!-]+\s*,?)*$"
    ),
    described("a pip requirement such as 'pillow', 'numpy<2' or 'pkg[extra]>=1.0'"),
]
# A sign after a digit: pydantic-core reads text such as "0-3" as -3 and "0-0" as 0.
_SIGN_AFTER_DIGIT = re.compile(r"[0-9]\s*[-+]")


def _whole_number_text(value: object) -> object:
    """``value`` unchanged, unless it is text that is no whole number although pydantic would read it as one.

    >>> _whole_number_text("12"), _whole_number_text(3)
    ('12', 3)
    >>> _whole_number_text("0-3")
    Traceback (most recent call last):
    ...
    pydantic_core._pydantic_core.PydanticKnownError: Input should be a valid integer, unable to parse string as an integer
    """
    if isinstance(value, bool):  # YAML 1.1's yes/on/true: pydantic's lax int would take it as 1
        raise PydanticKnownError("int_type")
    if isinstance(value, str) and _SIGN_AFTER_DIGIT.search(value):
        raise PydanticKnownError("int_parsing")
    return value


# After an int's constraints (Annotated[int, Field(ge=0), WholeText]), so they stay in its JSON Schema.
WholeText = BeforeValidator(_whole_number_text)
"""For an int: no boolean (``yes``, ``on``, ``true``), and text only when it reads as one number (not ``"0-3"``)."""


def _not_a_boolean(value: object) -> object:
    """``value`` unchanged unless it is a boolean, which pydantic's lax float would take as 1.0 or 0.0.

    >>> _not_a_boolean(2.5)
    2.5
    >>> _not_a_boolean(True)
    Traceback (most recent call last):
    ...
    pydantic_core._pydantic_core.PydanticKnownError: Input should be a valid number
    """
    if isinstance(value, bool):
        raise PydanticKnownError("float_type")
    return value


NumberNotBool = BeforeValidator(_not_a_boolean)
"""For a float: no boolean (``cpus: true`` is no CPU count)."""

PositiveInt = Annotated[int, Field(ge=1), WholeText]
