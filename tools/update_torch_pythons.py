"""Regenerate src/envkit/data/torch_pythons.json: which CPython versions each torch release has
Linux x86_64 wheels for, read from the wheel file names on PyPI (``torch-2.5.1-cp312-cp312-
manylinux_2_28_x86_64.whl`` → 3.12), with the date it was read.

Run: python tools/update_torch_pythons.py   (network: PyPI's JSON API; the system CA bundle)
"""

from __future__ import annotations

import datetime
import json
import re
import ssl
import urllib.request
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "src" / "envkit" / "data" / "torch_pythons.json"
URL = "https://pypi.org/pypi/torch/json"
OLDEST = (2, 1)  # pyproject's harness extra: torch>=2.1
# cp313t (free-threaded) is a different ABI: a venv on the base's python3 cannot use it.
WHEEL = re.compile(r"^torch-[^-]+-cp(\d)(\d+)-cp\d+-(manylinux\S*x86_64)\.whl$")


def release_key(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split("."))


def main() -> None:
    ctx = ssl.create_default_context(cafile="/etc/ssl/certs/ca-certificates.crt")
    data = json.load(urllib.request.urlopen(URL, timeout=60, context=ctx))
    releases = {}
    for version, files in data["releases"].items():
        if not re.fullmatch(r"\d+\.\d+\.\d+", version) or release_key(version)[:2] < OLDEST:
            continue
        pythons = sorted({f"{m[1]}.{m[2]}" for f in files if (m := WHEEL.match(f["filename"]))},
                         key=release_key)
        if pythons:
            releases[version] = pythons
    doc = {
        "source": URL + " (wheel file names, Linux x86_64, CPython ABI; free-threaded builds left out)",
        "read_on": datetime.date.today().isoformat(),
        "releases": dict(sorted(releases.items(), key=lambda kv: release_key(kv[0]))),
    }
    # One release a line: a refresh reads as a short diff.
    body = ",\n".join(f"  {json.dumps(v)}: {json.dumps(p)}" for v, p in doc.pop("releases").items())
    head = json.dumps(doc, indent=1)[:-2]
    OUT.write_text(f'{head},\n "releases": {{\n{body}\n }}\n}}\n')
    print(f"wrote {OUT}: {len(releases)} releases")


if __name__ == "__main__":
    main()
