"""Inlining of synchronising device functions into a kernel, for region splitting (regions.py).

A kernel that calls a ``__device__`` function with a barrier, a warp collective or a ``volatile``
access (NVIDIA's ``scan`` sample: ``scan4Exclusive`` -> ``scan4Inclusive`` -> ``scan1Exclusive`` ->
``scan1Inclusive``, which loops over ``cg::sync(cta)``) can only be cut into regions once the calls
are gone. :func:`expand_kernel` writes the kernel again with every such call replaced by the
function's body, recursively, as the function would have run:

* each inlined body is a ``{ }`` block of its own; parameters become local variables initialised
  from the arguments (by value: a copy, in the parameter's own declared type), a reference
  parameter is the caller's variable itself (or a pointer to the element it names), a
  cooperative-groups parameter is the caller's group; template parameters are replaced by the
  call's template arguments (explicit, defaulted, or deduced from the declared type of a variable
  passed); every name the function declares gets a suffix (``pos_vf3``) so that nothing clashes
  with the caller's names, and a name the function takes from outside that the kernel also
  declares is refused (it would be captured);
* a call inside a declaration, an assignment, an ``if`` condition or a ``return`` expression is
  hoisted into a temporary (``vf_ret3``) before the statement, calls in evaluation order (the
  arguments' calls first); a call where it may not be evaluated (right of ``&&``/``||``, in ``?:``,
  a loop header, a lambda) is refused;
* ``return e;`` at the end assigns the temporary; a return before the end leaves a
  ``do { ... } while (0)`` around the rest of the body with ``break`` - a loop the region pass
  handles with per-thread masks (and refuses if a block barrier follows, where a GPU's threads
  would diverge); a return inside a loop or switch of the function is refused;
* ``__shared__`` variables of a function are declared once at the top of the kernel (one per
  function and template arguments, as CUDA allocates them once per block).

Recursion, overloads and specialisations, functions defined in another file and calls through
pointers are refused: the kernel keeps the fiber path and :func:`regions.plan_kernels` says why.

Every line keeps the user's line number: the result comes with the user's line of each of its rows
(inlined code keeps the function's own lines), which the region pass writes into its ``#line``
directives, so diagnostics and faults name the function's line.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from typing import Any

from .regions import (
    _DECLARATORS,
    _SYNC_CALLS,
    Fallback,
    RegionContext,
    _args,
    _callee_name,
    _declarator_ident,
    _fn_params,
    _is_global,
    _same,
    _spec_text,
    _text,
    _walk,
)

__all__ = ["DeviceFunction", "device_functions", "expand_kernel", "inlinable_calls"]

MAX_DEPTH = 16
MAX_CHARS = 1 << 19

_GROUP_TYPE = re.compile(r"\b(?:thread_block|thread_group|thread_block_tile\w*|coalesced_group|grid_group|"
                         r"multi_grid_group|cluster_group)\b")
_TYPE_NOISE = re.compile(r"\b(?:const|volatile|static|extern|register|__shared__|__restrict__|__restrict|inline|"
                         r"__device__|__host__|__forceinline__|__noinline__|constexpr|thread_local)\b")
_FOREIGN_NS = {"cg", "cooperative_groups", "std", "cuda", "nvcuda", "wmma", "cub", "thrust"}


@dataclass(eq=False)
class DeviceFunction:
    node: Any                                      # the function_definition
    name: str
    params: list[Any]
    tparams: list[tuple[str, str, Any | None]]     # (name, 'type' | 'value', default)
    unsupported: str = ""                          # why it cannot be inlined ('' if it can)

    @property
    def body(self) -> Any:
        return self.node.child_by_field_name("body")

    @property
    def required(self) -> int:
        return sum(1 for p in self.params if p.type == "parameter_declaration")


def _function_name(fn: Any) -> tuple[str, Any | None]:
    d = fn.child_by_field_name("declarator")
    while d is not None and d.type != "function_declarator":
        d = d.child_by_field_name("declarator")
    if d is None:
        return "", None
    return (_text(d.child_by_field_name("declarator")) if d.child_by_field_name("declarator") is not None else ""), d


def device_functions(root: Any) -> dict[str, list[DeviceFunction]]:
    """Every function definition of a file that is not a kernel, by name (free functions; a member
    function, an operator or a specialisation is listed as not inlinable)."""
    out: dict[str, list[DeviceFunction]] = {}
    for n in _walk(root):
        if n.type != "function_definition" or n.child_by_field_name("body") is None or _is_global(n):
            continue
        raw, decl = _function_name(n)
        name = re.sub(r"<.*", "", raw.split("::")[-1]).strip()
        if not name:
            continue
        f = DeviceFunction(n, name, _fn_params(n) if decl is not None else [], [])
        if "::" in raw or "<" in raw or (n.parent is not None and n.parent.type == "field_declaration_list"):
            f.unsupported = "a member function or a specialisation"
        if n.parent is not None and n.parent.type == "template_declaration":
            plist = n.parent.child_by_field_name("parameters")
            for p in plist.named_children if plist is not None else ():
                if p.type == "type_parameter_declaration":
                    t = next((c for c in p.named_children if c.type == "type_identifier"), None)
                    f.tparams.append((_text(t) if t is not None else "", "type", None))
                elif p.type == "optional_type_parameter_declaration":
                    t = p.child_by_field_name("name")
                    f.tparams.append((_text(t) if t is not None else "", "type", p.child_by_field_name("default_type")))
                elif p.type in ("parameter_declaration", "optional_parameter_declaration"):
                    ident = _declarator_ident(p.child_by_field_name("declarator"))
                    f.tparams.append((_text(ident) if ident is not None else "", "value",
                                      p.child_by_field_name("default_value")))
                elif p.type != "comment":
                    f.unsupported = "a variadic or template-template parameter"
            if not f.tparams and plist is not None:
                f.unsupported = "a specialisation"
        d = decl.child_by_field_name("parameters") if decl is not None else None
        if d is not None and any(c.type in ("variadic_parameter_declaration", "...") or _text(c) == "..."
                                 for c in d.children):
            f.unsupported = "a variadic function"
        out.setdefault(name, []).append(f)
    return out


def _strip(node: Any | None) -> Any | None:
    while node is not None and node.type == "parenthesized_expression" and node.named_children:
        node = node.named_children[0]
    return node


def _qualifier(call: Any) -> str:
    fn = call.child_by_field_name("function")
    if fn is not None and fn.type == "qualified_identifier":
        scope = fn.child_by_field_name("scope")
        return _text(scope) if scope is not None else "::"
    return ""


def inlinable_calls(body: Any, ctx: RegionContext, functions: dict[str, list[DeviceFunction]]) -> list[Any]:
    """Calls in ``body`` of synchronising functions this file defines."""
    out = []
    for n in _walk(body):
        if n.type != "call_expression":
            continue
        name, obj = _callee_name(n)
        if obj is not None or name not in functions or name not in ctx.tainted or _qualifier(n) in _FOREIGN_NS:
            continue
        if name in _SYNC_CALLS and _qualifier(n):
            continue
        out.append(n)
    return out


class _Out:
    """Generated text as pieces, each with the user's line of its first row (copied text counts
    its own rows on; generated text keeps one line)."""

    def __init__(self, src: bytes, starts: list[int]) -> None:
        self.src = src
        self.starts = starts
        self.parts: list[tuple[str, int, int]] = []

    def line(self, pos: int) -> int:
        return bisect.bisect_right(self.starts, pos)

    def copy(self, a: int, b: int) -> None:
        if b > a:
            self.parts.append((self.src[a:b].decode(errors="surrogateescape"), self.line(a), 1))

    def glue(self, text: str, line: int) -> None:
        if text:
            self.parts.append((text, line, 0))

    def text(self) -> str:
        return "".join(t for t, _, _ in self.parts)

    def rows(self) -> list[int]:
        rows: list[int] = []
        cur: int | None = None
        for text, line, step in self.parts:
            for j, seg in enumerate(text.split("\n")):
                if j:
                    rows.append(cur if cur is not None else (rows[-1] if rows else 1))
                    cur = None
                if cur is None and seg.strip():
                    cur = line + (j if step else 0)
        rows.append(cur if cur is not None else (rows[-1] if rows else 1))
        return rows


@dataclass(eq=False)
class _Env:
    """One function body being written out: the kernel's, or an inlined call's."""

    fn: DeviceFunction | None = None
    chain: tuple[int, ...] = ()
    rename: dict[str, str] = field(default_factory=dict)   # names the body uses -> their text here
    types: dict[str, str] = field(default_factory=dict)    # template parameters -> arguments
    temps: dict[int, str] = field(default_factory=dict)    # hoisted call -> its result variable
    owned: dict[int, list[Any]] = field(default_factory=dict)  # statement -> the calls hoisted before it
    calls: dict[int, DeviceFunction] = field(default_factory=dict)
    ret: str | None = None
    ret_type: str = ""
    returns: set[int] = field(default_factory=set)
    final: int = -1
    early: bool = False
    shared: dict[int, tuple] = field(default_factory=dict)  # __shared__ declaration -> hoisting key


class _Expander:
    def __init__(self, src: bytes, kernel: Any, ctx: RegionContext,
                 functions: dict[str, list[DeviceFunction]], local_defs: dict[str, int]) -> None:
        self.src = src
        self.kernel = kernel
        self.ctx = ctx
        self.functions = functions
        self.local_defs = local_defs
        self.starts = [0] + [i + 1 for i, c in enumerate(src) if c == 10]
        self.count = 0
        self.inlined: list[str] = []
        self.spans: dict[tuple[int, int], None] = {}
        self.hoisted: list[tuple[str, int, int]] = []
        self.hoisted_keys: dict[tuple, int] = {}
        self.hoisted_done: set[tuple] = set()
        self.size = 0
        self.kernel_names: set[str] = set()
        self.var_types: dict[str, str] = {}
        self._kernel_names()

    # ---- helpers ---------------------------------------------------------------------------
    def t(self, node: Any) -> str:
        return self.src[node.start_byte:node.end_byte].decode(errors="surrogateescape")

    def line(self, node: Any) -> int:
        return bisect.bisect_right(self.starts, node.start_byte)

    def _type_text(self, decl: Any, declarator: Any, ident: Any) -> str:
        spec = " ".join(_TYPE_NOISE.sub(" ", _spec_text(self.src, decl)).split())
        d = declarator.child_by_field_name("declarator") if declarator.type == "init_declarator" else declarator
        rest = (self.src[d.start_byte:ident.start_byte] + self.src[ident.end_byte:d.end_byte]).decode(
            errors="surrogateescape")
        return spec + " ".join(_TYPE_NOISE.sub(" ", rest).split())

    def _declared(self, root: Any) -> list[tuple[Any, Any, Any]]:
        """(declaration, declarator, identifier) of every variable declared in ``root``."""
        out = []
        for n in _walk(root):
            if n.type in ("declaration", "parameter_declaration", "optional_parameter_declaration"):
                if n.parent is not None and n.parent.type == "template_parameter_list":
                    continue
                for c in n.named_children:
                    if c.type in _DECLARATORS and c.type != "function_declarator":
                        ident = _declarator_ident(c)
                        if ident is not None:
                            out.append((n, c, ident))
            elif n.type == "for_range_loop":
                d = n.child_by_field_name("declarator")
                ident = _declarator_ident(d) if d is not None else None
                if ident is not None:
                    out.append((n, d, ident))
        return out

    def _kernel_names(self) -> None:
        k = self.kernel
        for decl, d, ident in self._declared(k):
            name = _text(ident)
            self.kernel_names.add(name)
            try:
                t = self._type_text(decl, d, ident)
            except Exception:  # pragma: no cover - odd declarators: no type known
                t = ""
            self.var_types[name] = t if self.var_types.get(name, t) == t else ""
        if k.parent is not None and k.parent.type == "template_declaration":
            plist = k.parent.child_by_field_name("parameters")
            for p in _walk(plist) if plist is not None else ():
                if p.type in ("type_identifier", "identifier"):
                    self.kernel_names.add(_text(p))

    # ---- the kernel -------------------------------------------------------------------------
    def expand(self) -> tuple[str, list[int]]:
        body = self.kernel.child_by_field_name("body")
        out = _Out(self.src, self.starts)
        env = _Env()
        self._prepare(body, env)
        out.copy(0, body.start_byte + 1)
        mark = len(out.parts)
        pos = body.start_byte + 1
        for c in body.children[1:-1] if body.children and body.children[-1].type == "}" else body.children[1:]:
            out.copy(pos, c.start_byte)
            self.emit(c, env, out)
            pos = c.end_byte
        out.copy(pos, len(self.src))
        out.parts[mark:mark] = self.hoisted
        return out.text(), out.rows()

    def _prepare(self, body: Any, env: _Env) -> None:
        """The calls to inline in one function body and the statement each is hoisted before."""
        for call in inlinable_calls(body, self.ctx, self.functions):
            name = _callee_name(call)[0]
            fn = self._resolve(call, name)
            owner = self._owner(call, name)
            env.calls[call.id] = fn
            env.owned.setdefault(owner.id, []).append(call)

    def _resolve(self, call: Any, name: str) -> DeviceFunction:
        defs = self.functions[name]
        if self.ctx.fn_defs.get(name, 0) > self.local_defs.get(name, 0):
            raise Fallback(f"calls {name}(), which synchronises and is also defined in another file", call)
        n = len(_args(call))
        if len(defs) > 1:
            raise Fallback(f"calls {name}(), which synchronises and is overloaded or specialised (the pass does not "
                           "resolve overloads)", call)
        f = defs[0]
        if f.unsupported:
            raise Fallback(f"calls {name}(), which synchronises and is {f.unsupported}", call)
        if not f.required <= n <= len(f.params):
            raise Fallback(f"calls {name}() with {n} arguments, which its definition does not take", call)
        return f

    def _owner(self, call: Any, name: str) -> Any:
        what = f"a call of {name}(), which synchronises,"
        child, p = call, call.parent
        while p is not None:
            t = p.type
            if t == "lambda_expression":
                raise Fallback(f"{what} inside a lambda", call)
            if t == "conditional_expression" and not _same(p.child_by_field_name("condition"), child):
                raise Fallback(f"{what} under ?: (it may not be evaluated)", call)
            if t == "binary_expression" and _text(p.child_by_field_name("operator")) in ("&&", "||") and \
                    _same(p.child_by_field_name("right"), child):
                raise Fallback(f"{what} right of && / || (it may not be evaluated)", call)
            if t == "comma_expression":
                raise Fallback(f"{what} in a comma expression", call)
            if t in ("expression_statement", "return_statement"):
                return p
            if t == "declaration":
                if p.parent is None or p.parent.type != "compound_statement" or \
                        sum(1 for c in p.named_children if c.type in _DECLARATORS) != 1:
                    raise Fallback(f"{what} in a declaration the pass cannot hoist it from", call)
                return p
            if t == "condition_clause" and p.parent is not None and p.parent.type == "if_statement" and \
                    not any(c.type in ("declaration", "init_statement") for c in p.named_children):
                return p.parent
            if t in ("condition_clause", "for_statement", "while_statement", "do_statement", "switch_statement",
                     "for_range_loop", "case_statement", "compound_statement", "function_definition",
                     "translation_unit", "init_statement"):
                raise Fallback(f"{what} in a loop or switch header or a condition with a declaration", call)
            child, p = p, p.parent
        raise Fallback(f"{what} where the pass cannot hoist it", call)  # pragma: no cover

    # ---- writing a body out ----------------------------------------------------------------------
    def emit(self, node: Any, env: _Env, out: _Out, skip: int = -1) -> None:
        if node.id != skip:
            if node.id in env.temps:
                out.glue(env.temps[node.id], self.line(node))
                return
            if node.id in env.owned:
                self._statement(node, env, out)
                return
            if env.fn is not None and node.type == "return_statement" and node.id in env.returns:
                self._return(node, env, out)
                return
            if node.id in env.shared:
                self._hoist(node, env)
                return
            if node.type in ("identifier", "type_identifier") and not _qualified_name(node):
                name = _text(node)
                if node.type == "identifier" and name in env.rename:
                    out.glue(env.rename[name], self.line(node))
                    return
                if name in env.types:
                    out.glue(env.types[name], self.line(node))
                    return
        if node.child_count == 0:
            out.copy(node.start_byte, node.end_byte)
            return
        pos = node.start_byte
        for c in node.children:
            out.copy(pos, c.start_byte)
            self.emit(c, env, out)
            pos = c.end_byte
        out.copy(pos, node.end_byte)

    def render(self, node: Any, env: _Env) -> str:
        o = _Out(self.src, self.starts)
        self.emit(node, env, o)
        return " ".join(o.text().split())

    def _statement(self, stmt: Any, env: _Env, out: _Out) -> None:
        """A statement with calls to inline: the calls first (into temporaries), then the statement."""
        owned = {c.id for c in env.owned[stmt.id]}
        order: list[Any] = []

        def post(n: Any) -> None:
            for c in n.children:
                post(c)
            if n.id in owned:
                order.append(n)

        post(stmt.child_by_field_name("condition") if stmt.type == "if_statement" else stmt)
        line = self.line(stmt)
        expr = _strip(stmt.named_children[0]) if stmt.type == "expression_statement" and stmt.named_children else None
        # braces only where one statement is expected (`if (c) f(x);`): a { } block at the level of
        # a barrier would end the region before it and start another after it
        wrap = stmt.type != "declaration" and not _in_compound(stmt)
        if wrap:
            out.glue("{ ", line)
        for call in order:
            self._inline(call, env, out, used=not _same(expr, call))
        if expr is not None and expr.id in owned:
            pass  # the statement is the call itself
        elif stmt.type == "return_statement" and env.fn is not None:
            self._return(stmt, env, out)
        elif stmt.type == "return_statement":
            raise Fallback("a kernel returns a value", stmt)
        else:
            out.glue("\n", line)
            self.emit(stmt, env, out, skip=stmt.id)
        if wrap:
            out.glue(" }", line)

    def _return(self, ret: Any, env: _Env, out: _Out) -> None:
        line = self.line(ret)
        expr = next((c for c in ret.named_children if c.type != "comment"), None)
        brk = env.early and ret.id != env.final
        if expr is None and not brk:
            out.glue(";", line)
            return
        wrap = not _in_compound(ret)
        out.glue("{ " if wrap else "", line)
        if expr is not None and env.ret and ret.id == env.final and not env.early:
            out.glue(f"{env.ret_type} {env.ret} = ", line)  # the result declared where it is known
            self.emit(expr, env, out)
            out.glue(";", line)
        elif expr is not None:
            out.glue(f"{env.ret} = " if env.ret else "(void)(", line)
            self.emit(expr, env, out)
            out.glue(";" if env.ret else ");", line)
        if brk:
            out.glue(" break;", line)
        out.glue(" }" if wrap else "", line)

    def _hoist(self, decl: Any, env: _Env) -> None:
        key = env.shared[decl.id]
        if (key, decl.id) in self.hoisted_done:
            return
        self.hoisted_done.add((key, decl.id))
        o = _Out(self.src, self.starts)
        o.glue("\n", self.line(decl))
        self.emit(decl, _Env(fn=env.fn, rename=env.rename, types=env.types), o)
        text = o.text()
        local = {v for k, v in env.rename.items() if re.fullmatch(r"\w+_vf\d+", v)}
        if any(re.search(rf"\b{re.escape(v)}\b", text) for v in local):
            raise Fallback(f"a __shared__ declaration of {env.fn.name}() depends on its local variables", decl)
        self.hoisted += o.parts

    # ---- one call ------------------------------------------------------------------------------
    def _inline(self, call: Any, caller: _Env, out: _Out, used: bool) -> None:
        fn = caller.calls[call.id]
        if fn.node.id in caller.chain:
            raise Fallback(f"{fn.name}() is recursive (it cannot be inlined)", call)
        if len(caller.chain) >= MAX_DEPTH:
            raise Fallback(f"synchronising device functions nested deeper than {MAX_DEPTH} calls", call)
        self.count += 1
        n = self.count
        line = self.line(call)
        body = fn.body
        for x in _walk(body):
            if x.type.startswith("preproc_") and x.type != "preproc_call":
                raise Fallback(f"a preprocessor conditional or #define inside {fn.name}(), which synchronises", x)
        env = _Env(fn=fn, chain=(*caller.chain, fn.node.id))
        env.types = self._template_args(fn, call, caller)
        ret_type = self._ret_type(fn, env)
        declared = self._declared(body)
        params = {_text(i) for p in fn.params if (i := _declarator_ident(p.child_by_field_name("declarator")))}
        for decl, d, ident in declared:
            name = _text(ident)
            env.rename[name] = f"{name}_vf{n}"
            try:
                t = self._type_text(decl, d, ident)
                for a, b in env.types.items():
                    t = re.sub(rf"\b{re.escape(a)}\b", b, t)
            except Exception:  # pragma: no cover
                t = ""
            self.var_types[f"{name}_vf{n}"] = t
            if decl.type == "declaration" and re.search(r"\b__shared__\b", _spec_text(self.src, decl)):
                key = (fn.node.id, tuple(sorted(env.types.items())))
                k = self.hoisted_keys.setdefault(key, len(self.hoisted_keys))
                env.rename[name] = f"{name}_vfs{k}"
                env.shared[decl.id] = key
        self._check_names(fn, {_text(i) for _, _, i in declared} | params | {t for t, _, _ in fn.tparams}, call)
        # returns
        returns = [r for r in _walk(body) if r.type == "return_statement" and not _in_lambda(r, body)]
        stmts = [c for c in body.named_children if c.type != "comment"]
        final = stmts[-1] if stmts and stmts[-1].type == "return_statement" else None
        early = [r for r in returns if final is None or r.id != final.id]
        for r in early:
            p = r.parent
            while p is not None and p.id != body.id:
                if p.type in ("for_statement", "while_statement", "do_statement", "for_range_loop",
                              "switch_statement"):
                    raise Fallback(f"a return inside a loop or switch of {fn.name}(), which synchronises", r)
                p = p.parent
        env.returns = {r.id for r in returns}
        env.final = final.id if final is not None else -1
        env.early = bool(early)
        if ret_type != "void" and used:
            env.ret, env.ret_type = f"vf_ret{n}", ret_type
            if env.early or final is None:
                out.glue(f"\n{ret_type} {env.ret};\n", line)
            caller.temps[call.id] = env.ret
        elif used and ret_type == "void":
            raise Fallback(f"the result of {fn.name}(), a void function, is used", call)
        # the body in the caller's own block (its names are the function's own by their suffix), so
        # that its statements join the caller's regions
        out.glue("\n", line)
        args = _args(call)
        for i, p in enumerate(fn.params):
            self._bind(p, args[i] if i < len(args) else None, caller, env, out, n, line)
        self._prepare(body, env)
        first_early = next((i for i, s in enumerate(body.named_children)
                            if any(s.start_byte <= r.start_byte < s.end_byte for r in early)), -1)
        pos = body.start_byte + 1
        for i, s in enumerate(body.named_children):
            if i == first_early:
                out.glue("\ndo {", self.line(s))
            out.copy(pos, s.start_byte)
            self.emit(s, env, out)
            pos = s.end_byte
        out.copy(pos, body.end_byte - 1)
        if early:
            out.glue(f"\n}} while (0 /* vf: returns of {fn.name}() */);", line)
        out.glue("\n", line)
        self.inlined.append(fn.name)
        self.spans[(self.line(fn.node.parent if fn.node.parent.type == "template_declaration" else fn.node),
                    bisect.bisect_right(self.starts, fn.node.end_byte - 1))] = None
        self.size += fn.node.end_byte - fn.node.start_byte
        if self.size > MAX_CHARS:
            raise Fallback("the inlined device functions would make the kernel too large", call)

    def _check_names(self, fn: DeviceFunction, local: set[str], call: Any) -> None:
        """A name the function takes from outside (a global, a macro) must mean the same inside
        the kernel: not one the kernel declares, and no macro of it may name the function's own."""
        seen: set[str] = set()
        nodes = list(_walk(fn.body)) + [x for p in fn.params for x in _walk(p)]
        for x in nodes:
            if x.type not in ("identifier", "type_identifier") or _qualified_name(x):
                continue
            name = _text(x)
            if name in local or name in seen:
                continue
            seen.add(name)
            if name in self.kernel_names:
                raise Fallback(f"{fn.name}() uses '{name}', which the calling kernel declares too (inlining would "
                               "capture it)", call)
            if name in self.ctx.macros:
                for m in self._macro_names(name, set()):
                    if m in local or m in self.kernel_names:
                        raise Fallback(f"{fn.name}() uses the macro {name}, which names '{m}' (inlining renames "
                                       "the function's variables)", call)

    def _macro_names(self, name: str, seen: set[str]) -> set[str]:
        if name in seen:
            return set()
        seen.add(name)
        out = set(re.findall(r"[A-Za-z_]\w*", self.ctx.macros.get(name, "")))
        for m in list(out):
            if m in self.ctx.macros:
                out |= self._macro_names(m, seen)
        return out

    def _bind(self, p: Any, arg: Any | None, caller: _Env, env: _Env, out: _Out, n: int, line: int) -> None:
        """A parameter as a local variable of the inlined block (or the caller's own object)."""
        decl = p.child_by_field_name("declarator")
        ident = _declarator_ident(decl)
        if arg is None:
            arg = p.child_by_field_name("default_value")
            arg_env = env
        else:
            arg_env = caller
        if ident is None:
            if arg is not None:
                out.glue("(void)(", line)
                self.emit(arg, arg_env, out)
                out.glue(");\n", line)
            return
        name = _text(ident)
        new = f"{name}_vf{n}"
        spec_nodes = [c for c in p.children if c.end_byte <= decl.start_byte]
        spec = self.t(p)[: decl.start_byte - p.start_byte]
        if re.search(r"\bauto\b", spec):
            raise Fallback(f"an auto parameter of {env.fn.name}()", p)
        a = _strip(arg)
        is_ref = decl.type == "reference_declarator"
        if a is not None and a.type == "identifier" and arg_env is caller and (is_ref or _GROUP_TYPE.search(spec)):
            env.rename[name] = self.render(a, caller)  # the caller's variable (or group) itself
            self.var_types.setdefault(env.rename[name], "")
            return
        if arg is None:
            raise Fallback(f"a parameter of {env.fn.name}() without an argument", p)

        def spec_out() -> None:
            pos = p.start_byte
            for c in spec_nodes:
                out.copy(pos, c.start_byte)
                self.emit(c, env, out)
                pos = c.end_byte

        if is_ref:
            inner = decl.named_children[-1] if decl.named_children else None
            if inner is None or inner.type != "identifier" or "&&" in self.t(decl):
                raise Fallback(f"a reference parameter of {env.fn.name}() the pass does not bind", p)
            lvalue = a is not None and (a.type in ("subscript_expression", "field_expression") or (
                a.type == "pointer_expression" and _text(a.child_by_field_name("operator")) == "*"))
            out.glue("\n", line)
            spec_out()
            if lvalue:
                out.glue(f" *{new} = &(", line)
                self.emit(arg, arg_env, out)
                out.glue(");\n", line)
                env.rename[name] = f"(*{new})"
                return
            if not re.search(r"\bconst\b", spec):
                raise Fallback(f"a non-const reference parameter of {env.fn.name}() bound to a value", p)
            out.glue(f" {new} = ", line)  # a const reference to a temporary: its value
            self.emit(arg, arg_env, out)
            out.glue(";\n", line)
            env.rename[name] = new
            return
        env.rename[name] = new
        out.glue("\n", line)
        if decl.type == "array_declarator":
            if _declarator_ident(decl.child_by_field_name("declarator")) is not ident or \
                    decl.child_by_field_name("declarator").type != "identifier":
                raise Fallback(f"a multi-dimensional array parameter of {env.fn.name}()", p)
            spec_out()
            out.glue(f" *{new}", line)
        else:
            pos = p.start_byte
            for c in p.children:
                if c.start_byte >= decl.end_byte:
                    break
                out.copy(pos, c.start_byte)
                self.emit(c, env, out)
                pos = c.end_byte
        out.glue(" = ", line)
        self.emit(arg, arg_env, out)
        out.glue(";\n", line)

    def _template_args(self, fn: DeviceFunction, call: Any, caller: _Env) -> dict[str, str]:
        if not fn.tparams:
            return {}
        f = call.child_by_field_name("function")
        while f is not None and f.type == "qualified_identifier":
            f = f.child_by_field_name("name")
        explicit = []
        if f is not None and f.type == "template_function":
            targs = f.child_by_field_name("arguments")
            explicit = [c for c in targs.named_children if c.type != "comment"] if targs is not None else []
        out: dict[str, str] = {}
        args = _args(call)
        for i, (name, kind, default) in enumerate(fn.tparams):
            if i < len(explicit):
                text = self.render(explicit[i], caller)
            elif default is not None:
                text = self.render(default, _Env(types=dict(out)))
            else:
                text = self._deduce(fn, name, args, caller)
            out[name] = text if kind == "type" else f"({text})"
        return out

    def _deduce(self, fn: DeviceFunction, name: str, args: list[Any], caller: _Env) -> str:
        for p, a in zip(fn.params, args, strict=False):
            decl = p.child_by_field_name("declarator")
            ident = _declarator_ident(decl)
            if ident is None:
                continue
            ptype = self._type_text(p, decl, ident)
            if not re.search(rf"\b{re.escape(name)}\b", ptype):
                continue
            atype = self._type_of(a, caller)
            if not atype:
                continue
            got = _match_type(ptype.replace("&", ""), name, atype)
            if got:
                return got
        raise Fallback(f"cannot deduce the template arguments of {fn.name}() (the pass does not know the types "
                       "of its arguments)", fn.node)

    def _type_of(self, a: Any, caller: _Env) -> str:
        a = _strip(a)
        if a is None:
            return ""
        if a.type == "identifier":
            name = _text(a)
            return self.var_types.get(caller.rename.get(name, name), "")
        if a.type == "number_literal":
            t = _text(a).lower()
            if t.startswith("0x"):
                return "unsigned" if "u" in t else "int"
            if t.endswith("f") and ("." in t or "e" in t):
                return "float"
            if "." in t or "e" in t:
                return "double"
            return ("unsigned " if "u" in t else "") + ("long long" if "ll" in t else "long" if "l" in t else "int")
        if a.type in ("true", "false"):
            return "bool"
        return ""

    def _ret_type(self, fn: DeviceFunction, env: _Env) -> str:
        t = fn.node.child_by_field_name("type")
        if t is None:
            raise Fallback(f"{fn.name}() has no return type the pass understands", fn.node)
        text = self.render(t, env)
        if re.search(r"\bauto\b|\bdecltype\b", text):
            raise Fallback(f"{fn.name}() returns auto", fn.node)
        d = fn.node.child_by_field_name("declarator")
        while d is not None and d.type != "function_declarator":
            if d.type == "pointer_declarator":
                text += "*"
            elif d.type == "reference_declarator":
                raise Fallback(f"{fn.name}() returns a reference", fn.node)
            elif d.type != "parenthesized_declarator":
                raise Fallback(f"{fn.name}() has a declarator the pass does not understand", fn.node)
            d = d.child_by_field_name("declarator") if d.type != "parenthesized_declarator" else \
                (d.named_children[0] if d.named_children else None)
        return text


def _qualified_name(node: Any) -> bool:
    """``X::name`` (the name of a qualified identifier) or a member name."""
    p = node.parent
    if p is None:
        return False
    if p.type == "qualified_identifier":
        return _same(p.child_by_field_name("name"), node)
    return False


def _in_compound(node: Any) -> bool:
    p = node.parent
    return p is not None and p.type == "compound_statement"


def _in_lambda(node: Any, root: Any) -> bool:
    p = node.parent
    while p is not None and p.id != root.id:
        if p.type == "lambda_expression":
            return True
        p = p.parent
    return False


def _normal_type(t: str) -> str:
    t = _TYPE_NOISE.sub(" ", t)
    t = re.sub(r"\s*([*&\[\]<>,])\s*", r"\1", t)
    return " ".join(t.split())


def _match_type(ptype: str, name: str, atype: str) -> str:
    """The template argument ``name`` that makes the parameter type ``ptype`` accept an argument of
    type ``atype`` (an array also as the pointer it decays to), or ''."""
    p, a = _normal_type(ptype), _normal_type(atype)
    cands = [a]
    if re.search(r"\[[^\]]*\]$", a):
        cands.append(re.sub(r"\[[^\]]*\]$", "*", a))
    pieces = re.split(rf"\b({re.escape(name)})\b", p)
    pat = "".join("(?P<T>.+?)" if i == 1 else "(?P=T)" if x == name else re.escape(x)
                  for i, x in enumerate(pieces))
    for c in cands:
        m = re.fullmatch(pat, c)
        if m and m.group("T").strip():
            return m.group("T").strip()
    return ""


def expand_kernel(src: bytes, kernel: Any, ctx: RegionContext, functions: dict[str, list[DeviceFunction]],
                  local_defs: dict[str, int]) -> tuple[str, list[int], list[str], list[tuple[int, int]]] | None:
    """The whole file's text with the kernel's calls of synchronising device functions inlined:
    (text, the user's line of each row, the inlined functions, their line spans), or None when it
    calls none. A call that cannot be inlined exactly is a Fallback."""
    body = kernel.child_by_field_name("body")
    if body is None or not inlinable_calls(body, ctx, functions):
        return None
    ex = _Expander(src, kernel, ctx, functions, local_defs)
    text, rows = ex.expand()
    return text, rows, ex.inlined, list(ex.spans)
