"""Load a profile: bytes → YAML with positions → typed, frozen ``Profile``.

Validation happens here and only here. Every failure becomes one
``ProfileError`` whose lines read ``file:line:col: key.path: problem``, with
the allowed values and a did-you-mean, sorted by position.

Example:
    >>> from pathlib import Path
    >>> lp = load_profile_bytes(b"envkit: 1\\nname: demo\\nimage: {base: debian:bookworm}\\n", "demo.yaml", Path("."))
    >>> lp.profile.name, len(lp.sha256)
    ('demo', 64)
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ValidationError

from envkit import __version__
from envkit.errors import ProfileError
from envkit.locations import LOCK_FILE_NAME
from envkit.pem import certificate_blocks, private_key_at
from envkit.profile.model import Profile
from envkit.profile.rules import ENV_ENTRY_MAX, ENV_TOTAL_MAX  # noqa: F401 (the limits, where callers read them)
from envkit.profile.yamlsrc import _dotted, read_yaml
from envkit.requirements import nested_references
from envkit.safeio import CERT_MAX, PROFILE_MAX, REQUIREMENTS_MAX, read_bounded
from envkit.harness.text import shorten, shorten_values
from envkit.termtext import neutralise
from envkit.units import did_you_mean

SUPPORTED_VERSIONS = (1,)
DEFAULT_NAME = "<default profile>"
MAX_ERRORS = 12

@dataclass(frozen=True)
class LoadedProfile:
    """A validated profile and where it came from (``base_dir`` resolves relative paths)."""

    profile: Profile
    source: str
    base_dir: Path
    sha256: str
    # The bytes of every requirements file and certificate, as the profile names them, read (bounded) once.
    inputs: tuple[tuple[str, bytes], ...] = ()
    # envkit.lock.txt beside the profile, when there is one (then the image installs exactly it).
    lock: bytes | None = None
    # A torch/Python pairing envkit cannot confirm (said as a warning; a known-bad one is an error at load).
    python_note: str | None = None
    # (line, column) of each key and item the YAML wrote, by key path (("run", "shm_size"), ("run", "volumes", 0)).
    positions: Mapping[tuple[str | int, ...], tuple[int, int]] = field(default_factory=dict, compare=False)

    def resolve(self, rel: str) -> Path:
        return (self.base_dir / rel).resolve()

    def input_bytes(self, rel: str) -> bytes:
        """The bytes of a requirements file or certificate the profile names (read at load)."""
        return dict(self.inputs)[rel]


def default_profile_text() -> str:
    """The embedded default profile, comments included (what ``envkit init`` writes)."""
    # A plain file beside this module (the wheel installs it there).
    return (Path(__file__).resolve().parent / "default.yaml").read_text(encoding="utf-8")


def load_profile(path: Path | None) -> LoadedProfile:
    """Load ``path``, or the embedded default profile when ``path`` is None."""
    if path is None:
        return load_profile_bytes(default_profile_text().encode(), DEFAULT_NAME, Path.cwd())
    if not path.exists() and not path.is_symlink():
        raise ProfileError(f"{path}: no such file", hint="run `envkit init` to write a starting profile")
    # Regular files only, opened without blocking, at most PROFILE_MAX bytes read (/dev/zero, a FIFO).
    raw = read_bounded(path, PROFILE_MAX, "a profile file (envkit.yaml)")
    return load_profile_bytes(raw, str(path), path.resolve().parent)


def load_profile_bytes(raw: bytes, source: str, base_dir: Path) -> LoadedProfile:
    """Validate raw profile bytes; ``source`` names the file in messages."""
    numbers: dict[tuple, tuple[tuple[int, int], str, object]] = {}
    data, pos = read_yaml(raw, source, numbers)
    _check_version(data, pos, source)
    try:
        # The context: what the rules that read the host need (envkit.profile.rules).
        profile = Profile.model_validate(data, context={"base_dir": base_dir, "source": source})
    except ValidationError as e:
        lines = raw.decode("utf-8", "replace").splitlines()
        text, hint = _format_errors(e, data, pos, source, lines)
        raise ProfileError(text, hint=hint) from None
    _check_yaml11_numbers(numbers, source)
    inputs = _check_files(profile, pos, source, base_dir)
    note = _check_python(profile, pos, source, base_dir)
    lock = _read_lock(base_dir)
    # Defaults left out: a profile's hash stays the same when a later envkit adds an optional key.
    canonical = json.dumps(profile.model_dump(mode="json", exclude_defaults=True), sort_keys=True,
                           separators=(",", ":"))
    return LoadedProfile(profile, source, base_dir, hashlib.sha256(canonical.encode()).hexdigest(), inputs, lock, note,
                         pos)


def project_tree(base_dir: Path) -> Path:
    """Where the profile's own files may lie: the git work tree holding ``base_dir`` (the nearest folder
    above it with a ``.git``), else ``base_dir`` itself; resolved."""
    base = Path(base_dir).resolve()
    for folder in (base, *base.parents):
        if (folder / ".git").exists():
            return folder
    return base


def outside_tree(path: Path, base_dir: Path) -> str | None:
    """Why ``path`` (symlinks followed) lies outside the profile's folder and its git work tree, or None.

    >>> import tempfile; d = Path(tempfile.mkdtemp())
    >>> outside_tree(d / "requirements.txt", d) is None, "outside" in outside_tree(Path("/etc/passwd"), d)
    (True, True)
    """
    base, tree = Path(base_dir).resolve(), project_tree(base_dir)
    real = path.resolve()
    if real == tree or tree in real.parents:
        return None
    where = f"the profile's folder ({base})" if tree == base else f"the git work tree that holds the profile ({tree})"
    via = f" (a symbolic link to {real})" if real != Path(os.path.normpath(path.absolute())) else ""
    return (f"lies outside {where}{via}; it is copied into the build context and the image, so only the "
            "project's own files may be named: copy it into the project")


def _check_yaml11_numbers(numbers: dict, source: str) -> None:
    """Refuse numbers that only YAML 1.1 reads so (``010`` is 8, ``1:30`` is 90), wherever they load."""
    problems = []
    for path, ((line, col), text, node) in sorted(numbers.items(), key=lambda item: item[1][0]):
        problems.append(f"{source}:{line}:{col}: {_dotted(path)}: YAML 1.1 reads {neutralise(text)} as the number "
                        f"{node!r}; write {node!r} if that is meant, or put it in quotes (\"{neutralise(text)}\")")
    if problems:
        raise ProfileError("\n".join(problems[:MAX_ERRORS]))


def _read_lock(base_dir: Path) -> bytes | None:
    """envkit.lock.txt beside the profile (bounded: it is copied into the build context), None without one.

    A lock that is a symbolic link out of the profile's folder and its git work tree is refused (exit 2).
    """
    path = Path(base_dir) / LOCK_FILE_NAME
    if not path.is_file():
        return None
    problem = outside_tree(path, base_dir)
    if problem:
        raise ProfileError(f"{path}: {problem}")
    return read_bounded(path, REQUIREMENTS_MAX, "a lock file (envkit.lock.txt)")


def _check_version(data: dict, pos: dict, source: str) -> None:
    if "envkit" not in data:
        raise ProfileError(f"{source}:1:1: envkit: required key missing; the first line of a profile is 'envkit: 1'")
    v = data["envkit"]
    if v not in SUPPORTED_VERSIONS or isinstance(v, bool):
        line, col = pos.get(("envkit",), (1, 1))  # a merge key (<<) leaves no position
        raise ProfileError(
            f"{source}:{line}:{col}: envkit: profile version {v!r} is not supported by envkit {__version__}; "
            f"supported: {', '.join(map(str, SUPPORTED_VERSIONS))}"
        )


def _check_files(profile: Profile, pos: dict, source: str, base_dir: Path) -> tuple[tuple[str, bytes], ...]:
    """Check the files the profile names; return the bytes of its requirement files and certificates."""
    problems: list[str] = []
    inputs: dict[str, bytes] = {}
    checks: list[tuple[tuple[str, ...], tuple[str, ...], str, str]] = [
        (("image", "ca_certificates"), profile.image.ca_certificates, "is_file", "a PEM certificate file")]
    if profile.image.torch:
        checks.append((("image", "torch", "find_links"), profile.image.torch.find_links, "is_dir", "a directory of wheels"))
    checks.append((("image", "requirements"), profile.image.requirements, "is_file", "a requirements file"))
    for key, items, test, what in checks:
        for i, rel in enumerate(items):
            p = (base_dir / rel)
            if not getattr(p, test)():
                line, col = pos.get(key + (i,), (0, 0))
                problems.append(f"{source}:{line}:{col}: {_dotted(key + (i,))}: {rel!r} is not {what} "
                                f"(paths are relative to the profile's folder, {base_dir})")
            elif key == ("image", "ca_certificates"):
                data = _check_pem(p, rel, key + (i,), pos, source, problems)
                if data is not None:
                    inputs[rel] = data
            elif key == ("image", "requirements") and (problem := outside_tree(p, base_dir)):
                line, col = pos.get(key + (i,), (0, 0))
                problems.append(f"{source}:{line}:{col}: {_dotted(key + (i,))}: {rel!r} {problem}")
            elif key == ("image", "requirements"):
                try:  # read to choose the Dockerfile's layout and copied into the build context: bounded
                    inputs[rel] = read_bounded(p, REQUIREMENTS_MAX, "a requirements file")
                except ProfileError as e:
                    line, col = pos.get(key + (i,), (0, 0))
                    problems.append(f"{source}:{line}:{col}: {_dotted(key + (i,))}: {e}")
                    continue
                line, col = pos.get(key + (i,), (0, 0))
                for number, text in nested_references(inputs[rel].decode("utf-8", "replace"))[:MAX_ERRORS]:
                    problems.append(
                        f"{source}:{line}:{col}: {_dotted(key + (i,))}: {neutralise(rel)}:{number}: "
                        f"{neutralise(text)!r} names another file or folder, which the build cannot read: only "
                        "the files image.requirements lists are copied into the image, each alone; list that "
                        "file in image.requirements instead (the project itself: image.install_project)")
    if profile.image.install_project and not any((base_dir / f).is_file() for f in ("pyproject.toml", "setup.py")):
        line, col = pos.get(("image", "install_project"), (0, 0))
        problems.append(f"{source}:{line}:{col}: image.install_project: no pyproject.toml or setup.py in the "
                        f"profile's folder ({base_dir}) to install")
    if problems:
        raise ProfileError("\n".join(problems))
    return tuple(inputs.items())


def _check_python(profile: Profile, pos: dict, source: str, base_dir: Path) -> str | None:
    """Refuse a torch release paired with a Python it has no wheel for, naming the nearest pairing that has one."""
    from envkit.pythons import check_profile

    torch = profile.image.torch
    error, note = check_profile(profile.image, [base_dir / d for d in (torch.find_links if torch else ())])
    if error:
        key = ("image", "python") if profile.image.python else ("image", "torch", "version")
        line, col = pos.get(key, pos.get(("image", "torch"), (0, 0)))
        first, _, rest = error.partition("\n")
        raise ProfileError(f"{source}:{line}:{col}: {_dotted(key)}: {first}", hint=rest.replace("\n", " "))
    return note


def _check_pem(p: Path, rel: str, key: tuple, pos: dict, source: str, problems: list[str]) -> bytes | None:
    """A certificate file: regular, at most CERT_MAX bytes (it is copied into the image), holding a PEM
    certificate block and no private key (:mod:`envkit.pem`; the image gets the certificate blocks only)."""
    line, col = pos.get(key, (0, 0))
    try:
        data = read_bounded(p, CERT_MAX, "a PEM certificate file")
    except ProfileError as e:
        problems.append(f"{source}:{line}:{col}: {_dotted(key)}: {e}")
        return None
    key_at = private_key_at(data)
    if key_at is not None:
        problems.append(f"{source}:{line}:{col}: {_dotted(key)}: {rel!r} holds a private key ({key_at[1]} on its "
                        f"line {key_at[0]}); a CA file is copied into the image, readable by everyone who can pull "
                        "it: name a file holding the CA certificates only")
        return None
    if not certificate_blocks(data):
        problems.append(f"{source}:{line}:{col}: {_dotted(key)}: {rel!r} holds no PEM certificate "
                        "(expected '-----BEGIN CERTIFICATE-----')")
        return None
    return data


def _format_errors(exc: ValidationError, data: dict, pos: dict, source: str,
                   lines: list[str]) -> tuple[str, str | None]:
    """The message and hint of ``exc``: one line per key path, at its line and column, sorted by position."""
    found: dict[tuple, str] = {}
    ruled: list[tuple[tuple, str]] = []
    hint = None
    for err in exc.errors():
        path, extra = _data_path(err["loc"], data)
        ctx = err.get("ctx") or {}
        if "at" in ctx:  # a rule across sections (envkit.profile.rules): its key path and words are its own
            ruled.append((path + tuple(ctx["at"]), ctx["message"]))  # several may share a key
            hint = hint or ctx.get("hint")
            continue
        if err["loc"][-1:] == ("[key]",) and not isinstance(err.get("input"), str):
            # A key YAML read as a boolean, null or number (`YES:`, `null:`, `1:`): named as written.
            prefix = _data_path(err["loc"][:-2], data)[0]
            written = _written_key(prefix, err.get("input"), pos)
            found[prefix + (written,)] = _key_not_text(written, err.get("input"), prefix)
            continue
        line, col = pos[path] if path in pos else (0, 0)
        # The value as written (a union's members leave their tags in ``extra``; the text is the same).
        raw = (_raw_value(lines, line, col, item=isinstance(path[-1], int))
               if path and path in pos and err["type"] != "missing" else None)
        # The value a rule's own words quote is shown by its start and length, as _show does.
        message = shorten_values(_describe(dict(err), path, extra, raw), [err.get("input")])
        # One line per key path: a union failure yields one error per member.
        if path not in found or err["type"] in ("extra_forbidden", "missing"):
            found[path] = message
    placed: list[tuple[tuple[int, int], str]] = []
    for path, message in [*found.items(), *ruled]:
        line, col = _position(path, pos)
        placed.append(((line, col), f"{source}:{line}:{col}: {_dotted(path)}: {message}"))
    placed.sort()
    out = [text for _, text in placed[:MAX_ERRORS]]
    if len(placed) > MAX_ERRORS:
        out.append(f"... and {len(placed) - MAX_ERRORS} more")
    return "\n".join(out), hint


def _written_key(prefix: tuple, key: object, pos: dict) -> str:
    """The text of the mapping key under ``prefix`` that YAML read as ``key`` (a boolean, null or number)."""
    import yaml

    for p in pos:
        if len(p) == len(prefix) + 1 and p[:-1] == prefix and isinstance(p[-1], str):
            try:
                value = yaml.safe_load(p[-1])
            except yaml.YAMLError:
                continue
            if type(value) is type(key) and value == key:
                return p[-1]
    return str(key).lower() if isinstance(key, bool) or key is None else str(key)


def _key_not_text(written: str, key: object, prefix: tuple) -> str:
    """Why a mapping key that YAML read as other than text is refused, and the fix."""
    from envkit.profile.types import ENV_NAME

    kind = ("the boolean " + str(key).lower() if isinstance(key, bool) else "null" if key is None
            else f"the number {key!r}")
    text = neutralise(written)
    message = f"YAML reads the key {text} as {kind}, not as text"
    if prefix[-1:] == ("env",) and not ENV_NAME.match(written):
        fixed = re.sub(r"[^A-Za-z0-9_]", "_", written)
        fixed = "_" + fixed if fixed[:1].isdigit() else fixed
        return (f"{message}, and an env key must match {ENV_NAME.pattern} (letters, digits and '_', not "
                f"starting with a digit) (did you mean {fixed!r}?)")
    return f"{message}; put it in quotes: \"{text}\""


def _data_path(loc: tuple, data) -> tuple[tuple, list]:
    """Split pydantic's loc into the path that exists in the data and leftover tags (union members)."""
    path: list = []
    node = data
    rest: list = []
    for seg in loc:
        if isinstance(node, dict) and seg in node:
            # A key YAML read as a number or boolean (`1:`, `true:`) is a key, not a list index: its text
            # as usually written, which is also how the positions know it.
            path.append(seg if isinstance(seg, str) else str(seg).lower())
            node = node[seg]
        elif isinstance(node, list) and isinstance(seg, int) and seg < len(node):
            path.append(seg)
            node = node[seg]
        else:
            rest.append(seg)
    return tuple(path), rest


def _position(path: tuple, pos: dict) -> tuple[int, int]:
    for i in range(len(path), 0, -1):
        if path[:i] in pos:
            return pos[path[:i]]
    return (1, 1)


def _describe(err: dict, path: tuple, extra: list, raw: str | None = None) -> str:
    kind = err["type"]
    if kind == "extra_forbidden":
        key = path[-1] if path else "?"
        allowed = _allowed_keys(path[:-1])
        return f"unknown key{did_you_mean(key, allowed)}; allowed keys here: {', '.join(allowed)}"
    if kind == "missing":
        missing = extra[0] if extra else "?"
        return f"required key {missing!r} missing"
    got = _show(err.get("input"), raw)
    ctx = err.get("ctx") or {}
    if kind == "expected":  # a union's own failure, in the words its field gives (profile.types.expecting)
        return f"expected {ctx['expected']}, got {got}"
    msg = err["msg"].removeprefix("Value error, ").removeprefix("Assertion failed, ")
    if kind == "literal_error":
        choices = re.findall(r"'([^']*)'", ctx.get("expected", ""))
        return f"expected one of {', '.join(map(repr, choices))}, got {got}{did_you_mean(err.get('input'), choices)}"
    if kind == "string_pattern_mismatch":
        # The field's own words (profile.types.described), else the pattern itself.
        what = ctx.get("expected") or f"text matching {ctx['pattern']}"
        return f"{got} is not valid here; expected {what}"
    if kind == "string_type" and isinstance(err.get("input"), bool):
        return (f"expected text, but YAML read {got} as the boolean {str(err['input']).lower()}; "
                f"put it in quotes, e.g. \"{raw or err['input']}\"")
    if kind == "string_type" and isinstance(err.get("input"), (int, float)) and not isinstance(err.get("input"), bool):
        if path[-1:] == ("cpuset",):  # 010 is octal 8 and 1:30 is 90 in YAML 1.1: a cpuset is text
            return (f"expected a cpuset list as text, but YAML read {got} as the number {err['input']!r}; "
                    f"put it in quotes: cpuset: \"{raw or err['input']}\" (a list such as \"0-3\" or \"0,2,4-6\")")
        return (f"expected text, but YAML read {got} as the number {err['input']!r}; "
                f"put it in quotes, e.g. \"{raw or err['input']}\"")
    if kind in _RANGES:
        nums = {k: int(v) if isinstance(v, float) and v.is_integer() else v for k, v in ctx.items()}
        return f"expected {_RANGES[kind].format(**nums)}, got {got}"
    if kind in _TYPES:
        return f"expected {_TYPES[kind]}, got {got}"
    return f"{msg} (got {got})" if kind not in ("value_error",) else msg


_RANGES = {
    "greater_than": "a number greater than {gt}", "greater_than_equal": "a number of at least {ge}",
    "less_than": "a number below {lt}", "less_than_equal": "a number of at most {le}",
    "too_short": "at least {min_length} item(s)", "too_long": "at most {max_length} item(s)",
}
_TYPES = {
    "int_type": "a whole number", "int_parsing": "a whole number", "int_from_float": "a whole number",
    "float_type": "a number", "float_parsing": "a number", "bool_type": "true or false",
    "bool_parsing": "true or false", "string_type": "text", "dict_type": "a mapping (key: value lines)",
    "tuple_type": "a list", "list_type": "a list", "model_type": "a mapping (key: value lines)",
    "model_attributes_type": "a mapping (key: value lines)",
}


def _show(value, raw: str | None) -> str:
    """The value as the user wrote it (the file's text when we have it), not Python's repr; safe to print."""
    if raw:
        return neutralise(shorten(raw))
    if isinstance(value, str):
        return f"'{neutralise(shorten(value))}'"
    return neutralise(shorten(repr(value)))


def _raw_value(lines: list[str], line: int, col: int, item: bool = False) -> str | None:
    """The text of a value as written: after ``key:`` at (line, col), or the list item there."""
    if not 0 < line <= len(lines):
        return None
    rest = lines[line - 1][col - 1:]
    if item:
        rest = ": " + rest.removeprefix("- ")
    m = re.match(r"""[^:]*:\s*("[^"]*"|'[^']*'|[^,}\]#]*)""", rest)
    text = m.group(1).strip() if m else ""
    return text if text and text[0] not in "[{" else None  # a flow list or mapping is no one scalar


def _allowed_keys(path: tuple) -> list[str]:
    model: type[BaseModel] | None = Profile
    for seg in path:
        if model is None or isinstance(seg, int):
            continue
        field = model.model_fields.get(seg)
        model = _model_in(field.annotation) if field else None
    return sorted(model.model_fields) if model else []


def _model_in(annotation) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _model_in(arg)
        if found:
            return found
    return None
