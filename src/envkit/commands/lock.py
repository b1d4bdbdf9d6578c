"""``envkit lock``: resolve the profile's torch and packages for the image's Python and platform into
``envkit.lock.txt`` beside the profile, with hashes, through uv's ``pip compile``.

torch comes from the profile's wheelhouse (``find_links``) or its variant's index, exactly as the
Dockerfile installs it; the rest from the default index. Nothing is written when uv fails.

Called as::

    run(Path("envkit.yaml"), force=False, out=sys.stdout, err=sys.stderr) -> 0
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path
from typing import TextIO

from envkit.errors import ProfileError, UsageError
from envkit.output import write_backup
from envkit.safeio import replace_file
from envkit.lockfile import LOCK_FILE, PLATFORM, header, inputs_digest, lock_path, recorded_hash, requirements_in
from envkit.profile import LoadedProfile, load_profile
from envkit.pythons import image_python
from envkit.targets.dockerfile import torch_requirement

UV_TIMEOUT = 900


def uv_command() -> list[str]:
    """The uv executable (the ``lock`` extra installs it next to envkit)."""
    try:
        from uv import find_uv_bin
    except ImportError:
        raise UsageError("envkit lock needs uv", hint="pip install 'envkit[lock]' (or: pip install uv)") from None
    return [find_uv_bin()]


def compile_args(loaded: LoadedProfile, python: str, src: Path, dest: Path) -> list[str]:
    image = loaded.profile.image
    args = ["pip", "compile", str(src), "-o", str(dest), "--generate-hashes", "--no-header", "--quiet",
            "--python-version", python, "--python-platform", PLATFORM]
    if image.torch:
        index = torch_requirement(image.torch)[1]
        for d in image.torch.find_links:
            args += ["--find-links", str(loaded.resolve(d))]
        if index:
            # uv asks an extra index first: torch (and what that index also serves) comes from it.
            args += ["--extra-index-url", index]
    return args


def run(profile_path: Path | None, *, force: bool, out: TextIO, err: TextIO) -> int:
    loaded = load_profile(profile_path)
    python, where = image_python(loaded.profile.image)
    if python is None:
        raise ProfileError(f"{loaded.source}: image.python: needed for a lock, and the base "
                           f"{loaded.profile.image.base!r} does not name its Python",
                           hint="add image.python: '3.Y' (the base's python3 -V)")
    dest = lock_path(loaded.base_dir)
    foreign = dest.exists() and recorded_hash(dest.read_text(errors="replace")) is None
    if foreign and not force:
        raise ProfileError(f"{dest}: exists and was not written by `envkit lock`",
                           hint="move it away, or pass --force to replace it (a backup is kept)")
    lines = requirements_in(loaded)
    if not lines:
        raise ProfileError(f"{loaded.source}: nothing to lock (no image.torch, pip_packages or requirements)")
    print(f"envkit: locking {len(lines)} requirement(s) for Python {python} ({where}) on {PLATFORM}",
          file=err, flush=True)
    with tempfile.TemporaryDirectory(prefix="envkit-lock-") as tmp:
        src, result = Path(tmp) / "requirements.in", Path(tmp) / LOCK_FILE
        src.write_text("\n".join(lines) + "\n")
        env = {**os.environ, "UV_NO_CACHE": "1"}  # a cache would hide an index that no longer serves a file
        proc = subprocess.run(uv_command() + compile_args(loaded, python, src, result), capture_output=True,
                              text=True, timeout=UV_TIMEOUT, env=env)
        if proc.returncode != 0:
            tail = "\n".join("    " + line for line in proc.stderr.strip().splitlines()[-25:])
            raise ProfileError(f"{loaded.source}: the profile's packages do not resolve for Python {python} "
                               f"on {PLATFORM}; uv says:\n{tail}",
                               hint="change the pins in image.pip_packages / requirements, or image.torch")
        body = result.read_text()
        # uv names the input file in `# via -r /tmp/...`; the temporary path would differ every run.
        body = body.replace(f"-r {src}", "-r profile")
        if foreign:
            print(f"backed up your file to {write_backup(dest)}", file=err)
        replace_file(dest, (header(loaded.profile.name, inputs_digest(loaded), python) + body).encode())
    pins = sum(1 for line in body.splitlines() if line and not line[0].isspace() and not line.startswith("#"))
    print(f"wrote {dest} ({pins} packages, with hashes)", file=out)
    return 0
