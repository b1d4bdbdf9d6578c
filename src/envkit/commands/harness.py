"""``envkit harness``: the in-container harness, run here; ``--profile`` becomes ``--expect``.

The harness itself takes expectations as JSON (it is standard library + torch
only); this wrapper derives them from a profile, exactly as ``generate`` does.

Called as::

    run(Path("envkit.yaml"), ["--quick", "--json"]) -> 0 | 1 | 2
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from envkit.expect import expectation_json
from envkit.profile import load_profile


def run(profile_path: Path | None, harness_argv: list[str]) -> int:
    from envkit.harness.cli import main as harness_main

    if profile_path is None:
        return harness_main(harness_argv)
    loaded = load_profile(profile_path)
    with tempfile.TemporaryDirectory(prefix="envkit-expect-") as tmp:
        expect = Path(tmp) / "envkit_expect.json"
        expect.write_bytes(expectation_json(loaded.profile))
        return harness_main(["--expect", str(expect), *harness_argv])
