"""The WSL plan: every ``.wslconfig`` and ``wsl.conf`` key, value spelling and note, decided once.

Keys come out in the documented order (the ``Wsl`` model's field order, which
follows MicrosoftDocs/WSL ``wsl-config.md``), ``[wsl2]`` before
``[experimental]``. Values are spelled for WSL's parser: ``true``/``false``,
sizes as ``16GB``, strings with ``\\`` and ``"`` escaped (so ``C:\\temp\\kernel``
becomes ``C:\\\\temp\\\\kernel``, as Microsoft's docs require) and quoted when they
hold ``#``. The ``wsl`` target lays them out; ``envkit wsl apply`` merges the same entries.

Example:
    >>> from envkit.profile.wsl import Wsl
    >>> [(s.name, [(e.key, e.value) for e in s.entries])
    ...  for s in wslconfig_sections(Wsl.model_validate({"memory": "16GB", "swap": 0}))]
    [('wsl2', [('memory', '16GB'), ('swap', '0')])]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from envkit.profile.wsl import (  # noqa: F401  (the build numbers are the wsl target's, through the plan)
    SIZE_KEYS, STORE_WSL_MIN, WSL2_BACKPORT_BUILDS, WSL2_MIN_BUILD, WSL2_MIN_UBR, WSL_INSTALL_MIN_BUILD, Wsl, WslConf,
    min_windows_build, needs_store_wsl, value_note,
)
from envkit.units import format_wsl_size
from envkit.wslmerge import quote_value

if TYPE_CHECKING:
    from pydantic import BaseModel


@dataclass(frozen=True)
class Entry:
    key: str
    value: str          # spelled for the file (escaped, quoted when needed)
    note: str | None    # printed as a comment above the key


@dataclass(frozen=True)
class Section:
    name: str
    entries: tuple[Entry, ...]


def spell_value(key: str, value: object) -> str:
    """One value as WSL's parser reads it.

    >>> spell_value("memory", 16 * 1024**3), spell_value("sparseVhd", True), spell_value("kernel", "C:\\\\k")
    ('16GB', 'true', 'C:\\\\\\\\k')
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if key in SIZE_KEYS:
        return format_wsl_size(int(value))  # type: ignore[call-overload]  # a size key holds an int (profile.wsl)
    if isinstance(value, int):
        return str(value)
    return quote_value(str(value))


def _entries(model: BaseModel, skip: tuple[str, ...] = ()) -> tuple[Entry, ...]:
    return tuple(
        Entry(name, spell_value(name, getattr(model, name)), value_note(name, getattr(model, name)))
        for name in type(model).model_fields
        if name not in skip and getattr(model, name) is not None
    )


# The wsl: section's keys that are envkit's, not .wslconfig's [wsl2] keys.
ENVKIT_KEYS = ("experimental", "wsl_conf", "docker")


def wslconfig_sections(wsl: Wsl) -> list[Section]:
    """The .wslconfig sections with at least one key: ``wsl2``, then ``experimental``."""
    sections = []
    main = _entries(wsl, skip=ENVKIT_KEYS)
    if main:
        sections.append(Section("wsl2", main))
    if wsl.experimental is not None:
        extra = _entries(wsl.experimental)
        if extra:
            sections.append(Section("experimental", extra))
    return sections


def wslconf_sections(conf: WslConf) -> list[Section]:
    """/etc/wsl.conf sections in the documented order (boot, automount, network, interop, user, gpu, time)."""
    sections = []
    for name in WslConf.model_fields:
        sub = getattr(conf, name)
        if sub is not None:
            entries = tuple(Entry(e.key, e.value, None) for e in _entries(sub))
            if entries:
                sections.append(Section(name, entries))
    return sections


def _flat(sections: list[Section]) -> list[tuple[str, str, str]]:
    return [(s.name, e.key, e.value) for s in sections for e in s.entries]


def newer_windows_keys(sections: list[Section]) -> list[tuple[str, int]]:
    """``(section.key, build)`` for each key that needs Windows 11 (22000) or 22H2 (22621)."""
    out = []
    for s in sections:
        for e in s.entries:
            build = min_windows_build(e.key)
            if build:
                out.append((f"{s.name}.{e.key}", build))
    return out


def store_wsl_keys(sections: list[Section]) -> list[str]:
    """``section.key`` for each key that WSL before :data:`STORE_WSL_MIN` (the inbox wsl.exe) ignores."""
    return [f"{s.name}.{e.key}" for s in sections for e in s.entries if needs_store_wsl(s.name, e.key)]


@dataclass(frozen=True)
class WslPlan:
    """What the wsl target writes: the ``.wslconfig`` sections, the ``wsl.conf`` ones (None without
    ``wsl.wsl_conf``), the keys that need a newer Windows build and those that need the Store WSL."""

    sections: tuple[Section, ...]
    conf_sections: tuple[Section, ...] | None
    newer_keys: tuple[tuple[str, int], ...]
    store_keys: tuple[str, ...] = ()
    processors: str = ""    # wsl.processors as setup-wsl.ps1 asserts it; '' when unset
    memory_bytes: str = ""  # wsl.memory in bytes; '' when unset
    wants_gpus: bool = False  # the run asks for GPUs (setup-wsl.ps1 checks the GPU driver)


def wsl_plan(wsl: Wsl | None, wants_gpus: bool = False) -> WslPlan | None:
    """The WSL plan of a profile's ``wsl:`` section (None without one); ``wants_gpus``: run.wants_gpus."""
    if wsl is None:
        return None
    sections = wslconfig_sections(wsl)
    conf = tuple(wslconf_sections(wsl.wsl_conf)) if wsl.wsl_conf is not None else None
    return WslPlan(tuple(sections), conf, tuple(newer_windows_keys(sections)), tuple(store_wsl_keys(sections)),
                   processors="" if wsl.processors is None else str(wsl.processors),
                   memory_bytes="" if wsl.memory is None else str(wsl.memory), wants_gpus=wants_gpus)
