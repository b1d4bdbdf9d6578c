"""Static check that a training script survives the ``spawn`` start method (never runs the script).

Windows and macOS start DataLoader workers with ``spawn`` (and Python 3.14
makes ``forkserver`` the Linux default): each worker imports the main script
afresh and receives the dataset, ``collate_fn`` and ``worker_init_fn`` by
pickling. PyTorch's docs (data.md, "Platform-specific behaviors") therefore
ask for two things, which this module checks on the AST:

1. A ``DataLoader(...)`` with workers (``num_workers`` > 0, or not a literal)
   must not run at import time: not in unguarded module-level code, nor in a
   function that unguarded module-level code calls (followed transitively
   through module-level functions; a best effort: methods and dynamic calls
   are not followed). Code under ``if __name__ == "__main__":`` is fine.
2. What is pickled must be importable by name: no lambdas, and no functions or
   classes defined inside another function, for ``collate_fn``,
   ``worker_init_fn`` or the dataset (including ``Dataset`` subclasses
   defined inside functions).

Loaders with ``num_workers=0`` pickle nothing and start no process, so they pass.

One more check, a warning rather than a failure: a loader with ``pin_memory=True`` pays only
when its batches are copied with ``non_blocking=True`` (PyTorch tutorial "A guide on good usage
of non_blocking and pin_memory()"; a blocking ``.to(device)`` waits for the copy, so the pinned
pages buy little). A ``for`` loop over such a loader (directly, or through ``enumerate``/``tqdm``
-style wrappers) whose body moves a batch with ``.to(...)``/``.cuda(...)`` without
``non_blocking=True`` is named by line (kind ``blocking_copy``).

Example:
    >>> src = "from torch.utils.data import DataLoader\\nDataLoader(ds, num_workers=2)\\n"
    >>> [(f.line, f.kind) for f in check_source(src)]
    [(2, 'unguarded')]
"""

from __future__ import annotations

import ast
import errno
import io
import os
import stat
import tokenize
from dataclasses import dataclass

# DataLoader's positional parameters (torch/utils/data/dataloader.py), by name.
_POSITIONAL = ("dataset", "batch_size", "shuffle", "sampler", "batch_sampler", "num_workers",
               "collate_fn", "pin_memory", "drop_last", "timeout", "worker_init_fn")
GUARD_FIX = ('move the code that builds and iterates the DataLoader into a function (e.g. main()) and call it '
             'only under `if __name__ == "__main__":`')


@dataclass(frozen=True)
class Finding:
    line: int
    kind: str       # unguarded | unpicklable | syntax (failures) | blocking_copy (a warning)
    message: str
    fix: str

    def describe(self) -> str:
        return f"line {self.line}: {self.message}"

    @property
    def is_warning(self) -> bool:
        return self.kind in WARNING_KINDS


WARNING_KINDS = frozenset({"blocking_copy"})
NON_BLOCKING_FIX = ("copy batches from a pin_memory=True loader with .to(device, non_blocking=True) (or "
                    ".cuda(non_blocking=True)); otherwise set pin_memory=False")
# torch dtypes: `x.to(torch.float16)` converts, it copies nothing to a device.
_DTYPES = frozenset("float float16 float32 float64 half bfloat16 double int int8 int16 int32 int64 long uint8 bool "
                    "short complex64 complex128 cfloat".split())


SCRIPT_MAX = 8 * 1024 * 1024  # a training script; larger is not a script (README, "Limits")


def _read_script(path) -> bytes:
    """At most SCRIPT_MAX bytes of a regular file, opened without blocking; OSError otherwise."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        too_big = OSError(errno.EFBIG, f"larger than {SCRIPT_MAX // (1024 * 1024)} MiB, not a training script",
                          str(path))
        if st.st_size > SCRIPT_MAX:
            raise too_big
        with os.fdopen(os.dup(fd), "rb") as f:
            raw = f.read(SCRIPT_MAX + 1)
        if len(raw) > SCRIPT_MAX:  # it grew after the fstat: never check a cut-off script
            raise too_big
        return raw
    finally:
        os.close(fd)


def check_file(path) -> list[Finding]:
    """Read ``path`` and check it, decoding it as Python does (UTF-8, or its PEP 263 coding line).

    Raises :class:`OSError` when the file cannot be read (the caller reports that).
    """
    raw = _read_script(path)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
    except SyntaxError as e:  # an unknown coding declaration, or a BOM that contradicts it
        return [Finding(getattr(e, "lineno", None) or 1, "syntax", f"the script's encoding is invalid: {e.msg}",
                        "save it as UTF-8 and drop the coding line")]
    try:
        source = raw.decode(encoding)
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        what = "UTF-8" if encoding in ("utf-8", "utf-8-sig") else f"valid {encoding} (its coding line)"
        return [Finding(line, "syntax", f"the script is not {what} text (undecodable byte 0x{raw[e.start]:02x})",
                        "save it as UTF-8")]
    return check_source(source, str(path))


def check_source(source: str, filename: str = "<script>") -> list[Finding]:
    """All findings for ``source``, sorted by line; empty when the script is spawn-safe."""
    try:
        tree = ast.parse(source, filename)
    except SyntaxError as e:
        return [Finding(e.lineno or 1, "syntax", f"Python cannot parse the script: {e.msg}",
                        "fix the syntax error (python -m py_compile SCRIPT shows it)")]
    return sorted(_Checker(tree).run(), key=lambda f: (f.line, f.kind))


def _is_main_guard(node: ast.AST) -> bool:
    if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare):
        return False
    t = node.test
    if len(t.ops) != 1 or not isinstance(t.ops[0], ast.Eq):
        return False
    sides = [t.left, t.comparators[0]]
    names = [s for s in sides if isinstance(s, ast.Name) and s.id == "__name__"]
    consts = [s for s in sides if isinstance(s, ast.Constant) and s.value == "__main__"]
    return bool(names and consts)


def import_aliases(tree: ast.Module) -> dict[str, str]:
    """Local names bound by imports (anywhere) and by module-level ``X = Y`` re-bindings, to dotted names.

    >>> t = ast.parse("import torch.utils.data as tud\\nfrom torch.utils.data import DataLoader as DL\\nL = DL\\n")
    >>> sorted(import_aliases(t).items())
    [('DL', 'torch.utils.data.DataLoader'), ('L', 'torch.utils.data.DataLoader'), ('tud', 'torch.utils.data')]
    """
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    aliases[a.asname] = a.name
                else:  # `import torch.utils.data` binds `torch`
                    top = a.name.split(".")[0]
                    aliases.setdefault(top, top)
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            for a in node.names:
                if a.name != "*":
                    aliases[a.asname or a.name] = f"{base}.{a.name}" if base else a.name
    for stmt in tree.body:  # `DL = DataLoader`, `Loader = tud.DataLoader`
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, (ast.Name, ast.Attribute)):
            target = dotted_name(stmt.value, aliases)
            for t in stmt.targets:
                if isinstance(t, ast.Name) and target and target != t.id:
                    aliases[t.id] = target
    return aliases


def dotted_name(node: ast.AST, aliases: dict[str, str]) -> str | None:
    """``tud.DataLoader`` -> ``torch.utils.data.DataLoader`` through ``aliases``; None for a non-name."""
    if isinstance(node, ast.Name):
        return aliases.get(node.id, node.id)
    if isinstance(node, ast.Attribute):
        base = dotted_name(node.value, aliases)
        return f"{base or '?'}.{node.attr}"
    return None


def _is_named(qualified: str | None, name: str) -> bool:
    return qualified is not None and (qualified == name or qualified.endswith("." + name))


def _is_dataloader(call: ast.Call, aliases: dict[str, str] | None = None) -> bool:
    """``DataLoader(...)``, ``torch.utils.data.DataLoader(...)``, or any alias of it (``DL(...)``, ``tud.DataLoader``)."""
    return _is_named(dotted_name(call.func, aliases or {}), "DataLoader")


def _arg(call: ast.Call, name: str) -> ast.AST | None:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    i = _POSITIONAL.index(name)
    if i < len(call.args) and not any(isinstance(a, ast.Starred) for a in call.args[: i + 1]):
        return call.args[i]
    return None


def workers_of(call: ast.Call) -> int | None:
    """``num_workers`` as a literal int, 0 when absent, None when it cannot be known statically."""
    node = _arg(call, "num_workers")
    if node is None:
        unknowable = any(kw.arg is None for kw in call.keywords) or any(isinstance(a, ast.Starred) for a in call.args)
        return None if unknowable else 0
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    return None


def _shallow_calls(stmts) -> list[ast.Call]:
    """Calls executed when ``stmts`` run: not those inside nested def/lambda bodies (class bodies run)."""
    out: list[ast.Call] = []
    stack = list(stmts)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            # Decorators and default values run at definition time; the body does not.
            stack.extend(node.decorator_list)
            stack.extend(node.args.defaults + [d for d in node.args.kw_defaults if d is not None])
            continue
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, ast.Call):
            out.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return out


def _loop_source(node: ast.AST) -> str | None:
    """The loader a ``for`` iterates: ``loader``, ``self.loader``, or the first argument of a wrapper call
    (``enumerate(loader)``, ``tqdm(loader)``, ``zip(loader, ...)``)."""
    while isinstance(node, ast.Call) and node.args:
        node = node.args[0]
    return dotted_name(node, {}) if isinstance(node, (ast.Name, ast.Attribute)) else None


def _is_blocking_move(node: ast.AST, batch: set[str]) -> bool:
    """``x.to(device)`` / ``batch["img"].cuda()`` on a loop variable, without ``non_blocking=True``."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("to", "cuda")):
        return False
    root = node.func.value
    while isinstance(root, (ast.Attribute, ast.Subscript)):
        root = root.value
    if not (isinstance(root, ast.Name) and root.id in batch):
        return False
    nb = next((kw.value for kw in node.keywords if kw.arg == "non_blocking"), None)
    if nb is not None:
        return isinstance(nb, ast.Constant) and nb.value is False  # a variable: cannot tell, say nothing
    if any(kw.arg is None for kw in node.keywords) or len(node.args) > 2:
        return False  # **kwargs or a positional non_blocking: cannot tell
    if node.func.attr == "to" and node.args:
        first = node.args[0]
        if isinstance(first, ast.Attribute) and first.attr in _DTYPES:
            return False  # a dtype conversion, not a device copy
        if isinstance(first, ast.Name) and first.id in batch:
            return False  # `.to(other_tensor)`: cannot tell
    return True


class _Checker:
    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.aliases = import_aliases(tree)
        self.functions = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        self.module_lambdas = {t.id: n.lineno for n in tree.body if isinstance(n, ast.Assign)
                               and isinstance(n.value, ast.Lambda) for t in n.targets if isinstance(t, ast.Name)}
        self.parents: dict[ast.AST, ast.AST] = {}
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node

    def run(self) -> list[Finding]:
        findings = self._unguarded()
        loaders = [n for n in ast.walk(self.tree) if isinstance(n, ast.Call) and _is_dataloader(n, self.aliases)]
        spawning = [c for c in loaders if workers_of(c) != 0]
        for call in spawning:
            findings.extend(self._pickling(call))
        if spawning:
            findings.extend(self._nested_datasets())
        findings.extend(self._blocking_copies(loaders))
        return findings

    # -- pin_memory=True batches copied without non_blocking=True -----------------------------

    def _blocking_copies(self, loaders: list[ast.Call]) -> list[Finding]:
        pinned: dict[str, int] = {}  # loader variable (dotted) -> line of its DataLoader(...)
        for call in loaders:
            flag = _arg(call, "pin_memory")
            parent = self.parents.get(call)
            if isinstance(flag, ast.Constant) and flag.value is True and isinstance(parent, ast.Assign):
                for t in parent.targets:
                    name = dotted_name(t, {})
                    if name:
                        pinned[name] = call.lineno
        out: list[Finding] = []
        if not pinned:
            return out
        for loop in ast.walk(self.tree):
            if not isinstance(loop, (ast.For, ast.AsyncFor)):
                continue
            source = _loop_source(loop.iter)
            if source not in pinned:
                continue
            batch = {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)}
            for node in ast.walk(ast.Module(body=loop.body, type_ignores=[])):
                if isinstance(node, ast.expr) and _is_blocking_move(node, batch):
                    text = ast.unparse(node)
                    out.append(Finding(node.lineno, "blocking_copy",
                                       f"`{text}` copies a batch from {source} (DataLoader with pin_memory=True, line "
                                       f"{pinned[source]}) without non_blocking=True, so pinning buys little",
                                       NON_BLOCKING_FIX))
        return out

    # -- 1. import-time DataLoaders ------------------------------------------------------------

    def _unguarded_stmts(self, body) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for stmt in body:
            if _is_main_guard(stmt):
                out.extend(self._unguarded_stmts(stmt.orelse))
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out.append(stmt)  # for its decorators and defaults only (see _shallow_calls)
            elif isinstance(stmt, ast.ClassDef):
                out.extend(ast.Expr(d) for d in stmt.decorator_list)  # as statements, for the walk
                out.extend(self._unguarded_stmts(stmt.body))
            else:
                out.append(stmt)
        return out

    def _unguarded(self) -> list[Finding]:
        findings: list[Finding] = []
        seen_funcs: set[str] = set()
        # (calls to inspect, the chain of "f() called at line N" that reached them)
        queue: list[tuple[list[ast.Call], tuple[str, ...]]] = [(_shallow_calls(self._unguarded_stmts(self.tree.body)), ())]
        while queue:
            calls, via = queue.pop(0)
            for call in sorted(calls, key=lambda c: c.lineno):
                if _is_dataloader(call, self.aliases):
                    n = workers_of(call)
                    if n == 0:
                        continue
                    how = f"num_workers={n}" if n is not None else "num_workers that is not a literal 0"
                    where = "at import time" if not via else "at import time, through " + " -> ".join(via)
                    findings.append(Finding(
                        call.lineno, "unguarded",
                        f"DataLoader({how}) runs {where}, outside `if __name__ == \"__main__\":`; under spawn "
                        "(Windows, macOS) each worker re-imports the script and would start loaders of its own "
                        "(RuntimeError: 'An attempt has been made to start a new process before the current "
                        "process has finished its bootstrapping phase')",
                        GUARD_FIX))
                elif isinstance(call.func, ast.Name) and call.func.id in self.functions \
                        and call.func.id not in seen_funcs:
                    seen_funcs.add(call.func.id)
                    fn = self.functions[call.func.id]
                    queue.append((_shallow_calls(fn.body), via + (f"{fn.name}() called at line {call.lineno}",)))
        return findings

    # -- 2. what gets pickled ------------------------------------------------------------------

    def _enclosing_functions(self, node: ast.AST) -> list[ast.AST]:
        out: list[ast.AST] = []
        while node in self.parents:
            node = self.parents[node]
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                out.append(node)
        return out

    def _local_defs(self, fn: ast.AST) -> dict[str, tuple[str, int, ast.AST]]:
        """Names bound inside ``fn`` to a def, class or lambda (none of which pickle by reference)."""
        found: dict[str, tuple[str, int, ast.AST]] = {}
        for node in ast.walk(fn):
            if node is fn:
                continue
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.setdefault(node.name, ("function", node.lineno, node))
            elif isinstance(node, ast.ClassDef):
                found.setdefault(node.name, ("class", node.lineno, node))
            elif isinstance(node, ast.Assign):
                for t in node.targets:
                    if isinstance(t, ast.Name):
                        if isinstance(node.value, ast.Lambda):
                            found.setdefault(t.id, ("lambda", node.lineno, node))
                        elif isinstance(node.value, ast.Call):
                            found.setdefault(t.id, ("value", node.lineno, node.value))
        return found

    def _resolve(self, name: str, scopes: list[ast.AST]) -> tuple[str, int, ast.AST | None] | None:
        for fn in scopes:
            hit = self._local_defs(fn).get(name)
            if hit:
                return hit
        if name in self.module_lambdas:
            return ("lambda", self.module_lambdas[name], None)
        return None

    def _pickling(self, call: ast.Call) -> list[Finding]:
        findings = []
        scopes = self._enclosing_functions(call)
        for param in ("collate_fn", "worker_init_fn"):
            node = _arg(call, param)
            if isinstance(node, ast.Lambda):
                findings.append(self._unpicklable(call, param, None, "lambda", node.lineno))
            elif isinstance(node, ast.Name):
                hit = self._resolve(node.id, scopes)
                if hit and hit[0] in ("function", "lambda", "class"):
                    findings.append(self._unpicklable(call, param, node.id, hit[0], hit[1]))
        dataset = _arg(call, "dataset")
        if isinstance(dataset, ast.Name):
            hit = self._resolve(dataset.id, scopes)
            dataset = hit[2] if hit and hit[0] == "value" else None
        if isinstance(dataset, ast.Call) and isinstance(dataset.func, ast.Name):
            hit = self._resolve(dataset.func.id, scopes)
            if hit and hit[0] == "class":
                findings.append(self._unpicklable(call, "dataset", dataset.func.id, "instance", hit[1]))
        return findings

    @staticmethod
    def _unpicklable(call: ast.Call, param: str, name: str | None, kind: str, defined: int) -> Finding:
        """One finding for ``param`` of the DataLoader at ``call``, naming the object and where it is defined.

        ``kind``: ``lambda`` (``name`` None for an inline one), ``function`` or ``class`` (defined inside a
        function), or ``instance`` (of ``name``, a class defined inside a function).
        """
        at = "" if defined == call.lineno else f" at line {defined}"
        if kind == "lambda" and name is None:
            what = f"a lambda defined{at}" if at else "a lambda"
            fix = f"{param}=lambda at line {defined}: define a function at module level and pass its name"
        elif kind == "lambda":
            what = f"{name!r}, a lambda defined{at}" if at else f"{name!r}, a lambda"
            fix = (f"{param}={name}, a lambda at line {defined}: define {name} with def at module level and "
                   "pass its name")
        elif kind == "instance":
            what = f"an instance of {name!r}, a class defined inside a function{at}"
            fix = f"{param}={name}(...), class {name} at line {defined}: move the class {name} to module level"
        else:
            what = f"{name!r}, a {kind} defined inside a function{at}"
            fix = (f"{param}={name}, a {kind} defined inside a function at line {defined}: move "
                   f"{'def' if kind == 'function' else 'class'} {name} to module level and pass its name")
        return Finding(call.lineno, "unpicklable",
                       f"DataLoader {param} is {what}; under spawn it is pickled by name to each worker, and "
                       "this cannot be (AttributeError: Can't pickle local object / Can't get attribute)", fix)

    def _nested_datasets(self) -> list[Finding]:
        out = []
        for node in ast.walk(self.tree):
            if not isinstance(node, ast.ClassDef) or not self._enclosing_functions(node):
                continue
            bases = [dotted_name(b, self.aliases) or "" for b in node.bases]
            if any(b.endswith("Dataset") for b in bases):
                out.append(Finding(node.lineno, "unpicklable",
                                   f"Dataset subclass {node.name!r} is defined inside a function; DataLoader workers "
                                   "started with spawn cannot unpickle it",
                                   f"class {node.name} at line {node.lineno}: move it to module level (a top-level "
                                   "class) and pass an instance of it"))
        return out
