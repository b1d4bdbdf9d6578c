"""A package index (PEP 503, "simple") served from a folder of wheels, for builds that take torch from an index.

Like PyPI and the PyTorch index it serves each wheel's core metadata beside it (PEP 658, under PEP 714's name): resolvers read
that instead of the wheel, so an index without it would make uv fetch every wheel twice (measured: a 9.5 s
"Resolved 29 packages" for torch's CUDA build, then the same 2.6 GB again to install).

The NGC-style example installs torch from the PyTorch index; this machine cannot reach it, so the
benchmark and the end-to-end test of that layout serve the wheels they have the same way: torch and
its dependencies on one index, reached from the build's containers over the Docker bridge.

Example::

    with LocalIndex(Path("wheels"), host=bridge_gateway()) as index:
        profile = f'torch: {{version: "2.13.0", index_url: "{index.url}"}}'

>>> simple_name("typing_extensions-4.12.2-py3-none-any.whl"), simple_name("Jinja2-3.1.6-py3-none-any.whl")
('typing-extensions', 'jinja2')
"""

from __future__ import annotations

import hashlib
import html
import re
import subprocess
import threading
import urllib.parse
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def simple_name(wheel: str) -> str:
    """The normalized project name (PEP 503) of a wheel's file name."""
    return re.sub(r"[-_.]+", "-", wheel.split("-", 1)[0]).lower()


def core_metadata(wheel: Path) -> bytes:
    """The METADATA file of a wheel's .dist-info folder (what PEP 658 serves as ``<wheel>.metadata``)."""
    with zipfile.ZipFile(wheel) as z:
        name = next(n for n in z.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA"))
        return z.read(name)


def bridge_gateway() -> str:
    """The host's address on Docker's default bridge: what a classic build's RUN reaches the host by."""
    out = subprocess.run(["docker", "network", "inspect", "bridge", "-f", "{{(index .IPAM.Config 0).Gateway}}"],
                         capture_output=True, text=True, check=True).stdout.strip()
    return out or "172.17.0.1"


class LocalIndex:
    """Serves ``folder``'s wheels as ``<url>/<project>/<file>`` while the ``with`` block runs."""

    def __init__(self, folder: Path, host: str = "127.0.0.1") -> None:
        wheels = sorted(folder.glob("*.whl"))
        self.projects: dict[str, list[Path]] = {}
        self.metadata: dict[str, bytes] = {}
        for wheel in wheels:
            self.projects.setdefault(simple_name(wheel.name), []).append(wheel)
            self.metadata[wheel.name] = core_metadata(wheel)
        self.host = host
        self.server: ThreadingHTTPServer | None = None
        self.url = ""

    def __enter__(self) -> LocalIndex:
        projects, metadata = self.projects, self.metadata

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # builds print what they fetch; the server stays quiet
                pass

            def do_HEAD(self) -> None:  # noqa: N802 (uv asks for a wheel's headers before fetching it)
                self.do_GET(body=False)

            def do_GET(self, body: bool = True) -> None:  # noqa: N802 (http.server's name)
                parts = [urllib.parse.unquote(p) for p in self.path.split("?")[0].split("/") if p]
                if parts[:1] != ["simple"] or len(parts) > 3:
                    return self.send_error(404)
                if len(parts) == 1:
                    return self._page("".join(f'<a href="{n}/">{n}</a>\n' for n in sorted(projects)), body)
                files = projects.get(parts[1])
                if files is None:
                    return self.send_error(404)
                if len(parts) == 2:
                    return self._page("".join(self._link(f.name) for f in files), body)
                if parts[2].endswith(".metadata") and parts[2].removesuffix(".metadata") in metadata:
                    return self._send(metadata[parts[2].removesuffix(".metadata")], "text/plain", body)
                wheel = next((f for f in files if f.name == parts[2]), None)
                if wheel is None:
                    return self.send_error(404)
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Length", str(wheel.stat().st_size))
                self.end_headers()
                if not body:
                    return
                with wheel.open("rb") as f:
                    while chunk := f.read(1 << 20):
                        self.wfile.write(chunk)

            @staticmethod
            def _link(name: str) -> str:
                digest = "sha256=" + hashlib.sha256(metadata[name]).hexdigest()
                # PEP 714's name only: pip 22.3-23.0 (Debian bookworm's venv has 23.0.1) mishandles the PEP 658 one
                # ("inconsistent Name" for typing_extensions), and the new name is what made PyPI safe for them.
                return f'<a href="{urllib.parse.quote(name)}" data-core-metadata="{digest}">{html.escape(name)}</a>\n'


            def _page(self, links: str, body: bool) -> None:
                self._send(f"<!DOCTYPE html><html><body>\n{links}</body></html>\n".encode(), "text/html", body)

            def _send(self, data: bytes, kind: str, body: bool) -> None:
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if body:
                    self.wfile.write(data)

        self.server = ThreadingHTTPServer((self.host, 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://{self.host}:{self.server.server_address[1]}/simple"
        return self

    def __exit__(self, *exc) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
