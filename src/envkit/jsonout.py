"""The ``--json`` documents of ``generate``, ``flags``, ``build``, ``lock`` and ``clean``: their JSON Schemas
(draft 2020-12), in one place, and the one way they are printed.

Each document is one JSON object on stdout whose ``envkit_<command>`` key holds its format's
version (1); human text goes to stderr. docs/cli.md shows :data:`SCHEMAS` as they are here (a
docs test compares them), and the command tests validate real output against them.

Example:
    >>> import io
    >>> buf = io.StringIO(); emit({"envkit_flags": 1, "profile": "(default)", "argv": ["--init"], "warnings": []}, buf)
    >>> buf.getvalue().splitlines()[1]
    '  "envkit_flags": 1,'
    >>> sorted(SCHEMAS)
    ['build', 'clean', 'flags', 'generate', 'lock']
"""

from __future__ import annotations

import json
from typing import Any, TextIO

DRAFT = "https://json-schema.org/draft/2020-12/schema"

_STRINGS = {"type": "array", "items": {"type": "string"}}
_WARNING = {
    "type": "object",
    "description": "one warning; line and column are the key's in the profile (or its nearest written parent's)",
    "required": ["path", "line", "column", "text"],
    "additionalProperties": False,
    "properties": {
        "path": {"type": ["string", "null"], "description": "the key path, e.g. run.shm_size; null: no key"},
        "line": {"type": ["integer", "null"], "minimum": 1},
        "column": {"type": ["integer", "null"], "minimum": 1},
        "text": {"type": "string"},
    },
}
_WARNINGS = {"type": "array", "items": _WARNING}
_PROFILE = {"type": "string", "description": "the profile file as named or found, or <default profile>"}
# The one ``loader`` object generate, flags, doctor and the harness print (envkit.harness.sizing.NodeLoader.as_json).
LOADER: dict[str, Any] = {
    "type": "object",
    "description": "one node's DataLoaders, resolved by envkit.harness.sizing.size_node over named facts",
    "required": ["ranks_per_node", "workers_per_rank", "shm_need_bytes", "shm_bytes", "cpus", "facts"],
    "additionalProperties": False,
    "properties": {
        "ranks_per_node": {"type": "integer", "minimum": 1, "description": "training processes on the node"},
        "workers_per_rank": {"type": "integer", "minimum": 0, "description": "DataLoader workers of each"},
        "shm_need_bytes": {"type": "integer", "minimum": 0,
                           "description": "/dev/shm every rank's loader needs at once, with NCCL's allowance"},
        "shm_bytes": {"type": ["integer", "null"], "minimum": 0,
                      "description": "the container's /dev/shm; null: the host's (ipc: host) or unknown"},
        "cpus": {"type": ["integer", "null"], "minimum": 1, "description": "CPUs the node's processes share"},
        "facts": {"type": "object", "additionalProperties": {"type": "string"},
                  "description": "where cpus, ranks_per_node and shm_bytes came from"},
    },
}


def _document(command: str, properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "$schema": DRAFT,
        "title": f"envkit {command} --json",
        "type": "object",
        "required": [f"envkit_{command}", *properties],
        "additionalProperties": False,
        "properties": {f"envkit_{command}": {"const": 1}, **properties},
    }


SCHEMAS: dict[str, dict[str, Any]] = {
    "generate": _document("generate", {
        "profile": _PROFILE,
        "output": {"type": "string", "description": "the output folder (-o)"},
        "files": {"type": "array", "items": {
            "type": "object", "required": ["path", "status"], "additionalProperties": False,
            "properties": {
                "path": {"type": "string", "description": "the file, under the output folder"},
                "status": {"enum": ["written", "unchanged", "removed", "kept"],
                           "description": "kept: its target left the profile, but you edited it; or a file "
                                          "under .envkit/ that envkit did not write (yours)"},
            }}},
        "backups": {**_STRINGS, "description": "copies of your edited files that --force replaced"},
        "warnings": _WARNINGS,
        "notes": {**_WARNINGS, "description": "what envkit decided where the profile left it open"},
        "loader": LOADER,
    }),
    "flags": _document("flags", {
        "profile": _PROFILE,
        "argv": {**_STRINGS, "description": "the docker run flags, one argument each (not shell-quoted)"},
        "warnings": _WARNINGS,
        "notes": {**_WARNINGS, "description": "what envkit decided where the profile left it open"},
        "loader": LOADER,
    }),
    "build": _document("build", {
        "profile": _PROFILE,
        "tag": {"type": "string"},
        "image_id": {"type": ["string", "null"], "description": "the engine's image id (sha256:...), when it said"},
        "python": {"type": ["string", "null"], "description": "the image's Python (3.Y), when python3 ran"},
    }),
    "lock": _document("lock", {
        "profile": _PROFILE,
        "path": {"type": "string", "description": "the lock file written (envkit.lock.txt beside the profile)"},
        "packages": {"type": "integer", "minimum": 0, "description": "pinned packages, each with hashes"},
        "python": {"type": "string"},
        "platform": {"type": "string"},
        "backup": {"type": ["string", "null"], "description": "the copy of a replaced file envkit did not write"},
    }),
    "clean": _document("clean", {
        "build_folders": {**_STRINGS, "description": "temporary build folders removed"},
        "containers": {**_STRINGS, "description": "containers of killed runs removed"},
        "images": {**_STRINGS, "description": "superseded images removed (as envkit clean lists them)"},
    }),
}


def emit(doc: dict[str, Any], out: TextIO) -> None:
    """Print ``doc`` as the one JSON document on ``out`` (indented, keys in the schema's order)."""
    print(json.dumps(doc, indent=2), file=out)
