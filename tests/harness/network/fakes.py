"""A node's network facts, made up behind the stage's seam (envkit.harness.network.static.Facts)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class FakeFacts:
    host: str = "n1"
    ifaces: dict = field(default_factory=lambda: {"lo": ["127.0.0.1"], "eth0": ["198.18.0.1"]})
    names: dict = field(default_factory=lambda: {"n1": ["198.18.0.1"], "n2": ["198.18.0.2"]})
    busy: dict = field(default_factory=dict)  # port -> why it cannot be bound
    uverbs: list = field(default_factory=list)
    lib_error: str | None = "libibverbs.so.1: cannot open shared object file: No such file or directory"
    devices: int | None = None
    lock: int | None = 8 * 1024 * 1024

    def interfaces(self):
        return {k: list(v) for k, v in self.ifaces.items()}

    def resolve(self, name):
        return list(self.names[name]) if name in self.names else f"{name} did not resolve within 3 s"

    def hostname(self):
        return self.host

    def bind_error(self, port):
        return self.busy.get(port)

    def verbs(self):
        return list(self.uverbs), self.lib_error, self.devices

    def memlock(self):
        return self.lock
