"""Evaluate path expressions in research code statically, remembering where each value came from.

Research scripts build paths from string constants, argparse defaults, function-parameter defaults,
``os.path.join``, ``pathlib`` ``/`` and ``.joinpath``, ``.parent``/``.parents[k]``, f-strings,
``str.format`` (of a literal or a named template), ``%`` formatting, ``"/".join([...])``,
``os.getcwd()``/``Path.cwd()`` and ``__file__``. To rewrite a program so it reads from
``datasets/`` and writes to ``pred_results/`` we need two things for every read/write call: the path
value it will see (to find the file in the repository) and the *provenance chain* -- the AST nodes
the value was built from, innermost (the root literal) first -- so the rewriter can replace exactly
one node of that chain with a new literal and leave the program's logic alone.

Name lookup is deliberately simple and scope-aware: the nearest preceding assignment in the
enclosing function, then in the module; a name bound more than once to *different* values with no
preceding assignment to choose is treated as unknown rather than guessed.
"""

from __future__ import annotations

import ast
import posixpath
from dataclasses import dataclass, field

__all__ = ["SCRIPT_DIR", "PathEvaluator", "PathValue"]

SCRIPT_DIR = "<script_dir>"
"""Stands for the directory of the analysed file (``os.path.dirname(__file__)`` and friends)."""

_PATH_WRAPPERS = {
    "Path",
    "PurePath",
    "PosixPath",
    "str",
    "abspath",
    "realpath",
    "normpath",
    "expanduser",
    "fspath",
    "resolve",
    "absolute",
    "expandvars",
}
_MAX_DEPTH = 40


@dataclass
class PathValue:
    """A statically known string value and the nodes it was built from (root literal first)."""

    value: str
    chain: list[tuple[ast.AST, str]] = field(default_factory=list)

    def extend(self, node: ast.AST, value: str) -> PathValue:
        return PathValue(value, [*self.chain, (node, value)])


def _join(*parts: str) -> str:
    out = posixpath.join(*parts)
    return out


class _Scopes(ast.NodeVisitor):
    """Collect assignments per scope, function-parameter defaults and argparse defaults."""

    def __init__(self) -> None:
        self.assigns: dict[ast.AST | None, dict[str, list[tuple[int, ast.expr]]]] = {None: {}}
        self.params: dict[ast.AST, dict[str, ast.expr | None]] = {}
        self.argparse: dict[str, ast.expr] = {}
        self.parent_fn: dict[ast.AST, ast.AST | None] = {}
        self._stack: list[ast.AST] = []

    def _scope(self) -> ast.AST | None:
        return self._stack[-1] if self._stack else None

    def _bind(self, name: str, line: int, value: ast.expr) -> None:
        self.assigns.setdefault(self._scope(), {}).setdefault(name, []).append((line, value))

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        args = node.args
        positional = [*args.posonlyargs, *args.args]
        defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults)) + list(
            args.defaults
        )
        params: dict[str, ast.expr | None] = {a.arg: d for a, d in zip(positional, defaults, strict=True)}
        for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True):
            params[a.arg] = d
        self.params[node] = params
        self.assigns.setdefault(node, {})
        self._stack.append(node)
        self.generic_visit(node)
        self._stack.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            if isinstance(target, ast.Name):
                self._bind(target.id, node.lineno, node.value)
            elif isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                for t, v in zip(target.elts, node.value.elts, strict=False):
                    if isinstance(t, ast.Name):
                        self._bind(t.id, node.lineno, v)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if isinstance(node.target, ast.Name) and node.value is not None:
            self._bind(node.target.id, node.lineno, node.value)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        # parser.add_argument("--out-dir", "-o", default="results", dest=...)
        if isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument":
            kws = {k.arg: k.value for k in node.keywords if k.arg}
            dest = None
            if isinstance(kws.get("dest"), ast.Constant) and isinstance(kws["dest"].value, str):
                dest = kws["dest"].value
            else:
                names = [
                    a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)
                ]
                longs = [n for n in names if n.startswith("--")]
                plain = [n for n in names if not n.startswith("-")]
                chosen = longs[0] if longs else (plain[0] if plain else (names[0] if names else None))
                if chosen:
                    dest = chosen.lstrip("-").replace("-", "_")
            if dest and "default" in kws:
                self.argparse[dest] = kws["default"]
        self.generic_visit(node)


class PathEvaluator:
    """Statically evaluate string/path expressions of one module."""

    def __init__(self, tree: ast.Module, file_path: str | None = None) -> None:
        """``file_path``: the analysed file's absolute path (what ``__file__`` means); unknown if None."""
        self.tree = tree
        self.file_path = file_path or posixpath.join(SCRIPT_DIR, "__file__")
        scopes = _Scopes()
        scopes.visit(tree)
        self._scopes = scopes
        self._fn_of: dict[ast.AST, ast.AST | None] = {}
        self._index(tree, None)
        self._call_index: dict[int, list[ast.Call] | None] | None = None

    def _index(self, node: ast.AST, fn: ast.AST | None) -> None:
        for child in ast.iter_child_nodes(node):
            self._fn_of[child] = fn
            self._index(child, child if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) else fn)

    @property
    def argparse_defaults(self) -> dict[str, ast.expr]:
        return self._scopes.argparse

    def function_of(self, node: ast.AST) -> ast.AST | None:
        return self._fn_of.get(node)

    # -- evaluation -----------------------------------------------------------------------------
    def evaluate(self, node: ast.AST | None, depth: int = 0) -> PathValue | None:
        """The value of ``node`` if it is statically known (strings and paths only), else None."""
        if node is None or depth > _MAX_DEPTH:
            return None
        d = depth + 1
        if isinstance(node, ast.Constant):
            return PathValue(node.value, [(node, node.value)]) if isinstance(node.value, str) else None
        if isinstance(node, ast.Name):
            if node.id == "__file__":
                return PathValue(self.file_path, [(node, self.file_path)])
            return self._lookup(node, d)
        if isinstance(node, ast.Attribute):
            return self._attribute(node, d)
        if isinstance(node, ast.JoinedStr):
            return self._fstring(node, d)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Div):
            left = self.evaluate(node.left, d)
            right = self.evaluate(node.right, d)
            if left is None or right is None:
                return None
            value = (
                left.value + right.value if isinstance(node.op, ast.Add) else _join(left.value, right.value)
            )
            return left.extend(node, value)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            return self._percent(node, d)
        if isinstance(node, ast.Subscript):
            return self._split(node, d) or self._parents(node, d)
        if isinstance(node, ast.Call):
            return self._call(node, d)
        return None

    def leading(self, node: ast.AST | None, depth: int = 0) -> PathValue | None:
        """The statically known *leftmost part* of a path expression that is not known as a whole.

        ``'models' + os.sep + name``, ``os.path.join(DATA, f)``, ``DATA / name`` and a variable
        assigned one of those all start with a folder the program reads from; this returns that
        part (with its provenance chain, so it can be rewritten), or None. Only prefixes that
        end a path component are useful, which the caller checks against the repository.
        """
        if node is None or depth > _MAX_DEPTH:
            return None
        known = self.evaluate(node)
        if known is not None:
            return known
        d = depth + 1
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Div):
            return self.leading(node.left, d)
        if isinstance(node, ast.Call) and node.args:
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name in ("join", "Path", "PurePath", "str", "abspath", "realpath", "normpath", "fspath"):
                return self.leading(node.args[0], d)
            if name == "joinpath" and isinstance(func, ast.Attribute):
                return self.leading(func.value, d)
            return None
        if isinstance(node, ast.Name):
            expr = self.single_assignment(node)
            return self.leading(expr, d) if expr is not None else None
        return None

    def leading_folder(self, node: ast.AST | None, depth: int = 0) -> PathValue | None:
        """The statically known *folder* a path built at run time lies in, or None.

        ``os.path.join(OUT, name)``, ``OUT / f"{name}.csv"``, ``OUT + "/" + name`` and
        ``f"{OUT}/{name}.csv"`` all write inside ``OUT``: the known part ends at a separator. A
        known part that ends inside a file name (``"results/subj_" + n``) is not returned: no
        literal could stand for its folder alone.
        """
        if node is None or depth > _MAX_DEPTH or self.evaluate(node) is not None:
            return None
        d = depth + 1
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            left = self.evaluate(node.left)
            return left if left is not None else self.leading_folder(node.left, d)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left = self.evaluate(node.left)
            if left is not None:
                return left if left.value.endswith("/") else None
            return self.leading_folder(node.left, d)
        if isinstance(node, ast.JoinedStr) and len(node.values) > 1:
            head, nxt = node.values[0], node.values[1]
            if isinstance(head, ast.FormattedValue) and head.format_spec is None and head.conversion == -1:
                known = self.evaluate(head.value)
                if known is not None and isinstance(nxt, ast.Constant) and str(nxt.value).startswith("/"):
                    return known
            return None
        if isinstance(node, ast.Call) and node.args:
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if (
                name == "format"
                and isinstance(func, ast.Attribute)
                and isinstance(func.value, ast.Constant)
                and str(func.value.value).startswith(("{}/", "{0}/"))
            ):
                return self.evaluate(node.args[0])  # "{}/{}".format(FOLDER, name)
            if name == "join" and len(node.args) > 1:
                first = self.evaluate(node.args[0])
                return first if first is not None else self.leading_folder(node.args[0], d)
            if name in ("Path", "PurePath", "str", "abspath", "realpath", "normpath", "fspath"):
                return self.leading_folder(node.args[0], d)
            return None
        if isinstance(node, ast.Name):
            expr = self.single_assignment(node)
            return self.leading_folder(expr, d) if expr is not None else None
        return None

    def single_assignment(self, node: ast.Name) -> ast.expr | None:
        """The one expression ``node`` can hold here (nearest earlier assignment in its own scope,
        or the only assignment in an enclosing one), else None."""
        fn = self._fn_of.get(node)
        while True:
            defs = self._scopes.assigns.get(fn, {}).get(node.id)
            if defs:
                if fn is self._fn_of.get(node):
                    before = [e for line, e in defs if line < getattr(node, "lineno", 0)]
                    if before:
                        return before[-1]
                return defs[0][1] if len(defs) == 1 else None
            if fn is None or node.id in self._scopes.params.get(fn, {}):
                return None
            fn = self._fn_of.get(fn)

    def _percent(self, node: ast.BinOp, depth: int) -> PathValue | None:
        """``"%s/x.csv" % DATA`` and ``"%s/%s" % (A, B)``: printf-style formatting of known strings."""
        template = self.evaluate(node.left, depth)
        if template is None:
            return None
        items = node.right.elts if isinstance(node.right, ast.Tuple) else [node.right]
        values: list[str | int | float] = []
        for item in items:
            if isinstance(item, ast.Constant) and isinstance(item.value, int | float) and not isinstance(
                item.value, bool
            ):
                values.append(item.value)
                continue
            pv = self.evaluate(item, depth)
            if pv is None:
                return None
            values.append(pv.value)
        try:
            value = template.value % tuple(values)
        except (TypeError, ValueError, KeyError):
            return None
        return PathValue(value, [(node, value)])

    def _split(self, node: ast.Subscript, depth: int) -> PathValue | None:
        """``os.path.split(p)[0]`` (the folder, as ``dirname``) and ``[1]`` (the name)."""
        call = node.value
        if not (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and call.func.attr == "split"
            and isinstance(call.func.value, ast.Attribute)
            and call.func.value.attr == "path"
            and len(call.args) == 1
            and isinstance(node.slice, ast.Constant)
            and node.slice.value in (0, 1, -1)
        ):
            return None
        base = self.evaluate(call.args[0], depth)
        if base is None:
            return None
        head, tail = posixpath.split(base.value)
        return base.extend(node, head) if node.slice.value == 0 else PathValue(tail, [(node, tail)])

    def _parents(self, node: ast.Subscript, depth: int) -> PathValue | None:
        """``Path(__file__).parents[1]``: the ancestor ``k + 1`` levels up."""
        if not (
            isinstance(node.value, ast.Attribute)
            and node.value.attr == "parents"
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, int)
            and not isinstance(node.slice.value, bool)
            and node.slice.value >= 0
        ):
            return None
        base = self.evaluate(node.value.value, depth)
        if base is None:
            return None
        value = base.value
        for _ in range(node.slice.value + 1):
            value = posixpath.dirname(value)
        return base.extend(node, value)

    def _lookup(self, node: ast.Name, depth: int) -> PathValue | None:
        fn = self._fn_of.get(node)
        while True:
            # a function's own scope, then its enclosing scopes, then the module
            table = self._scopes.assigns.get(fn, {})
            if node.id in table:
                return self._choose(table[node.id], node, depth, same_scope=fn is self._fn_of.get(node))
            if fn is not None and node.id in self._scopes.params.get(fn, {}):
                return self._parameter(fn, node.id, depth)
            if fn is None:
                return None
            fn = self._fn_of.get(fn)

    def _parameter(self, fn: ast.AST, name: str, depth: int) -> PathValue | None:
        """The value a parameter holds on every call of its function in this module.

        ``def process(folder): os.listdir(folder)`` called once as ``process('data/raw')`` (or
        always with the same variable) reads ``data/raw``; without calls in the module the default
        is what runs. Calls that disagree, or pass the same text through different expressions,
        leave it unknown: a rewrite of one call's literal would leave the others reading the
        original path.
        """
        default = self._scopes.params[fn][name]
        calls = self._calls_of(fn)
        if calls is None:
            return None  # also passed around as a value (map(f, files)): its calls are not all seen
        if not calls:
            return self.evaluate(default, depth) if default is not None else None
        args = fn.args  # type: ignore[attr-defined]
        positional = [a.arg for a in args.posonlyargs + args.args]
        index = positional.index(name) if name in positional else None
        seen: PathValue | None = None
        for call in calls:
            if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
                return None
            arg: ast.AST | None = call.args[index] if index is not None and index < len(call.args) else None
            for kw in call.keywords:
                if kw.arg == name:
                    arg = kw.value
            pv = self.evaluate(arg if arg is not None else default, depth)
            if pv is None:
                return None
            if seen is None:
                seen = pv
            elif pv.value != seen.value or [id(n) for n, _v in pv.chain] != [id(n) for n, _v in seen.chain]:
                return None
        return seen

    def _calls_of(self, fn: ast.AST) -> list[ast.Call] | None:
        """Calls ``name(...)`` of a plain function defined once in this module (methods and
        functions defined twice are not followed: no calls). None when the function is also used
        as a value (``map(f, files)``, ``df.apply(f)``) besides direct calls: some calls are unseen."""
        if self._call_index is None:
            defs: dict[str, list[ast.AST]] = {}
            calls: dict[str, list[ast.Call]] = {}
            methods: set[int] = set()
            names: list[ast.Name] = []
            for node in ast.walk(self.tree):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    defs.setdefault(node.name, []).append(node)
                elif isinstance(node, ast.ClassDef):
                    methods.update(id(b) for b in node.body if isinstance(b, ast.FunctionDef | ast.AsyncFunctionDef))
                elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                    calls.setdefault(node.func.id, []).append(node)
                elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                    names.append(node)
            called = {id(c.func) for cs in calls.values() for c in cs}
            escaped = {n.id for n in names if id(n) not in called}
            self._call_index = {
                id(nodes[0]): None if name in escaped and calls.get(name) else calls.get(name, [])
                for name, nodes in defs.items()
                if len(nodes) == 1 and id(nodes[0]) not in methods
            }
        return self._call_index.get(id(fn), [])

    def _choose(
        self, defs: list[tuple[int, ast.expr]], use: ast.Name, depth: int, same_scope: bool
    ) -> PathValue | None:
        use_line = getattr(use, "lineno", 0)
        if same_scope:
            before = [d for d in defs if d[0] < use_line]
            if before:
                return self.evaluate(before[-1][1], depth)
        values = [self.evaluate(expr, depth) for _, expr in defs]
        known = [v for v in values if v is not None]
        if len(known) == len(values) and known and len({v.value for v in known}) == 1:
            return known[-1]
        return None

    def _attribute(self, node: ast.Attribute, depth: int) -> PathValue | None:
        # args.outdir -> the argparse default of "outdir"
        if isinstance(node.value, ast.Name) and node.attr in self._scopes.argparse:
            base = self.evaluate(node.value, depth)
            if base is None:
                found = self.evaluate(self._scopes.argparse[node.attr], depth)
                return found
        if node.attr == "parent":
            base = self.evaluate(node.value, depth)
            if base is not None:
                return base.extend(node, posixpath.dirname(base.value))
        return None

    def _fstring(self, node: ast.JoinedStr, depth: int) -> PathValue | None:
        pieces: list[str] = []
        first: PathValue | None = None
        for i, part in enumerate(node.values):
            if isinstance(part, ast.Constant) and isinstance(part.value, str):
                pieces.append(part.value)
                continue
            if (
                isinstance(part, ast.FormattedValue)
                and part.format_spec is None
                and part.conversion in (-1, 115)
            ):
                inner = self.evaluate(part.value, depth)
                if inner is None:
                    return None
                pieces.append(inner.value)
                if i == 0:
                    first = inner
                continue
            return None
        value = "".join(pieces)
        return first.extend(node, value) if first is not None else PathValue(value, [(node, value)])

    def _call(self, node: ast.Call, depth: int) -> PathValue | None:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name in ("join", "joinpath") and node.args:
            if name == "joinpath" and isinstance(func, ast.Attribute):
                parts_nodes = [func.value, *node.args]
            elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Constant):
                # "sep".join(items): a path only when the separator is "/" and the items are known
                if func.value.value != "/" or len(node.args) != 1:
                    return None
                seq = node.args[0]
                if not isinstance(seq, ast.List | ast.Tuple):
                    return None
                items = [self.evaluate(e, depth) for e in seq.elts]
                if not items or any(i is None for i in items):
                    return None
                value = "/".join(i.value for i in items if i is not None)
                return PathValue(value, [(node, value)])
            else:
                parts_nodes = list(node.args)
            parts = [self.evaluate(p, depth) for p in parts_nodes]
            if any(p is None for p in parts):
                return None
            values = [p.value for p in parts if p is not None]
            root_index = max(i for i, v in enumerate(values) if i == 0 or v.startswith("/"))
            root = parts[root_index]
            assert root is not None
            return root.extend(node, _join(*values[root_index:]))
        if name == "dirname" and node.args:
            base = self.evaluate(node.args[0], depth)
            return base.extend(node, posixpath.dirname(base.value)) if base is not None else None
        if name in ("getcwd", "cwd") and not node.args:
            return PathValue(".", [(node, ".")])  # tasks run from their own folder
        if name == "format" and isinstance(func, ast.Attribute):
            base = self.evaluate(func.value, depth)  # a literal or a named template string
            if base is None:
                return None
            args = [self.evaluate(a, depth) for a in node.args]
            kwargs = {k.arg: self.evaluate(k.value, depth) for k in node.keywords if k.arg}
            if any(a is None for a in args) or any(v is None for v in kwargs.values()):
                return None
            try:
                value = base.value.format(
                    *[a.value for a in args if a], **{k: v.value for k, v in kwargs.items() if v}
                )
            except (IndexError, KeyError, ValueError):
                return None
            return PathValue(value, [(node, value)])
        if name in _PATH_WRAPPERS:
            if (
                isinstance(func, ast.Attribute)
                and not node.args
                and name in ("resolve", "absolute", "expanduser")
            ):
                base = self.evaluate(func.value, depth)
                return base.extend(node, base.value) if base is not None else None
            if not node.args:
                return None
            parts = [self.evaluate(a, depth) for a in node.args]
            if any(p is None for p in parts):
                return None
            values = [p.value for p in parts if p is not None]
            first = parts[0]
            assert first is not None
            return first.extend(node, _join(*values) if len(values) > 1 else values[0])
        return None
