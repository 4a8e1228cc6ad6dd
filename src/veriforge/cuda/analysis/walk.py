"""Walk a kernel's syntax tree once per sampled iteration, evaluating every lane of the sampled warps.

The walker is an abstract interpreter over the tree-sitter tree: statements are visited in order
with a *context* — which lanes are active (an ``(warps, 32)`` mask), how many real executions each
sampled warp stands for (block weight × loop-iteration weight) — and an environment of variable
values per lane (:mod:`.evaluate`). Along the way it records every global and shared memory
access, branch, barrier, loop and floating-point operation.

* ``if``: the condition is evaluated per lane; the branches run under the split masks. A
  condition that depends on loaded data cannot be split: both branches are walked with the
  enclosing mask and everything under them is marked as having an unknown execution count.
* ``for``: trip counts are evaluated per lane (closed form for ``+=``/``-=``/``++`` steps,
  step-by-step for ``*=``/``<<=``/``>>=``, at most :data:`MAX_SIMULATED_TRIPS`). The body is
  walked at a few representative iterations — all of them when there are at most
  :data:`EXACT_TRIPS`, otherwise the first, the middle (weighted by the iterations it stands for)
  and the last. Variables the body assigns become unknown (their value changes per iteration),
  except the loop variable.
* ``while``/``do``: trip count unknown; the body is walked once for its structure.
* calls to ``__device__`` functions defined in the source are walked inline with the arguments
  bound (depth-limited); other calls return an unknown value.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from veriforge.cuda.analysis import evaluate as ev
from veriforge.cuda.analysis import memory
from veriforge.cuda.analysis.control import (
    BARRIER_CALLS,
    CG_WARP_METHODS,
    BarrierAcc,
    BranchAcc,
    Cond,
    block_partial,
    divergent_warps,
    is_warp_primitive,
    varying_warps,
)
from veriforge.cuda.analysis.evaluate import Elem, Ptr, Value
from veriforge.cuda.analysis.flops import COMPOUND_OPS, FLOP_CALLS, counts_as_flop
from veriforge.cuda.analysis.launch import Lanes
from veriforge.cuda.analysis.parse import FunctionDef, ParsedSource, node_text, parse_expression
from veriforge.cuda.analysis.report import GlobalAccess, Loop, SharedAccess

EXACT_TRIPS = 4
MAX_SIMULATED_TRIPS = 64
MAX_CALL_DEPTH = 4
MAX_MACRO_DEPTH = 16

ATOMIC_RE = re.compile(r"^atomic(Add|Sub|Exch|Min|Max|Inc|Dec|CAS|And|Or|Xor)(_block|_system)?$")
LOAD_INTRINSICS = {"__ldg": True, "__ldca": False, "__ldcg": False, "__ldcs": False, "__ldlu": False, "__ldcv": False}
STORE_INTRINSICS = frozenset({"__stwb", "__stcg", "__stcs", "__stwt"})
ELEMENTWISE = {
    "min": np.minimum,
    "max": np.maximum,
    "umin": np.minimum,
    "umax": np.maximum,
    "fminf": np.minimum,
    "fmaxf": np.maximum,
    "fmin": np.minimum,
    "fmax": np.maximum,
    "llmin": np.minimum,
    "llmax": np.maximum,
    "ullmin": np.minimum,
    "ullmax": np.maximum,
    "abs": np.abs,
    "fabsf": np.abs,
    "fabs": np.abs,
    "labs": np.abs,
    "llabs": np.abs,
}
CASTS = frozenset({"reinterpret_cast", "static_cast", "const_cast", "dynamic_cast"})
_INT_LIT = re.compile(r"^(0[xX][0-9a-fA-F']+|0[bB][01']+|[0-9']+)([uUlL]*)$")


class _Unsupported(Exception):
    """A construct the walker does not follow; becomes an unknown with this reason."""


@dataclass(frozen=True)
class Ctx:
    mask: np.ndarray  # (W, 32) bool
    mult: np.ndarray  # (W,) float
    count_unknown: str | None = None  # why the execution count under this context is unknown
    value_unknown: str | None = None  # why assignments here produce unknown values (data-dependent branch)
    conds: tuple[Cond, ...] = ()
    loop_lines: tuple[int, ...] = ()


@dataclass
class GlobalAcc:
    line: int
    kind: str
    array: str
    elem: Elem
    read_only: bool
    text: str
    requests: float = 0.0
    sectors: float = 0.0
    useful: float = 0.0
    first_warp: int | None = None
    visited: bool = False
    unknown: str | None = None
    count_unknown: str | None = None

    def result(self) -> GlobalAccess:
        size = self.elem.size
        width = self.elem.width if size else 1
        if self.unknown is not None or size is None:
            return GlobalAccess(
                self.line,
                self.kind,
                self.array,
                size,
                vector_width=width,  # type: ignore[arg-type]
                read_only=self.read_only,
                unknown=self.unknown or f"element type `{self.elem.name}` has no known size",
                text=self.text,
            )
        spr = self.sectors / self.requests if self.requests else None
        eff = self.useful / (self.sectors * memory.SECTOR) if self.sectors else None
        known_count = self.count_unknown is None and self.requests > 0
        return GlobalAccess(
            self.line,
            self.kind,
            self.array,
            size,
            spr,
            eff,  # type: ignore[arg-type]
            self.requests if known_count else None,
            self.sectors * memory.SECTOR if known_count else None,
            width,
            self.read_only,
            self.count_unknown
            if self.count_unknown
            else (None if self.requests else "never executed by the sampled threads"),
            self.useful if known_count else None,
            self.first_warp,
            self.text,
        )


@dataclass
class SharedAcc:
    line: int
    kind: str
    array: str
    elem: Elem
    text: str
    requests: float = 0.0
    wavefronts: float = 0.0
    ways: int = 0
    unknown: str | None = None
    count_unknown: str | None = None

    def result(self) -> SharedAccess:
        if self.unknown is not None or self.elem.size is None:
            return SharedAccess(
                self.line,
                self.kind,
                self.array,
                None,
                None,  # type: ignore[arg-type]
                self.unknown or f"element type `{self.elem.name}` has no known size",
                self.elem.size,
                text=self.text,
            )
        if not self.requests:
            return SharedAccess(
                self.line,
                self.kind,
                self.array,
                None,
                None,  # type: ignore[arg-type]
                "never executed by the sampled threads",
                self.elem.size,
                text=self.text,
            )
        return SharedAccess(
            self.line,
            self.kind,
            self.array,
            self.ways,  # type: ignore[arg-type]
            None if self.count_unknown else self.requests,
            self.count_unknown,
            self.elem.size,
            self.wavefronts / self.requests,
            self.text,
        )


@dataclass
class LoopAcc:
    line: int
    kind: str
    unrolled: bool | int
    trip: float | None = None
    varies: bool = False
    unknown: str | None = None
    seen: bool = False

    def add(self, trip: float | None, varies: bool, reason: str | None) -> None:
        if reason is not None:
            self.unknown = self.unknown or reason
        elif not self.seen or self.trip is None:
            self.trip = trip if self.unknown is None else None
        elif trip != self.trip:
            self.varies = True
            self.trip = max(self.trip, trip or 0)
        self.varies = self.varies or varies
        self.seen = True

    def result(self) -> Loop:
        return Loop(self.line, None if self.unknown else self.trip, self.unrolled, self.unknown, self.varies, self.kind)  # type: ignore[arg-type]


@dataclass
class SharedDecl:
    name: str
    elem: Elem
    bytes: int | None
    dynamic: bool
    line: int


@dataclass
class Exits:
    returned: np.ndarray | None = None
    left: np.ndarray | None = None  # break/continue: lanes that leave the current iteration

    def add(self, other: Exits) -> None:
        for name in ("returned", "left"):
            o = getattr(other, name)
            if o is not None:
                cur = getattr(self, name)
                setattr(self, name, o.copy() if cur is None else (cur | o))


@dataclass
class Frame:
    scopes: list[dict[str, Value]]
    decl_float: list[dict[str, bool]]
    returns: list[tuple[np.ndarray, Value]] = field(default_factory=list)


class Walker:
    """Evaluate one kernel for one launch; results are in the accumulator attributes."""

    def __init__(
        self,
        parsed: ParsedSource,
        kernel: FunctionDef,
        lanes: Lanes,
        params: dict[str, Any],
        template_args: dict[str, Any],
        defines: dict[str, Any] | None,
    ) -> None:
        self.parsed = parsed
        self.kernel = kernel
        self.lanes = lanes
        self.shape = lanes.shape
        self.params = params
        # byte address of a pointer parameter, when the caller knows it (``params[name] = int``); only
        # pointer-to-integer casts use it (alignment peeling such as `((uintptr_t)p >> 2) & 3`)
        self.pointer_addr: dict[str, int] = {}
        self.macros = dict(parsed.macros)
        for name, value in (defines or {}).items():
            from veriforge.cuda.analysis.parse import Macro

            self.macros[name] = Macro(name, None, "1" if value is None else str(value), 0)
        self.typedefs: dict[str, str] = {}
        self.template_values: dict[str, Value] = {}
        self.globals: dict[str, Value] = {}
        self.globals_float: dict[str, bool] = {}
        self.unknowns: list[str] = []
        self.global_acc: dict[tuple, GlobalAcc] = {}
        self.shared_acc: dict[tuple, SharedAcc] = {}
        self.branch_acc: dict[tuple, BranchAcc] = {}
        self.barrier_acc: dict[tuple, BarrierAcc] = {}
        self.loop_acc: dict[tuple, LoopAcc] = {}
        self.shared_decls: dict[str, SharedDecl] = {}
        self.flops = 0.0
        self.flops_fp64 = 0.0
        self.flops_fp16 = 0.0
        self.flops_unknown: list[str] = []
        self.warp_primitives: set[str] = set()
        self.atomics: dict[str, int] = {}
        self.atomic_spaces: dict[str, int] = {}
        self.ldg_sites: set[tuple] = set()
        self.constant_arrays: set[str] = set()
        self.called_functions: set[str] = set()
        self.cooperative_groups = False
        self.frames: list[Frame] = []
        self.origin: tuple = ()
        self.origin_line: int | None = None
        self.recording = True
        self.exit_conds: list[Cond] = []
        self._warned: set[str] = set()
        self._atomic_seen: set[tuple] = set()
        self._call_stack: list[str] = []
        self.template_values_input: dict[str, Any] = dict(template_args)

    # ---------------------------------------------------------------- helpers
    def note(self, msg: str) -> None:
        if msg not in self._warned:
            self._warned.add(msg)
            self.unknowns.append(msg)

    def line(self, node: Any) -> int:
        return self.origin_line if self.origin_line is not None else int(node.start_point[0]) + 1

    def key(self, node: Any) -> tuple:
        return (self.origin, node.start_byte, node.end_byte, node.type)

    def lookup(self, name: str) -> Value | None:
        if self.frames:
            for scope in reversed(self.frames[-1].scopes):
                if name in scope:
                    return scope[name]
        return self.globals.get(name)

    def declared_float(self, name: str) -> bool | None:
        if self.frames:
            for scope in reversed(self.frames[-1].decl_float):
                if name in scope:
                    return scope[name]
        return self.globals_float.get(name)

    def declare(self, name: str, value: Value, is_float: bool) -> None:
        self.frames[-1].scopes[-1][name] = value
        self.frames[-1].decl_float[-1][name] = is_float

    def set_var(self, name: str, value: Value, ctx: Ctx) -> None:
        frame = self.frames[-1]
        for scope in reversed(frame.scopes):
            if name in scope:
                old = scope[name]
                if ctx.value_unknown is not None:
                    value = Value(None, value.is_float, value.deps | old.deps | {"data"}, ctx.value_unknown)
                scope[name] = ev.merge(ctx.mask | ~self.lanes.valid, value, old)
                return
        # assignment to a file-scope variable or an undeclared name: nothing to track per lane

    def push(self) -> None:
        self.frames[-1].scopes.append({})
        self.frames[-1].decl_float.append({})

    def pop(self) -> None:
        self.frames[-1].scopes.pop()
        self.frames[-1].decl_float.pop()

    def elem(self, type_text: str) -> Elem:
        return ev.elem_type(type_text, self.typedefs)

    # ---------------------------------------------------------------- setup
    def setup(self) -> None:
        k = self.kernel
        targs = dict(self.template_values_input)
        for tp in k.template:
            if tp.kind == "type":
                value = targs.get(tp.name, tp.default)
                if value is not None:
                    self.typedefs[tp.name] = str(value)
                else:
                    self.note(
                        f"template type parameter `{tp.name}` has no value"
                        f" (pass template_args={{'{tp.name}': 'float'}})"
                    )
            else:
                if tp.name in targs:
                    self.template_values[tp.name] = Value(np.asarray(float(targs[tp.name])), False, frozenset())
                elif tp.default is not None:
                    self.template_values[tp.name] = self._eval_text(tp.default)
                else:
                    why = f"template parameter `{tp.name}` has no value (pass template_args={{'{tp.name}': ...}})"
                    self.template_values[tp.name] = ev.unknown(why)
                    self.note(why)
        self.frames.append(Frame([{}], [{}]))
        for decl in self.parsed.file_decls:
            self._file_decl(decl)
        self.globals = self.frames[-1].scopes[0]
        self.globals_float = self.frames[-1].decl_float[0]
        self.frames.pop()

    def _file_decl(self, decl: Any) -> None:
        ctx = self.full_ctx()
        prev = self.recording
        self.recording = False
        try:
            self.declaration(decl, ctx, file_scope=True)
        except _Unsupported:
            pass
        finally:
            self.recording = prev

    def _eval_text(self, text: str) -> Value:
        node = parse_expression(text)
        if node is None:
            return ev.unknown(f"cannot parse `{text}`")
        saved = self.origin
        self.origin = ("text", text)
        try:
            prev = self.recording
            self.recording = False
            return self.eval(node, self.full_ctx())
        finally:
            self.recording = prev
            self.origin = saved

    def full_ctx(self) -> Ctx:
        return Ctx(self.lanes.valid.copy(), self.lanes.warp_weight.copy())

    def run(self) -> None:
        self.setup()
        frame = Frame([{}], [{}])
        self.frames.append(frame)
        for p in self.kernel.params:
            if not p.name:
                continue
            if p.is_pointer:
                el = self.elem(p.type_text)
                ptr = Ptr("global", p.name, np.asarray(0.0), el, (), p.const and p.restrict, p.restrict)
                addr = self.params.get(p.name)
                if isinstance(addr, int | np.integer) and not isinstance(addr, bool):
                    self.pointer_addr[p.name] = int(addr)
                self.declare(p.name, Value(None, False, frozenset({"param"}), None, ptr), False)
                continue
            el = self.elem(p.type_text)
            if p.name in self.params:
                raw = self.params[p.name]
                try:
                    val = Value(np.asarray(float(raw)), el.is_float, frozenset({"param"}))
                except (TypeError, ValueError):
                    val = ev.unknown(f"parameter `{p.name}` value {raw!r} is not a number")
            elif el.size is None and el.name not in self.typedefs:
                val = ev.unknown(f"parameter `{p.name}` of type `{p.type_text}` is not a number", frozenset({"param"}))
            else:
                val = ev.unknown(
                    f"parameter `{p.name}` has no value (pass params={{'{p.name}': ...}})",
                    frozenset({"param"}),
                    el.is_float,
                )
            self.declare(p.name, val, el.is_float)
        self.block(self.kernel.body, self.full_ctx())
        self.frames.pop()

    # ---------------------------------------------------------------- statements
    def block(self, node: Any, ctx: Ctx) -> Exits:
        self.push()
        try:
            return self.statements(node.named_children, ctx)
        finally:
            self.pop()

    def statements(self, nodes: list[Any], ctx: Ctx) -> Exits:
        exits = Exits()
        pending_pragma: Any = None
        for st in nodes:
            if st.type == "preproc_call":
                pending_pragma = st
                continue
            if exits.returned is not None or exits.left is not None:
                gone = np.zeros(self.shape, bool)
                for m in (exits.returned, exits.left):
                    if m is not None:
                        gone |= m
                ctx = replace(ctx, mask=ctx.mask & ~gone)
            if not ctx.mask.any():
                # nobody reaches the rest; still walk it for structure with an empty mask
                pass
            try:
                e = self.statement(st, ctx, pending_pragma)
            except _Unsupported as exc:
                self.note(f"line {self.line(st)}: {exc}")
                e = Exits()
            pending_pragma = None
            exits.add(e)
        return exits

    def statement(self, st: Any, ctx: Ctx, pragma: Any = None) -> Exits:
        t = st.type
        if t == "compound_statement":
            return self.block(st, ctx)
        if t == "declaration":
            self.declaration(st, ctx)
            return Exits()
        if t == "expression_statement":
            for c in st.named_children:
                self.eval(c, ctx)
            return Exits()
        if t == "if_statement":
            return self.if_statement(st, ctx)
        if t == "for_statement":
            return self.for_statement(st, ctx, pragma)
        if t in ("while_statement", "do_statement"):
            return self.while_statement(st, ctx, pragma)
        if t == "return_statement":
            value = next(iter(st.named_children), None)
            if value is not None:
                v = self.eval(value, ctx)
                if len(self.frames) > 1:
                    self.frames[-1].returns.append((ctx.mask.copy(), v))
            if len(self.frames) == 1 and ctx.conds:
                td = [c for c in ctx.conds if c.thread_dependent]
                if td:
                    self.exit_conds.append(
                        Cond(f"return at line {self.line(st)} under `{td[-1].text}`", self.line(st), True)
                    )
            return Exits(returned=ctx.mask.copy())
        if t in ("break_statement", "continue_statement"):
            return Exits(left=ctx.mask.copy())
        if t == "switch_statement":
            return self.switch_statement(st, ctx)
        if t in ("labeled_statement",):
            return self.statements(st.named_children[1:], ctx)
        if t in ("case_statement",):
            return self.statements(
                [c for c in st.named_children if c.type.endswith("statement") or c.type == "declaration"], ctx
            )
        if t in (
            "comment",
            "preproc_call",
            "empty_statement",
            "type_definition",
            "preproc_def",
            "preproc_function_def",
            "using_declaration",
            "alias_declaration",
            "static_assert_declaration",
        ):
            if t == "type_definition":
                self.typedef(st)
            return Exits()
        if t.startswith("preproc_"):
            return self.statements([c for c in st.named_children if not c.type.startswith("preproc_arg")], ctx)
        if t == "goto_statement":
            raise _Unsupported("goto is not followed")
        if t == "ERROR":
            raise _Unsupported(f"could not parse `{node_text(st)[:60]}`")
        # asm, try, etc.
        raise _Unsupported(f"statement `{t}` is not analysed")

    def typedef(self, st: Any) -> None:
        ty = st.child_by_field_name("type")
        decl = st.child_by_field_name("declarator")
        if ty is not None and decl is not None:
            self.typedefs[node_text(decl)] = node_text(ty)

    def declaration(self, st: Any, ctx: Ctx, file_scope: bool = False) -> None:
        text_head = " ".join(
            node_text(c)
            for c in st.children
            if c.type in ("type_qualifier", "storage_class_specifier", "attribute_specifier")
        )
        shared = "__shared__" in text_head
        constant = "__constant__" in text_head
        device_global = file_scope and "__device__" in text_head
        extern = "extern" in text_head
        type_node = st.child_by_field_name("type")
        type_text = node_text(type_node) if type_node is not None else "int"
        if type_node is not None and type_node.type == "placeholder_type_specifier":
            type_text = "auto"
        base_elem = self.elem(type_text)
        for decl in st.children_by_field_name("declarator"):
            init = None
            target = decl
            if decl.type == "init_declarator":
                target = decl.child_by_field_name("declarator")
                init = decl.child_by_field_name("value")
            dims: list[Any] = []
            pointer = False
            d = target
            while d is not None and d.type not in ("identifier", "field_identifier"):
                if d.type == "array_declarator":
                    dims.append(d.child_by_field_name("size"))
                elif d.type in ("pointer_declarator", "reference_declarator"):
                    pointer = True
                d = (
                    d.child_by_field_name("declarator")
                    if d.type != "reference_declarator"
                    else (d.named_children[-1] if d.named_children else None)
                )
            if d is None:
                continue
            name = node_text(d)
            line = self.line(st)
            dims.reverse()  # tree nests outermost last: tile[32][33] -> [size 32, size 33]
            if dims:
                sizes: list[int | None] = []
                for sz in dims:
                    if sz is None:
                        sizes.append(None)
                        continue
                    v = self.eval(sz, ctx)
                    arr = v.lanes(self.shape)
                    sizes.append(
                        int(arr.flat[0])
                        if arr is not None and np.isfinite(arr).all() and np.all(arr == arr.flat[0])
                        else None
                    )
                space = "shared" if shared else "constant" if constant else "global" if device_global else "local"
                inner = tuple(s if s is not None else -1 for s in sizes[1:])
                reason = None
                if any(s == -1 for s in inner):
                    reason = f"extent of `{name}` is not determined"
                ptr = Ptr(space, name, np.asarray(0.0), base_elem, inner, constant, False, reason)
                self.declare(name, Value(None, False, frozenset(), None, ptr), False)
                if init is not None:
                    self.eval(init, ctx)
                if shared:
                    nbytes: int | None = None
                    if sizes and all(s is not None for s in sizes) and base_elem.size:
                        nbytes = math.prod(s for s in sizes if s is not None) * base_elem.size
                    dynamic = extern or (sizes and sizes[0] is None)
                    self.shared_decls[name] = SharedDecl(
                        name, base_elem, None if dynamic else nbytes, bool(dynamic), line
                    )
                continue
            if shared:
                self.shared_decls[name] = SharedDecl(name, base_elem, base_elem.size, False, line)
                ptr = Ptr("shared", name, np.asarray(0.0), base_elem)
                self.declare(
                    name,
                    Value(None, base_elem.is_float, frozenset({"data"}), f"shared scalar `{name}`", ptr),
                    base_elem.is_float,
                )
                continue
            if init is not None:
                if init.type in ("initializer_list", "argument_list"):
                    for c in init.named_children:
                        self.eval(c, ctx)
                    val = ev.unknown(f"`{name}` is initialised from a list")
                else:
                    val = self.eval(init, ctx)
            else:
                val = ev.unknown(f"`{name}` is declared without a value")
            if pointer:
                if val.ptr is None and init is not None and val.arr is None:
                    val = replace(
                        val,
                        ptr=Ptr(
                            "unknown",
                            name,
                            None,
                            self.elem(type_text),
                            (),
                            reason=val.reason or f"pointer `{name}` not traced",
                        ),
                    )
                elif val.ptr is not None and type_text != "auto" and base_elem.size is not None:
                    val = replace(val, ptr=replace(val.ptr, elem=base_elem, dims=()))
                self.declare(name, val, False)
                continue
            is_float = val.is_float if type_text == "auto" else base_elem.is_float
            if val.ptr is None:
                val = ev.convert(val, is_float)
            if ctx.value_unknown is not None and not file_scope:
                val = Value(None, is_float, val.deps | {"data"}, ctx.value_unknown)
            self.declare(name, val, is_float)

    def if_statement(self, st: Any, ctx: Ctx) -> Exits:
        cond_node = st.child_by_field_name("condition")
        if cond_node is not None and cond_node.type == "condition_clause":
            inner = cond_node.child_by_field_name("value") or (
                cond_node.named_children[-1] if cond_node.named_children else None
            )
            cond_node = inner
        text = node_text(cond_node) if cond_node is not None else "?"
        cv = self.eval(cond_node, ctx) if cond_node is not None else ev.unknown("no condition")
        line = self.line(st)
        acc = self.branch_acc.setdefault(self.key(st), BranchAcc(line, " ".join(text.split()), "if"))
        tdep = "tid" in cv.deps
        acc.thread_dependent = acc.thread_dependent or tdep
        cond_info = Cond(" ".join(text.split()), line, tdep)
        arr = cv.lanes(self.shape)
        cons = st.child_by_field_name("consequence")
        alt = st.child_by_field_name("alternative")
        if alt is not None and alt.type == "else_clause":
            alt = alt.named_children[0] if alt.named_children else None
        if arr is None or np.isnan(arr[ctx.mask]).any():
            reason = f"condition `{cond_info.text}` at line {line} depends on {cv.reason or 'unknown values'}"
            if self.recording and ctx.mask.any():
                acc.unknown = acc.unknown or reason
            sub = replace(
                ctx,
                count_unknown=ctx.count_unknown or reason,
                value_unknown=ctx.value_unknown or reason,
                conds=(*ctx.conds, cond_info),
            )
            exits = self.statement(cons, sub) if cons is not None else Exits()
            if alt is not None:
                exits.add(self.statement(alt, sub))
            # lanes that may have returned are unknown: keep walking with the enclosing mask
            return Exits()
        truth = (arr != 0) & ctx.mask
        if self.recording:
            div = divergent_warps(truth, ctx.mask)
            acc.add(div, ctx.mask.any(axis=1), ctx.mult, self.lanes.tail_block)
        then_ctx = replace(ctx, mask=truth, conds=(*ctx.conds, cond_info))
        exits = self.statement(cons, then_ctx) if cons is not None else Exits()
        if alt is not None:
            else_info = Cond(f"!({cond_info.text})", line, tdep)
            exits.add(self.statement(alt, replace(ctx, mask=ctx.mask & ~truth, conds=(*ctx.conds, else_info))))
        return exits

    def switch_statement(self, st: Any, ctx: Ctx) -> Exits:
        cond_node = st.child_by_field_name("condition")
        text = " ".join(node_text(cond_node).split()) if cond_node is not None else "?"
        cv = self.eval(cond_node, ctx) if cond_node is not None else ev.unknown("no condition")
        line = self.line(st)
        acc = self.branch_acc.setdefault(self.key(st), BranchAcc(line, text, "switch"))
        tdep = "tid" in cv.deps
        acc.thread_dependent = acc.thread_dependent or tdep
        arr = cv.lanes(self.shape)
        if arr is None or np.isnan(arr[ctx.mask]).any():
            acc.unknown = acc.unknown or f"switch value `{text}` depends on {cv.reason or 'unknown values'}"
        elif self.recording:
            acc.add(varying_warps(arr, ctx.mask), ctx.mask.any(axis=1), ctx.mult, self.lanes.tail_block)
        reason = f"inside switch at line {line} (cases are not split per lane)"
        body = st.child_by_field_name("body")
        sub = replace(
            ctx,
            count_unknown=ctx.count_unknown or reason,
            value_unknown=ctx.value_unknown or reason,
            conds=(*ctx.conds, Cond(text, line, tdep)),
        )
        if body is not None:
            self.block(body, sub)
        return Exits()

    # ---------------------------------------------------------------- loops
    def _pragma_unroll(self, pragma: Any) -> bool | int:
        if pragma is None:
            return False
        text = node_text(pragma)
        m = re.match(r"\s*#\s*pragma\s+unroll\b\s*\(?\s*(\w+)?", text)
        if not m:
            return False
        if m.group(1) is None:
            return True
        val = self._eval_text(m.group(1)).lanes((1, 1))
        if val is not None and np.isfinite(val).all():
            return int(val.flat[0])
        return True

    def _assigned_names(self, node: Any) -> tuple[set[str], set[str]]:
        """Names assigned and names declared anywhere under ``node``."""
        assigned: set[str] = set()
        declared: set[str] = set()
        stack = [node]
        while stack:
            n = stack.pop()
            if n.type == "assignment_expression":
                left = n.child_by_field_name("left")
                if left is not None and left.type == "identifier":
                    assigned.add(node_text(left))
            elif n.type == "update_expression":
                arg = n.child_by_field_name("argument")
                if arg is not None and arg.type == "identifier":
                    assigned.add(node_text(arg))
            elif n.type in ("init_declarator",):
                d = n.child_by_field_name("declarator")
                if d is not None and d.type == "identifier":
                    declared.add(node_text(d))
            elif n.type == "declaration":
                for d in n.children_by_field_name("declarator"):
                    if d.type == "identifier":
                        declared.add(node_text(d))
            stack.extend(n.named_children)
        return assigned, declared

    def _has(self, node: Any, types: set[str], stop: set[str]) -> bool:
        stack = list(node.named_children)
        while stack:
            n = stack.pop()
            if n.type in types:
                return True
            if n.type not in stop:
                stack.extend(n.named_children)
        return False

    def _invalidate(self, names: set[str], reason: str) -> None:
        frame = self.frames[-1]
        for name in names:
            for scope in reversed(frame.scopes):
                if name in scope:
                    old = scope[name]
                    if old.ptr is not None:
                        scope[name] = Value(
                            None, False, old.deps | {"loop"}, reason, replace(old.ptr, offset=None, reason=reason)
                        )
                    else:
                        scope[name] = Value(None, old.is_float, old.deps | {"loop"}, reason)
                    break

    def for_statement(self, st: Any, ctx: Ctx, pragma: Any) -> Exits:
        line = self.line(st)
        acc = self.loop_acc.setdefault(self.key(st), LoopAcc(line, "for", self._pragma_unroll(pragma)))
        self.push()
        try:
            init = st.child_by_field_name("initializer")
            var: str | None = None
            if init is not None:
                if init.type == "declaration":
                    self.declaration(init, ctx)
                    ds = init.children_by_field_name("declarator")
                    if ds and ds[0].type == "init_declarator":
                        dn = ds[0].child_by_field_name("declarator")
                        var = node_text(dn) if dn is not None and dn.type == "identifier" else None
                else:
                    self.eval(init, ctx)
                    if init.type == "assignment_expression":
                        left = init.child_by_field_name("left")
                        var = node_text(left) if left is not None and left.type == "identifier" else None
            cond = st.child_by_field_name("condition")
            update = st.child_by_field_name("update")
            body = st.child_by_field_name("body")
            assigned, declared = self._assigned_names(body) if body is not None else (set(), set())
            changing = {n for n in assigned - declared if n != var}
            reason_changes = f"changes across iterations of the loop at line {line}"
            self._invalidate(changing, reason_changes)
            trips, history, why = self._trip_counts(var, cond, update, body, ctx, assigned)
            self._loop_body(st, acc, body, cond, var, trips, history, why, ctx, line)
            after = changing | ({var} if var else set())
        finally:
            self.pop()
        self._invalidate(after - {var} if var in declared else after, f"value after the loop at line {line}")
        return Exits()

    def _trip_counts(
        self, var: str | None, cond: Any, update: Any, body: Any, ctx: Ctx, assigned: set[str]
    ) -> tuple[np.ndarray | None, np.ndarray | None, str | None]:
        """Per-lane trip counts (and, for simulated loops, the variable's value per iteration)."""
        if cond is None:
            return None, None, "loop without a condition"
        if var is None:
            return None, None, "loop variable not recognised"
        if var in assigned:
            return None, None, f"loop variable `{var}` is modified in the body"
        if body is not None and self._has(
            body,
            {"break_statement", "return_statement", "goto_statement"},
            {"for_statement", "while_statement", "do_statement", "switch_statement", "lambda_expression"},
        ):
            return None, None, "the loop can exit early (break/return)"
        start = self.lookup(var)
        if start is None or start.arr is None:
            return None, None, f"start value of `{var}` is not determined ({start.reason if start else 'undeclared'})"
        step_op, step = self._step(var, update, ctx)
        m = ctx.mask
        if step_op == "add" and cond.type == "binary_expression":
            op = node_text(cond.child_by_field_name("operator"))
            left, right = cond.child_by_field_name("left"), cond.child_by_field_name("right")
            if left is not None and left.type == "identifier" and node_text(left) == var:
                bound_node = right
            elif right is not None and right.type == "identifier" and node_text(right) == var:
                bound_node = left
                op = {"<": ">", ">": "<", "<=": ">=", ">=": "<="}.get(op, op)
            else:
                bound_node = None
            if bound_node is not None and step is not None and op in ("<", "<=", ">", ">=", "!="):
                prev = self.recording
                self.recording = False
                try:
                    bound = self.eval(bound_node, ctx)
                finally:
                    self.recording = prev
                if bound.arr is None:
                    return None, None, f"loop bound `{node_text(bound_node)}` depends on {bound.reason}"
                i0 = np.broadcast_to(start.arr, self.shape)
                b = np.broadcast_to(bound.arr, self.shape)
                s = np.broadcast_to(step.arr, self.shape)
                if np.isnan(i0[m]).any() or np.isnan(b[m]).any() or np.isnan(s[m]).any():
                    return None, None, "loop bounds not determined on every lane"
                with np.errstate(all="ignore"):
                    if op == "<":
                        t = np.ceil((b - i0) / s)
                        bad = (s <= 0) & (i0 < b)
                    elif op == "<=":
                        t = np.floor((b - i0) / s) + 1
                        bad = (s <= 0) & (i0 <= b)
                    elif op == ">":
                        t = np.ceil((i0 - b) / -s)
                        bad = (s >= 0) & (i0 > b)
                    elif op == ">=":
                        t = np.floor((i0 - b) / -s) + 1
                        bad = (s >= 0) & (i0 >= b)
                    else:
                        t = (b - i0) / s
                        bad = (t != np.floor(t)) | (t < 0) | (s == 0)
                if (bad & m).any():
                    return None, None, "the loop does not terminate for some lanes (step has the wrong sign)"
                t = np.where(m, np.maximum(np.nan_to_num(t, nan=0.0), 0.0), 0.0)
                return t, None, None
        if step_op in ("add", "mul", "shr", "shl", "div") and step is not None:
            return self._simulate(var, cond, start, step_op, step, ctx)
        return None, None, "loop update not recognised"

    def _step(self, var: str, update: Any, ctx: Ctx) -> tuple[str | None, Value | None]:
        if update is None:
            return None, None
        if update.type == "update_expression":
            arg = update.child_by_field_name("argument")
            if arg is None or node_text(arg) != var:
                return None, None
            return "add", ev.const(1 if "++" in node_text(update) else -1)
        if update.type == "assignment_expression":
            left, right = update.child_by_field_name("left"), update.child_by_field_name("right")
            if left is None or right is None or node_text(left) != var:
                return None, None
            op = node_text(update.child_by_field_name("operator"))
            prev = self.recording
            self.recording = False
            try:
                if op in ("+=", "-="):
                    v = self.eval(right, ctx)
                    return "add", (v if op == "+=" else ev.unary("-", v))
                if op in ("*=", ">>=", "<<=", "/="):
                    return {"*=": "mul", ">>=": "shr", "<<=": "shl", "/=": "div"}[op], self.eval(right, ctx)
                if op == "=" and right.type == "binary_expression":
                    rl, rr = right.child_by_field_name("left"), right.child_by_field_name("right")
                    rop = node_text(right.child_by_field_name("operator"))
                    if rl is not None and node_text(rl) == var and rop in ("+", "-", "*", "/", ">>", "<<"):
                        v = self.eval(rr, ctx)
                        kind = {"+": "add", "-": "add", "*": "mul", "/": "div", ">>": "shr", "<<": "shl"}[rop]
                        return kind, (ev.unary("-", v) if rop == "-" else v)
            finally:
                self.recording = prev
        return None, None

    def _simulate(
        self, var: str, cond: Any, start: Value, step_op: str, step: Value, ctx: Ctx
    ) -> tuple[np.ndarray | None, np.ndarray | None, str | None]:
        if step.arr is None:
            return None, None, f"loop step depends on {step.reason}"
        m = ctx.mask
        cur = np.broadcast_to(start.arr, self.shape).astype(np.float64).copy()
        trips = np.zeros(self.shape)
        alive = m.copy()
        history = []
        prev = self.recording
        self.recording = False
        self.push()
        try:
            for _ in range(MAX_SIMULATED_TRIPS + 1):
                self.declare(var, Value(cur.copy(), start.is_float, start.deps), start.is_float)
                c = self.eval(cond, replace(ctx, mask=alive))
                carr = c.lanes(self.shape)
                if carr is None or np.isnan(carr[alive]).any():
                    return None, None, f"loop condition depends on {c.reason or 'unknown values'}"
                alive = alive & (carr != 0)
                if not alive.any():
                    break
                history.append(cur.copy())
                trips += alive
                s = np.broadcast_to(step.arr, self.shape)
                op = {"add": "+", "mul": "*", "div": "/", "shr": ">>", "shl": "<<"}[step_op]
                nxt = ev.binary(op, Value(cur, start.is_float), Value(np.asarray(s), step.is_float)).lanes(self.shape)
                cur = np.where(alive, nxt, cur)
            else:
                return None, None, f"loop runs more than {MAX_SIMULATED_TRIPS} iterations with a non-additive step"
        finally:
            self.pop()
            self.recording = prev
        hist = np.stack(history) if history else np.zeros((0, *self.shape))
        return trips, hist, None

    def _loop_body(
        self,
        st: Any,
        acc: LoopAcc,
        body: Any,
        cond: Any,
        var: str | None,
        trips: np.ndarray | None,
        history: np.ndarray | None,
        why: str | None,
        ctx: Ctx,
        line: int,
    ) -> None:
        cond_text = " ".join(node_text(cond).split()) if cond is not None else "(none)"
        bacc = self.branch_acc.setdefault(self.key(st), BranchAcc(line, cond_text, "loop"))
        start = self.lookup(var) if var else None
        tdep = False
        if cond is not None:
            prev = self.recording
            self.recording = False
            try:
                tdep = "tid" in self.eval(cond, ctx).deps
            finally:
                self.recording = prev
        bacc.thread_dependent = bacc.thread_dependent or tdep
        loop_cond = Cond(f"loop condition `{cond_text}`", line, tdep)
        if body is None:
            return
        if trips is None:
            reason = f"trip count of the loop at line {line} is unknown: {why}"
            if self.recording and ctx.mask.any():
                acc.add(None, False, why)
                bacc.unknown = bacc.unknown or why
            sub = replace(
                ctx,
                count_unknown=ctx.count_unknown or reason,
                conds=(*ctx.conds, loop_cond),
                loop_lines=(*ctx.loop_lines, line),
            )
            self.statement(body, sub)
            return
        active = ctx.mask & (trips > 0)
        tmax = float(trips[ctx.mask].max()) if ctx.mask.any() else 0.0
        if self.recording and ctx.mask.any():
            tm = trips[ctx.mask]
            varies = bool(tm.size and tm.min() != tm.max())
            acc.add(tmax, varies, None)
            bacc.add(varying_warps(trips, ctx.mask), ctx.mask.any(axis=1), ctx.mult, self.lanes.tail_block)
        if tmax <= 0:
            return
        t = int(tmax)
        if t <= EXACT_TRIPS or history is not None:
            # geometric loops (simulated, at most MAX_SIMULATED_TRIPS) change their pattern every
            # iteration, so every iteration is walked
            samples = [(i, 1.0) for i in range(t)]
        else:
            samples = [(0, 1.0), (t // 2, float(t - 2)), (t - 1, 1.0)]
        _step_op, step = self._step(var, st.child_by_field_name("update"), ctx) if var else (None, None)
        for it, weight in samples:
            self.push()
            try:
                if var is not None and start is not None:
                    if history is not None:
                        val = history[it] if it < len(history) else np.full(self.shape, np.nan)
                        self.declare(var, Value(val, start.is_float, start.deps | {"loop"}), start.is_float)
                    elif step is not None and step.arr is not None and start.arr is not None:
                        self.declare(
                            var,
                            Value(
                                start.arr + it * step.arr,
                                start.is_float | step.is_float,
                                start.deps | step.deps | {"loop"},
                            ),
                            start.is_float,
                        )
                sub = replace(
                    ctx,
                    mask=active & (trips > it),
                    mult=ctx.mult * weight,
                    conds=(*ctx.conds, loop_cond),
                    loop_lines=(*ctx.loop_lines, line),
                )
                self.statement(body, sub)
            finally:
                self.pop()

    def while_statement(self, st: Any, ctx: Ctx, pragma: Any) -> Exits:
        line = self.line(st)
        kind = "while" if st.type == "while_statement" else "do"
        acc = self.loop_acc.setdefault(self.key(st), LoopAcc(line, kind, self._pragma_unroll(pragma)))
        cond = st.child_by_field_name("condition")
        if cond is not None and cond.type in ("condition_clause", "parenthesized_expression"):
            cond = cond.named_children[-1] if cond.named_children else cond
        text = " ".join(node_text(cond).split()) if cond is not None else "?"
        why = f"{kind} loop: trip count is not evaluated"
        body = st.child_by_field_name("body")
        assigned, declared = self._assigned_names(st)
        changing = assigned - declared
        self._invalidate(changing, f"changes across iterations of the loop at line {line}")
        cv = self.eval(cond, ctx) if cond is not None else ev.unknown("no condition")
        if self.recording and ctx.mask.any():
            acc.add(None, False, why)
            bacc = self.branch_acc.setdefault(self.key(st), BranchAcc(line, text, "loop"))
            bacc.thread_dependent = bacc.thread_dependent or "tid" in cv.deps
            bacc.unknown = bacc.unknown or why
        reason = f"trip count of the loop at line {line} is unknown: {why}"
        sub = replace(
            ctx,
            count_unknown=ctx.count_unknown or reason,
            conds=(*ctx.conds, Cond(f"loop condition `{text}`", line, "tid" in cv.deps)),
            loop_lines=(*ctx.loop_lines, line),
        )
        if body is not None:
            self.statement(body, sub)
        return Exits()

    # ---------------------------------------------------------------- expressions
    def eval(self, node: Any, ctx: Ctx) -> Value:
        t = node.type
        fn = getattr(self, "e_" + t, None)
        if fn is None:
            for c in node.named_children:
                if c.type.endswith("expression") or c.type in ("identifier", "subscript_expression"):
                    self.eval(c, ctx)
            return ev.unknown(f"`{node_text(node)[:40]}` ({t}) is not evaluated")
        return fn(node, ctx)

    def e_parenthesized_expression(self, node: Any, ctx: Ctx) -> Value:
        out = ev.unknown("empty parentheses")
        for c in node.named_children:
            out = self.eval(c, ctx)
        return out

    def e_comma_expression(self, node: Any, ctx: Ctx) -> Value:
        self.eval(node.child_by_field_name("left"), ctx)
        return self.eval(node.child_by_field_name("right"), ctx)

    def e_number_literal(self, node: Any, ctx: Ctx) -> Value:
        return self.number(node_text(node))

    @staticmethod
    def number(text: str) -> Value:
        t = text.replace("'", "")
        m = _INT_LIT.match(t)
        if m:
            body = m.group(1)
            if body.lower().startswith("0x"):
                return ev.const(int(body, 16))
            if body.lower().startswith("0b"):
                return ev.const(int(body[2:], 2))
            if len(body) > 1 and body.startswith("0"):
                return ev.const(int(body, 8))
            return ev.const(int(body))
        try:
            return ev.const(float(t.rstrip("fFlL")), True)
        except ValueError:
            return ev.unknown(f"literal {text}")

    def e_char_literal(self, node: Any, ctx: Ctx) -> Value:
        inner = node_text(node)[1:-1]
        return ev.const(ord(inner[-1]) if inner else 0)

    def e_true(self, node: Any, ctx: Ctx) -> Value:
        return ev.const(1)

    def e_false(self, node: Any, ctx: Ctx) -> Value:
        return ev.const(0)

    def e_null(self, node: Any, ctx: Ctx) -> Value:
        return ev.unknown("null pointer")

    e_nullptr = e_null

    def e_string_literal(self, node: Any, ctx: Ctx) -> Value:
        return ev.unknown("string literal")

    def e_sizeof_expression(self, node: Any, ctx: Ctx) -> Value:
        ty = node.child_by_field_name("type")
        if ty is not None:
            el = self.elem(node_text(ty))
            if "*" in node_text(ty):
                return ev.const(8)
            if el.size is not None:
                return ev.const(el.size)
        val = node.child_by_field_name("value")
        if val is not None:
            v = self._peek(val, ctx)
            if v.ptr is not None and v.ptr.elem.size:
                return ev.const(v.ptr.elem.size)
        return ev.unknown(f"`{node_text(node)}` not evaluated")

    def _peek(self, node: Any, ctx: Ctx) -> Value:
        prev = self.recording
        self.recording = False
        try:
            return self.eval(node, ctx)
        finally:
            self.recording = prev

    def e_identifier(self, node: Any, ctx: Ctx) -> Value:
        name = node_text(node)
        v = self.lookup(name)
        if v is not None:
            return v
        if name in self.template_values:
            return self.template_values[name]
        if name == "warpSize":
            return ev.const(32)
        macro = self.macros.get(name)
        if macro is not None and macro.params is None:
            return self.expand(macro.body, node, ctx)
        return ev.unknown(f"`{name}` is not defined in the analysed source")

    def expand(self, body: str, site: Any, ctx: Ctx) -> Value:
        expr = parse_expression(body) if body else None
        if expr is None:
            return ev.unknown(f"macro body `{body[:40]}` is not an expression")
        if len(self.origin) > MAX_MACRO_DEPTH:
            return ev.unknown("macro expansion too deep")
        saved_o, saved_l = self.origin, self.origin_line
        self.origin = (self.key(site), body)
        self.origin_line = self.line(site)
        try:
            return self.eval(expr, ctx)
        finally:
            self.origin, self.origin_line = saved_o, saved_l

    def e_field_expression(self, node: Any, ctx: Ctx) -> Value:
        arg = node.child_by_field_name("argument")
        field_node = node.child_by_field_name("field")
        fname = node_text(field_node) if field_node is not None else ""
        if arg is not None and arg.type == "identifier" and self.lookup(node_text(arg)) is None:
            base = node_text(arg)
            dim = {"x": 0, "y": 1, "z": 2}.get(fname)
            if dim is not None:
                L = self.lanes
                if base == "threadIdx":
                    return Value(L.tid[dim], False, frozenset({"tid"}))
                if base == "blockIdx":
                    return Value(L.bid[dim], False, frozenset({"bid"}))
                if base == "blockDim":
                    return ev.const(L.block[dim])
                if base == "gridDim":
                    return ev.const(L.grid[dim])
        v = self.eval(arg, ctx) if arg is not None else ev.unknown("?")
        if node_text(node.child_by_field_name("operator") or node) == "->" and v.ptr is not None:
            return ev.unknown(f"member `{fname}` read through pointer (not traced)", v.deps | {"data"})
        return Value(
            None,
            v.is_float or (v.ptr is not None and v.ptr.elem.is_float),
            v.deps | {"data"},
            v.reason or f"member `.{fname}` of a value",
        )

    def e_binary_expression(self, node: Any, ctx: Ctx) -> Value:
        op = node_text(node.child_by_field_name("operator"))
        a = self.eval(node.child_by_field_name("left"), ctx)
        b = self.eval(node.child_by_field_name("right"), ctx)
        if a.ptr is not None or b.ptr is not None:
            return self._pointer_arith(op, a, b)
        r = ev.binary(op, a, b)
        if counts_as_flop(op, r.is_float):
            self.count_flops(1, ctx, r.is_float, node, a, b)
        return r

    def count_flops(self, n: float, ctx: Ctx, is_float: bool, node: Any, *operands: Value) -> None:
        if not self.recording or not ctx.mask.any():
            return
        if ctx.count_unknown is not None:
            self.flops_unknown.append(f"line {self.line(node)}: {ctx.count_unknown}")
            return
        threads = float((ctx.mask.sum(axis=1) * ctx.mult).sum()) * n
        self.flops += threads
        names = " ".join(node_text(node).split())
        if "double" in names or any(o.is_float and o.reason and "double" in o.reason for o in operands):
            self.flops_fp64 += threads

    def _pointer_arith(self, op: str, a: Value, b: Value) -> Value:
        if a.ptr is not None and b.ptr is None and op in ("+", "-"):
            p, off = a.ptr, b
        elif b.ptr is not None and a.ptr is None and op == "+":
            p, off = b.ptr, a
        else:
            return ev.unknown(f"pointer expression with `{op}` is not traced", a.deps | b.deps)
        size = p.elem.size
        if p.dims:
            size = (size or 0) * math.prod(p.dims) if size else None
        if p.offset is None or off.arr is None or size is None:
            return Value(
                None,
                False,
                a.deps | b.deps,
                None,
                replace(p, offset=None, reason=p.reason or off.reason or "pointer offset unknown"),
            )
        delta = off.arr * size
        return Value(None, False, a.deps | b.deps, None, replace(p, offset=p.offset + (delta if op == "+" else -delta)))

    def e_unary_expression(self, node: Any, ctx: Ctx) -> Value:
        op = node_text(node.child_by_field_name("operator"))
        return ev.unary(op, self.eval(node.child_by_field_name("argument"), ctx))

    def e_conditional_expression(self, node: Any, ctx: Ctx) -> Value:
        c = self.eval(node.child_by_field_name("condition"), ctx)
        carr = c.lanes(self.shape)
        cons, alt = node.child_by_field_name("consequence"), node.child_by_field_name("alternative")
        if carr is None:
            sub = replace(ctx, count_unknown=ctx.count_unknown or f"ternary on {c.reason}")
            a = self.eval(cons, sub) if cons is not None else ev.unknown("?")
            b = self.eval(alt, sub) if alt is not None else ev.unknown("?")
        else:
            truth = carr != 0
            a = self.eval(cons, replace(ctx, mask=ctx.mask & truth)) if cons is not None else ev.unknown("?")
            b = self.eval(alt, replace(ctx, mask=ctx.mask & ~truth)) if alt is not None else ev.unknown("?")
        if a.ptr is not None or b.ptr is not None:
            return ev.unknown("pointer chosen by a condition is not traced")
        return ev.select(c, a, b)

    def e_cast_expression(self, node: Any, ctx: Ctx) -> Value:
        ty = node.child_by_field_name("type")
        v = self.eval(node.child_by_field_name("value"), ctx)
        return self.cast(node_text(ty) if ty is not None else "", v)

    def cast(self, type_text: str, v: Value) -> Value:
        if "*" in type_text:
            if v.ptr is None:
                return ev.unknown(f"cast of a non-pointer to `{type_text}`", v.deps)
            el = self.elem(type_text.replace("*", " "))
            return replace(v, ptr=replace(v.ptr, elem=el, dims=(), read_only=v.ptr.read_only and "const" in type_text))
        el = self.elem(type_text)
        if v.ptr is not None:
            addr = self.pointer_addr.get(v.ptr.base) if v.ptr.space == "global" else None
            if addr is not None and v.ptr.offset is not None and el.size is not None and not el.is_float:
                return Value(np.asarray(v.ptr.offset, dtype=np.float64) + float(addr), False, v.deps)
            return ev.unknown(f"pointer cast to `{type_text}`", v.deps)
        if el.size is None:
            return replace(v, arr=None, reason=v.reason or f"cast to `{type_text}`")
        return ev.convert(v, el.is_float)

    def e_update_expression(self, node: Any, ctx: Ctx) -> Value:
        arg = node.child_by_field_name("argument")
        text = node_text(node)
        delta = ev.const(1 if "++" in text else -1)
        if arg is not None and arg.type == "identifier":
            old = self.eval(arg, ctx)
            if old.ptr is not None:
                new = self._pointer_arith("+", old, delta)
            else:
                new = ev.binary("+", old, delta)
                if new.is_float:
                    self.count_flops(1, ctx, True, node, old)
            self.set_var(node_text(arg), new, ctx)
            return new if text.startswith(("++", "--")) else old
        # a[i]++ : load + store
        self.memory_access(arg, ctx, "load")
        self.memory_access(arg, ctx, "store")
        return ev.unknown("value of an increment of memory", frozenset({"data"}))

    def e_assignment_expression(self, node: Any, ctx: Ctx) -> Value:
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        op = node_text(node.child_by_field_name("operator"))
        rv = self.eval(right, ctx)
        while left.type == "parenthesized_expression" and left.named_children:
            left = left.named_children[0]
        if left.type == "identifier":
            name = node_text(left)
            if op != "=":
                old = self.eval(left, ctx)
                bop = op[:-1]
                if old.ptr is not None:
                    new = self._pointer_arith(bop, old, rv)
                else:
                    new = ev.binary(bop, old, rv)
                    if counts_as_flop(bop, new.is_float):
                        self.count_flops(1, ctx, True, node, old, rv)
            else:
                new = rv
            decl_float = self.declared_float(name)
            if new.ptr is None and decl_float is not None:
                new = ev.convert(new, decl_float)
            self.set_var(name, new, ctx)
            return new
        if left.type in ("subscript_expression", "pointer_expression"):
            if op != "=":
                old = self.memory_access(left, ctx, "load")
                if COMPOUND_OPS.get(op) and (old.is_float or rv.is_float):
                    self.count_flops(1, ctx, True, node, old, rv)
            self.memory_access(left, ctx, "store")
            return rv
        if left.type == "field_expression":
            arg = left.child_by_field_name("argument")
            if arg is not None and arg.type in ("subscript_expression", "pointer_expression"):
                if op != "=":
                    self.memory_access(arg, ctx, "load")
                self.memory_access(arg, ctx, "store", partial=True)
            elif arg is not None and arg.type == "identifier" and op != "=" and rv.is_float:
                self.count_flops(1, ctx, True, node, rv)
            return rv
        self.eval(left, ctx)
        return rv

    def e_subscript_expression(self, node: Any, ctx: Ctx) -> Value:
        return self.memory_access(node, ctx, "load")

    def e_pointer_expression(self, node: Any, ctx: Ctx) -> Value:
        op = node_text(node.child_by_field_name("operator"))
        arg = node.child_by_field_name("argument")
        if op == "&":
            return self.address(arg, ctx)
        return self.memory_access(node, ctx, "load")

    def address(self, node: Any, ctx: Ctx) -> Value:
        """The pointer value of ``&node`` / the place an lvalue designates, without accessing it."""
        while node.type == "parenthesized_expression" and node.named_children:
            node = node.named_children[0]
        if node.type == "subscript_expression":
            base = self.eval(node.child_by_field_name("argument"), ctx)
            idx_node = node.child_by_field_name("indices") or node.child_by_field_name("index")
            if idx_node is not None and idx_node.type == "subscript_argument_list":
                idx_node = idx_node.named_children[0] if idx_node.named_children else None
            idx = self.eval(idx_node, ctx) if idx_node is not None else ev.unknown("no index")
            if base.ptr is None:
                return ev.unknown(f"`{node_text(node)}` is not an array access that can be traced", base.deps)
            return self._index(base, idx)
        if node.type == "pointer_expression" and node_text(node.child_by_field_name("operator")) == "*":
            return self.eval(node.child_by_field_name("argument"), ctx)
        if node.type == "identifier":
            v = self.eval(node, ctx)
            if v.ptr is not None and v.ptr.space in ("shared", "global", "constant"):
                return v  # address of a __shared__ scalar
            return Value(
                None, False, v.deps, None, Ptr("local", node_text(node), np.asarray(0.0), Elem("?", None, False))
            )
        v = self.eval(node, ctx)
        return Value(
            None,
            False,
            v.deps,
            None,
            Ptr(
                "unknown",
                node_text(node),
                None,
                Elem("?", None, False),
                reason=f"address of `{node_text(node)[:40]}` not traced",
            ),
        )

    def _index(self, base: Value, idx: Value) -> Value:
        p = base.ptr
        assert p is not None
        deps = base.deps | idx.deps
        size = p.elem.size
        stride = None if size is None else size * (math.prod(p.dims) if p.dims else 1)
        if p.dims and any(d < 0 for d in p.dims):
            stride = None
        if p.offset is None or idx.arr is None or stride is None:
            reason = (
                p.reason
                or (
                    idx.reason
                    and f"index depends on {idx.reason}" + (" (indirect access)" if "data" in idx.deps else "")
                )
                or "element size unknown"
            )
            return Value(None, False, deps, None, replace(p, offset=None, dims=p.dims[1:], reason=reason))
        return Value(None, False, deps, None, replace(p, offset=p.offset + idx.arr * stride, dims=p.dims[1:]))

    def memory_access(
        self,
        node: Any,
        ctx: Ctx,
        kind: str,
        read_only: bool = False,
        partial: bool = False,
        ptr_value: Value | None = None,
    ) -> Value:
        """Record a load/store/atomic of ``node`` (a subscript or ``*p``) and return the loaded value."""
        if ptr_value is None:
            while node.type == "parenthesized_expression" and node.named_children:
                node = node.named_children[0]
            if node.type == "subscript_expression":
                base = self.eval(node.child_by_field_name("argument"), ctx)
                if base.ptr is not None and base.ptr.dims:
                    # tile[ty] of a 2-D array: a row address, not an access
                    idx_node = node.child_by_field_name("indices")
                    if idx_node is not None and idx_node.named_children:
                        return self._index(base, self.eval(idx_node.named_children[0], ctx))
                pv = self.address(node, ctx) if base.ptr is not None else None
                if pv is None:
                    idx_node = node.child_by_field_name("indices")
                    if idx_node is not None:
                        for c in idx_node.named_children:
                            self.eval(c, ctx)
                    return ev.unknown(
                        base.reason or f"`{node_text(node)[:40]}` is not a traced array",
                        base.deps | {"data"},
                        base.is_float,
                    )
            elif node.type == "pointer_expression":
                pv = self.eval(node.child_by_field_name("argument"), ctx)
            else:
                return self.eval(node, ctx)
        else:
            pv = ptr_value
        p = pv.ptr
        text = " ".join(node_text(node).split())
        if p is None:
            return ev.unknown(f"`{text[:40]}` dereferences a value that is not a traced pointer", pv.deps | {"data"})
        loaded = Value(
            None, p.elem.is_float, pv.deps | {"data"}, f"data loaded from `{p.base}` at line {self.line(node)}"
        )
        if not self.recording or p.space in ("local",):
            return loaded
        if p.space == "constant":
            self.constant_arrays.add(p.base)
            return loaded
        if p.space == "shared":
            self._record_shared(node, ctx, kind, p, text)
        else:
            self._record_global(node, ctx, kind, p, text, read_only or (kind == "load" and p.read_only))
        return loaded

    def _record_global(self, node: Any, ctx: Ctx, kind: str, p: Ptr, text: str, read_only: bool) -> None:
        key = (*self.key(node), kind)
        acc = self.global_acc.get(key)
        if acc is None:
            acc = self.global_acc[key] = GlobalAcc(self.line(node), kind, p.base, p.elem, read_only, text)
        acc.read_only = acc.read_only or read_only
        if p.space == "unknown":
            acc.unknown = acc.unknown or (p.reason or "pointer not traced")
            return
        addr = self._lane_addresses(acc, ctx, p)
        if addr is None:
            return
        sec, useful = memory.sectors_per_warp(addr, p.elem.size, ctx.mask)
        active = ctx.mask.any(axis=1)
        acc.requests += float(ctx.mult[active].sum())
        acc.sectors += float((ctx.mult * sec).sum())
        acc.useful += float((ctx.mult * useful).sum())
        if acc.first_warp is None and active[0]:
            acc.first_warp = int(sec[0])

    def _lane_addresses(self, acc: Any, ctx: Ctx, p: Ptr) -> np.ndarray | None:
        """Per-lane byte addresses of an access by the active lanes, or None when there is nothing
        to count (no active lane, unknown element size) or the address is not determined — then the
        reason is recorded on ``acc`` (global and shared accesses share these rules)."""
        if not ctx.mask.any():
            return None
        if ctx.count_unknown is not None:
            acc.count_unknown = acc.count_unknown or ctx.count_unknown
        if p.offset is None:
            acc.unknown = acc.unknown or f"address not determined: {p.reason or 'unknown offset'}"
            return None
        if p.elem.size is None:
            return None
        addr = np.broadcast_to(p.offset, self.shape)
        if np.isnan(addr[ctx.mask]).any():
            acc.unknown = acc.unknown or "address not determined on every lane"
            return None
        return addr

    def _record_shared(self, node: Any, ctx: Ctx, kind: str, p: Ptr, text: str) -> None:
        key = (*self.key(node), kind)
        acc = self.shared_acc.get(key)
        if acc is None:
            acc = self.shared_acc[key] = SharedAcc(self.line(node), kind, p.base, p.elem, text)
        addr = self._lane_addresses(acc, ctx, p)
        if addr is None:
            return
        ways, waves = memory.bank_ways(addr, p.elem.size, ctx.mask)
        active = ctx.mask.any(axis=1)
        acc.requests += float(ctx.mult[active].sum())
        acc.wavefronts += float((ctx.mult * waves).sum())
        acc.ways = max(acc.ways, int(ways.max()))

    # ---------------------------------------------------------------- calls
    def _callee_name(self, fn: Any) -> tuple[str, Any]:
        if fn.type == "template_function":
            return node_text(fn.child_by_field_name("name")), fn.child_by_field_name("arguments")
        if fn.type == "qualified_identifier":
            return node_text(fn).split("::")[-1], None
        return node_text(fn), None

    def e_call_expression(self, node: Any, ctx: Ctx) -> Value:
        fn = node.child_by_field_name("function")
        args_node = node.child_by_field_name("arguments")
        args = [c for c in args_node.named_children if c.type != "comment"] if args_node is not None else []
        name, targs = self._callee_name(fn)
        line = self.line(node)
        if fn.type == "field_expression":
            method = node_text(fn.child_by_field_name("field"))
            obj = fn.child_by_field_name("argument")
            self.cooperative_groups = self.cooperative_groups or method in CG_WARP_METHODS | {"sync", "thread_rank"}
            if method in CG_WARP_METHODS:
                self.warp_primitives.add(f"cg.{method}")
            if method == "sync" and self.recording:
                acc = self.barrier_acc.setdefault(self.key(node), BarrierAcc(line, f"{node_text(obj)}.sync"))
                acc.add(
                    list(ctx.conds) + self.exit_conds,
                    None if ctx.value_unknown else block_partial(ctx.mask, self.lanes.valid, self.lanes.block_of_warp),
                )
            for a in args:
                self.eval(a, ctx)
            return ev.unknown(f"result of `{method}()`", frozenset({"data"}))
        if name in CASTS and targs is not None:
            v = self.eval(args[0], ctx) if args else ev.unknown("?")
            return self.cast(node_text(targs)[1:-1], v)
        if name in BARRIER_CALLS:
            for a in args:
                self.eval(a, ctx)
            if self.recording:
                acc = self.barrier_acc.setdefault(self.key(node), BarrierAcc(line, name))
                acc.add(
                    list(ctx.conds) + self.exit_conds,
                    None if ctx.value_unknown else block_partial(ctx.mask, self.lanes.valid, self.lanes.block_of_warp),
                )
            return ev.unknown(f"result of {name}", frozenset({"data"}))
        if is_warp_primitive(name):
            self.warp_primitives.add(name)
            vals = [self.eval(a, ctx) for a in args]
            if name.startswith("__shfl") and len(vals) >= 2:
                return ev.unknown(f"result of {name}", frozenset({"data"}) | vals[1].deps, vals[1].is_float)
            return ev.unknown(f"result of {name}", frozenset({"data"}))
        m = ATOMIC_RE.match(name)
        if m:
            self.atomics[name] = self.atomics.get(name, 0) + (
                1 if self.recording and self.key(node) not in self._atomic_seen else 0
            )
            self._atomic_seen.add(self.key(node))
            pv = self.eval(args[0], ctx) if args else ev.unknown("?")
            for a in args[1:]:
                self.eval(a, ctx)
            if pv.ptr is not None:
                space = pv.ptr.space
                self.atomic_spaces[self.key(node)] = space  # type: ignore[assignment]
                self.memory_access(node, ctx, "atomic", ptr_value=pv)
            return ev.unknown(
                f"old value returned by {name}", frozenset({"data"}), pv.ptr.elem.is_float if pv.ptr else False
            )
        if name in LOAD_INTRINSICS:
            pv = self.eval(args[0], ctx) if args else ev.unknown("?")
            if LOAD_INTRINSICS[name] and self.recording:
                self.ldg_sites.add(self.key(node))
            if pv.ptr is None:
                return ev.unknown(f"{name} of an untraced pointer", frozenset({"data"}))
            return self.memory_access(node, ctx, "load", read_only=LOAD_INTRINSICS[name], ptr_value=pv)
        if name in STORE_INTRINSICS:
            pv = self.eval(args[0], ctx) if args else ev.unknown("?")
            for a in args[1:]:
                self.eval(a, ctx)
            if pv.ptr is not None:
                self.memory_access(node, ctx, "store", ptr_value=pv)
            return ev.unknown("store result")
        vals = None
        if name in FLOP_CALLS:
            vals = [self.eval(a, ctx) for a in args]
            self.count_flops(FLOP_CALLS[name], ctx, True, node, *vals)
            return ev.unknown(f"result of {name}", frozenset().union(*(v.deps for v in vals)) | {"data"}, True)
        if name in ELEMENTWISE:
            vals = [self.eval(a, ctx) for a in args]
            deps = frozenset().union(*(v.deps for v in vals)) if vals else frozenset()
            is_float = any(v.is_float for v in vals)
            if vals and all(v.arr is not None for v in vals):
                f = ELEMENTWISE[name]
                arr = f(vals[0].arr) if len(vals) == 1 else f(vals[0].arr, vals[1].arr)  # type: ignore[arg-type]
                return Value(np.asarray(arr, dtype=np.float64), is_float, deps)
            return Value(None, is_float, deps, next((v.reason for v in vals if v.arr is None), None))
        macro = self.macros.get(name)
        if macro is not None and macro.params is not None:
            return self.expand_call(macro, args, node, ctx)
        if name in self.parsed.functions and not any(f.is_kernel for f in self.parsed.functions[name]):
            return self.inline_call(name, args, node, ctx)
        vals = [self.eval(a, ctx) for a in args]
        deps = frozenset().union(*(v.deps for v in vals)) if vals else frozenset()
        is_float = name.endswith("f") or any(v.is_float for v in vals)
        return ev.unknown(f"result of `{name}()`", deps | {"data"}, is_float)

    def expand_call(self, macro: Any, args: list[Any], node: Any, ctx: Ctx) -> Value:
        if len(args) != len(macro.params):
            return ev.unknown(f"macro {macro.name} called with {len(args)} arguments")
        subst = {p: f"({node_text(a)})" for p, a in zip(macro.params, args, strict=True)}
        if not subst:
            return self.expand(macro.body, node, ctx)
        pattern = re.compile(r"\b(" + "|".join(re.escape(p) for p in subst) + r")\b")
        body = pattern.sub(lambda m: subst[m.group(1)], macro.body)  # simultaneous, like cpp
        return self.expand(body, node, ctx)

    def inline_call(self, name: str, args: list[Any], node: Any, ctx: Ctx) -> Value:
        vals = [self.eval(a, ctx) for a in args]
        defs = self.parsed.functions[name]
        line = self.line(node)
        if len(defs) != 1 or defs[0].body is None:
            return ev.unknown(f"`{name}()` is overloaded or has no body", frozenset({"data"}))
        fdef = defs[0]
        self.called_functions.add(name)
        if len(self.frames) > MAX_CALL_DEPTH or name in self._call_stack:
            self.note(f"line {line}: call to `{name}()` not followed (recursion or depth > {MAX_CALL_DEPTH})")
            return ev.unknown(f"result of `{name}()`", frozenset({"data"}))
        if fdef.template:
            self.note(f"line {line}: `{name}()` is a template; its template parameters are unknown inside it")
        frame = Frame([{}], [{}])
        self.frames.append(frame)
        self._call_stack.append(name)
        try:
            for p, v in zip(fdef.params, vals, strict=False):
                if not p.name:
                    continue
                if p.is_pointer and v.ptr is None:
                    v = Value(
                        None,
                        False,
                        v.deps,
                        v.reason,
                        Ptr("unknown", p.name, None, self.elem(p.type_text), reason=v.reason),
                    )
                el = self.elem(p.type_text)
                if not p.is_pointer and v.ptr is None:
                    v = ev.convert(v, el.is_float) if el.size is not None else v
                self.declare(p.name, v, el.is_float)
            self.block(fdef.body, ctx)
        finally:
            self.frames.pop()
            self._call_stack.pop()
        if not frame.returns:
            return ev.unknown(f"`{name}()` returns no value", frozenset({"data"}))
        out: Value | None = None
        for mask, v in frame.returns:
            out = v if out is None else ev.merge(mask, v, out)
        return out if out is not None else ev.unknown("?")

    def e_initializer_list(self, node: Any, ctx: Ctx) -> Value:
        for c in node.named_children:
            self.eval(c, ctx)
        return ev.unknown("initializer list")

    def e_lambda_expression(self, node: Any, ctx: Ctx) -> Value:
        raise _Unsupported("lambdas are not analysed")

    def e_compound_literal_expression(self, node: Any, ctx: Ctx) -> Value:
        return ev.unknown("compound literal")

