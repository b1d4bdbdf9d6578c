"""Build ``envkit_harness.pyz``: the harness as ONE self-contained, reproducible file.

Layout: ``__main__.py`` at the root (runs the CLI), this package's ``.py``
files under ``envkit_harness/`` (its subpackages' too, at their paths), and ``envkit_runtime.py``
at the root (the runtime companion's import name in the image). The zip is byte-identical across
builds: entries sorted by path, timestamps fixed at 1980-01-01, permissions 0644, no ``.pyc``.
That works because every import inside the package is relative.

Example:
    >>> build_zipapp(pathlib.Path("dist"))            # doctest: +SKIP
    $ python3 dist/envkit_harness.pyz --json --quick
"""

from __future__ import annotations

import io
import os
import pathlib
import zipfile

PYZ_NAME = "envkit_harness.pyz"
ARCNAME = "envkit_harness"
SHEBANG = b"#!/usr/bin/env python3\n"
EPOCH = (1980, 1, 1, 0, 0, 0)
MAIN = ("# envkit harness zipapp entry point\n"
        "import sys\n\n"
        "from envkit_harness.cli import main\n\n"
        "if __name__ == \"__main__\":\n"
        "    sys.exit(main())\n")
# A top-level module beside the package, so a .pth naming the zipapp makes
# `from envkit_runtime import loader_kwargs` work in the image's Python.
RUNTIME_SHIM = ("\"\"\"envkit's runtime companion in the image (the code is envkit_harness.runtime).\"\"\"\n"
                "import sys\n\n"
                "from envkit_harness.runtime import *  # noqa: F401,F403\n"
                "from envkit_harness.runtime import __all__, watch_main\n\n"
                "if __name__ == \"__main__\":  # python3 -m envkit_runtime watch --pid N\n"
                "    if sys.argv[1:2] != [\"watch\"]:\n"
                "        sys.exit(\"usage: python3 -m envkit_runtime watch [--pid PID] [--interval S] [--json]\")\n"
                "    sys.exit(watch_main(sys.argv[2:]))\n")
RUNTIME_NAME = "envkit_runtime.py"


def _entry(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=EPOCH)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o100644 << 16  # regular file, rw-r--r--, whoever builds it
    info.create_system = 3  # unix, independent of the building OS
    return info


def sources(here: pathlib.Path | None = None) -> list[str]:
    """Every ``.py`` file of the package, subpackages included, as sorted POSIX paths relative to it.

    >>> "cli.py" in sources() and "__init__.py" in sources()
    True
    """
    here = pathlib.Path(__file__).resolve().parent if here is None else here
    return sorted(p.relative_to(here).as_posix() for p in here.rglob("*.py") if "__pycache__" not in p.parts)


def zip_bytes() -> bytes:
    """The archive's bytes (shebang + zip), deterministic for a given source tree."""
    here = pathlib.Path(__file__).resolve().parent
    files = sources(here)
    buf = io.BytesIO()
    buf.write(SHEBANG)
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(_entry("__main__.py"), MAIN)
        for name in files:
            zf.writestr(_entry(f"{ARCNAME}/{name}"), (here / name).read_bytes())
        zf.writestr(_entry(RUNTIME_NAME), RUNTIME_SHIM)  # sorts after envkit_harness/
    return buf.getvalue()


def build_zipapp(dest: pathlib.Path) -> None:
    """Write the zipapp: ``dest`` ending in ``.pyz`` is the file, otherwise a directory for envkit_harness.pyz."""
    dest = pathlib.Path(dest)
    target = dest if dest.suffix == ".pyz" else dest / PYZ_NAME
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_bytes(zip_bytes())
    os.chmod(tmp, 0o755)  # runnable as ./envkit_harness.pyz thanks to the shebang
    os.replace(tmp, target)
