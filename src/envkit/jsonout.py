"""The ``--json`` documents of ``generate``, ``flags``, ``build``, ``lock`` and ``clean``: one pydantic
model each, their JSON Schemas (draft 2020-12) from ``model_json_schema()``, and the one way they are printed;
and the reports of ``harness`` and ``doctor``: standard-library ``TypedDict`` s (the harness runs in images
without pydantic), whose schemas pydantic derives the same way (:data:`REPORTS`).

Each document is one JSON object on stdout whose ``envkit_<command>`` key holds its format's
version (1); human text goes to stderr. A command builds its document's model, so a wrong key or
type fails where it is built (``pydantic.ValidationError``), never in a reader's parser. docs/cli.md
shows :data:`SCHEMAS` and :func:`loader_schema` as they are here (a docs test compares them), and
the command tests validate real output against them.

Example:
    >>> import io
    >>> buf = io.StringIO(); emit(FlagsDoc(profile="(default)", argv=("--init",), warnings=(), notes=(),
    ...     loader=LoaderDoc(ranks_per_node=1, workers_per_rank=0, shm_need_bytes=0, shm_bytes=None, cpus=None, facts={})), buf)
    >>> buf.getvalue().splitlines()[1]
    '  "envkit_flags": 1,'
    >>> sorted(SCHEMAS), SCHEMAS["lock"]["title"], SCHEMAS["lock"]["required"][0]
    (['build', 'clean', 'doctor', 'flags', 'generate', 'harness', 'lock'], 'envkit lock --json', 'envkit_lock')
    >>> SCHEMAS["harness"]["title"], SCHEMAS["harness"]["required"]
    ('envkit harness --json', ['envkit_harness', 'verdict', 'environment', 'checks', 'loader', 'workload'])
"""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Iterator, Mapping
from functools import cache
from typing import Annotated, Any, Literal, TextIO, TypedDict

import typing_extensions
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaMode

from envkit.harness.report import Check, Report, Verdict
from envkit.harness.rules.sizing import LoaderJson

DRAFT = "https://json-schema.org/draft/2020-12/schema"
_CONFIG = ConfigDict(frozen=True, extra="forbid", strict=True, json_schema_serialization_defaults_required=True)
_PROFILE = "the profile file as named or found, or <default profile>"
_NOTES = "what envkit decided where the profile left it open"


class WarningRecord(BaseModel):
    """one warning; line and column are the key's in the profile (or its nearest written parent's)"""

    # from_attributes: a caller may hand a record as a mapping or as an object with these four attributes.
    model_config = ConfigDict(**_CONFIG, title="warning", from_attributes=True)
    path: str | None = Field(description="the key path, e.g. run.shm_size; null: no key")
    line: int | None = Field(ge=1)
    column: int | None = Field(ge=1)
    text: str


class LoaderDoc(BaseModel):
    """one node's DataLoaders, resolved by envkit.harness.rules.sizing.size_node over named facts"""

    # The harness cannot import pydantic: envkit.harness.rules.sizing.NodeLoader.as_json builds the dict, this checks it.
    model_config = ConfigDict(**_CONFIG, title="loader")
    ranks_per_node: int = Field(ge=1, description="training processes on the node")
    workers_per_rank: int = Field(ge=0, description="DataLoader workers of each")
    shm_need_bytes: int = Field(ge=0, description="/dev/shm every rank's loader needs at once, with NCCL's allowance")
    shm_bytes: int | None = Field(ge=0, description="the container's /dev/shm; null: the host's (ipc: host) or unknown")
    cpus: int | None = Field(ge=1, description="CPUs the node's processes share")
    facts: dict[str, str] = Field(description="where cpus, ranks_per_node and shm_bytes came from")


class FileRecord(BaseModel):
    """one file generate wrote, left or removed"""

    model_config = ConfigDict(**_CONFIG, title="file")
    path: str = Field(description="the file, under the output folder")
    status: Literal["written", "unchanged", "removed", "kept"] = Field(
        description="kept: its target left the profile, but you edited it; or a file "
                    "under .envkit/ that envkit did not write (yours)")


class GenerateDoc(BaseModel):
    """what envkit generate wrote, and why"""

    model_config = ConfigDict(**_CONFIG, title="envkit generate --json")
    envkit_generate: Literal[1] = 1
    profile: str = Field(description=_PROFILE)
    output: str = Field(description="the output folder (-o)")
    files: tuple[FileRecord, ...]
    backups: tuple[str, ...] = Field(description="copies of your edited files that --force replaced")
    warnings: tuple[WarningRecord, ...]
    notes: tuple[WarningRecord, ...] = Field(description=_NOTES)
    loader: LoaderDoc


class FlagsDoc(BaseModel):
    """the docker run flags of the profile"""

    model_config = ConfigDict(**_CONFIG, title="envkit flags --json")
    envkit_flags: Literal[1] = 1
    profile: str = Field(description=_PROFILE)
    argv: tuple[str, ...] = Field(description="the docker run flags, one argument each (not shell-quoted)")
    warnings: tuple[WarningRecord, ...]
    notes: tuple[WarningRecord, ...] = Field(description=_NOTES)
    loader: LoaderDoc


class BuildDoc(BaseModel):
    """the image envkit build built"""

    model_config = ConfigDict(**_CONFIG, title="envkit build --json")
    envkit_build: Literal[1] = 1
    profile: str = Field(description=_PROFILE)
    tag: str
    image_id: str | None = Field(description="the engine's image id (sha256:...), when it said")
    python: str | None = Field(description="the image's Python (3.Y), when python3 ran")


class LockDoc(BaseModel):
    """the lock file envkit lock wrote"""

    model_config = ConfigDict(**_CONFIG, title="envkit lock --json")
    envkit_lock: Literal[1] = 1
    profile: str = Field(description=_PROFILE)
    path: str = Field(description="the lock file written (envkit.lock.txt beside the profile)")
    packages: int = Field(ge=0, description="pinned packages, each with hashes")
    python: str
    platform: str
    backup: str | None = Field(description="the copy of a replaced file envkit did not write")


class CleanDoc(BaseModel):
    """what envkit clean removed"""

    model_config = ConfigDict(**_CONFIG, title="envkit clean --json")
    envkit_clean: Literal[1] = 1
    build_folders: tuple[str, ...] = Field(description="temporary build folders removed")
    containers: tuple[str, ...] = Field(description="containers of killed runs removed")
    images: tuple[str, ...] = Field(description="superseded images removed (as envkit clean lists them)")


class DoctorHost(TypedDict):
    """the host doctor checked"""

    platform: str
    wsl: Annotated[int | None, "1 or 2 under WSL, else null"]
    osrelease: str | None
    distro: Annotated[str | None, "WSL_DISTRO_NAME"]
    cwd: str
    cpus: Annotated[int | None, "the CPUs this process may use (affinity)"]
    memory_bytes: int | None


class DoctorReport(TypedDict):
    """envkit doctor --json: is this host ready for the profile's container, and are the scripts spawn-safe"""

    envkit_doctor: Literal[1]
    verdict: Verdict
    host: DoctorHost
    loader: LoaderJson
    checks: list[Check]  # the harness's check records


Document = GenerateDoc | FlagsDoc | BuildDoc | LockDoc | CleanDoc
DOCUMENTS: dict[str, type[BaseModel]] = {"generate": GenerateDoc, "flags": FlagsDoc, "build": BuildDoc,
                                         "lock": LockDoc, "clean": CleanDoc}
REPORTS: dict[str, Any] = {"harness": Report, "doctor": DoctorReport}  # TypedDicts: printed by json.dumps

# The keys a reader looks for first; the rest follow in pydantic's order.
_KEY_ORDER = ("$schema", "title", "description", "type", "required", "additionalProperties", "properties")


def _ordered(node: Any) -> Any:
    if isinstance(node, list):
        return [_ordered(n) for n in node]
    if not isinstance(node, dict):
        return node
    first = [k for k in _KEY_ORDER if k in node]
    return {k: _ordered(node[k]) for k in [*first, *(k for k in node if k not in first)]}


class _Schema(GenerateJsonSchema):
    """pydantic's schema, draft 2020-12, without the per-field titles it derives from the names."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def generate(self, schema: Any, mode: JsonSchemaMode = "validation") -> dict[str, Any]:
        return _ordered({"$schema": self.schema_dialect, **super().generate(schema, mode)})


@cache
def _schema_of(model: type[BaseModel]) -> dict[str, Any]:
    # serialization: the schema of what is printed, where the version key (a default) is always there.
    return model.model_json_schema(mode="serialization", schema_generator=_Schema)


def _as_pydantic_reads(tp: Any, seen: dict[Any, Any]) -> Any:
    """A harness type as pydantic reads it: each standard-library TypedDict rebuilt as typing_extensions'
    (pydantic refuses ``typing.TypedDict`` before Python 3.12) and closed (the harness writes exactly its
    keys), with its docstring, and its fields' ``Annotated[..., "words"]`` as their descriptions; the
    ``loader`` object is :class:`LoaderDoc` (the one schema of it, with its bounds)."""
    if tp is LoaderJson:
        return LoaderDoc
    if typing.is_typeddict(tp):
        if tp not in seen:
            fields = {key: _as_pydantic_reads(hint, seen) for key, hint
                      in typing.get_type_hints(tp, include_extras=True).items()}
            functional: Any = typing_extensions.TypedDict  # its functional form: a name known at run time only
            rebuilt = functional(tp.__name__, {k: v if k in tp.__required_keys__ else typing_extensions.NotRequired[v]
                                               for k, v in fields.items()})
            rebuilt.__doc__, rebuilt.__pydantic_config__ = tp.__doc__, ConfigDict(extra="forbid")
            seen[tp] = rebuilt
        return seen[tp]
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is Annotated:
        words = " ".join(m for m in args[1:] if isinstance(m, str))
        inner = _as_pydantic_reads(args[0], seen)
        return Annotated[inner, Field(description=words)] if words else inner
    if origin in (typing.Union, types.UnionType):
        return typing.Union[tuple(_as_pydantic_reads(a, seen) for a in args)]
    if origin in (list, dict, tuple):
        return origin[tuple(_as_pydantic_reads(a, seen) for a in args)]
    return tp


@cache
def _report_schema(command: str) -> dict[str, Any]:
    report = _as_pydantic_reads(REPORTS[command], {})
    report.__pydantic_config__ = ConfigDict(extra="forbid", title=f"envkit {command} --json")
    return TypeAdapter(report).json_schema(mode="serialization", schema_generator=_Schema)


def loader_schema() -> dict[str, Any]:
    """The ``loader`` object's JSON Schema (generate, flags, doctor and the harness print it)."""
    return _schema_of(LoaderDoc)


class _Schemas(Mapping[str, dict[str, Any]]):
    """Each command's document schema, made when first read (a command's start makes none)."""

    def __getitem__(self, command: str) -> dict[str, Any]:
        return _report_schema(command) if command in REPORTS else _schema_of(DOCUMENTS[command])

    def __iter__(self) -> Iterator[str]:
        return iter([*DOCUMENTS, *REPORTS])

    def __len__(self) -> int:
        return len(DOCUMENTS) + len(REPORTS)


SCHEMAS: Mapping[str, dict[str, Any]] = _Schemas()


def emit(doc: Document, out: TextIO) -> None:
    """Print ``doc`` as the one JSON document on ``out`` (indented 2, keys in the model's field order)."""
    print(json.dumps(doc.model_dump(mode="json"), indent=2), file=out)
