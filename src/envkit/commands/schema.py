"""``envkit schema``: the profile's JSON Schema (draft 2020-12), for editors and CI checks.

Example:
    >>> import io, json; buf = io.StringIO(); run(out=buf)
    0
    >>> json.loads(buf.getvalue())["title"]
    'envkit profile (version 1)'
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TextIO

from envkit.profile.model import Profile


def profile_schema() -> dict:
    schema = Profile.model_json_schema(mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://envkit.dev/schema/profile-1.json"
    schema["title"] = "envkit profile (version 1)"
    return schema


def run(*, out: TextIO) -> int:
    print(json.dumps(profile_schema(), indent=2, sort_keys=True), file=out)
    return 0


# ---------------------------------------------------------------- command line (envkit.commands' contract)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    return None


def main(args: argparse.Namespace) -> int:
    return run(out=sys.stdout)
