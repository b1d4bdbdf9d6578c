"""The wsl target: ``.wslconfig``, ``wsl.conf`` and the ``setup-wsl.ps1`` bootstrap.

Python decides every key, value spelling and note; the templates only loop.
Keys come out in the documented order (the ``Wsl`` model's field order, which
follows MicrosoftDocs/WSL ``wsl-config.md``), ``[wsl2]`` before
``[experimental]``. Values are spelled for WSL's parser: ``true``/``false``,
sizes as ``16GB``, strings with ``\\`` and ``"`` escaped (so ``C:\\temp\\kernel``
becomes ``C:\\\\temp\\\\kernel``, as Microsoft's docs require) and quoted when they
hold ``#``.

Example:
    >>> from envkit.profile.wsl import Wsl
    >>> [(s.name, [(e.key, e.value) for e in s.entries])
    ...  for s in wslconfig_sections(Wsl.model_validate({"memory": "16GB", "swap": 0}))]
    [('wsl2', [('memory', '16GB'), ('swap', '0')])]
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel

from envkit.profile.wsl import (
    SIZE_KEYS, WSL2_BACKPORT_BUILDS, WSL2_MIN_BUILD, WSL2_MIN_UBR, WSL_INSTALL_MIN_BUILD, Wsl, WslConf,
    min_windows_build, value_note,
)
from envkit.targets import GenContext, OutputFile
from envkit.units import format_wsl_size
from envkit.wslmerge import quote_value

# UTF-8 with a BOM: Windows PowerShell 5.1 reads a BOM-less script as the ANSI code page,
# which would garble any non-ASCII path embedded from the profile.
PS1_BOM = b"\xef\xbb\xbf"
DEFAULT_DISTRO = "Ubuntu"


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


def wslconfig_sections(wsl: Wsl) -> list[Section]:
    """The .wslconfig sections with at least one key: ``wsl2``, then ``experimental``."""
    sections = []
    main = _entries(wsl, skip=("experimental", "wsl_conf"))
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


def render(ctx: GenContext) -> list[OutputFile]:
    """``.wslconfig`` and ``setup-wsl.ps1`` when the profile has ``wsl``; ``wsl.conf`` when it has ``wsl.wsl_conf``."""
    wsl = ctx.profile.wsl
    if wsl is None:
        return []
    sections = wslconfig_sections(wsl)
    conf_sections = wslconf_sections(wsl.wsl_conf) if wsl.wsl_conf is not None else []
    files = [OutputFile(".wslconfig", ctx.render("wslconfig.j2", header=ctx.header("#"), sections=sections))]
    if wsl.wsl_conf is not None:
        files.append(OutputFile("wsl.conf", ctx.render("wsl.conf.j2", header=ctx.header("#"), sections=conf_sections)))
    script = ctx.render(
        "setup-wsl.ps1.j2",
        header=ctx.header("#"),
        profile_name=ctx.profile.name,
        distro=DEFAULT_DISTRO,
        wslconfig=_flat(sections),
        wslconf=_flat(conf_sections),
        newer_keys=newer_windows_keys(sections),
        wsl2_min_build=WSL2_MIN_BUILD, wsl2_min_ubr=WSL2_MIN_UBR, wsl2_backport_builds=WSL2_BACKPORT_BUILDS,
        wsl_install_min_build=WSL_INSTALL_MIN_BUILD,
        # Strings, empty when unset: the script treats '' as "not asserted".
        processors="" if wsl.processors is None else str(wsl.processors),
        memory_bytes="" if wsl.memory is None else str(wsl.memory),
    )
    files.append(OutputFile("setup-wsl.ps1", PS1_BOM + script))
    return files
