"""envkit's templates: the part of Jinja2's language they use, compiled to Python once and cached.

Why not Jinja2 itself: importing it is a large part of an ``envkit generate`` run (whose
start-up time is budgeted: benchmarks/bench_generate.py), for fourteen templates that use a small part of it. The language and
its whitespace rules are Jinja2's, as envkit configured it: ``{{ expr }}``, ``{% if/elif/else %}``,
``{% for a, b in xs %}`` (with ``loop.first``/``loop.last``/``loop.index``, and ``{% else %}``),
``{% set %}``, ``{% macro %}``, ``{% import "file" as name %}``, ``{# comments #}``, filters
``x|f(arg)``, ``~`` and an ``if`` without ``else`` (empty when false); ``trim_blocks``,
``lstrip_blocks``, ``-`` whitespace control and a kept trailing newline. As with Jinja2's
StrictUndefined, a name the context lacks is an error, never an empty string.

Expressions are Python's, read with ``ast`` (only when a template is compiled): ``a.b`` reads
an attribute or, failing that, a key; a filter binds tighter than ``+``, so ``a + b|f`` is refused
(write ``(a + b)|f`` or ``a + (b|f)``) rather than read differently from Jinja2.

Example:
    >>> env = Environment(None, filters={"upper": str.upper})
    >>> print(env.from_string("{% for x in xs %}{{ x|upper }}{{ ', ' if not loop.last }}{% endfor %}\\n").render(xs=["a", "b"]), end="")
    A, B
    >>> env.from_string("{{ nope }}").render()
    Traceback (most recent call last):
    ...
    envkit.templating.UndefinedError: 'nope' is undefined
"""

from __future__ import annotations

import contextlib
import marshal
import re
import sys
import types
from pathlib import Path
from typing import Any, Callable, Iterable

from envkit.digest import sha256_hex

_TAG = re.compile(r"\{\{|\{%|\{#")


def _compiler_key() -> str:
    """What compiled code depends on besides the template: this interpreter and this compiler's own source."""
    try:
        own = Path(__file__).read_bytes()
    except OSError:
        own = b""
    return f"{sys.implementation.cache_tag}\0{sys.version}\0{marshal.version}\0{sha256_hex(own)}"


_COMPILER_KEY = _compiler_key()


class TemplateError(Exception):
    """A template envkit cannot compile (a bug in envkit's templates, not in a profile)."""


class UndefinedError(TemplateError):
    """A template read a name or attribute its context does not have."""


# --- reading: text and tags, with Jinja2's whitespace rules ----------------------------------------------------

def _tag_end(src: str, start: int, close: str, name: str) -> int:
    """Index of ``close`` after ``start``, skipping string literals (``"${#x}"`` is not a comment)."""
    i, quote = start, ""
    while i < len(src):
        c = src[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = ""
        elif c in "'\"" and close != "#}":
            quote = c
        elif src.startswith(close, i):
            return i
        i += 1
    raise TemplateError(f"{name}: unclosed tag at offset {start}")


def _lex(src: str, name: str) -> list[tuple[str, str, int]]:
    """(kind, text, line) tokens: kind is "text", "var" or "block" (comments are dropped)."""
    out: list[tuple[str, str, int]] = []
    pos, strip_next = 0, False
    while True:
        m = _TAG.search(src, pos)
        text = src[pos:m.start()] if m else src[pos:]
        if strip_next:
            text = text.lstrip()
        if not m:
            if text:
                out.append(("text", text, src.count("\n", 0, pos) + 1))
            return out
        kind = {"{{": "var", "{%": "block", "{#": "comment"}[m.group()]
        close = {"var": "}}", "block": "%}", "comment": "#}"}[kind]
        inner_start = m.end()
        if src.startswith("-", inner_start):
            text = text.rstrip()
            inner_start += 1
        elif kind != "var" and src.startswith("+", inner_start):
            inner_start += 1
        elif kind != "var":
            # lstrip_blocks: a block or comment tag with only blanks before it on its line takes them away.
            line_start = src.rfind("\n", 0, m.start()) + 1
            if line_start >= pos and src[line_start:m.start()].strip(" \t") == "":
                text = text[:len(text) - (m.start() - line_start)]
        end = _tag_end(src, inner_start, close, name)
        inner = src[inner_start:end]
        strip_next = inner.endswith("-")
        if strip_next:
            inner = inner[:-1]
        if text:
            out.append(("text", text, src.count("\n", 0, pos) + 1))
        if kind != "comment":
            out.append((kind, inner.strip(), src.count("\n", 0, m.start()) + 1))
        pos = end + len(close)
        # trim_blocks: the newline right after a block or comment tag goes.
        if kind != "var" and not strip_next and src.startswith("\n", pos):
            pos += 1


# --- expressions: Jinja2's spelling to Python ------------------------------------------------------------------

class _Scope:
    def __init__(self) -> None:
        self.frames: list[dict[str, str]] = [{}]
        self.counter = 0

    def bind(self, name: str) -> str:
        self.counter += 1
        py = f"l_{name}_{self.counter}"
        self.frames[-1][name] = py
        return py

    def lookup(self, name: str) -> str | None:
        for frame in reversed(self.frames):
            if name in frame:
                return frame[name]
        return None


_CONSTANTS = {"true": True, "false": False, "none": None, "True": True, "False": False, "None": None}


def _expr(text: str, scope: _Scope, where: str) -> str:
    """Python source for one Jinja2 expression."""
    import ast
    import io
    import tokenize

    if "~" in text:
        # Jinja's string concatenation becomes `<<`: a binary operator the templates never use, and the one
        # whose precedence is Jinja's for `~` (below `+` and `*`, above comparisons).
        toks = list(tokenize.generate_tokens(io.StringIO(text).readline))
        text = tokenize.untokenize((t.type, "<<" if t.type == tokenize.OP and t.string == "~" else t.string)
                                   for t in toks)
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError:
        try:  # Jinja's `a if cond` without else: empty when false
            tree = ast.parse(text.strip() + ' else ""', mode="eval")
        except SyntaxError as e:
            raise TemplateError(f"{where}: cannot read {text.strip()!r}: {e.msg}") from None
    source = text.strip()

    class Rewrite(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.AST:
            if node.id in _CONSTANTS:
                return ast.copy_location(ast.Constant(_CONSTANTS[node.id]), node)
            py = scope.lookup(node.id)
            if py is not None:
                return ast.copy_location(ast.Name(py, ast.Load()), node)
            return ast.copy_location(_call("_look", ast.Constant(node.id)), node)

        def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
            return ast.copy_location(_call("_attr", self.visit(node.value), ast.Constant(node.attr)), node)

        def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
            if isinstance(node.op, ast.LShift):
                return ast.copy_location(_call("_cat", self.visit(node.left), self.visit(node.right)), node)
            if not isinstance(node.op, ast.BitOr):
                return self.generic_visit(node)
            left = node.left
            if isinstance(left, ast.BinOp) and not isinstance(left.op, ast.BitOr) and _unparenthesized(source, left):
                raise TemplateError(f"{where}: {source!r}: a filter applies to what is right before it in Jinja2; "
                                    "add parentheses")
            right = node.right
            if isinstance(right, ast.Name):
                name, args, kw = right.id, [], []
            elif isinstance(right, ast.Call) and isinstance(right.func, ast.Name):
                name, args, kw = right.func.id, [self.visit(a) for a in right.args], [
                    ast.keyword(k.arg, self.visit(k.value)) for k in right.keywords]
            else:
                raise TemplateError(f"{where}: {source!r}: expected a filter name after '|'")
            call = ast.Call(ast.Subscript(ast.Name("_filters", ast.Load()), ast.Constant(name), ast.Load()),
                            [self.visit(left), *args], kw)
            return ast.copy_location(call, node)

    out = ast.fix_missing_locations(Rewrite().visit(tree))
    return ast.unparse(out.body)


def _unparenthesized(source: str, node: Any) -> bool:
    # ast drops parentheses: look at the source right after the operand.
    rest = source.encode()[node.end_col_offset:].decode().lstrip()
    return not rest.startswith(")")


def _call(name: str, *args: Any) -> Any:
    import ast

    return ast.Call(ast.Name(name, ast.Load()), list(args), [])


# --- statements ------------------------------------------------------------------------------------------------

class _Compiler:
    def __init__(self, tokens: list[tuple[str, str, int]], name: str) -> None:
        self.tokens, self.name, self.i = tokens, name, 0
        self.lines: list[str] = []
        self.scope = _Scope()
        self.macros: list[str] = []

    def emit(self, depth: int, line: str) -> None:
        self.lines.append("    " * depth + line)

    def where(self, line: int) -> str:
        return f"{self.name}:{line}"

    def body(self, depth: int, stops: tuple[str, ...]) -> str:
        """Compile until a block whose first word is in ``stops``; returns that block's text."""
        start = len(self.lines)
        while self.i < len(self.tokens):
            kind, text, line = self.tokens[self.i]
            self.i += 1
            if kind == "text":
                self.emit(depth, f"_w({text!r})")
            elif kind == "var":
                self.emit(depth, f"_w(_str({_expr(text, self.scope, self.where(line))}))")
            else:
                word = text.split(None, 1)[0] if text else ""
                if word in stops:
                    if len(self.lines) == start:
                        self.emit(depth, "pass")
                    return text
                self.block(depth, text, word, line)
        if stops:
            raise TemplateError(f"{self.name}: missing {{% {stops[-1]} %}} at the end")
        if len(self.lines) == start:
            self.emit(depth, "pass")
        return ""

    def block(self, depth: int, text: str, word: str, line: int) -> None:
        where = self.where(line)
        rest = text[len(word):].strip()
        if word == "if":
            self.emit(depth, f"if {_expr(rest, self.scope, where)}:")
            end = self.body(depth + 1, ("elif", "else", "endif"))
            while end.startswith("elif"):
                self.emit(depth, f"elif {_expr(end[4:].strip(), self.scope, where)}:")
                end = self.body(depth + 1, ("elif", "else", "endif"))
            if end == "else":
                self.emit(depth, "else:")
                self.body(depth + 1, ("endif",))
        elif word == "for":
            m = re.fullmatch(r"(.+?)\s+in\s+(.+)", rest, re.S)
            if not m:
                raise TemplateError(f"{where}: expected 'for NAME[, NAME] in EXPR'")
            if re.search(r"\sif\s", m.group(2)) and not re.search(r"\selse\s", m.group(2)):
                raise TemplateError(f"{where}: a loop filter ('for x in xs if c') is not supported; use an if inside")
            iterable = _expr(m.group(2), self.scope, where)
            self.scope.frames.append({})
            names = [n.strip() for n in m.group(1).split(",")]
            targets = [self.scope.bind(n) for n in names]
            loop = self.scope.bind("loop")
            ran = f"_ran_{self.scope.counter}"
            self.emit(depth, f"{ran} = False")
            target = targets[0] if len(targets) == 1 else "(" + ", ".join(targets) + ")"
            self.emit(depth, f"for {loop}, {target} in _loop({iterable}):")
            self.emit(depth + 1, f"{ran} = True")
            end = self.body(depth + 1, ("else", "endfor"))
            self.scope.frames.pop()
            if end == "else":
                self.emit(depth, f"if not {ran}:")
                self.body(depth + 1, ("endfor",))
        elif word == "set":
            m = re.fullmatch(r"([A-Za-z_]\w*)\s*=\s*(.+)", rest, re.S)
            if not m:
                raise TemplateError(f"{where}: expected 'set NAME = EXPR'")
            self.emit(depth, f"_vars[{m.group(1)!r}] = {_expr(m.group(2), self.scope, where)}")
        elif word == "macro":
            m = re.fullmatch(r"([A-Za-z_]\w*)\s*\((.*)\)", rest, re.S)
            if not m:
                raise TemplateError(f"{where}: expected 'macro NAME(ARGS)'")
            self.scope.frames.append({})
            params = []
            for p in filter(None, (x.strip() for x in m.group(2).split(","))):
                pname, _, default = p.partition("=")
                py = self.scope.bind(pname.strip())
                params.append(f"{py}={_expr(default, self.scope, where)}" if default else py)
            self.emit(depth, f"def m_{m.group(1)}({', '.join(params)}):")
            self.emit(depth + 1, "_o = []")
            self.emit(depth + 1, "_w = _o.append")
            self.body(depth + 1, ("endmacro",))
            self.emit(depth + 1, "return ''.join(_o)")
            self.scope.frames.pop()
            self.emit(depth, f"_vars[{m.group(1)!r}] = m_{m.group(1)}")
            if depth == 1:
                self.macros.append(m.group(1))
        elif word == "import":
            m = re.fullmatch(r"""(["'])(.+?)\1\s+as\s+([A-Za-z_]\w*)""", rest)
            if not m:
                raise TemplateError(f"{where}: expected 'import \"FILE\" as NAME'")
            self.emit(depth, f"_vars[{m.group(3)!r}] = _import({m.group(2)!r})")
        else:
            raise TemplateError(f"{where}: unknown tag {{% {word} %}}")

    def module(self) -> str:
        self.emit(0, "def _render(_ctx, _rt):")
        self.emit(1, "_vars = {}")
        self.emit(1, "_look, _attr, _cat, _str, _loop, _filters, _import = _rt.bind(_vars, _ctx)")
        self.emit(1, "_o = []")
        self.emit(1, "_w = _o.append")
        self.body(1, ())
        self.emit(1, f"return ''.join(_o), {{k: _vars[k] for k in {self.macros!r}}}")
        return "\n".join(self.lines) + "\n"


def compile_source(src: str, name: str) -> str:
    """The Python module source a template compiles to (``_render(ctx, runtime)``)."""
    return _Compiler(_lex(src, name), name).module()


# --- running ---------------------------------------------------------------------------------------------------

class _Loop:
    __slots__ = ("index0", "length")

    def __init__(self, index0: int, length: int) -> None:
        self.index0, self.length = index0, length

    @property
    def index(self) -> int:
        return self.index0 + 1

    @property
    def first(self) -> bool:
        return self.index0 == 0

    @property
    def last(self) -> bool:
        return self.index0 == self.length - 1


def _loop(items: Iterable) -> Iterable:
    seq = list(items)
    return ((_Loop(i, len(seq)), x) for i, x in enumerate(seq))


def _attr(obj: Any, name: str) -> Any:
    try:
        return getattr(obj, name)
    except AttributeError:
        pass
    try:
        return obj[name]
    except (TypeError, LookupError):
        raise UndefinedError(f"{type(obj).__name__!r} object has no attribute {name!r}") from None


def _cat(a: object, b: object) -> str:
    return f"{a}{b}"


class _Namespace:
    def __init__(self, macros: dict[str, Callable]) -> None:
        self.__dict__.update(macros)


class Template:
    """A compiled template: ``render(**context)`` returns the text."""

    def __init__(self, env: Environment, code: Any, name: str) -> None:
        self.env, self.name = env, name
        ns: dict = {}
        exec(code, ns)
        self._render = ns["_render"]

    def render(self, **context: Any) -> str:
        return self._run(context)[0]

    def _run(self, context: dict) -> tuple[str, dict]:
        return self._render({**self.env.globals, **context}, _Runtime(self.env))


class _Runtime:
    def __init__(self, env: Environment) -> None:
        self.env = env

    def bind(self, variables: dict, ctx: dict) -> tuple:
        def look(name: str) -> Any:
            if name in variables:
                return variables[name]
            if name in ctx:
                return ctx[name]
            raise UndefinedError(f"{name!r} is undefined")

        def import_(name: str) -> _Namespace:
            return _Namespace(self.env.get_template(name)._run({})[1])

        return look, _attr, _cat, str, _loop, self.env.filters, import_


class Environment:
    """Templates from ``directory`` (compiled code cached in ``cache_dir``), with ``filters`` and ``globals``."""

    def __init__(self, directory: Path | None, *, filters: dict[str, Callable] | None = None,
                 globals: dict[str, Any] | None = None, cache_dir: Path | None = None) -> None:
        self.directory, self.cache_dir = directory, cache_dir
        self.filters: dict[str, Callable] = {"join": _join, "indent": _indent, **(filters or {})}
        self.globals: dict[str, Any] = dict(globals or {})
        self._templates: dict[str, Template] = {}

    def get_template(self, name: str) -> Template:
        if name not in self._templates:
            if self.directory is None or "/" in name or name.startswith("."):
                raise TemplateError(f"no template {name!r}")
            src = (self.directory / name).read_text(encoding="utf-8")
            self._templates[name] = Template(self, self._code(src, name), name)
        return self._templates[name]

    def from_string(self, src: str) -> Template:
        return Template(self, compile(compile_source(src, "<string>"), "<string>", "exec"), "<string>")

    def _code(self, src: str, name: str) -> Any:
        """The template's compiled code, from the cache when its source is unchanged (keyed by its hash)."""
        path = None
        if self.cache_dir is not None:
            # Code objects are only valid for the interpreter and the compiler that made them: a cache shared
            # by two Pythons (tox, pipx, several venvs under one home) must never hand one the other's code.
            key = sha256_hex(f"{_COMPILER_KEY}\0{name}\0{src}".encode())[:32]
            path = self.cache_dir / f"{key}.code"
            try:
                with open(path, "rb") as f:
                    code = marshal.load(f)
                if isinstance(code, types.CodeType):
                    return code
            except (OSError, ValueError, EOFError, TypeError):
                pass
        code = compile(compile_source(src, name), str(self.directory / name if self.directory else name), "exec")
        if path is not None:
            from envkit.errors import EnvkitError
            from envkit.safeio import replace_file

            # Atomic: a concurrent run reads the old file or the new one; a cache that cannot be written is no cache.
            with contextlib.suppress(OSError, EnvkitError):
                replace_file(path, marshal.dumps(code))
        return code


def _join(value: Iterable, d: str = "") -> str:
    return d.join(map(str, value))


def _indent(s: str, width: int | str = 4, first: bool = False, blank: bool = False) -> str:
    """Jinja2's ``indent``: every line but the first (``first=True``: that too), blank lines left alone."""
    indention = width if isinstance(width, str) else " " * width
    s += "\n"  # as Jinja2 does, so a trailing newline survives splitlines
    if blank:
        rv = ("\n" + indention).join(s.splitlines())
    else:
        lines = s.splitlines()
        rv = lines.pop(0)
        if lines:
            rv += "\n" + "\n".join(indention + line if line else line for line in lines)
    return indention + rv if first else rv
