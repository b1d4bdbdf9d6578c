"""``@record``: the part of ``@dataclass`` envkit's CLI path uses, without importing ``dataclasses``.

Why: ``dataclasses`` imports ``inspect`` (and with it ``ast``, ``dis``, ``tokenize``), and each
``@dataclass`` compiles generated code; together start-up time on every ``envkit generate`` run
(a budgeted time: benchmarks/bench_generate.py). A record has ``__init__`` (positional or keyword, defaults,
``field(default_factory=...)``), ``__repr__``, ``__eq__``, and with ``frozen=True`` ``__hash__`` and
no assignment. Type checkers see ``dataclasses.dataclass`` itself, so constructors stay checked.

Example:
    >>> @record(frozen=True)
    ... class Size:
    ...     n: int
    ...     unit: str = "B"
    >>> Size(3), Size(3) == Size(n=3, unit="B"), hash(Size(3)) == hash(Size(3))
    (Size(n=3, unit='B'), True, True)
    >>> Size(3).n = 4
    Traceback (most recent call last):
    ...
    envkit.record.FrozenInstanceError: cannot assign to field 'n'
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

__all__ = ["FrozenInstanceError", "field", "record"]


class FrozenInstanceError(AttributeError):
    """An assignment to a frozen record (as dataclasses.FrozenInstanceError)."""


_MISSING: Any = object()


class _Field:
    __slots__ = ("default", "factory")

    def __init__(self, default: Any = _MISSING, factory: Callable[[], Any] | None = None) -> None:
        self.default, self.factory = default, factory


def _field(*, default: Any = _MISSING, default_factory: Callable[[], Any] | None = None) -> Any:
    return _Field(default, default_factory)


def _make(cls: type, frozen: bool) -> type:
    specs: dict[str, _Field] = {}
    for base in reversed(cls.__mro__[1:]):
        specs.update(getattr(base, "__record_fields__", {}))
    for name, hint in cls.__dict__.get("__annotations__", {}).items():
        if str(hint).startswith(("ClassVar", "typing.ClassVar")):
            continue
        value = cls.__dict__.get(name, _MISSING)
        if isinstance(value, _Field):
            spec = value
            if spec.default is _MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, spec.default)
        else:
            spec = _Field(value)
        specs[name] = spec
    names = tuple(specs)
    required = [n for n, s in specs.items() if s.default is _MISSING and s.factory is None]

    def __init__(self: Any, *args: Any, **kw: Any) -> None:
        if len(args) > len(names):
            raise TypeError(f"{cls.__name__}() takes {len(names)} arguments, got {len(args)}")
        values = dict(zip(names, args, strict=False))
        for k, v in kw.items():
            if k not in specs:
                raise TypeError(f"{cls.__name__}() got an unexpected keyword argument {k!r}")
            if k in values:
                raise TypeError(f"{cls.__name__}() got multiple values for argument {k!r}")
            values[k] = v
        missing = [n for n in required if n not in values]
        if missing:
            raise TypeError(f"{cls.__name__}() missing required argument(s): {', '.join(map(repr, missing))}")
        for n in names:
            if n not in values:
                spec = specs[n]
                values[n] = spec.factory() if spec.factory is not None else spec.default
            object.__setattr__(self, n, values[n])
        post = getattr(self, "__post_init__", None)
        if post is not None:
            post()

    def __repr__(self: Any) -> str:
        return f"{cls.__qualname__}({', '.join(f'{n}={getattr(self, n)!r}' for n in names)})"

    def __eq__(self: Any, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in names)

    made: dict[str, Any] = {"__init__": __init__, "__repr__": __repr__, "__eq__": __eq__, "__match_args__": names,
                            "__record_fields__": specs, "__hash__": None}  # mutable and equal by value: unhashable
    if frozen:
        def __setattr__(self: Any, name: str, value: object) -> None:
            raise FrozenInstanceError(f"cannot assign to field {name!r}")

        def __delattr__(self: Any, name: str) -> None:
            raise FrozenInstanceError(f"cannot delete field {name!r}")

        def __hash__(self: Any) -> int:
            return hash(tuple(getattr(self, n) for n in names))

        made.update({"__setattr__": __setattr__, "__delattr__": __delattr__, "__hash__": __hash__})
    for name, value in made.items():
        setattr(cls, name, value)
    return cls


def _record(cls: type | None = None, /, *, frozen: bool = False) -> Any:
    if cls is None:
        return lambda c: _make(c, frozen)
    return _make(cls, frozen)


if TYPE_CHECKING:  # checkers know dataclass semantics; at run time the light version below stands in
    from dataclasses import dataclass as record
    from dataclasses import field
else:
    record, field = _record, _field
