"""The lock file: every package of the image's environment, pinned with hashes, beside the profile.

``envkit lock`` writes it (uv's ``pip compile --generate-hashes`` for the image's Python and
platform); its first line records the profile hash it was made from, so ``generate`` can say when
the profile changed since. The Dockerfile then installs exactly it (``--require-hashes``).

Example:
    >>> text = header("vision", "ab" * 32, "3.11") + "torch==2.13.0+cpu \\\\\\n    --hash=sha256:00\\n"
    >>> recorded_hash(text) == "ab" * 32
    True
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from envkit.findings import Finding
from envkit.plan.image import ImagePlan
from envkit.plan.paths import LOCK_FILE_NAME
from envkit.pythons import image_python

LOCK_FILE = LOCK_FILE_NAME
# manylinux_2_28: glibc 2.28 or newer (Debian 10+, Ubuntu 20.04+, every base envkit targets); torch's
# own Linux wheels are built for it.
PLATFORM = "x86_64-manylinux_2_28"
_HASH_LINE = re.compile(r"^# envkit lock of profile \S+ \(inputs sha256 ([0-9a-f]{64})\)", re.M)


def requirements_in(loaded, plan: ImagePlan) -> list[str]:
    """What the image installs, as requirement lines: torch (+ numpy), the profile's packages, its files."""
    image = loaded.profile.image
    lines: list[str] = []
    if plan.torch_requirement:
        lines.append(plan.torch_requirement)
        lines.extend(plan.lock_extras)
    lines.extend(image.pip_packages)
    for f in plan.requirements:
        lines.append(f"-r {loaded.resolve(f.source)}")
    return lines


def inputs_digest(loaded, plan: ImagePlan) -> str:
    """sha256 of what a lock depends on: requirement lines, requirement files' bytes, Python, platform, indexes."""
    image = loaded.profile.image
    h = hashlib.sha256()
    data = {f"-r {loaded.resolve(f.source)}": f.data for f in plan.requirements}
    parts = requirements_in(loaded, plan) + [str(image_python(image)[0]), PLATFORM]
    if image.torch:
        parts += [str(plan.torch_index_url), *image.torch.find_links]
    for part in parts:
        h.update(part.encode() + b"\0")
        if part.startswith("-r "):
            h.update(data.get(part, b"<missing>"))
    return h.hexdigest()


def header(name: str, sha256: str, python: str) -> str:
    return (f"# envkit lock of profile {name} (inputs sha256 {sha256})\n"
            f"# for Python {python} on {PLATFORM}. Made by `envkit lock`: change the profile and run it again\n"
            "# rather than editing this file. The image installs exactly these, with --require-hashes.\n")


def recorded_hash(text: str) -> str | None:
    """The profile hash a lock file was made from; None when it is not an envkit lock."""
    m = _HASH_LINE.search(text[:500])
    return m.group(1) if m else None


def lock_path(base_dir: Path) -> Path:
    return base_dir / LOCK_FILE


def stale_warning(loaded, plan: ImagePlan) -> Finding | None:
    """A warning when the lock beside the profile was made from other packages than the profile's now."""
    if plan.lock is None:
        return None
    made_from = recorded_hash(plan.lock.text)
    now = inputs_digest(loaded, plan)
    if made_from == now:
        return None
    if made_from is None:
        return Finding(LOCK_FILE, "not written by `envkit lock` (no inputs hash in its first line); run `envkit lock`")
    return Finding(LOCK_FILE, f"the profile's packages (torch, pip_packages, requirements, Python) changed since the "
            f"lock was made (inputs sha256 {made_from[:12]}, now {now[:12]}); the image installs the lock as it "
            "is: run `envkit lock` to bring it up to date")
