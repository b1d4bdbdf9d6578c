"""Typed, frozen models validated once from plain data: the small part of pydantic's API the profile uses.

Why not pydantic itself: importing it and building the profile's models is a large part of every
``envkit generate`` run, whose start-up time is budgeted (benchmarks/bench_generate.py). The profile needs far
less than pydantic offers: ``Annotated`` types with constraints, ``Literal``, unions, tuples, dicts,
nested models, before/after validators, ``model_validate``/``model_dump``/``model_copy`` and a JSON
Schema. Models are declared exactly as pydantic models are (the same names: ``BaseModel``, ``Field``,
``field_validator``, ...), and validation errors come out in pydantic's shape (``type``, ``loc``,
``msg``, ``input``, ``ctx``), so ``profile.load`` turns them into the same file:line:col messages.

Semantics kept from pydantic's lax mode, because profiles rely on them: ``"5"`` and ``5.0`` are
whole numbers, ``yes``/``on``/``1`` are true, lists become tuples, and in a union an exact type
match wins before a conversion (``num_workers: "8"`` is 8; ``gpus: 1`` is the count, not ``True``).

Example:
    >>> class Point(BaseModel):
    ...     model_config = ConfigDict(extra="forbid", frozen=True)
    ...     x: Annotated[int, Field(ge=0)]
    ...     label: str = "origin"
    >>> Point.model_validate({"x": "3"})
    Point(x=3, label='origin')
    >>> try:
    ...     Point.model_validate({"x": -1, "lable": "a"})
    ... except ValidationError as e:
    ...     print([(err["type"], err["loc"]) for err in e.errors()])
    [('greater_than_equal', ('x',)), ('extra_forbidden', ('lable',))]
"""

from __future__ import annotations

import re
import sys
import types
import typing
from typing import Annotated, Any, Callable, ClassVar, Literal

__all__ = [
    "AfterValidator", "Annotated", "BaseModel", "BeforeValidator", "ConfigDict", "Field", "FieldInfo",
    "StringConstraints", "TypeAdapter", "ValidationError", "WithJsonSchema", "field_validator", "model_validator",
]

_FAIL = object()  # a value that did not validate (its errors are already recorded)
_MISSING: Any = object()


class ValidationError(ValueError):
    """One or more problems, each a dict: type, loc (a path of keys and indexes), msg, input, ctx."""

    def __init__(self, errors: list[dict], title: str) -> None:
        self._errors = errors
        self.title = title
        lines = [f"{len(errors)} validation error{'s' if len(errors) != 1 else ''} for {title}"]
        for e in errors:
            lines += [".".join(map(str, e["loc"])) or title, f"  {e['msg']} [type={e['type']}, input_value={e['input']!r}]"]
        super().__init__("\n".join(lines))

    def errors(self) -> list[dict]:
        return list(self._errors)


def _err(errs: list, kind: str, loc: tuple, value: object, msg: str, ctx: dict | None = None) -> object:
    errs.append({"type": kind, "loc": loc, "msg": msg, "input": value, **({"ctx": ctx} if ctx else {})})
    return _FAIL


# --- markers, as pydantic spells them -------------------------------------------------------------------------

class FieldInfo:
    """Constraints and schema extras from ``Field()``/``StringConstraints()``; on a model, one field's facts."""

    __slots__ = ("annotation", "constraints", "default", "json_schema_extra", "node")

    def __init__(self, default: object = _MISSING, json_schema_extra: dict | None = None, **constraints: Any) -> None:
        self.default = default
        self.json_schema_extra = json_schema_extra
        self.constraints = constraints
        self.annotation: object = None
        self.node: _Node | None = None

    def is_required(self) -> bool:
        return self.default is _MISSING


def Field(default: Any = _MISSING, **kw: Any) -> Any:  # noqa: N802 (pydantic's name)
    return FieldInfo(default, **kw)


def StringConstraints(**kw: Any) -> Any:  # noqa: N802 (pydantic's name)
    return FieldInfo(**kw)


class AfterValidator:
    """Runs ``fn(value)`` after the type's own check; a ValueError becomes a ``value_error``."""

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self.fn = fn


class BeforeValidator:
    """Runs ``fn(raw)`` before the type's own check (parsing user syntax such as ``8GB``)."""

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self.fn = fn


class WithJsonSchema:
    """The JSON Schema to publish for a type whose checks a schema cannot express."""

    def __init__(self, schema: dict) -> None:
        self.schema = schema


def ConfigDict(**kw: Any) -> dict:  # noqa: N802 (pydantic's name)
    return dict(kw)


class _Decorated:
    def __init__(self, func: Callable, fields: tuple[str, ...] = (), mode: str = "after") -> None:
        self.func, self.fields, self.mode = func, fields, mode


def field_validator(*fields: str) -> Callable[[Any], Any]:
    """``@field_validator("a", "b")`` over a classmethod ``(cls, value[, info])``, run after the fields' types."""
    return lambda f: _Decorated(getattr(f, "__func__", f), fields=fields)


def model_validator(*, mode: Literal["before", "after"]) -> Callable[[Any], Any]:
    """``before``: a classmethod given the raw input; ``after``: a method given the built model."""
    return lambda f: _Decorated(getattr(f, "__func__", f), mode=mode)


class _Info:
    __slots__ = ("field_name",)

    def __init__(self, field_name: str) -> None:
        self.field_name = field_name


def _call_checked(fn: Callable, args: tuple, errs: list, loc: tuple, value: object) -> object:
    try:
        return fn(*args)
    except (ValueError, AssertionError) as e:
        prefix = "Assertion failed, " if isinstance(e, AssertionError) else "Value error, "
        return _err(errs, "value_error", loc, value, prefix + str(e), {"error": e})


# --- validation nodes: one per type, compiled once per model ---------------------------------------------------

class _Node:
    schema_override: dict | None = None
    extra: dict | None = None

    def validate(self, v: object, loc: tuple, errs: list, strict: bool = False) -> object:
        raise NotImplementedError

    def schema(self, defs: dict) -> dict:
        if self.schema_override is not None:
            return dict(self.schema_override)
        s = self._schema(defs)
        if self.extra:
            s.update(self.extra)
        return s

    def _schema(self, defs: dict) -> dict:
        raise NotImplementedError


class _Any(_Node):
    def validate(self, v: Any, loc: tuple, errs: list, strict: bool = False) -> Any:
        return v

    def _schema(self, defs: dict) -> dict:
        return {}


# Whole numbers and numbers as text: ASCII digits only (as pydantic), "5", "+5", "1_000", "5.0".
_INT_TEXT = re.compile(r"([+-]?[0-9](?:_?[0-9])*)(?:\.0*)?\Z")
_FLOAT_TEXT = re.compile(r"[+-]?(?:(?:[0-9](?:_?[0-9])*)?\.?[0-9]*(?:[eE][+-]?[0-9]+)?|inf|infinity|nan)\Z", re.I)

_NUMBER_CHECKS = (
    ("gt", "greater_than", "greater than", lambda v, b: v > b, "exclusiveMinimum"),
    ("ge", "greater_than_equal", "greater than or equal to", lambda v, b: v >= b, "minimum"),
    ("lt", "less_than", "less than", lambda v, b: v < b, "exclusiveMaximum"),
    ("le", "less_than_equal", "less than or equal to", lambda v, b: v <= b, "maximum"),
)


def _bounds(node_c: dict, v: Any, loc: tuple, errs: list) -> Any:
    for key, kind, words, ok, _ in _NUMBER_CHECKS:
        if key in node_c and not ok(v, node_c[key]):
            return _err(errs, kind, loc, v, f"Input should be {words} {node_c[key]}", {key: node_c[key]})
    return v


class _Number(_Node):
    """Shared by whole numbers and numbers: the bounds and their schema."""

    json_type = "number"

    def __init__(self, c: dict) -> None:
        self.c = c

    def _schema(self, defs: dict) -> dict:
        s: dict = {"type": self.json_type}
        s.update({name: self.c[key] for key, _, _, _, name in _NUMBER_CHECKS if key in self.c})
        return s


class _Int(_Number):
    json_type = "integer"

    def validate(self, v: Any, loc: tuple, errs: list, strict: bool = False) -> Any:
        if isinstance(v, bool):
            if strict:
                return _err(errs, "int_type", loc, v, "Input should be a valid integer")
            v = int(v)
        elif isinstance(v, float):
            if strict or not v.is_integer():
                return _err(errs, "int_from_float", loc, v,
                            "Input should be a valid integer, got a number with a fractional part")
            v = int(v)
        elif isinstance(v, str) and not strict:
            m = _INT_TEXT.match(v.strip(" \t\n\r\x0b\x0c"))
            if not m:
                return _err(errs, "int_parsing", loc, v,
                            "Input should be a valid integer, unable to parse string as an integer")
            v = int(m.group(1))
        elif not isinstance(v, int):
            return _err(errs, "int_type", loc, v, "Input should be a valid integer")
        return _bounds(self.c, v, loc, errs)


class _Float(_Number):

    def validate(self, v: Any, loc: tuple, errs: list, strict: bool = False) -> Any:
        if isinstance(v, bool):
            if strict:
                return _err(errs, "float_type", loc, v, "Input should be a valid number")
            v = float(v)
        elif isinstance(v, (int, float)):
            v = float(v)
        elif isinstance(v, str) and not strict:
            text = v.strip(" \t\n\r\x0b\x0c")
            try:
                if not _FLOAT_TEXT.match(text):  # float() also takes "５" and other non-ASCII digits
                    raise ValueError(text)
                v = float(text)
            except ValueError:
                return _err(errs, "float_parsing", loc, v, "Input should be a valid number, unable to parse string as a number")
        else:
            return _err(errs, "float_type", loc, v, "Input should be a valid number")
        return _bounds(self.c, v, loc, errs)


_TRUE = frozenset({"1", "on", "t", "true", "y", "yes"})
_FALSE = frozenset({"0", "off", "f", "false", "n", "no"})


class _Bool(_Node):
    def validate(self, v: Any, loc: tuple, errs: list, strict: bool = False) -> Any:
        if isinstance(v, bool):
            return v
        if strict:
            return _err(errs, "bool_type", loc, v, "Input should be a valid boolean")
        if isinstance(v, str):
            low = v.lower()
            if low in _TRUE or low in _FALSE:
                return low in _TRUE
        elif isinstance(v, (int, float)) and v in (0, 1):
            return bool(v)
        if isinstance(v, (str, int, float)):
            return _err(errs, "bool_parsing", loc, v, "Input should be a valid boolean, unable to interpret input")
        return _err(errs, "bool_type", loc, v, "Input should be a valid boolean")

    def _schema(self, defs: dict) -> dict:
        return {"type": "boolean"}


# Rust's regex (what pydantic ran patterns with) reads \s as Unicode White_Space; Python's re also takes
# \x1c-\x1f. Spelled out, so a control character is not "whitespace" to a profile pattern.
_WHITE_SPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"


def _rust_pattern(pattern: str) -> str:
    """``pattern`` as Rust's regex reads it: ``\\s``/``\\S`` as Unicode White_Space, ``$`` as the end of the text.

    >>> print(_rust_pattern("^/[a-z]*$"))
    ^/[a-z]*\\Z
    >>> import re; bool(re.search(_rust_pattern(r"^\\S+$"), "a\\x1c")), bool(re.search(r"^\\S+$", "a\\x1c"))
    (True, False)
    """
    out, i, in_class = [], 0, False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            if nxt == "s":
                out.append(_WHITE_SPACE if in_class else f"[{_WHITE_SPACE}]")
            elif nxt == "S" and not in_class:
                out.append(f"[^{_WHITE_SPACE}]")
            elif nxt == "S":
                raise TypeError(f"\\S inside a character class is not supported: {pattern!r}")
            else:
                out.append(pattern[i:i + 2])
            i += 2
            continue
        if ch == "[" and not in_class:
            in_class = True
            out.append(ch)
            if pattern[i + 1:i + 2] == "^":
                out.append("^")
                i += 1
            if pattern[i + 1:i + 2] == "]":  # a literal ] first in a class
                out.append("]")
                i += 1
        elif ch == "]" and in_class:
            in_class = False
            out.append(ch)
        elif ch == "$" and not in_class:
            out.append("\\Z")  # Python's $ also matches before a final newline: "/workspace\n" would pass
        else:
            out.append(ch)
        i += 1
    return "".join(out)


class _Str(_Node):
    def __init__(self, c: dict) -> None:
        self.c = c
        self.source: str | None = c.get("pattern")
        self.pattern: str | None = _rust_pattern(self.source) if self.source else None  # compiled on first use

    def validate(self, v: Any, loc: tuple, errs: list, strict: bool = False) -> Any:
        if not isinstance(v, str):
            return _err(errs, "string_type", loc, v, "Input should be a valid string")
        c = self.c
        if "min_length" in c and len(v) < c["min_length"]:
            n = c["min_length"]
            return _err(errs, "string_too_short", loc, v, f"String should have at least {n} character{'s' * (n != 1)}",
                        {"min_length": n})
        if "max_length" in c and len(v) > c["max_length"]:
            n = c["max_length"]
            return _err(errs, "string_too_long", loc, v, f"String should have at most {n} character{'s' * (n != 1)}",
                        {"max_length": n})
        if self.pattern is not None and not re.search(self.pattern, v):
            return _err(errs, "string_pattern_mismatch", loc, v, f"String should match pattern '{self.source}'",
                        {"pattern": c["pattern"]})
        return v

    def _schema(self, defs: dict) -> dict:
        s: dict = {"type": "string"}
        for key, name in (("min_length", "minLength"), ("max_length", "maxLength"), ("pattern", "pattern")):
            if key in self.c:
                s[name] = self.c[key]
        return s


class _Literal(_Node):
    def __init__(self, values: tuple) -> None:
        self.values = values
        shown = [repr(x) for x in values]
        self.expected = shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} or {shown[-1]}"

    def validate(self, v: Any, loc: tuple, errs: list, strict: bool = False) -> Any:
        for want in self.values:
            # 1 == True in Python, but a profile's `true` is not the literal 1 (nor 'x' a number).
            if v == want and isinstance(v, bool) == isinstance(want, bool) and isinstance(v, str) == isinstance(want, str):
                return want
        return _err(errs, "literal_error", loc, v, f"Input should be {self.expected}", {"expected": self.expected})

    def _schema(self, defs: dict) -> dict:
        kinds = {type(x) for x in self.values}
        s: dict = {"const": self.values[0]} if len(self.values) == 1 else {"enum": list(self.values)}
        json_type = {str: "string", int: "integer", bool: "boolean", float: "number"}
        if len(kinds) == 1 and next(iter(kinds)) in json_type:
            s["type"] = json_type[next(iter(kinds))]
        return s


class _Nullable(_Node):
    def __init__(self, inner: _Node) -> None:
        self.inner = inner

    def validate(self, v: Any, loc: tuple, errs: list, strict: bool = False) -> Any:
        return None if v is None else self.inner.validate(v, loc, errs, strict)

    def _schema(self, defs: dict) -> dict:
        return {"anyOf": [self.inner.schema(defs), {"type": "null"}]}


class _Union(_Node):
    """Smart mode, as pydantic's: an exact-type match first (left to right), then the first conversion."""

    def __init__(self, members: list[tuple[str, _Node]]) -> None:
        self.members = members

    def validate(self, v: Any, loc: tuple, errs: list, strict: bool = False) -> Any:
        for passes in ((True,) if strict else (True, False)):
            for _, node in self.members:
                trial: list = []
                out = node.validate(v, loc, trial, passes)
                if out is not _FAIL and not trial:
                    return out
        for tag, node in self.members:  # every member's reason, tagged as pydantic tags them
            trial = []
            node.validate(v, (*loc, tag), trial, False)
            errs.extend(trial)
        return _FAIL

    def _schema(self, defs: dict) -> dict:
        return {"anyOf": [node.schema(defs) for _, node in self.members]}


class _Tuple(_Node):
    def __init__(self, item: _Node, c: dict) -> None:
        self.item, self.c = item, c

    def validate(self, v: Any, loc: tuple, errs: list, strict: bool = False) -> Any:
        if not isinstance(v, (list, tuple)) and (strict or not isinstance(v, (set, frozenset))):
            return _err(errs, "tuple_type", loc, v, "Input should be a valid tuple")
        n0 = len(errs)
        out = tuple(self.item.validate(x, (*loc, i), errs, strict) for i, x in enumerate(v))
        if len(errs) > n0:
            return _FAIL
        for key, kind, words, bad in (("min_length", "too_short", "at least", len(out) < self.c.get("min_length", 0)),
                                      ("max_length", "too_long", "at most", len(out) > self.c.get("max_length", len(out)))):
            if bad:
                n = self.c[key]
                return _err(errs, kind, loc, v, f"Tuple should have {words} {n} item{'s' * (n != 1)} after validation, "
                            f"not {len(out)}", {"field_type": "Tuple", key: n, "actual_length": len(out)})
        return out

    def _schema(self, defs: dict) -> dict:
        s: dict = {"type": "array", "items": self.item.schema(defs)}
        for key, name in (("min_length", "minItems"), ("max_length", "maxItems")):
            if key in self.c:
                s[name] = self.c[key]
        return s


class _Dict(_Node):
    def __init__(self, key: _Node, value: _Node) -> None:
        self.key, self.value = key, value

    def validate(self, v: Any, loc: tuple, errs: list, strict: bool = False) -> Any:
        if not isinstance(v, dict):
            return _err(errs, "dict_type", loc, v, "Input should be a valid dictionary")
        n0, out = len(errs), {}
        for k, x in v.items():
            k2 = self.key.validate(k, (*loc, k, "[key]"), errs, strict)
            out[k2] = self.value.validate(x, (*loc, k), errs, strict)
        return _FAIL if len(errs) > n0 else out

    def _schema(self, defs: dict) -> dict:
        keys, value = self.key.schema(defs), self.value.schema(defs)
        if set(keys) == {"type", "pattern"}:  # pydantic's spelling of a key pattern
            return {"type": "object", "patternProperties": {keys["pattern"]: value}}
        keys.pop("type", None)
        return {"type": "object", "additionalProperties": value, **({"propertyNames": keys} if keys else {})}


class _ModelRef(_Node):
    def __init__(self, model: type[BaseModel]) -> None:
        self.model = model

    def validate(self, v: Any, loc: tuple, errs: list, strict: bool = False) -> Any:
        return self.model._validate(v, loc, errs)

    def _schema(self, defs: dict) -> dict:
        name = self.model.__name__
        if name not in defs:
            defs[name] = {}  # reserved first: a model may refer to itself
            defs[name] = self.model._model_schema(defs)
        return {"$ref": f"#/$defs/{name}"}


class _Wrapped(_Node):
    """Validators from ``Annotated``: before ones run ahead of the inner type, after ones behind it."""

    def __init__(self, inner: _Node, fn: Callable, before: bool) -> None:
        self.inner, self.fn, self.before = inner, fn, before

    def validate(self, v: Any, loc: tuple, errs: list, strict: bool = False) -> Any:
        if self.before:
            v = _call_checked(self.fn, (v,), errs, loc, v)
            return _FAIL if v is _FAIL else self.inner.validate(v, loc, errs, strict)
        out = self.inner.validate(v, loc, errs, strict)
        return _FAIL if out is _FAIL else _call_checked(self.fn, (out,), errs, loc, out)

    def _schema(self, defs: dict) -> dict:
        return self.inner.schema(defs)


_UNION_TYPES = (typing.Union, types.UnionType) if sys.version_info >= (3, 10) else (typing.Union,)


def _tag(tp: object) -> str:
    origin = typing.get_origin(tp)
    if origin is Annotated:
        return _tag(typing.get_args(tp)[0])
    if origin is Literal:
        return "literal[" + ",".join(map(repr, typing.get_args(tp))) + "]"
    if origin is not None:
        return getattr(origin, "__name__", str(origin))
    return getattr(tp, "__name__", str(tp))


def _compile(tp: object, meta: tuple = ()) -> _Node:
    """The validation node for a type hint (``meta``: the ``Annotated`` metadata around it, in order)."""
    origin = typing.get_origin(tp)
    if origin is Annotated:
        inner, *more = typing.get_args(tp)
        return _compile_annotated(inner, tuple(more) + tuple(meta))
    if meta:
        return _compile_annotated(tp, meta)
    if origin in _UNION_TYPES:
        args = typing.get_args(tp)
        rest = [a for a in args if a is not type(None)]
        if len(rest) < len(args) and len(rest) == 1:
            return _Nullable(_compile(rest[0]))
        members = [(_tag(a), _compile(a)) for a in rest]
        node: _Node = _Union(members)
        return _Nullable(node) if len(rest) < len(args) else node
    if origin is Literal:
        return _Literal(typing.get_args(tp))
    if origin is tuple:
        args = typing.get_args(tp)
        return _Tuple(_compile(args[0]), {})
    if origin is dict:
        k, v = typing.get_args(tp)
        return _Dict(_compile(k), _compile(v))
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return _ModelRef(tp)
    simple = {bool: _Bool, str: lambda: _Str({}), int: lambda: _Int({}), float: lambda: _Float({})}
    if tp in simple:
        return simple[tp]()
    if tp is Any or tp is object:
        return _Any()
    raise TypeError(f"unsupported type in a profile model: {tp!r}")


def _compile_annotated(tp: object, meta: tuple) -> _Node:
    constraints: dict = {}
    extra: dict = {}
    for m in meta:
        if isinstance(m, FieldInfo):
            constraints.update(m.constraints)
            extra.update(m.json_schema_extra or {})
    base = typing.get_origin(tp) or tp
    if constraints and base is str:
        node: _Node = _Str(constraints)
    elif constraints and base is int:
        node = _Int(constraints)
    elif constraints and base is float:
        node = _Float(constraints)
    elif constraints and base is tuple:
        node = _Tuple(_compile(typing.get_args(tp)[0]), constraints)
    elif constraints:
        raise TypeError(f"constraints {constraints} on {tp!r} are not supported")
    else:
        node = _compile(tp)
    for m in meta:
        if isinstance(m, (AfterValidator, BeforeValidator)):
            node = _Wrapped(node, m.fn, before=isinstance(m, BeforeValidator))
    overrides = [m.schema for m in meta if isinstance(m, WithJsonSchema)]
    if overrides:
        node.schema_override = overrides[-1]
    if extra:
        node.extra = extra
    return node


# --- models -----------------------------------------------------------------------------------------------------

def _title(name: str) -> str:
    """pydantic's field title (so the published schema did not change when pydantic left)."""
    return name.title().replace("_", " ")


def _clean_doc(doc: str | None) -> str | None:
    if not doc:
        return None
    lines = doc.strip().splitlines()
    indent = min((len(x) - len(x.lstrip()) for x in lines[1:] if x.strip()), default=0)
    return "\n".join([lines[0].strip()] + [x[indent:] for x in lines[1:]]).strip()


class BaseModel:
    """A frozen record built only by validation (``model_validate``) or by a copy (``model_copy``)."""

    model_config: ClassVar[dict] = {}
    model_fields: ClassVar[dict[str, FieldInfo]]  # the fields in order: name -> FieldInfo (compiled on first use)
    _fields: ClassVar[dict[str, FieldInfo] | None] = None
    __field_validators__: ClassVar[dict[str, list[Callable]]] = {}
    __model_validators__: ClassVar[dict[str, list[Callable]]] = {}

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        fv: dict[str, list[Callable]] = {}
        mv: dict[str, list[Callable]] = {"before": [], "after": []}
        for base in reversed(cls.__mro__[1:]):
            for name, funcs in getattr(base, "__field_validators__", {}).items():
                fv.setdefault(name, []).extend(funcs)
            for mode, funcs in getattr(base, "__model_validators__", {}).items():
                mv[mode].extend(funcs)
        for attr, value in list(vars(cls).items()):
            if isinstance(value, _Decorated):
                if value.fields:
                    for f in value.fields:
                        fv.setdefault(f, []).append(value.func)
                else:
                    mv[value.mode].append(value.func)
                setattr(cls, attr, classmethod(value.func) if value.fields or value.mode == "before" else value.func)
        cls.__field_validators__, cls.__model_validators__ = fv, mv
        # Fields are compiled on first use: a run that never sees a section (wsl, cluster) never pays for it.
        cls._fields = None

    @classmethod
    def _compiled_fields(cls) -> dict[str, FieldInfo]:
        fields = cls.__dict__.get("_fields")
        if fields is None:
            fields = cls._fields = cls._compile_fields()
        return fields

    @classmethod
    def _compile_fields(cls) -> dict[str, FieldInfo]:
        hints: dict[str, Any] = {}
        for klass in reversed(cls.__mro__):
            hints.update(klass.__dict__.get("__annotations__", {}))
        if any(isinstance(h, str) for name, h in hints.items() if not name.startswith(("model_", "_"))):
            hints = typing.get_type_hints(cls, include_extras=True)  # a module with postponed annotations
        fields: dict[str, FieldInfo] = {}
        for name, hint in hints.items():
            if name.startswith(("model_", "_")) or typing.get_origin(hint) is ClassVar:
                continue
            info = FieldInfo()
            for klass in cls.__mro__:
                if name in vars(klass) and not isinstance(vars(klass)[name], (property, classmethod, staticmethod)):
                    info.default = vars(klass)[name]
                    break
            info.annotation = hint
            info.node = _compile(hint)
            fields[name] = info
        return fields

    # construction

    def __init__(self, **data: Any) -> None:
        errs: list = []
        built = type(self)._validate(data, (), errs)
        if errs:
            raise ValidationError(errs, type(self).__name__)
        object.__setattr__(self, "__dict__", dict(vars(built)))

    @classmethod
    def model_validate(cls, data: Any) -> Any:
        """A model from plain data (dicts, lists, scalars), or a ValidationError listing every problem."""
        errs: list = []
        out = cls._validate(data, (), errs)
        if errs or out is _FAIL:
            raise ValidationError(errs, cls.__name__)
        return out

    @classmethod
    def _validate(cls, data: Any, loc: tuple, errs: list) -> Any:
        for fn in cls.__model_validators__["before"]:
            data = _call_checked(fn, (cls, data), errs, loc, data)
            if data is _FAIL:
                return _FAIL
        if isinstance(data, cls):
            return data
        if not isinstance(data, dict):
            return _err(errs, "model_type", loc, data, f"Input should be a valid dictionary or instance of {cls.__name__}",
                        {"class_name": cls.__name__})
        n0, values = len(errs), {}
        fields = cls._compiled_fields()
        for name, info in fields.items():
            if name in data:
                assert info.node is not None
                v = info.node.validate(data[name], (*loc, name), errs)
                for fn in cls.__field_validators__.get(name, ()) if v is not _FAIL else ():
                    args = (cls, v, _Info(name)) if fn.__code__.co_argcount >= 3 else (cls, v)
                    v = _call_checked(fn, args, errs, (*loc, name), v)
                    if v is _FAIL:
                        break
                values[name] = v
            elif info.default is _MISSING:
                _err(errs, "missing", (*loc, name), data, "Field required")
            else:
                values[name] = _fresh(info.default)
        for key in data:
            if key not in fields:
                _err(errs, "extra_forbidden", (*loc, key), data[key], "Extra inputs are not permitted")
        if len(errs) > n0:
            return _FAIL
        inst = object.__new__(cls)
        object.__setattr__(inst, "__dict__", values)
        for fn in cls.__model_validators__["after"]:
            out = _call_checked(fn, (inst,), errs, loc, inst)
            if out is _FAIL:
                return _FAIL
        return inst

    def model_copy(self, *, update: dict | None = None) -> Any:
        """A shallow copy with ``update``'s fields replaced (not validated, as in pydantic)."""
        new = object.__new__(type(self))
        object.__setattr__(new, "__dict__", {**vars(self), **(update or {})})
        return new

    # reading

    def model_dump(self, *, mode: str = "python", exclude_defaults: bool = False, exclude_none: bool = False) -> dict:
        """Plain data; ``mode="json"`` turns tuples into lists."""
        out = {}
        for name, info in type(self).model_fields.items():
            v = vars(self)[name]
            if (exclude_none and v is None) or (exclude_defaults and info.default is not _MISSING and v == info.default):
                continue
            out[name] = _dump(v, mode, exclude_defaults, exclude_none)
        return out

    @classmethod
    def model_json_schema(cls, mode: str = "validation") -> dict:
        """A JSON Schema (draft 2020-12) of the model: nested models under ``$defs``."""
        defs: dict = {}
        schema = cls._model_schema(defs)
        defs.pop(cls.__name__, None)
        if defs:
            schema["$defs"] = dict(sorted(defs.items()))
        return schema

    @classmethod
    def _model_schema(cls, defs: dict) -> dict:
        props, required = {}, []
        for name, info in cls.model_fields.items():
            assert info.node is not None
            s = info.node.schema(defs)
            inner = info.node.inner if isinstance(info.node, _Nullable) else info.node
            if not isinstance(inner, _ModelRef):  # a model's own schema carries its title
                s["title"] = _title(name)
            if info.default is _MISSING:
                required.append(name)
            else:
                s["default"] = _dump(info.default, "json", False, False)
            props[name] = s
        schema: dict = {"type": "object", "title": cls.__name__, "properties": props, "additionalProperties": False}
        doc = _clean_doc(cls.__doc__)
        if doc:
            schema["description"] = doc
        if required:
            schema["required"] = required
        extra = cls.model_config.get("json_schema_extra")
        if callable(extra):
            extra(schema)
        elif extra:
            schema.update(extra)
        return schema

    # a frozen value

    def __setattr__(self, name: str, value: object) -> None:
        raise TypeError(f"{type(self).__name__} is frozen: use model_copy(update={{{name!r}: ...}})")

    def __delattr__(self, name: str) -> None:
        raise TypeError(f"{type(self).__name__} is frozen")

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and vars(other) == vars(self)

    def __hash__(self) -> int:
        return hash((type(self), tuple(_hashable(v) for v in vars(self).values())))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in vars(self).items())})"

    def __reduce__(self) -> tuple:
        return (_rebuild, (type(self), dict(vars(self))))


class _ModelFields:
    """``Model.model_fields``, compiled when first read."""

    def __get__(self, obj: object, owner: type[BaseModel]) -> dict[str, FieldInfo]:
        return owner._compiled_fields()


BaseModel.model_fields = _ModelFields()  # type: ignore[assignment]


def _fresh(value: Any) -> Any:
    """A default as a new object where it holds a dict: no two models share one mutable default."""
    if isinstance(value, dict):
        return {k: _fresh(v) for k, v in value.items()}
    if isinstance(value, BaseModel):
        return value.model_copy(update={k: _fresh(v) for k, v in vars(value).items() if isinstance(v, (dict, BaseModel))})
    return value


def _rebuild(cls: type[BaseModel], values: dict) -> BaseModel:
    inst = object.__new__(cls)
    object.__setattr__(inst, "__dict__", values)
    return inst


def _hashable(v: object) -> object:
    return tuple(sorted(v.items())) if isinstance(v, dict) else v


def _dump(v: object, mode: str, exclude_defaults: bool, exclude_none: bool) -> object:
    if isinstance(v, BaseModel):
        return v.model_dump(mode=mode, exclude_defaults=exclude_defaults, exclude_none=exclude_none)
    if isinstance(v, (tuple, list)):
        items = [_dump(x, mode, exclude_defaults, exclude_none) for x in v]
        return items if mode == "json" else type(v)(items)
    if isinstance(v, dict):
        return {k: _dump(x, mode, exclude_defaults, exclude_none) for k, x in v.items()}
    return v


class TypeAdapter:
    """Validation of one type outside a model: ``TypeAdapter(Size).validate_python("8GB")``."""

    def __init__(self, tp: object) -> None:
        self.node = _compile(tp)
        self.title = _tag(tp)

    def validate_python(self, value: object) -> Any:
        errs: list = []
        out = self.node.validate(value, (), errs)
        if errs:
            raise ValidationError(errs, self.title)
        return out
