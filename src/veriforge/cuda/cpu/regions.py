"""Region splitting: kernels with barriers and warp collectives run as loops over threads.

The standard way CPU back-ends run SPMD kernels (POCL, CuPBoP, HIP-CPU): cut the kernel at each
barrier and run each piece - a *region* - as a loop over the block's threads, with the values that
live across a barrier kept in per-thread arrays. This module does it on the source, with
tree-sitter: for every ``__global__`` function it can handle, :func:`region_edits` returns an
insertion at the top of the kernel's body,

.. code-block:: c++

    if (::vf::region_begin(vf_b)) { ...the block function...; ::vf::region_end(); return; }

which the first thread of each block runs (runtime/vf_regions.h), doing the work of every thread
of the block; the original body stays below it as the fiber path (``VF_REGIONS=0``, the race
probe's build, and any block the runtime does not start in region mode). What is split:

* statements at the top level of the body, and at the top level of the bodies of ``if``/``for``/
  ``while``/``do`` statements and nested blocks that are themselves in such a position, at
  ``__syncthreads()``, ``__syncthreads_count/and/or``, ``cg::sync(block)``/``block.sync()``/
  ``tile.sync()``, ``__syncwarp()`` and statements with warp collectives (``__shfl*``,
  ``__ballot/any/all``, ``__reduce_*_sync``, ``__activemask``, a static tile's ``shfl*``/
  ``ballot``/``any``/``all``);
* a condition that is the same for every thread (built from constants, parameters, ``blockIdx``,
  ``blockDim``, template arguments and variables that only get such values) runs once per block as
  plain C++; any other condition is evaluated per thread into a mask, and loops repeat while any
  thread is still in them. A block barrier under a condition that depends on the thread (directly
  or through a variable) keeps the fiber path, which reports divergent barriers; a condition that
  reads memory is checked at run time and a divergence is a fault;
* variables: uniform ones stay single C++ variables of the block function, ones whose value is a
  pure function of ``threadIdx`` and uniform values are recomputed in each region, others used in
  more than one region live in per-thread arrays bound by reference (``T& x = slot[t]``), so the
  user's code keeps its names.

* calls of ``__device__`` functions of the same file that synchronise (a barrier, a collective or a
  ``volatile`` access, directly or through further calls): the kernel is first written again with
  their bodies inlined (region_inline.py: parameters bound as the call binds them, calls in
  expressions hoisted into temporaries in evaluation order, early returns as a loop that runs
  once), and that text is cut; every line keeps the user's number (``_ROWS``);
* ``volatile`` warp-synchronous code: a region holds at most one statement that accesses memory
  through a volatile pointer, and a statement that loads and stores is first split in two
  (:func:`_split_lockstep`), so every thread of the block performs such statement k - its loads
  before any thread's store - before any performs k + 1: block-wide lockstep, a valid GPU
  schedule that gives the warp-lockstep answer. Region code uses the plain volatile pointers,
  never the fibers' rendezvous (a kernel's volatile parameter: ``vf::lockstep_raw``).

Anything else - barriers inside ``switch``, expressions or lambdas, calls of synchronising functions
the inliner refuses (another file, overloads, recursion, pointers, a call that may not be
evaluated, a return before a barrier), volatile accesses in a loop condition or a thread-dependent
loop (a spin-wait), ``goto``, local types, ``auto`` or reference variables that would have to live
across a barrier, ``__match_*_sync``, cooperative-groups reductions and scans, ``__nanosleep`` -
keeps the fiber path; :func:`plan_kernels` says which kernel and why.
"""

from __future__ import annotations

import contextvars
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["KernelPlan", "RegionContext", "has_region_code", "plan_kernels", "region_edits", "region_induced",
           "region_ranges", "strip_region_code"]

# ---- names ------------------------------------------------------------------------------------

_BLOCK_REDUCE = {"__syncthreads_count": 0, "__syncthreads_and": 1, "__syncthreads_or": 2}
_SHFL = {"__shfl_sync": ("kShflIdx", True), "__shfl_up_sync": ("kShflUp", True),
         "__shfl_down_sync": ("kShflDown", True), "__shfl_xor_sync": ("kShflXor", True),
         "__shfl": ("kShflIdx", False), "__shfl_up": ("kShflUp", False), "__shfl_down": ("kShflDown", False),
         "__shfl_xor": ("kShflXor", False)}
_VOTE = {"__ballot_sync": ("ballot", True), "__any_sync": ("any", True), "__all_sync": ("all", True),
         "__ballot": ("ballot", False), "__any": ("any", False), "__all": ("all", False)}
_WREDUCE = {"__reduce_add_sync": ("kReduceAddI", "kReduceAddU"), "__reduce_min_sync": ("kReduceMinI", "kReduceMinU"),
            "__reduce_max_sync": ("kReduceMaxI", "kReduceMaxU"), "__reduce_and_sync": ("kReduceAnd", "kReduceAnd"),
            "__reduce_or_sync": ("kReduceOr", "kReduceOr"), "__reduce_xor_sync": ("kReduceXor", "kReduceXor")}
_TILE_SHFL = {"shfl": "kShflIdx", "shfl_down": "kShflDown", "shfl_up": "kShflUp", "shfl_xor": "kShflXor"}
_TILE_VOTE = {"ballot", "any", "all"}
_OP_NAMES = {"kShflIdx": "__shfl_sync", "kShflUp": "__shfl_up_sync", "kShflDown": "__shfl_down_sync",
             "kShflXor": "__shfl_xor_sync"}
# Anything that makes a thread wait for others (or that the region path does not model): a kernel
# using one where the pass does not split it keeps the fiber path. Functions and macros whose text
# contains one of these are "synchronising" too (RegionContext).
_SYNC_TEXT = re.compile(
    r"\b(?:__syncthreads\w*|__syncwarp|__shfl\w*|__ballot\w*|__any(?:_sync)?|__all(?:_sync)?|__activemask|"
    r"__match_\w+|__reduce_\w+_sync|__uni_sync|__nanosleep|coalesced_threads|binary_partition|labeled_partition|"
    r"inclusive_scan|exclusive_scan|this_grid|grid_group|memcpy_async|volatile|multi_warp_sync)\b|"
    r"\.\s*(?:sync|shfl\w*|ballot|any|all|match_\w+)\s*\(|\bsync\s*\(|\breduce\s*\(")
_SYNC_CALLS = {"__syncthreads", "__syncwarp", "__activemask", "__match_any_sync", "__match_all_sync",
               "__uni_sync", "__nanosleep", "coalesced_threads", "binary_partition", "labeled_partition",
               "inclusive_scan", "exclusive_scan", "this_grid", "memcpy_async", "multi_warp_sync", "sync",
               "reduce", *_BLOCK_REDUCE, *_SHFL, *_VOTE, *_WREDUCE}
_GROUP_METHODS_SYNC = {"sync", *_TILE_SHFL, *_TILE_VOTE, "match_any", "match_all"}
# Functions that neither read memory nor have side effects (for uniformity / recomputation).
_PURE_CALLS = {
    "min", "max", "umin", "umax", "llmin", "llmax", "ullmin", "ullmax", "fminf", "fmaxf", "fmin", "fmax", "abs",
    "fabs", "fabsf", "labs", "llabs", "sqrt", "sqrtf", "rsqrt", "rsqrtf", "cbrt", "cbrtf", "exp", "expf", "exp2",
    "exp2f", "__expf", "log", "logf", "log2", "log2f", "__logf", "log10", "log10f", "__log2f", "pow", "powf",
    "__powf", "sin", "sinf", "cos", "cosf", "tan", "tanf", "__sinf", "__cosf", "tanh", "tanhf", "floor", "floorf",
    "ceil", "ceilf", "round", "roundf", "trunc", "truncf", "rint", "rintf", "lrint", "llrint", "fmod", "fmodf",
    "__popc", "__popcll", "__clz", "__clzll", "__ffs", "__ffsll", "__brev", "__brevll", "__mul24", "__umul24",
    "__mulhi", "__umulhi", "__fdividef", "__fmaf_rn", "fmaf", "fma", "__float2int_rn", "__float2int_rz",
    "__int2float_rn", "__float2uint_rn", "__uint2float_rn", "__saturatef", "copysign", "copysignf", "isnan",
    "isinf", "isfinite", "__isnan", "__isinf", "__half2float", "__float2half", "__float2half_rn",
    "make_int2", "make_int3", "make_int4", "make_uint2", "make_uint3", "make_uint4", "make_float2", "make_float3",
    "make_float4", "make_double2", "dim3", "uint3", "static_cast", "numeric_limits", "lowest",
    "epsilon", "infinity", "quiet_NaN", "ldexp", "ldexpf", "hypot", "hypotf", "erf", "erff", "erfc", "erfcf",
    "atan", "atanf", "atan2", "atan2f", "asin", "asinf", "acos", "acosf", "sinh", "sinhf", "cosh", "coshf", "sign",
    "signbit", "__float_as_int", "__int_as_float", "__float_as_uint", "__uint_as_float", "__double_as_longlong",
    "__longlong_as_double", "__ldg",  # __ldg reads memory: impure (handled below)
}
_MEMORY_CALLS = {"__ldg", "__ldcg", "__ldca", "__ldcs", "__ldlu", "__ldcv"}
# cooperative-groups calls: uniform objects / pure per-thread values
_UNIFORM_GROUP_CALLS = {"this_thread_block"}
_PURE_GROUP_CALLS = {"tiled_partition"}
_UNIFORM_METHODS = {"size", "num_threads", "group_dim", "dim_threads", "meta_group_size", "is_valid", "group_index"}
_PURE_METHODS = {"thread_rank", "thread_index", "meta_group_rank", *_UNIFORM_METHODS}
_UNIFORM_BUILTINS = {"blockIdx", "blockDim", "gridDim", "warpSize"}
_KEYWORDS = {"sizeof", "int", "unsigned", "signed", "long", "short", "char", "float", "double", "bool", "const",
             "static_cast", "reinterpret_cast", "size_t", "true", "false", "nullptr", "alignof", "void", "auto",
             "int32_t", "uint32_t", "int64_t", "uint64_t", "__half", "half"}
_STORAGE = re.compile(r"\b(?:static|extern|register|thread_local|inline|constexpr|__device__|__constant__|"
                      r"__managed__|__restrict__|mutable)\b")
_LOOPS = ("for_statement", "while_statement", "do_statement", "for_range_loop")


def _same(a: Any | None, b: Any | None) -> bool:
    return a is not None and b is not None and a.id == b.id


def _text(node: Any) -> str:
    return node.text.decode(errors="surrogateescape")


# The user's line of each row of the text being analysed, while a kernel whose synchronising device
# functions were inlined (region_inline.py) is planned; None: the text is the user's own.
_ROWS: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar("vf_region_rows", default=None)


def _row_line(row: int) -> int:
    rows = _ROWS.get()
    if rows is not None and 0 <= row < len(rows):
        return rows[row]
    return row + 1


def _line(node: Any) -> int:
    return _row_line(int(node.start_point[0]))


def _walk(node: Any):
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children))


def _callee_name(call: Any) -> tuple[str, Any | None]:
    """(name, object) of a call: ``f(x)`` -> ('f', None), ``ns::f<T>(x)`` -> ('f', None),
    ``obj.m(x)`` -> ('m', obj node)."""
    fn = call.child_by_field_name("function")
    while fn is not None and fn.type in ("template_function", "qualified_identifier", "template_method"):
        if fn.type == "qualified_identifier":
            fn = fn.child_by_field_name("name")
        else:
            fn = fn.child_by_field_name("name")
    if fn is None:
        return "", None
    if fn.type == "field_expression":
        f = fn.child_by_field_name("field")
        name = f
        while name is not None and name.type in ("template_method", "qualified_field_identifier"):
            name = name.child_by_field_name("name")
        return (_text(name) if name is not None else ""), fn.child_by_field_name("argument")
    if fn.type in ("identifier", "field_identifier", "type_identifier"):
        return _text(fn), None
    return "", None


def _args(call: Any) -> list[Any]:
    a = call.child_by_field_name("arguments")
    return [] if a is None else [c for c in a.named_children if c.type != "comment"]


def _declarator_ident(d: Any) -> Any | None:
    while d is not None:
        if d.type == "identifier":
            return d
        if d.type in ("reference_declarator",):
            d = d.named_children[-1] if d.named_children else None
            continue
        d = d.child_by_field_name("declarator")
    return None


# ---- context: what other code of the build does ----------------------------------------------

_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)(\([^)]*\))?((?:[^\n\\]|\\\n|\\.)*)", re.M)
_IDENT = re.compile(r"[A-Za-z_]\w*")


@dataclass
class RegionContext:
    """Facts about every file of a build that the pass needs for one kernel: which functions and
    macros synchronise (``tainted``: calling one keeps the fiber path), macro bodies (a macro is
    uniform, pure or opaque for the analysis), and namespace-scope variables device code may write
    (never uniform)."""

    tainted: set[str] = field(default_factory=set)
    macros: dict[str, str] = field(default_factory=dict)  # name -> body (params blanked to `@`)
    mutable_globals: set[str] = field(default_factory=set)
    macro_class: dict[str, int] = field(default_factory=dict)
    fn_defs: dict[str, int] = field(default_factory=dict)  # function definitions per name, all files

    @classmethod
    def from_texts(cls, texts: Iterable[str]) -> RegionContext:
        ctx = cls()
        bodies: dict[str, list[str]] = {}
        for text in texts:
            if not text:
                continue
            for m in _DEFINE.finditer(text):
                body = m.group(3).replace("\\\n", " ")
                if m.group(2):
                    for p in re.findall(r"[A-Za-z_]\w*", m.group(2)):
                        body = re.sub(rf"\b{p}\b", "@", body)
                ctx.macros[m.group(1)] = body
                bodies.setdefault(m.group(1), []).append(body)
            if not re.search(r"__global__|__device__|__syncthreads|__shfl|cooperative_groups", text):
                continue
            tree = _parse(text)
            if tree is None:
                continue
            for node in _walk(tree.root_node):
                if node.type == "function_definition":
                    d = node.child_by_field_name("declarator")
                    while d is not None and d.type not in ("function_declarator",):
                        d = d.child_by_field_name("declarator")
                    if d is None:
                        continue
                    name_node = d.child_by_field_name("declarator")
                    name = _text(name_node).split("::")[-1] if name_node is not None else ""
                    name = re.sub(r"<.*", "", name).strip()
                    if name:
                        bodies.setdefault(name, []).append(_text(node))
                        ctx.fn_defs[name] = ctx.fn_defs.get(name, 0) + 1
                elif node.type == "declaration" and node.parent is not None and node.parent.type in (
                        "translation_unit", "declaration_list", "linkage_specification"):
                    head = _text(node)[: 200]
                    if re.search(r"\b(?:const|constexpr|__constant__|typedef)\b", head) and "__device__ " not in head:
                        continue
                    if re.search(r"\b(?:const|constexpr|__constant__)\b", head):
                        continue
                    for c in node.named_children:
                        if c.type in ("init_declarator", "identifier", "array_declarator", "pointer_declarator"):
                            ident = _declarator_ident(c)
                            if ident is not None and c.type != "function_declarator":
                                ctx.mutable_globals.add(_text(ident))
        # tainted: text with a synchronising construct, then callers of tainted names (fixpoint)
        tainted = {n for n, bs in bodies.items() if any(_SYNC_TEXT.search(b) for b in bs)}
        calls = {n: set(re.findall(r"\b([A-Za-z_]\w*)\s*(?:<[^;{}()]*>\s*)?\(", " ".join(bs)))
                 | set(_IDENT.findall(" ".join(bs)) if n in ctx.macros else ())
                 for n, bs in bodies.items()}
        changed = True
        while changed:
            changed = False
            for n, called in calls.items():
                if n not in tainted and called & tainted:
                    tainted.add(n)
                    changed = True
        ctx.tainted = tainted
        for name in ctx.macros:
            ctx.macro_class[name] = ctx._classify_macro(name, set())
        return ctx

    def _classify_macro(self, name: str, seen: set[str]) -> int:
        """0 uniform, 1 pure (may read threadIdx), 2 opaque (anything else: locals, memory, calls)."""
        if name in self.macro_class:
            return self.macro_class[name]
        if name in seen:
            return 2
        seen.add(name)
        body = self.macros[name]
        if re.search(r"[;{}]|\+\+|--|(?<![=!<>])=(?!=)|\[|->", body):
            return 2
        worst = 0
        for m in _IDENT.finditer(body):
            ident = m.group()
            if ident in _UNIFORM_BUILTINS or ident in _KEYWORDS or re.fullmatch(r"[uUlLfF]+", ident):
                continue
            if ident == "threadIdx":
                worst = max(worst, 1)
            elif ident in self.macros:
                worst = max(worst, self._classify_macro(ident, seen))
            elif ident in _PURE_CALLS and ident not in _MEMORY_CALLS:
                continue
            else:
                return 2
        return worst


_ATTRIBUTE = re.compile(r"\b(?:__align__|alignas|__attribute__|__declspec|__launch_bounds__)\s*\(")
_TILE_TYPE = re.compile(r"\bthread_block_tile\s*<[^<>;(){}]*>")


def _blank_parens(text: str) -> str:
    """``__align__(sizeof(T))``, ``__attribute__((aligned(16)))`` ... blanked (any nesting), and
    ``thread_block_tile<32>`` spelled as one identifier (tree-sitter reads ``a<32> b = c`` as
    comparisons), every offset kept."""
    out = list(text)
    for m in _ATTRIBUTE.finditer(text):
        depth, k = 0, m.end() - 1
        while k < len(text):
            if text[k] == "(":
                depth += 1
            elif text[k] == ")":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        for j in range(m.start(), min(k + 1, len(text))):
            if out[j] != "\n":
                out[j] = " "
    for m in _TILE_TYPE.finditer(text):
        for j in range(m.start(), m.end()):
            if out[j] in "<>,: \t":
                out[j] = "_"
    return "".join(out)


def _parse(text: str) -> Any | None:
    from veriforge.cuda.analysis.parse import parenthesize_comparisons, parse_tree, preprocess

    try:
        src = preprocess(_blank_parens(text))
        tree = parse_tree(src)
        fixed = parenthesize_comparisons(src, tree)
        if fixed is not None:
            tree = parse_tree(fixed)
        return tree
    except Exception:  # pragma: no cover - tree-sitter missing or broken: no region splitting
        return None


# ---- the kernel model -------------------------------------------------------------------------

class Fallback(Exception):
    """The kernel keeps the fiber path (the message says why)."""

    def __init__(self, why: str, node: Any | None = None) -> None:
        super().__init__(why + (f" (line {_line(node)})" if node is not None else ""))


@dataclass(eq=False)
class Var:
    name: str
    ident: Any | None            # the declarator's identifier (None: a parameter)
    decl: Any | None             # the declaration node
    declarator: Any | None       # init_declarator / declarator node
    init: Any | None             # initializer value node
    start: int                   # scope: [start, end) bytes
    end: int
    is_param: bool = False
    shared: str = ""             # "static" / "extern": a __shared__ array (block-level, never per thread)
    kind: str = "uniform"        # uniform / remat / slot / local / shared
    group: str = ""              # "block" / "tile" (cooperative-groups object), else ""
    tile: str = ""               # static tile size (text)
    mutated: bool = False        # assigned / address taken / passed on anywhere
    indep: bool = True           # never takes a value that depends on the thread
    by_ref: bool = False         # per-thread: bound by reference (its address escapes), not copied in/out
    array: bool = False
    pointer: bool = False
    type_text: str = ""          # parameter type (for a parameter that becomes per-thread)
    index: int = -1              # slot number
    order: int = 0


@dataclass(eq=False)
class Seq:
    items: list[Any]
    start: int
    end: int
    owner: Any | None = None     # the construct whose body this is


@dataclass(eq=False)
class Plain:
    node: Any


@dataclass(eq=False)
class Barrier:
    node: Any
    block: bool                  # a block barrier (else a warp barrier: __syncwarp / tile.sync)


@dataclass(eq=False)
class Collective:
    node: Any                    # the statement (expression_statement / declaration)
    calls: list[Any]             # the collective call nodes in it
    block: bool = False          # contains a __syncthreads_count/and/or


@dataclass(eq=False)
class If:
    node: Any
    cond: Any
    then: Seq
    other: Seq | None
    uniform: bool = True
    independent: bool = True     # the condition does not depend on the thread (may read memory)
    has_block_barrier: bool = False
    masks: tuple[int, int] = (-1, -1)


@dataclass(eq=False)
class Loop:
    node: Any
    kind: str                    # for / while / do
    init: list[Any]              # items (a declaration or expression statement)
    cond: Any | None
    update: Any | None
    body: Seq
    uniform: bool = True
    independent: bool = True
    escapes: bool = False        # break/continue in a region target it
    continues: bool = False
    returns: bool = False
    has_block_barrier: bool = False
    masks: tuple[int, int] = (-1, -1)
    start: int = 0
    end: int = 0


@dataclass(eq=False)
class Block:
    node: Any
    body: Seq


@dataclass
class KernelPlan:
    """What the pass decided for one ``__global__`` function."""

    name: str
    line: int
    split: bool                  # a block function is emitted
    reason: str = ""             # why not (empty when split, or when the kernel needs no splitting)
    needs_split: bool = True     # False: no barrier or collective at all (the thread loop runs it)
    code: str = ""               # the inserted text
    insert_at: int = -1          # byte offset (after the body's `{`)
    regions: int = 0             # region loops in the block function
    slots: list[str] = field(default_factory=list)
    uniform: list[str] = field(default_factory=list)
    recomputed: list[str] = field(default_factory=list)
    inlined: list[str] = field(default_factory=list)  # synchronising device functions inlined (calls, in order)
    lockstep: int = 0            # accesses through volatile pointers kept in block-wide lockstep


# ---- the pass ---------------------------------------------------------------------------------

class _Kernel:
    def __init__(self, fn: Any, src: bytes, ctx: RegionContext) -> None:
        self.fn = fn
        self.src = src
        self.ctx = ctx
        self.body = fn.child_by_field_name("body")
        self.vars: list[Var] = []
        self.by_name: dict[str, list[Var]] = {}
        self.sync_sites: list[Any] = []
        self.claimed: set[int] = set()
        self.collective_calls: dict[int, Any] = {}   # call node id -> call
        self.edits: dict[int, tuple[int, int, str]] = {}
        self.masks = 0
        self.sites: list[tuple[str, str, int]] = []  # (kind, op, line) per warp site
        self.block_reduces = 0
        self.has_return = False
        self.site_of: dict[int, int] = {}
        self.block_barriers: list[Any] = []
        self.regions = 0
        self.groups: dict[str, tuple[str, str]] = {}
        self.lifted_stmts: dict[int, list[Any]] = {}
        self.idents: dict[str, list[Any]] = {}
        self.vol = _Volatile()
        self.lockstep: dict[int, str] = {}  # access through a volatile pointer (lvalue id) -> load/store/rmw
        self.inlined_spans: list[tuple[int, int]] = []  # lines of the device functions inlined into it
        self.local_names: set[str] = set()  # every name the kernel's body declares, at any depth
        for n in _walk(self.body) if self.body is not None else ():
            if n.type == "identifier":
                self.idents.setdefault(_text(n), []).append(n)
            if n.type in ("declaration", "parameter_declaration", "for_range_loop"):
                for c in n.named_children:
                    ident = _declarator_ident(c) if c.type in (
                        "init_declarator", "identifier", "pointer_declarator", "array_declarator",
                        "reference_declarator") else None
                    if ident is not None:
                        self.local_names.add(_text(ident))
            if n.type == "declaration":
                g = _group_of_decl(self, n)
                if g is not None:
                    for c in n.named_children:
                        ident = _declarator_ident(c) if c.type in ("init_declarator", "identifier") else None
                        if ident is not None:
                            self.groups[_text(ident)] = g

    # -- helpers --
    def text(self, a: int, b: int) -> str:
        return self.src[a:b].decode(errors="surrogateescape")

    def ntext(self, node: Any) -> str:
        return self.text(node.start_byte, node.end_byte)

    def resolve(self, ident: Any) -> Var | None:
        cands = self.by_name.get(_text(ident))
        if not cands:
            return None
        pos = ident.start_byte
        best = None
        for v in cands:
            if v.ident is not None and v.ident.start_byte == pos:
                return v
            if v.start <= pos < v.end and (best is None or v.start >= best.start):
                best = v
        return best

    def contains_sync(self, node: Any) -> bool:
        a, b = node.start_byte, node.end_byte
        return any(a <= s.start_byte and s.end_byte <= b for s in self.sync_sites)

    def group_var(self, obj: Any) -> Var | None:
        if obj is None or obj.type != "identifier":
            return None
        v = self.resolve(obj)
        return v if v is not None and v.group else None

    def group_info(self, obj: Any) -> tuple[str, str] | None:
        """('block' | 'tile', tile size) of a cooperative-groups object named by ``obj``."""
        if obj is None or obj.type != "identifier":
            return None
        return self.groups.get(_text(obj))


def _group_of_decl(k: _Kernel, decl: Any) -> tuple[str, str] | None:
    text = k.ntext(decl)
    spec, _, init = text.partition("=")
    m = re.search(r"thread_block_tile\s*<\s*([^,>]+)", spec) or re.search(r"tiled_partition\s*<\s*([^,>]+)>", init)
    if m and not re.search(r"\bthread_group\b", spec):
        size = m.group(1).strip()
        if not re.fullmatch(r"\d+", size):
            size = k.ctx.macros.get(size, "").strip().strip("()").rstrip("uU")
        return ("tile", size) if re.fullmatch(r"\d+", size or "") and int(size) <= 32 else ("bigtile", m.group(1))
    if re.search(r"\bthread_block\b", spec) or re.search(r"\bthis_thread_block\s*\(", init):
        return ("block", "")
    return None


def _is_global(fn: Any) -> bool:
    body = fn.child_by_field_name("body")
    if body is None:
        return False
    head = fn.text[: body.start_byte - fn.start_byte].decode(errors="replace")
    return re.search(r"\b__global__\b", head) is not None


def _kernel_name(fn: Any) -> str:
    d = fn.child_by_field_name("declarator")
    while d is not None and d.type != "function_declarator":
        d = d.child_by_field_name("declarator")
    if d is None:
        return "?"
    n = d.child_by_field_name("declarator")
    return _text(n) if n is not None else "?"


def plan_kernels(text: str, context: RegionContext | None = None) -> list[KernelPlan]:
    """Every ``__global__`` function definition of ``text`` with the pass's decision."""
    if "__global__" not in text:
        return []
    tree = _parse(text)
    if tree is None:
        return []
    ctx = context if context is not None else RegionContext.from_texts([text])
    src = text.encode(errors="surrogateescape")
    plans = []
    functions: dict | None = None
    for node in _walk(tree.root_node):
        if node.type != "function_definition" or not _is_global(node):
            continue
        plan = KernelPlan(name=_kernel_name(node), line=_line(node), split=False)
        token = None
        try:
            fn, ksrc, spans = node, src, []
            body = node.child_by_field_name("body")
            if body is not None and not body.has_error and _may_inline(body, ctx):
                # calls of synchronising device functions: the kernel with their bodies inlined
                from .region_inline import device_functions, expand_kernel

                if functions is None:
                    functions = device_functions(tree.root_node)
                local = {n: len(fs) for n, fs in functions.items()}
                got = expand_kernel(src, node, ctx, functions, local)
                if got is not None:
                    new_text, rows, plan.inlined, spans = got
                    token = _ROWS.set(rows)
                    fn = _reparse(new_text, node.start_byte)
                    ksrc = new_text.encode(errors="surrogateescape")
            if body is not None and b"volatile" in ksrc[fn.start_byte:fn.end_byte]:
                # statements that load and store through volatile pointers, in two (every line kept)
                try:
                    split = _split_lockstep(ksrc.decode(errors="surrogateescape"), fn)
                except Fallback:
                    split = None  # the analysis says why
                if split is not None:
                    fn = _reparse(split, node.start_byte)
                    ksrc = split.encode(errors="surrogateescape")
            k = _Kernel(fn, ksrc, ctx)
            k.inlined_spans = spans
            _analyse(k, plan)
        except Fallback as why:
            plan.reason = str(why)
            plan.code = ""
        finally:
            if token is not None:
                _ROWS.reset(token)
        plans.append(plan)
    return plans


def _may_inline(body: Any, ctx: RegionContext) -> bool:
    """Whether the kernel calls a function that synchronises (cheap test before inlining)."""
    for n in _walk(body):
        if n.type == "call_expression":
            name, obj = _callee_name(n)
            if obj is None and name in ctx.tainted and name in ctx.fn_defs:
                return True
    return False


def _reparse(text: str, start: int) -> Any:
    """The function definition starting at byte ``start`` of ``text`` (after the pass rewrote it)."""
    tree = _parse(text)
    if tree is None:  # pragma: no cover
        raise Fallback("the rewritten kernel does not parse")
    for n in _walk(tree.root_node):
        if n.type == "function_definition" and n.start_byte == start:
            body = n.child_by_field_name("body")
            if body is None or body.has_error:
                bad = next((x for x in _walk(body) if x.type == "ERROR" or x.is_missing), None) if body else None
                raise Fallback("the kernel with its device functions inlined does not parse cleanly", bad)
            return n
        if n.start_byte > start:
            break
    raise Fallback("the rewritten kernel does not parse")


def region_edits(text: str, context: RegionContext | None = None) -> list[tuple[int, int, str]]:
    """Insertions (character offsets, as ``source.rewrite`` uses them) of the block functions."""
    out = []
    plans = plan_kernels(text, context)
    if not any(p.split for p in plans):
        return out
    src = text.encode(errors="surrogateescape")
    for p in plans:
        if p.split:
            pos = len(src[: p.insert_at].decode(errors="surrogateescape"))
            out.append((pos, pos, p.code))
    return out


# A block function as region_edits inserts it: removing it gives back the rewrite without regions.
_BLOCK_FUNCTION = re.compile(r"\n#line \d+\n::vf::RegionBlock vf_b;[^\n]*\n(?:#line \d+\n)?"
                             r"if \(::vf::region_begin\(vf_b\)\) \{\n.*?"
                             r"::vf::region_end\(\);\nreturn;\n\}\n#line \d+\n", re.S)


def has_region_code(text: str) -> bool:
    return "::vf::region_begin(vf_b)" in text


def strip_region_code(text: str) -> str:
    """``text`` without its block functions: every kernel on the fiber path / plain thread loop."""
    return _BLOCK_FUNCTION.sub("", text)


_CONTEXT = re.compile(r"^[^:\n]*: (?:In |At global scope)(.*)$")
_ERROR = re.compile(r"^(.*?):(\d+):(?:\d+:)? error: (.*)$")
_RANGE = re.compile(r"// vf-regions: lines (\d+)-(\d+)")
_FIRST_LINE = re.compile(r'^#line 1 "((?:[^"\\]|\\.)*)"', re.M)


def region_ranges(text: str) -> list[tuple[str, int, int]]:
    """(file, first line, last line) of every kernel of ``text`` (a staged file, its ``#line 1``
    names it) that got a block function."""
    m = _FIRST_LINE.search(text)
    name = m.group(1) if m else ""
    return [(name, int(a), int(b)) for a, b in _RANGE.findall(text)]


def region_induced(log: str, ranges: Iterable[tuple[str, int, int]]) -> bool:
    """Whether a failed compile may be the block functions' fault (the build is then retried
    without them). Every statement of a split kernel is compiled twice - in its block function and
    in the fiber path below it - so a user's error there is reported twice: once in the block
    function's lambdas or in the kernel itself, and once in the kernel. An error inside such a
    kernel's lines that is reported only inside lambdas, or only once, is the pass's; so is one
    naming the pass's own names, on the pass's glue lines, or inside the runtime's region header
    (instantiated from a block function)."""
    spans = list(ranges)
    in_lambda = False
    lam: dict[tuple[str, str, str], int] = {}
    other: dict[tuple[str, str, str], int] = {}
    for line in log.splitlines():
        m = _CONTEXT.match(line)
        if m:
            in_lambda = "lambda" in m.group(1)
            continue
        e = _ERROR.match(line)
        if not e:
            continue
        if re.search(r"\bvf_(?:[bTstmwai]\d*|rb\d+|first|c|ret\d+|val\d+|adr\d+|vp\d+)\b|\w_vf\d+\b|region_|"
                     r"RegionWarp|RegionBlock|lockstep_raw", e.group(3)):
            return True
        file, num = e.group(1), int(e.group(2))
        if num >= GLUE_LINE or file.endswith("vf_regions.h"):
            return True
        if not any((f == file or file.endswith("/" + f) or f.endswith("/" + file)) and a <= num <= b
                   for f, a, b in spans):
            continue
        bucket = lam if in_lambda else other
        bucket[e.groups()] = bucket.get(e.groups(), 0) + 1
    return any(key not in other for key in lam) or any(n == 1 and key not in lam for key, n in other.items())


# ---- volatile: warp-synchronous code in block-wide lockstep --------------------------------------
#
# Pre-Volta warp-synchronous code (`if (tid < 32) { s[tid] += s[tid + 32]; s[tid] += s[tid + 16]; ... }`
# over a `volatile` pointer) expects the lanes of a warp to perform each statement together. The
# fibers get that with a rendezvous at every access (runtime/vf_lockstep.h). A block function gets
# it from its regions: a region holds at most one statement that accesses memory through a volatile
# pointer, so every thread of the block performs volatile statement k before any performs k + 1 -
# block-wide lockstep, a valid GPU schedule that gives the warp-lockstep answer - and a statement
# that both loads and stores (`s[tid] += s[tid + 16]`) is first split in two (_split_lockstep):
# the value into a per-thread temporary, then the store, so every thread's loads come before any
# thread's store. Region code accesses the plain volatile pointers (never the rendezvous).

_DECLARATORS = ("init_declarator", "identifier", "pointer_declarator", "array_declarator", "reference_declarator",
                "function_declarator", "parenthesized_declarator")
_ELEMENT_NOISE = re.compile(r"\b(?:volatile|const|static|extern|register|__shared__|__restrict__|__restrict|inline|"
                            r"__device__|constexpr|thread_local)\b")


@dataclass(eq=False)
class Lockstep:
    """A statement that accesses memory through a volatile pointer: a region of its own (with the
    plain statements around it, never with another such statement)."""

    node: Any


@dataclass
class _Volatile:
    ptrs: dict[str, str] = field(default_factory=dict)      # volatile pointer variable -> element type
    objects: dict[str, tuple[str, bool]] = field(default_factory=dict)  # __shared__ volatile -> (type, array)
    params: list[str] = field(default_factory=list)         # the kernel's parameters among ptrs
    accesses: dict[int, tuple[Any, str]] = field(default_factory=dict)  # lvalue id -> (lvalue, load/store/rmw)


def _fn_params(fn: Any) -> list[Any]:
    d = fn.child_by_field_name("declarator")
    while d is not None and d.type != "function_declarator":
        d = d.child_by_field_name("declarator")
    plist = d.child_by_field_name("parameters") if d is not None else None
    if plist is None:
        return []
    return [p for p in plist.named_children if p.type in ("parameter_declaration", "optional_parameter_declaration")]


def _spec_text(src: bytes, decl: Any) -> str:
    """The declaration's specifiers (everything before its first declarator)."""
    first = next((c for c in decl.named_children if c.type in _DECLARATORS), None)
    end = first.start_byte if first is not None else decl.end_byte
    return src[decl.start_byte:end].decode(errors="surrogateescape")


def _volatile_info(fn: Any, src: bytes) -> _Volatile:
    """The volatile pointers and ``__shared__ volatile`` variables of a function and every access
    through them; a ``volatile`` the pass does not understand is a Fallback."""
    info = _Volatile()
    body = fn.child_by_field_name("body")
    if body is None or b"volatile" not in src[fn.start_byte:fn.end_byte]:
        return info
    params = _fn_params(fn)
    param_ids = {p.id for p in params}
    accounted: set[int] = set()
    other: set[str] = set()
    for d in params + [n for n in _walk(body) if n.type == "declaration"]:
        quals = [c for c in d.children if c.type == "type_qualifier" and _text(c) == "volatile"]
        accounted.update(q.id for q in quals)
        spec = _spec_text(src, d)
        shared = "__shared__" in spec
        elem = " ".join(_ELEMENT_NOISE.sub(" ", spec).split())
        for c in d.named_children:
            if c.type not in _DECLARATORS:
                continue
            ident = _declarator_ident(c)
            inner = c.child_by_field_name("declarator") if c.type == "init_declarator" else c
            for q in _walk(c):  # `int* volatile p`: the pointer itself is volatile (a thread's own)
                if q.type == "type_qualifier" and _text(q) == "volatile":
                    accounted.add(q.id)
            if ident is None:
                continue
            name = _text(ident)
            if not quals:
                other.add(name)
                continue
            if inner is not None and inner.type == "pointer_declarator" and \
                    _same(inner.child_by_field_name("declarator"), ident):
                info.ptrs[name] = elem
                if d.id in param_ids:
                    info.params.append(name)
            elif shared and inner is not None and inner.type in ("array_declarator", "identifier"):
                info.objects[name] = (elem, inner.type == "array_declarator")
            elif not shared and inner is not None and inner.type in ("array_declarator", "identifier"):
                other.add(name)  # a thread's own volatile variable: no other thread sees it
            else:
                raise Fallback("a volatile declaration the region pass does not understand", d)
    both = (set(info.ptrs) | set(info.objects)) & other
    if both:
        raise Fallback(f"'{sorted(both)[0]}' is declared both volatile and not", fn)
    for n in _walk(body):
        if n.type == "type_qualifier" and _text(n) == "volatile" and n.id not in accounted:
            p = n.parent
            if p is not None and p.type == "type_descriptor" and p.parent is not None and \
                    p.parent.type == "cast_expression" and "*" in _text(p):
                continue
            raise Fallback("a use of volatile the region pass does not understand", n)
    for n in _walk(body):
        hit = False
        if n.type == "subscript_expression":
            hit = _vbase(info, n.child_by_field_name("argument"), subscript=True) is not None
        elif n.type in ("pointer_expression", "field_expression"):
            op = n.child_by_field_name("operator")
            if op is not None and _text(op) in ("*", "->"):
                hit = _vbase(info, n.child_by_field_name("argument")) is not None
        elif n.type == "identifier" and _text(n) in info.objects and not info.objects[_text(n)][1]:
            hit = not (n.parent is not None and n.parent.type in (*_DECLARATORS, "declaration"))
        if hit:
            lvalue, kind = _access_kind(n)
            if kind:
                info.accesses[lvalue.id] = (lvalue, kind)
    return info


def _vbase(info: _Volatile, node: Any | None, subscript: bool = False) -> str | None:
    """The element type when ``node`` is a pointer to volatile memory (a volatile pointer, a
    ``(volatile T*)`` cast, pointer arithmetic on one; a ``__shared__ volatile`` array when
    subscripted), else None."""
    while node is not None and node.type == "parenthesized_expression" and node.named_children:
        node = node.named_children[0]
    if node is None:
        return None
    if node.type == "identifier":
        name = _text(node)
        if name in info.ptrs:
            return info.ptrs[name]
        if subscript and name in info.objects and info.objects[name][1]:
            return info.objects[name][0]
        return None
    if node.type == "cast_expression":
        t = node.child_by_field_name("type")
        text = _text(t) if t is not None else ""
        if "volatile" in text and text.count("*") == 1:
            return " ".join(_ELEMENT_NOISE.sub(" ", text.replace("*", " ")).split())
        return None
    if node.type == "binary_expression" and _text(node.child_by_field_name("operator")) in ("+", "-"):
        left = _vbase(info, node.child_by_field_name("left"))
        if left is not None:
            return left
        if _text(node.child_by_field_name("operator")) == "+":
            return _vbase(info, node.child_by_field_name("right"))
    return None


def _access_kind(node: Any) -> tuple[Any, str]:
    """(the whole lvalue, 'load' | 'store' | 'rmw' | '') of an access through a volatile pointer;
    '' where it is no access (``&s[i]``, ``sizeof``)."""
    cur = node
    while True:
        p = cur.parent
        if p is None:
            return cur, "load"
        if p.type == "parenthesized_expression":
            cur = p
            continue
        if p.type == "subscript_expression" and _same(p.child_by_field_name("argument"), cur):
            cur = p  # s[i][j] of a two-dimensional __shared__ volatile array
            continue
        if p.type == "field_expression" and _same(p.child_by_field_name("argument"), cur) and \
                _text(p.child_by_field_name("operator")) == ".":
            cur = p
            continue
        break
    if p.type == "pointer_expression" and _text(p.child_by_field_name("operator")) == "&":
        return cur, ""
    if p.type in ("sizeof_expression", "alignof_expression", "decltype"):
        return cur, ""
    if p.type == "assignment_expression" and _same(p.child_by_field_name("left"), cur):
        return cur, "store" if _text(p.child_by_field_name("operator")) == "=" else "rmw"
    if p.type == "update_expression":
        return cur, "rmw"
    return cur, "load"


def _outer_expression(node: Any) -> Any:
    p = node.parent
    while p is not None and p.type == "parenthesized_expression":
        node, p = p, p.parent
    return p


def _split_lockstep(text: str, fn: Any) -> str | None:
    """``text`` with every statement of ``fn`` that loads and stores through volatile pointers
    split in two - ``{ T vf_valN = s[t] + s[t + 16]; s[t] = vf_valN; }`` - keeping every line
    where it was (None: nothing to split). A store the pass cannot separate is a Fallback."""
    src = text.encode(errors="surrogateescape")
    info = _volatile_info(fn, src)
    if not info.accesses:
        return None
    edits = []
    for lv, kind in info.accesses.values():
        if kind == "load":
            continue
        e = _outer_expression(lv)
        stmt = _outer_expression(e) if e is not None else None
        if e is None or stmt is None or stmt.type != "expression_statement":
            raise Fallback("a store through a volatile pointer inside an expression", lv)
        inside = [x for x, _ in info.accesses.values()
                  if stmt.start_byte <= x.start_byte and x.end_byte <= stmt.end_byte and x.id != lv.id]
        if any(info.accesses[x.id][1] != "load" for x in inside):
            raise Fallback("two stores through volatile pointers in one statement", stmt)
        if kind == "store" and not inside:
            continue  # a plain store: a region of its own as it is
        base = lv
        while base.type == "parenthesized_expression" and base.named_children:
            base = base.named_children[0]
        if base.type == "subscript_expression":
            elem = _vbase(info, base.child_by_field_name("argument"), subscript=True)
        elif base.type == "pointer_expression":
            elem = _vbase(info, base.child_by_field_name("argument"))
        else:
            elem = None
        if not elem or re.search(r"\bauto\b|\bdecltype\b", elem):
            raise Fallback("a volatile read-modify-write of a type the pass cannot spell", lv)
        ltext = src[lv.start_byte:lv.end_byte].decode(errors="surrogateescape")
        if "//" in ltext or "#" in ltext:
            raise Fallback("a volatile store the pass cannot split", lv)
        ltext = " ".join(ltext.split())
        effects = any(x.start_byte >= lv.start_byte and x.end_byte <= lv.end_byte for x in inside) or any(
            n.type in ("update_expression", "assignment_expression") or
            (n.type == "call_expression" and _callee_name(n)[0] not in _PURE_CALLS)
            for n in _walk(lv))
        n = len(edits)
        pre, ref = "", ltext
        if effects:
            pre, ref = f"volatile {elem}* vf_adr{n} = &({ltext}); ", f"(*vf_adr{n})"
        if e.type == "update_expression":
            op = "+" if "++" in _text(e.child_by_field_name("operator")) else "-"
            value = f"static_cast<{elem}>({ref} {op} 1)"
        else:
            right = e.child_by_field_name("right")
            rtext = src[right.start_byte:right.end_byte].decode(errors="surrogateescape")
            op = _text(e.child_by_field_name("operator"))
            value = rtext if op == "=" else f"static_cast<{elem}>(({ref}) {op[:-1]} ({rtext}))"
        new = f"{{ {pre}{elem} vf_val{n} = {value}; {ref} = vf_val{n}; "
        old = src[stmt.start_byte:stmt.end_byte].decode(errors="surrogateescape")
        new += "\n" * max(0, old.count("\n") - new.count("\n")) + "}"
        edits.append((stmt.start_byte, stmt.end_byte, new))
    if not edits:
        return None
    out = []
    pos = 0
    for a, b, new in sorted(edits):
        out.append(src[pos:a].decode(errors="surrogateescape"))
        out.append(new)
        pos = b
    out.append(src[pos:].decode(errors="surrogateescape"))
    return "".join(out)


def _check_lockstep_statement(k: _Kernel, stmt: Any, sites: list[Any]) -> None:
    """A statement that is a region's volatile statement: loads only, or one store (the whole
    expression statement) and nothing else through volatile pointers."""
    stores = [x for x in sites if k.lockstep[x.id] != "load"]
    for x in sites:
        p = x.parent
        while p is not None and p.id != stmt.id:
            if p.type == "lambda_expression":
                raise Fallback("a volatile access inside a lambda", x)
            p = p.parent
    if not stores:
        return
    if len(stores) > 1:
        raise Fallback("two stores through volatile pointers in one statement", stmt)
    x = stores[0]
    e = _outer_expression(x)
    if stmt.type != "expression_statement" or e is None or not _same(_outer_expression(e), stmt):
        raise Fallback("a store through a volatile pointer inside an expression", x)
    if len(sites) > 1 or k.lockstep[x.id] != "store":
        raise Fallback("a statement that loads and stores through volatile pointers", stmt)


# ---- analysis ---------------------------------------------------------------------------------

def _analyse(k: _Kernel, plan: KernelPlan) -> None:
    body = k.body
    if body is None:
        raise Fallback("no body")
    _collect_sync_sites(k)
    try:
        _collect_lockstep_sites(k)
    except Fallback as why:
        if k.sync_sites:
            raise
        plan.needs_split = False
        plan.reason = f"no barrier or warp collective; runs as the plain thread loop ({why})"
        return
    if not k.sync_sites:
        plan.needs_split = False
        why = _single_region_problem(k)
        if why:
            plan.reason = f"no barrier or warp collective; runs as the plain thread loop ({why})"
            return
        _collect_params(k)
        _mutations(k)
        plan.code = _Gen(k).generate_single()
        plan.insert_at = body.start_byte + 1
        plan.split = True
        plan.regions = 1
        return
    if body.has_error:
        bad = next((n for n in _walk(body) if n.type == "ERROR" or n.is_missing), None)
        raise Fallback("the kernel body does not parse cleanly", bad)
    _precheck(k)
    _collect_params(k)
    seq = _build_seq(k, body, None)
    _check_claimed(k)
    _mutations(k)
    _classify(k, seq)
    ir = _Gen(k)
    plan.code = ir.generate(seq)
    plan.insert_at = body.start_byte + 1
    plan.split = True
    plan.regions = ir.regions
    plan.slots = [v.name for v in k.vars if v.kind == "slot"]
    plan.uniform = [v.name for v in k.vars if v.kind == "uniform" and not v.is_param]
    plan.recomputed = [v.name for v in k.vars if v.kind == "remat"]
    plan.lockstep = len(k.lockstep)


_YIELDING = {"clock", "clock64", "__nanosleep", "__globaltimer", "__trap_yield"}


def _single_region_problem(k: _Kernel) -> str:
    """Why a kernel without barriers cannot run as one region loop (threadIdx a local of the loop,
    so stores through the kernel's pointers cannot alias it), or ''."""
    if k.body.has_error:
        return "the body does not parse cleanly"
    head = k.text(k.fn.start_byte, k.body.start_byte)
    if re.search(r"\bvolatile\b", head):
        return "a volatile parameter"
    if re.search(rb"<\s*<\s*<", k.src[k.body.start_byte:k.body.end_byte]):
        return "a launch inside the kernel"
    for n in _walk(k.body):
        if n.type in ("gnu_asm_expression", "asm_statement", "preproc_def", "preproc_function_def"):
            return "inline assembly or a #define"
        if n.type == "call_expression" and _callee_name(n)[0] in _YIELDING:
            return "it reads the clock (a spin-wait may wait for another thread of the block)"
    return ""


def _collect_lockstep_sites(k: _Kernel) -> None:
    k.vol = _volatile_info(k.fn, k.src)
    k.lockstep = {i: kind for i, (_, kind) in k.vol.accesses.items()}
    k.sync_sites += [lv for lv, _ in k.vol.accesses.values()]
    k.sync_sites.sort(key=lambda n: n.start_byte)


def _called(ident: Any) -> bool:
    """Whether ``ident`` names the function of a call (``f(x)``, ``ns::f(x)``, ``f<T>(x)``)."""
    node, p = ident, ident.parent
    while p is not None and p.type in ("qualified_identifier", "template_function"):
        node, p = p, p.parent
    return p is not None and p.type == "call_expression" and _same(p.child_by_field_name("function"), node)


def _collect_sync_sites(k: _Kernel) -> None:
    for n in _walk(k.body):
        if n.type == "call_expression":
            name, obj = _callee_name(n)
            if name in _SYNC_CALLS or name in k.ctx.tainted or (obj is not None and name in _GROUP_METHODS_SYNC):
                k.sync_sites.append(n)
        elif n.type == "identifier":
            t = _text(n)
            if t in k.ctx.tainted and t in k.ctx.macros:
                k.sync_sites.append(n)
            elif t in k.ctx.tainted and t in k.ctx.fn_defs and t not in k.local_names and not _called(n):
                raise Fallback(f"uses {t}(), which synchronises, other than by calling it (a call through a "
                               "pointer cannot be split)", n)


def _precheck(k: _Kernel) -> None:
    for n in _walk(k.body):
        t = n.type
        if t in ("goto_statement", "labeled_statement"):
            raise Fallback("goto / labels", n)
        if t in ("preproc_def", "preproc_function_def", "preproc_include"):
            raise Fallback("a #define inside the kernel", n)
        if t in ("struct_specifier", "class_specifier", "union_specifier", "enum_specifier") and \
                n.child_by_field_name("body") is not None:
            raise Fallback("a type defined inside the kernel", n)
        if t in ("type_definition", "alias_declaration", "using_declaration", "namespace_alias_definition"):
            raise Fallback("a typedef / using inside the kernel", n)
        if t in ("try_statement", "throw_statement", "co_await_expression", "co_return_statement"):
            raise Fallback(f"{t.replace('_', ' ')}", n)
        if t in ("gnu_asm_expression", "asm_statement"):
            raise Fallback("inline assembly", n)
        if t == "declaration":
            head = k.ntext(n)
            if re.match(r"\s*static\b", head) and "__shared__" not in head:
                raise Fallback("a static local variable", n)
        if t == "expression_statement" and n.named_children:
            e = n.named_children[0]
            if e.type == "assignment_expression":
                e = e.child_by_field_name("left")
            if e is not None and e.type == "binary_expression" and _text(e.child_by_field_name("operator")) == ">":
                left = e.child_by_field_name("left")
                if left is not None and left.type == "binary_expression" and \
                        _text(left.child_by_field_name("operator")) == "<":
                    raise Fallback("a declaration of a template type tree-sitter reads as comparisons", n)
    if re.search(rb"<\s*<\s*<", k.src[k.body.start_byte:k.body.end_byte]):
        raise Fallback("a kernel launch inside the kernel")


def _add_var(k: _Kernel, v: Var) -> None:
    for o in k.by_name.get(v.name, []):
        if o.start < v.end and v.start < o.end:
            raise Fallback(f"'{v.name}' is declared twice in overlapping scopes across a barrier",
                           v.ident if v.ident is not None else None)
    v.order = len(k.vars)
    k.vars.append(v)
    k.by_name.setdefault(v.name, []).append(v)


def _collect_params(k: _Kernel) -> None:
    d = k.fn.child_by_field_name("declarator")
    while d is not None and d.type != "function_declarator":
        d = d.child_by_field_name("declarator")
    plist = d.child_by_field_name("parameters") if d is not None else None
    if plist is None:
        return
    for p in plist.named_children:
        if p.type not in ("parameter_declaration", "optional_parameter_declaration"):
            continue
        ident = _declarator_ident(p.child_by_field_name("declarator"))
        if ident is None:
            continue
        dtext = k.ntext(p)
        head = k.text(p.start_byte, ident.start_byte)  # the type before the name (`const float *__restrict__ a`)
        ptr = "*" in head or "[" in dtext
        v = Var(name=_text(ident), ident=ident, decl=p, declarator=None, init=None, start=k.body.start_byte,
                end=k.body.end_byte, is_param=True, pointer=ptr)
        v.type_text = _abstract_type(k, p, p.child_by_field_name("declarator"), ident)
        if "&" in head:
            v.type_text = ""  # a reference parameter: cannot become per-thread
        _add_var(k, v)


def _abstract_type(k: _Kernel, decl: Any, declarator: Any | None, ident: Any) -> str:
    """The declared type of ``ident`` spelled as a type-id (``float*__restrict__``, ``int[4][4]``)."""
    first = next((c for c in decl.named_children if c.type in (
        "init_declarator", "identifier", "pointer_declarator", "array_declarator", "reference_declarator",
        "function_declarator", "parenthesized_declarator")), None)
    spec_end = first.start_byte if first is not None else decl.end_byte
    spec = k.text(decl.start_byte, spec_end)
    spec = _STORAGE.sub(" ", spec).replace("__shared__", " ")
    if declarator is None:
        return " ".join(spec.split())
    d = declarator
    if d.type == "init_declarator":
        d = d.child_by_field_name("declarator")
    dt = k.text(d.start_byte, ident.start_byte) + k.text(ident.end_byte, d.end_byte)
    return " ".join(spec.split()) + " " + " ".join(dt.split())


def _item_of_statement(k: _Kernel, s: Any, seq: Seq) -> Any:
    """One statement of a split-level list, as an item."""
    t = s.type
    if t in ("comment", ";") or not s.is_named:
        return None
    if t == "preproc_call":
        return Plain(s)
    if not k.contains_sync(s):
        if t.startswith("preproc_"):
            for c in s.named_children:
                if c.type == "declaration":
                    raise Fallback("a declaration inside #if at the level of a barrier", c)
        return Plain(s)
    if t in ("expression_statement", "declaration"):
        sites = _sites_in(k, s)
        lock = [x for x in sites if x.id in k.lockstep]
        if lock:
            if len(lock) != len(sites):
                raise Fallback("a volatile access in a statement with a barrier or warp collective", s)
            _check_lockstep_statement(k, s, lock)
            k.claimed.update(x.id for x in lock)
            return Lockstep(s)
    if t == "expression_statement":
        expr = s.named_children[0] if s.named_children else None
        if expr is not None and expr.type == "call_expression":
            b = _barrier_kind(k, expr)
            if b is not None:
                k.claimed.add(expr.id)
                if b == "block":
                    k.block_barriers.append(expr)
                return Barrier(s, b == "block")
        return _collective(k, s)
    if t == "declaration":
        return _collective(k, s)
    if t == "compound_statement":
        return Block(s, _build_seq(k, s, None))
    if t == "if_statement":
        cond = s.child_by_field_name("condition")
        if cond is not None and any(c.type in ("declaration", "init_statement") for c in cond.named_children):
            raise Fallback("a declaration in an if condition around a barrier", s)
        cexpr = cond.named_children[-1] if cond is not None and cond.named_children else None
        if cexpr is None:
            raise Fallback("an if without a condition", s)
        sites = _sites_in(k, cexpr)
        if sites and all(k.lockstep.get(x.id) == "load" for x in sites):
            _check_lockstep_statement(k, cexpr, sites)  # loads in a masked condition: a region of its own
            k.claimed.update(x.id for x in sites)
        elif sites:
            raise Fallback("a barrier or collective in an if condition", s)
        if re.match(r"if\s+constexpr", k.ntext(s)):
            raise Fallback("if constexpr around a barrier", s)
        then = _branch_seq(k, s.child_by_field_name("consequence"))
        alt = s.child_by_field_name("alternative")
        other = None
        if alt is not None:
            inner = alt.named_children[0] if alt.type == "else_clause" and alt.named_children else alt
            other = _branch_seq(k, inner)
        it = If(s, cexpr, then, other)
        then.owner = it
        if other is not None:
            other.owner = it
        return it
    if t in ("for_statement", "while_statement", "do_statement"):
        return _loop(k, s)
    if t == "return_statement":
        raise Fallback("a barrier or collective in a return statement", s)
    raise Fallback(f"a barrier or collective inside a {t.replace('_', ' ')}", s)


def _branch_seq(k: _Kernel, node: Any) -> Seq:
    if node.type == "compound_statement":
        return _build_seq(k, node, None)
    seq = Seq([], node.start_byte, node.end_byte)
    item = _item_of_statement(k, node, seq)
    if item is not None:
        seq.items.append(item)
    _declare_items(k, seq)
    return seq


def _build_seq(k: _Kernel, node: Any, owner: Any) -> Seq:
    seq = Seq([], node.start_byte, node.end_byte, owner)
    for s in node.named_children:
        item = _item_of_statement(k, s, seq)
        if item is not None:
            seq.items.append(item)
    _declare_items(k, seq)
    return seq


def _declare_items(k: _Kernel, seq: Seq) -> None:
    for item in seq.items:
        node = item.node if isinstance(item, (Plain, Collective, Lockstep)) else None
        if node is not None and node.type == "declaration":
            _declare(k, node, seq.end)


def _declare(k: _Kernel, decl: Any, end: int) -> None:
    head = k.ntext(decl)
    shared = ""
    if "__shared__" in head.split("=")[0]:
        shared = "extern" if re.match(r"\s*extern\b", head) else "static"
    for c in decl.named_children:
        if c.type not in ("init_declarator", "identifier", "pointer_declarator", "array_declarator",
                          "reference_declarator", "function_declarator", "parenthesized_declarator"):
            continue
        if c.type == "function_declarator":
            raise Fallback("a function declaration inside the kernel", c)
        ident = _declarator_ident(c)
        if ident is None:
            raise Fallback("a declaration the pass does not understand", c)
        init = c.child_by_field_name("value") if c.type == "init_declarator" else None
        d = c.child_by_field_name("declarator") if c.type == "init_declarator" else c
        v = Var(name=_text(ident), ident=ident, decl=decl, declarator=c, init=init, start=ident.end_byte, end=end,
                shared=shared)
        v.array = d is not None and d.type == "array_declarator"
        v.pointer = d is not None and d.type == "pointer_declarator"
        if shared:
            v.kind = "shared"
        _add_var(k, v)


def _loop(k: _Kernel, s: Any) -> Loop:
    t = s.type
    body_node = s.child_by_field_name("body")
    init: list[Any] = []
    cond = update = None
    if t == "for_statement":
        ini = s.child_by_field_name("initializer")
        cond = s.child_by_field_name("condition")
        update = s.child_by_field_name("update")
        if ini is not None:
            if k.contains_sync(ini):
                raise Fallback("a collective or volatile access in a for initializer", s)
            init.append(Plain(ini))
    else:
        c = s.child_by_field_name("condition")
        if c is not None and c.type == "condition_clause":
            if any(x.type == "declaration" for x in c.named_children):
                raise Fallback("a declaration in a while condition around a barrier", s)
            c = c.named_children[-1] if c.named_children else None
        elif c is not None and c.type == "parenthesized_expression":
            c = c.named_children[0] if c.named_children else None
        cond = c
    for part in (cond, update):
        if part is not None and any(x.id in k.lockstep for x in _sites_in(k, part)):
            raise Fallback("a volatile access in a loop condition (a spin-wait may wait for another thread, "
                           "which only fibers let run)", s)
        if part is not None and k.contains_sync(part):
            raise Fallback("a barrier or collective in a loop condition", s)
    if body_node is None:
        raise Fallback("a loop without a body", s)
    body = _branch_seq(k, body_node)
    loop = Loop(s, t.split("_")[0], init, cond, update, body, start=s.start_byte, end=s.end_byte)
    body.owner = loop
    if init and init[0].node.type == "declaration":
        _declare(k, init[0].node, s.end_byte)
    return loop


def _sites_in(k: _Kernel, node: Any) -> list[Any]:
    a, b = node.start_byte, node.end_byte
    return [x for x in k.sync_sites if a <= x.start_byte and x.end_byte <= b]


def _barrier_kind(k: _Kernel, call: Any) -> str | None:
    """'block' / 'warp' for a call that is a barrier statement, else None."""
    name, obj = _callee_name(call)
    args = _args(call)
    if name == "__syncthreads" and obj is None and not args:
        return "block"
    if name == "__syncwarp" and obj is None:
        return None  # a collective (its lanes are checked), see _collective
    if name == "sync" and obj is not None and not args:
        if obj.type == "call_expression" and _callee_name(obj)[0] == "this_thread_block":
            return "block"
        g = k.group_info(obj)
        if g is not None:
            return "warp" if g[0] == "tile" else "block"
        return None
    if name == "sync" and obj is None and len(args) == 1:
        a = args[0]
        if a.type == "call_expression" and _callee_name(a)[0] == "this_thread_block":
            return "block"
        g = k.group_info(a)
        if g is not None:
            return "warp" if g[0] == "tile" else "block"
    return None


def _collective(k: _Kernel, stmt: Any) -> Collective:
    calls = []
    block = False
    for n in _walk(stmt):
        if n.type != "call_expression" or not any(n.id == s.id for s in k.sync_sites):
            continue
        kind = _collective_kind(k, n)
        if kind is None:
            raise Fallback(_unsplit(k, n), n)
        # not conditional, not nested in another collective or a lambda
        p = n.parent
        while p is not None and p.id != stmt.id:
            if p.type in ("lambda_expression", "conditional_expression"):
                raise Fallback("a collective inside a lambda or ?: expression", n)
            if p.type == "binary_expression":
                op = p.child_by_field_name("operator")
                if op is not None and _text(op) in ("&&", "||") and p.child_by_field_name("right") is not None \
                        and p.child_by_field_name("right").start_byte <= n.start_byte:
                    raise Fallback("a collective on the right of && / ||", n)
            if p.type == "call_expression" and p.id in k.collective_calls:
                raise Fallback("nested collectives", n)
            p = p.parent
        k.collective_calls[n.id] = n
        k.claimed.add(n.id)
        calls.append(n)
        if kind[0] == "block":
            block = True
            k.block_barriers.append(n)
    if not calls:
        raise Fallback("a synchronising call the pass does not split", stmt)
    return Collective(stmt, calls, block)


def _collective_kind(k: _Kernel, call: Any) -> tuple[str, str] | None:
    name, obj = _callee_name(call)
    if obj is None:
        if name in _SHFL:
            return ("shfl", name)
        if name in _VOTE:
            return ("vote", name)
        if name in _WREDUCE:
            return ("reduce", name)
        if name == "__activemask":
            return ("active", name)
        if name == "__syncwarp":
            return ("syncwarp", name)
        if name in _BLOCK_REDUCE:
            return ("block", name)
        return None
    g = k.group_info(obj)
    if g is None or g[0] != "tile":
        return None
    if name in _TILE_SHFL:
        return ("tshfl", name)
    if name in _TILE_VOTE:
        return ("tvote", name)
    return None


def _mark_groups(k: _Kernel) -> None:
    for v in k.vars:
        if v.decl is None or v.is_param:
            continue
        g = k.groups.get(v.name)
        if g is not None:
            v.group, v.tile = g


def _unsplit(k: _Kernel, call: Any) -> str:
    name, obj = _callee_name(call)
    if obj is None and name in k.ctx.tainted and name not in _SYNC_CALLS:
        return f"calls {name}(), which synchronises (functions with barriers or collectives are not split)"
    if obj is not None:
        return f"'{_text(obj)}.{name}()' is not a synchronisation the region pass splits"
    return f"'{name}' is not split by the region pass"


def _check_claimed(k: _Kernel) -> None:
    for s in k.sync_sites:
        if s.id not in k.claimed:
            if s.type == "call_expression":
                raise Fallback(_unsplit(k, s) + " (or it is where the pass cannot split it)", s)
            raise Fallback(f"'{_text(s)}' (lockstep volatile access or a synchronising macro)", s)


# ---- mutation and uniformity ------------------------------------------------------------------

_READ_CONTEXTS = {"binary_expression", "unary_expression", "conditional_expression", "condition_clause",
                  "subscript_argument_list", "cast_expression", "return_statement", "sizeof_expression",
                  "expression_statement", "comma_expression", "initializer_list", "init_declarator",
                  "initializer_pair", "parenthesized_expression", "template_argument_list", "for_statement",
                  "while_statement", "do_statement", "if_statement", "case_statement", "switch_statement"}


def _mutations(k: _Kernel) -> None:
    lambdas = [n for n in _walk(k.body) if n.type == "lambda_expression"]
    for n in _walk(k.body):
        if n.type != "identifier":
            continue
        v = k.resolve(n)
        if v is None or (v.ident is not None and n.start_byte == v.ident.start_byte):
            continue
        if any(lam.start_byte <= n.start_byte < lam.end_byte for lam in lambdas):
            v.mutated = True
            v.by_ref = True
            continue
        if _mutating_use(k, n, v):
            v.mutated = True
        p = n.parent
        while p is not None and p.type == "parenthesized_expression":
            p = p.parent
        if p is not None and p.type == "pointer_expression" and _text(p.child_by_field_name("operator")) == "&":
            v.by_ref = True  # its address may be kept beyond the region
        elif v.array and not (p is not None and p.type in ("subscript_expression", "sizeof_expression")):
            v.by_ref = True  # the array decays to a pointer


def _mutating_use(k: _Kernel, ident: Any, v: Var) -> bool:
    node = ident
    while True:
        p = node.parent
        if p is None:
            return True
        if p.type == "parenthesized_expression":
            node = p
            continue
        if p.type == "field_expression" and _same(p.child_by_field_name("argument"), node):
            op = p.child_by_field_name("operator")
            if op is not None and _text(op) == "->":
                return False  # modifies the pointee at most
            gp = p.parent
            if gp is not None and gp.type == "call_expression" and _same(gp.child_by_field_name("function"), p):
                name, _ = _callee_name(gp)
                return not (v.name in k.groups and (name in _PURE_METHODS or name in _GROUP_METHODS_SYNC))
            node = p
            continue
        if p.type == "subscript_expression" and _same(p.child_by_field_name("argument"), node):
            if v.pointer and not v.array:
                return False
            node = p
            continue
        if p.type == "pointer_expression":
            op = p.child_by_field_name("operator")
            if op is not None and _text(op) == "&":
                return True
            if v.pointer and not v.array:
                return False
            node = p
            continue
        break
    if p.type == "assignment_expression":
        return _same(p.child_by_field_name("left"), node)
    if p.type == "update_expression":
        return True
    if p.type == "argument_list":
        call = p.parent
        name, _ = _callee_name(call) if call is not None else ("", None)
        if call is not None and call.id in k.collective_calls:
            return False
        if name in _PURE_CALLS or name in _UNIFORM_GROUP_CALLS or name in _PURE_GROUP_CALLS \
                or name in _MEMORY_CALLS or name in ("printf", "assert", "atomicAdd"):
            return False
        if name in ("sync",) and v.name in k.groups:
            return False
        if name in k.ctx.macros and k.ctx.macro_class.get(name, 2) <= 1:
            return False  # an expression macro (IMUL(a, b) -> __mul24(a, b))
        if v.pointer and not v.array:
            return False  # a pointer passed on (by value, in practice)
        return True
    if p.type == "init_declarator":
        d = p.child_by_field_name("declarator")
        return d is not None and d.type == "reference_declarator"
    if p.type == "for_range_loop":
        return True
    if p.type in _READ_CONTEXTS:
        return False
    return True


def _expr_class(k: _Kernel, node: Any | None, *, independent: bool = False) -> int:
    """0 uniform, 1 pure (same value whenever evaluated by the same thread between uniform
    updates: threadIdx, recomputed variables), 2 anything else (memory, calls, per-thread state).
    ``independent``: memory reads count as uniform (a condition that reads memory but never
    depends on the thread) - 3 then means 'depends on the thread'."""
    if node is None:
        return 0
    t = node.type
    if t in ("number_literal", "true", "false", "null", "nullptr", "char_literal", "string_literal",
             "sizeof_expression", "alignof_expression", "this", "concatenated_string", "type_descriptor",
             "primitive_type", "type_identifier", "comment"):
        return 0
    if t == "identifier":
        name = _text(node)
        if name == "threadIdx":
            return 3 if independent else 1
        if name in _UNIFORM_BUILTINS:
            return 0
        v = k.resolve(node)
        if v is not None:
            if v.kind == "uniform":
                return 0
            if v.kind == "shared":
                return 0 if independent or v.array else 2  # an array's name is its (block-wide) address
            if v.kind == "remat":
                return 3 if independent else 1
            if independent:
                return 0 if v.indep else 3
            return 2
        if name in k.ctx.mutable_globals:
            return 0 if independent else 2
        if name in k.ctx.macros:
            c = k.ctx.macro_class.get(name, 2)
            if independent:
                return 3 if c >= 1 else 0
            return c
        return 0
    if t in ("qualified_identifier",):
        name = _text(node).split("::")[-1]
        if name in k.ctx.mutable_globals:
            return 0 if independent else 2
        return 0
    if t == "field_expression":
        op = node.child_by_field_name("operator")
        arg = node.child_by_field_name("argument")
        c = _expr_class(k, arg, independent=independent)
        if op is not None and _text(op) == "->":
            return max(c, 0 if independent else 2)
        return c
    if t == "call_expression":
        name, obj = _callee_name(node)
        if node.id in k.collective_calls:
            return 3 if independent else 2
        worst = 0
        for a in _args(node):
            worst = max(worst, _expr_class(k, a, independent=independent))
        if obj is not None:
            v = k.group_var(obj)
            if v is not None and v.group == "tile" and name in ("size", "num_threads") and not _args(node):
                return worst  # rendered as the tile's size (_render)
            if v is not None and name in _UNIFORM_METHODS:
                return max(worst, _expr_class(k, obj, independent=independent))
            if v is not None and name in _PURE_METHODS:
                return max(worst, 3 if independent else 1)
            return 3 if independent else 2
        fn = node.child_by_field_name("function")
        if fn is not None and fn.type == "template_function":
            targs = fn.child_by_field_name("arguments")
            worst = max(worst, _expr_class(k, targs, independent=independent))
        if name in _UNIFORM_GROUP_CALLS:
            return worst
        if name in _PURE_GROUP_CALLS:
            return max(worst, 3 if independent else 1)
        if name in _MEMORY_CALLS:
            return max(worst, 0 if independent else 2)
        if name in _PURE_CALLS:
            return worst
        if name in k.ctx.macros:
            c = k.ctx.macro_class.get(name, 2)
            return max(worst, (3 if c >= 1 else 0) if independent else c)
        return 3 if independent else 2
    if t in ("subscript_expression",):
        worst = 0 if independent else 2
        for c in node.named_children:
            worst = max(worst, _expr_class(k, c, independent=independent))
        return worst
    if t == "pointer_expression":
        op = node.child_by_field_name("operator")
        arg = node.child_by_field_name("argument")
        c = _expr_class(k, arg, independent=independent)
        if op is not None and _text(op) == "&":
            if arg is not None and arg.type == "identifier":
                v = k.resolve(arg)
                if v is not None and v.kind in ("slot", "local", "remat"):
                    return 3 if independent else 2
            return c
        return max(c, 0 if independent else 2)
    if t in ("binary_expression", "unary_expression", "parenthesized_expression", "conditional_expression",
             "cast_expression", "comma_expression", "initializer_list", "template_argument_list", "argument_list",
             "subscript_argument_list", "condition_clause"):
        worst = 0
        for c in node.named_children:
            worst = max(worst, _expr_class(k, c, independent=independent))
        return worst
    return 3 if independent else 2


def _liftable(k: _Kernel, expr: Any) -> list[Any] | None:
    """The assignments of a statement that is nothing but assignments/increments of plain
    variables (``p = 1 - p``, ``k >>= 1, j++``), or None."""
    if expr is None:
        return None
    if expr.type == "comma_expression":
        out = []
        for c in expr.named_children:
            part = _liftable(k, c)
            if part is None:
                return None
            out += part
        return out
    if expr.type == "parenthesized_expression" and expr.named_children:
        return _liftable(k, expr.named_children[0])
    if expr.type == "assignment_expression":
        left = expr.child_by_field_name("left")
        if left is not None and left.type == "identifier":
            return [expr]
        return None
    if expr.type == "update_expression":
        arg = expr.child_by_field_name("argument")
        if arg is not None and arg.type == "identifier":
            return [expr]
    return None


def _assign_target(expr: Any) -> Any:
    return expr.child_by_field_name("left") if expr.type == "assignment_expression" else \
        expr.child_by_field_name("argument")


def _walk_items(seq: Seq, masked: tuple = ()):
    """(item, enclosing constructs) for every item, depth first."""
    for item in seq.items:
        yield item, masked
        if isinstance(item, If):
            yield from _walk_items(item.then, (*masked, item))
            if item.other is not None:
                yield from _walk_items(item.other, (*masked, item))
        elif isinstance(item, Loop):
            for i in item.init:
                yield i, (*masked, item)
            yield from _walk_items(item.body, (*masked, item))
        elif isinstance(item, Block):
            yield from _walk_items(item.body, masked)


def _escapes(k: _Kernel, seq: Seq) -> None:
    """break/continue/return statements in regions: which split loop they leave."""
    loops = [it for it, _ in _walk_items(seq) if isinstance(it, Loop)]
    for n in _walk(k.body):
        if n.type not in ("break_statement", "continue_statement", "return_statement"):
            continue
        p = n.parent
        in_lambda = False
        target = None
        while p is not None and p.id != k.body.id:
            if p.type == "lambda_expression":
                in_lambda = True
                break
            if p.type in _LOOPS or (p.type == "switch_statement" and n.type == "break_statement"):
                target = p
                break
            p = p.parent
        if in_lambda:
            continue
        if n.type == "return_statement":
            if n.named_children:
                raise Fallback("return with a value in a kernel", n)
            k.has_return = True
            for lp in loops:
                if lp.start <= n.start_byte < lp.end:
                    lp.returns = True
            continue
        for lp in loops:
            if target is not None and lp.node.id == target.id:
                lp.escapes = True
                if n.type == "continue_statement":
                    lp.continues = True


def _classify(k: _Kernel, seq: Seq) -> None:
    _mark_groups(k)
    _escapes(k, seq)
    items = list(_walk_items(seq))
    # every split construct's block barriers
    for it, _ in items:
        if isinstance(it, (If, Loop)):
            a, b = it.node.start_byte, it.node.end_byte
            it.has_block_barrier = any(a <= x.start_byte < b for x in k.block_barriers)
    for v in k.vars:
        if v.kind == "shared":
            continue
        v.kind = "uniform"
    # assignments per variable: (assignment node, liftable?, enclosing constructs)
    lift_sites: dict[int, list[tuple[Any, tuple]]] = {}
    lifted_stmts: dict[int, list[Any]] = {}
    for it, outer in items:
        if isinstance(it, Plain) and it.node.type == "expression_statement" and it.node.named_children:
            parts = _liftable(k, it.node.named_children[0])
            if parts:
                lifted_stmts[it.node.id] = parts
                for a in parts:
                    v = k.resolve(_assign_target(a))
                    if v is not None:
                        lift_sites.setdefault(id(v), []).append((a, outer, None))
        if isinstance(it, Loop):
            for part in (it.update, it.init[0].node if it.init and it.init[0].node.type != "declaration" else None):
                parts = _liftable(k, part)
                for a in parts or ():
                    v = k.resolve(_assign_target(a))
                    if v is not None:
                        lift_sites.setdefault(id(v), []).append((a, outer, it))
    k.lifted_stmts = lifted_stmts
    assign_ids = {a.id for sites in lift_sites.values() for a, _, _ in sites}

    def var_ok(v: Var) -> bool:
        if v.kind == "shared":
            return True
        if v.init is not None and _expr_class(k, v.init) != 0:
            return False
        if v.decl is not None and not v.is_param and v.init is None and v.group:
            return False
        # every mutating use is a liftable uniform assignment under uniform control
        for n in k.idents.get(v.name, ()):
            if k.resolve(n) is not v:
                continue
            if v.ident is not None and n.start_byte == v.ident.start_byte:
                continue
            if not _mutating_use(k, n, v) and not _in_lambda(k, n):
                continue
            a = n.parent
            while a is not None and a.type == "parenthesized_expression":
                a = a.parent
            if a is None or a.id not in assign_ids:
                return False
            for site, outer, loop in lift_sites.get(id(v), []):
                if site.id != a.id:
                    continue
                if site.type == "assignment_expression" and _expr_class(k, site.child_by_field_name("right")) != 0:
                    return False
                if loop is not None and not loop.uniform:
                    return False  # a masked loop's update runs per thread
                for c in outer:
                    if not c.uniform and not (c.node.start_byte <= v.start < c.node.end_byte):
                        return False
        return True

    changed = True
    while changed:
        changed = False
        for it, _ in items:
            if isinstance(it, If):
                u = _expr_class(k, it.cond) == 0
                if it.uniform != u:
                    it.uniform = u
                    changed = True
            elif isinstance(it, Loop):
                u = not it.escapes and _expr_class(k, it.cond) == 0
                if u and it.update is not None:
                    parts = _liftable(k, it.update)
                    u = parts is not None and all(
                        (k.resolve(_assign_target(a)) is not None and k.resolve(_assign_target(a)).kind == "uniform"
                         and (a.type != "assignment_expression"
                              or _expr_class(k, a.child_by_field_name("right")) == 0)) for a in parts)
                if u and it.init:
                    ini = it.init[0].node
                    if ini.type == "declaration":
                        u = all(v.kind == "uniform" for v in k.vars if v.decl is not None and v.decl.id == ini.id)
                    else:
                        parts = _liftable(k, ini)
                        u = parts is not None and all(
                            k.resolve(_assign_target(a)) is not None
                            and k.resolve(_assign_target(a)).kind == "uniform" for a in parts)
                if it.uniform != u:
                    it.uniform = u
                    changed = True
        for v in k.vars:
            if v.kind == "uniform" and not var_ok(v):
                v.kind = "varying"
                changed = True
    # variables that never depend on the thread (may read memory): assigned only from such values,
    # and never under a condition that depends on the thread
    for v in k.vars:
        v.indep = v.kind in ("uniform", "shared") or (
            (v.init is None or _expr_class(k, v.init, independent=True) != 3) and not v.group)
    changed = True
    while changed:
        changed = False
        for v in k.vars:
            if not v.indep or v.kind in ("uniform", "shared"):
                continue
            if v.init is not None and _expr_class(k, v.init, independent=True) == 3:
                v.indep = False
                changed = True
                continue
            for n in k.idents.get(v.name, ()):
                if k.resolve(n) is not v or (v.ident is not None and n.start_byte == v.ident.start_byte):
                    continue
                if not _mutating_use(k, n, v):
                    continue
                a = n.parent
                while a is not None and a.type == "parenthesized_expression":
                    a = a.parent
                if a is None or a.type not in ("assignment_expression", "update_expression") or \
                        _assign_target(a) is None or _assign_target(a).id != n.id:
                    v.indep = False
                elif a.type == "assignment_expression" and \
                        _expr_class(k, a.child_by_field_name("right"), independent=True) == 3:
                    v.indep = False
                elif _control_dependent(k, a):
                    v.indep = False
                if not v.indep:
                    changed = True
                    break
    # a volatile access in a loop that repeats while any thread is still in it: it may spin-wait for
    # another thread of the block, which region execution would only run after the loop
    for it, _ in items:
        if isinstance(it, Loop) and not it.uniform and not _early_return_of(k, it) and any(
                it.start <= lv.start_byte < it.end for lv, _ in k.vol.accesses.values()):
            raise Fallback("a volatile access in a loop whose trip count depends on the thread or on memory (it "
                           "may spin-wait for another thread, which only fibers let run)", it.node)
    # thread-dependence of masked constructs with block barriers
    for it, _ in items:
        if isinstance(it, (If, Loop)) and not it.uniform:
            if it.has_block_barrier:
                if isinstance(it, Loop) and it.escapes:
                    fn = _early_return_of(k, it)
                    if fn:
                        raise Fallback(f"a return in {fn}() before a __syncthreads() (threads that return would "
                                       "not reach the barrier)", it.node)
                    raise Fallback("break/continue out of a loop with __syncthreads() whose condition is not "
                                   "uniform", it.node)
                parts = [it.cond] + ([it.update] if isinstance(it, Loop) and it.update is not None else [])
                if isinstance(it, Loop) and it.init:
                    ini = it.init[0].node
                    if ini.type == "declaration":
                        parts += [c.child_by_field_name("value") for c in ini.named_children
                                  if c.type == "init_declarator"]
                    else:
                        parts.append(ini)
                if any(_expr_class(k, p, independent=True) == 3 for p in parts if p is not None):
                    raise Fallback("__syncthreads() under a condition that depends on the thread", it.node)
                it.independent = True
    # recomputation: varying, never mutated, pure initializer, no uniform dependency changed in scope
    for v in k.vars:
        if v.kind == "varying" and not v.is_param and not v.mutated and v.init is not None \
                and not _in_loop_init(k, v):
            v.kind = "remat"
    changed = True
    while changed:
        changed = False
        for v in k.vars:
            if v.kind == "remat" and (_expr_class(k, v.init) > 1 or not _stable_deps(k, v, lift_sites)):
                v.kind = "varying"
                changed = True
    for v in k.vars:
        if v.kind == "varying":
            v.kind = "slot"  # refined to "local" by the generator when only one region uses it


# region_inline.py leaves an inlined function's early returns with `break` out of this loop
EARLY_RETURN = re.compile(r"^\(\s*0\s*/\* vf: returns of (\w+)\(\) \*/\s*\)$")


def _early_return_of(k: _Kernel, lp: Loop) -> str:
    """The function whose returns the loop stands for (a `do { } while (0)` that runs once), or ''."""
    if lp.kind != "do":
        return ""
    c = lp.node.child_by_field_name("condition")
    m = EARLY_RETURN.match(k.ntext(c)) if c is not None else None
    return m.group(1) if m else ""


def _control_dependent(k: _Kernel, node: Any) -> bool:
    """Whether ``node`` runs under a condition that depends on the thread."""
    child, p = node, node.parent
    while p is not None and p.id != k.body.id:
        cond = None
        if p.type == "if_statement" and child.type != "condition_clause":
            cond = p.child_by_field_name("condition")
        elif p.type in ("while_statement", "do_statement", "for_statement") and child.id == (
                p.child_by_field_name("body").id if p.child_by_field_name("body") is not None else -1):
            cond = p.child_by_field_name("condition")
        elif p.type == "for_statement" and p.child_by_field_name("update") is not None and \
                child.id == p.child_by_field_name("update").id:
            cond = p.child_by_field_name("condition")
        elif p.type == "conditional_expression" and child.id != p.child_by_field_name("condition").id:
            cond = p.child_by_field_name("condition")
        elif p.type == "binary_expression" and _text(p.child_by_field_name("operator")) in ("&&", "||") and \
                child.id == p.child_by_field_name("right").id:
            cond = p.child_by_field_name("left")
        elif p.type in ("switch_statement", "case_statement"):
            return True
        if cond is not None and _expr_class(k, cond, independent=True) == 3:
            return True
        child, p = p, p.parent
    return False


def _in_lambda(k: _Kernel, n: Any) -> bool:
    p = n.parent
    while p is not None and p.id != k.body.id:
        if p.type == "lambda_expression":
            return True
        p = p.parent
    return False


def _in_loop_init(k: _Kernel, v: Var) -> bool:
    p = v.decl.parent if v.decl is not None else None
    return p is not None and p.type == "for_statement"


def _stable_deps(k: _Kernel, v: Var, lift_sites: dict[int, list]) -> bool:
    """No uniform variable the initializer of ``v`` reads (directly or through recomputed ones)
    is assigned within ``v``'s scope."""
    seen: set[int] = set()
    todo = [v]
    while todo:
        cur = todo.pop()
        if id(cur) in seen or cur.init is None:
            continue
        seen.add(id(cur))
        for n in _walk(cur.init):
            if n.type != "identifier":
                continue
            d = k.resolve(n)
            if d is None:
                continue
            if d.kind == "remat":
                todo.append(d)
            elif d.kind == "uniform":
                for site, _, _ in lift_sites.get(id(d), []):
                    if v.start <= site.start_byte < v.end:
                        return False
    return True


# ---- code generation --------------------------------------------------------------------------

# Generated code between the user's statements sits on this line of the user's file, which no user
# file reaches: a compile error there is the pass's (region_induced).
GLUE_LINE = 1000000
_GLUE = f"#line {GLUE_LINE}\n"

# The block's indices as locals of the block function (registers: no store through a user pointer
# can alias them); device functions still read the runtime's thread_local copies.
_SHADOWS = ("uint3 blockIdx = ::blockIdx; dim3 blockDim = ::blockDim, gridDim = ::gridDim;\n"
            "(void)blockIdx; (void)blockDim; (void)gridDim;\n")

@dataclass
class _Ctx:
    guard: int | None                       # innermost mask (index); None: every thread
    chain: list[tuple[int, Any]]            # (mask, construct) of the enclosing masked constructs
    loop_masks: dict[int, tuple[int, int]]  # masked loop node id -> (active mask, iteration mask)


@dataclass(eq=False)
class _Unit:
    """One region loop: statements (and collective operands) run for every active thread."""

    run: list[tuple]                        # ("stmt", node) / ("expr", node) / ("decl", node, vars)
    tail: list[Any]                         # collective calls whose operands this region stores
    ctx: _Ctx
    code: str = ""                          # a condition unit's own code (it checks its mask itself)
    ranges: list[Any] = field(default_factory=list)
    used: list[Var] = field(default_factory=list)
    declared: set[int] = field(default_factory=set)


class _Gen:
    def __init__(self, k: _Kernel) -> None:
        self.k = k
        self.regions = 0
        self.m0: int | None = None
        self.nmasks = 0
        self.sites: list[dict] = []
        self.reduces = 0
        self.slot_types: list[str] = []
        self.param_slots: list[Var] = []
        self._unit: _Unit | None = None
        self._unit_saves: list[Var] = []
        self._values: dict[int, str] = {}

    def generate(self, seq: Seq) -> str:
        k = self.k
        if k.has_return:
            self.m0 = self._mask()
        self._assign_sites()
        chain = [] if self.m0 is None else [(self.m0, None)]
        items = self.seq(seq, _Ctx(self.m0, chain, {}))
        self._plan_storage(items)
        body = self._emit(items)
        line = _line(k.body)
        # warp-synchronous kernels (reductions, scans: many small regions, often in many template
        # instances) have their block function compiled once, not again in every launch's thread
        # loop that inlines the kernel
        close = "}();\n" if k.lockstep else ""
        return (f"\n#line {line}\n" + self._prologue() + body + _GLUE + close + "::vf::region_end();\nreturn;\n}\n"
                + f"#line {line}\n")

    def generate_single(self) -> str:
        """A kernel without barriers as one region loop over the block's threads."""
        k = self.k
        line = _line(k.body)
        u = _Unit([("stmt", k.body)], [], _Ctx(None, [], {}))
        global_idx = "::threadIdx = threadIdx;\n" if self._has_calls(u) else ""
        inner = self._render(k.body.start_byte + 1, k.body.end_byte - 1)
        # a parameter the kernel changes (`p += offset`) is each thread's own copy, as in CUDA
        changed = [v.name for v in k.vars if v.is_param and v.mutated]
        outer = "".join(f"auto& vf_p_{n} = {n};\n" for n in changed)
        copies = "".join(f"auto {n} = vf_p_{n};\n" for n in changed)
        return (f"\n#line {line}\n::vf::RegionBlock vf_b;  {self._range()}\n{_GLUE}if (::vf::region_begin(vf_b)) {{\n"
                f"{_SHADOWS}{outer}"
                "::vf::region_loop(vf_b, [&](uint3 threadIdx, const unsigned vf_t) VF_FLATTEN {\n"
                f"(void)threadIdx; (void)vf_t;\n{global_idx}{copies}#line {line}\n{{{inner}}}\n{_GLUE}}});\n"
                f"::vf::region_end();\nreturn;\n}}\n#line {line}\n")

    def _range(self) -> str:
        spans = [(_line(self.k.fn), _row_line(int(self.k.body.end_point[0]))), *self.k.inlined_spans]
        return " ".join(f"// vf-regions: lines {a}-{b}" for a, b in dict.fromkeys(spans))

    def _mask(self) -> int:
        self.nmasks += 1
        return self.nmasks - 1

    def _assign_sites(self) -> None:
        for cid, call in self.k.collective_calls.items():
            kind, name = _collective_kind(self.k, call)
            if kind == "block":
                self.k.site_of[cid] = self.reduces
                self.reduces += 1
            else:
                self.k.site_of[cid] = len(self.sites)
                self.sites.append({"kind": kind, "name": name, "line": _line(call)})

    # ---- structure: items -> units and block-level code ------------------------------------
    def seq(self, seq: Seq, ctx: _Ctx) -> list:
        out: list = []
        run: list = []
        lockstep = False  # the pending run has its statement that accesses volatile memory

        def flush(tail: list | None = None) -> None:
            nonlocal run, lockstep
            if tail or any(not self._is_remat_decl(e) for e in run):
                self.regions += 1
                out.append(_Unit(run, tail or [], ctx))
            run = []
            lockstep = False

        items = list(seq.items)
        for idx, item in enumerate(items):
            if isinstance(item, Lockstep):
                if lockstep:
                    flush()  # every thread finishes the previous one before any starts this one
                if item.node.type == "declaration":
                    self._declaration(item.node, run, out, flush)
                else:
                    run.append(("stmt", item.node))
                lockstep = True
            elif isinstance(item, Plain):
                node = item.node
                if node.type == "preproc_call":
                    nxt = items[idx + 1] if idx + 1 < len(items) else None
                    if isinstance(nxt, Plain):
                        run.append(("stmt", node))
                    continue  # a #pragma before a split construct or a barrier: dropped
                if node.type == "declaration":
                    self._declaration(node, run, out, flush)
                    continue
                lifted = self.k.lifted_stmts.get(node.id) if node.type == "expression_statement" else \
                    (_liftable(self.k, node) if node.type != "declaration" else None)
                if lifted and all((v := self.k.resolve(_assign_target(a))) is not None and v.kind == "uniform"
                                  for a in lifted):
                    flush()
                    semi = "" if node.type == "expression_statement" else ";"
                    text = self._render(node.start_byte, node.end_byte)
                    out.append(("block", f"#line {_line(node)}\n{text}{semi}\n"))
                    continue
                run.append(("stmt" if node.type.endswith("statement") or node.type.startswith("preproc")
                            else "expr", node))
            elif isinstance(item, Barrier):
                flush()
            elif isinstance(item, Collective):
                flush(item.calls)
                if item.node.type == "declaration":
                    self._declaration(item.node, run, out, flush)
                else:
                    run.append(("stmt", item.node))
            elif isinstance(item, Block):
                flush()
                out.append(("scope", self.seq(item.body, ctx)))
            elif isinstance(item, If):
                flush()
                out.append(self._if(item, ctx))
            elif isinstance(item, Loop):
                flush()
                out.append(self._loop(item, ctx))
        flush()
        return out

    def _is_remat_decl(self, e: tuple) -> bool:
        """A declaration of recomputed variables only: a region of nothing but these does nothing."""
        if e[0] != "decl":
            return False
        return all(v.kind == "remat" for v in e[2])

    def _declaration(self, node: Any, run: list, out: list, flush) -> None:
        k = self.k
        vs = [v for v in k.vars if v.decl is not None and v.decl.id == node.id]
        if not vs:
            run.append(("stmt", node))
            return
        if vs[0].shared:
            if any(self._run_mentions(run, v.name) for v in vs):
                flush()
            out.append(("block", self._shared_decl(node, vs)))  # before the pending run: a static
            return
        uni = [v for v in vs if v.kind == "uniform"]
        if uni:
            if any(self._run_mentions(run, v.name) for v in uni):
                flush()
            # before the pending run (nothing in it refers to the new names)
            if len(uni) == len(vs):
                out.append(("block", f"#line {_line(node)}\n{self._render(node.start_byte, node.end_byte)}\n"))
                return
            for v in uni:
                out.append(("block", f"#line {_line(node)}\n{self._single_decl(node, v)};\n"))
        run.append(("decl", node, [v for v in vs if v.kind != "uniform"]))

    def _run_mentions(self, run: list, name: str) -> bool:
        pat = re.compile(rb"\b" + re.escape(name.encode()) + rb"\b")
        return any(pat.search(self.k.src[e[1].start_byte:e[1].end_byte]) for e in run)

    def _if(self, it: If, ctx: _Ctx):
        cond_text = self._render(it.cond.start_byte, it.cond.end_byte)
        if it.uniform:
            then = self.seq(it.then, ctx)
            other = self.seq(it.other, ctx) if it.other is not None else None
            return ("if", it, cond_text, then, other)
        mt = self._mask()
        me = self._mask() if it.other is not None else -1
        it.masks = (mt, me)
        guard = f"vf_m{ctx.guard}[vf_t]" if ctx.guard is not None else "true"
        zero = f" vf_m{mt}[vf_t] = 0;" + (f" vf_m{me}[vf_t] = 0;" if me >= 0 else "")
        code = (f"if (!({guard})) {{{zero} return; }}\n"
                f"#line {_line(it.cond)}\nconst bool vf_c = static_cast<bool>({cond_text});\n"
                f"vf_m{mt}[vf_t] = vf_c; vf_n{mt} += vf_c;"
                + (f" vf_m{me}[vf_t] = !vf_c;" if me >= 0 else "")
                + f" vf_x{mt} += !vf_c;\n" + (self._check(mt) if it.has_block_barrier else ""))
        self.regions += 1
        unit = _Unit([], [], ctx, code=code, ranges=[it.cond])
        then = self.seq(it.then, _Ctx(mt, [*ctx.chain, (mt, it)], ctx.loop_masks))
        other = None
        if it.other is not None:
            other = self.seq(it.other, _Ctx(me, [*ctx.chain, (me, it)], ctx.loop_masks))
        return ("mif", it, unit, then, other)

    @staticmethod
    def _check(m: int) -> str:
        return (f"if (vf_f{m} < 0) {{ vf_f{m} = (int)vf_t; vf_v{m} = vf_c; }} "
                f"else if (vf_c != vf_v{m} && vf_d{m} < 0) vf_d{m} = (int)vf_t;\n")

    def _loop(self, lp: Loop, ctx: _Ctx):
        init = self.seq(Seq(lp.init, lp.start, lp.end), ctx) if lp.init else []
        if lp.uniform:
            cond = self._render(lp.cond.start_byte, lp.cond.end_byte) if lp.cond is not None else ""
            upd = self._render(lp.update.start_byte, lp.update.end_byte) if lp.update is not None else ""
            body = self.seq(lp.body, ctx)
            return ("loop", lp, init, cond, upd, body, ctx.guard)
        ma = self._mask()
        mi = self._mask() if lp.continues else ma
        lp.masks = (ma, mi)
        loops = dict(ctx.loop_masks)
        loops[lp.node.id] = (ma, mi)
        cond_text = self._render(lp.cond.start_byte, lp.cond.end_byte) if lp.cond is not None else "true"
        upd = ""
        if lp.update is not None:
            upd = (f"if (!vf_first) {{\n#line {_line(lp.update)}\n"
                   f"{self._render(lp.update.start_byte, lp.update.end_byte)};\n}}\n")
        line = _line(lp.cond) if lp.cond is not None else _line(lp.node)
        code = (f"if (!vf_m{ma}[vf_t]) return;\n" + upd
                + f"#line {line}\nconst bool vf_c = static_cast<bool>({cond_text});\n"
                + (self._check(ma) if lp.has_block_barrier else "")
                + f"if (!vf_c) vf_m{ma}[vf_t] = 0; else ++vf_n{ma};\n")
        self.regions += 1
        cunit = _Unit([], [], _Ctx(None, [*ctx.chain, (ma, lp)], loops), code=code,
                      ranges=[x for x in (lp.cond, lp.update) if x is not None])
        body_chain = [*ctx.chain, (ma, lp)] + ([(mi, lp)] if mi != ma else [])
        body = self.seq(lp.body, _Ctx(mi, body_chain, loops))
        return ("mloop", lp, init, cunit, body, ctx.guard)

    # ---- storage: which variables need per-thread arrays --------------------------------------
    def _units(self, items: list):
        for it in items:
            if isinstance(it, _Unit):
                yield it
            elif it[0] == "scope":
                yield from self._units(it[1])
            elif it[0] == "if":
                yield from self._units(it[3])
                if it[4] is not None:
                    yield from self._units(it[4])
            elif it[0] == "mif":
                yield it[2]
                yield from self._units(it[3])
                if it[4] is not None:
                    yield from self._units(it[4])
            elif it[0] == "loop":
                yield from self._units(it[2])
                yield from self._units(it[5])
            elif it[0] == "mloop":
                yield from self._units(it[2])
                yield it[3]
                yield from self._units(it[4])

    def _uses(self, u: _Unit) -> None:
        k = self.k
        nodes = [e[1] for e in u.run] + [a for c in u.tail for a in _args(c)] + list(u.ranges)
        used: dict[int, Var] = {}
        for node in nodes:
            for n in _walk(node):
                if n.type != "identifier":
                    continue
                v = k.resolve(n)
                if v is None:
                    continue
                if v.ident is not None and n.start_byte == v.ident.start_byte:
                    u.declared.add(id(v))
                else:
                    used[id(v)] = v
        u.used = list(used.values())

    def _plan_storage(self, items: list) -> None:
        k = self.k
        units = list(self._units(items))
        users: dict[int, set[int]] = {}
        declarer: dict[int, int] = {}
        for ui, u in enumerate(units):
            self._uses(u)
            for v in u.used:
                users.setdefault(id(v), set()).add(ui)
            for vid in u.declared:
                declarer[vid] = ui
        for v in k.vars:
            if v.kind == "slot" and not v.is_param and id(v) in declarer and \
                    users.get(id(v), set()) <= {declarer[id(v)]}:
                v.kind = "local"
        for v in k.vars:
            if v.kind != "slot":
                continue
            if v.is_param:
                t = v.type_text
            else:
                t = _abstract_type(k, v.decl, v.declarator, v.ident)
            t = re.sub(r"\b__restrict(?:__)?\b", " ", t).strip()  # a thread's own copy: no promise to keep
            if not t or re.search(r"\bauto\b|\bdecltype\b|&", t) or (
                    v.declarator is not None and v.declarator.type == "reference_declarator"):
                raise Fallback(f"'{v.name}' lives across a barrier but its type cannot be spelled", v.ident)
            if v.array and v.declarator is not None:
                d = v.declarator.child_by_field_name("declarator") if v.declarator.type == "init_declarator" \
                    else v.declarator
                for n in _walk(d):
                    if n.type == "identifier" and n.id != v.ident.id and k.resolve(n) is not None:
                        raise Fallback(f"'{v.name}' is an array of run-time size living across a barrier", v.ident)
            if v.group:
                raise Fallback(f"the group object '{v.name}' would have to live across a barrier", v.ident)
            v.index = len(self.slot_types)
            self.slot_types.append(t)
            if v.is_param:
                self.param_slots.append(v)

    # ---- rendering ------------------------------------------------------------------------------
    def _render(self, a: int, b: int, ctx: _Ctx | None = None) -> str:
        """Source bytes [a, b) with the region rewrites inside: collective calls -> their results,
        return/break/continue -> mask updates, nested extern __shared__ declarations."""
        k = self.k
        edits = []
        for n in _walk_range(k.body, a, b):
            if n.id in self._values:
                edits.append((n.start_byte, n.end_byte, f"({self._values[n.id]})"))
            elif n.type == "call_expression" and n.id in k.collective_calls:
                edits.append((n.start_byte, n.end_byte, self._result(n)))
            elif n.type == "call_expression" and not _args(n):
                name, obj = _callee_name(n)
                g = k.group_info(obj) if name in ("size", "num_threads") else None
                if g is not None and g[0] == "tile":
                    edits.append((n.start_byte, n.end_byte, f"((unsigned)({g[1]}))"))
            elif n.type in ("return_statement", "break_statement", "continue_statement") and ctx is not None:
                rep = self._escape(n, ctx)
                if rep is not None:
                    edits.append((n.start_byte, n.end_byte, rep))
            elif n.type == "declaration" and re.match(r"\s*extern\b[^;=]*\b__shared__\b", k.ntext(n)):
                arr = next((c for c in n.named_children if c.type == "array_declarator"), None)
                ident = _declarator_ident(arr) if arr is not None else None
                if ident is None:
                    raise Fallback("an extern __shared__ declaration the pass does not understand", n)
                tmp = Var(_text(ident), ident, n, arr, None, 0, 0, shared="extern")
                edits.append((n.start_byte, n.end_byte, self._shared_decl(n, [tmp]).split("\n", 1)[1].rstrip("\n")))
        edits.sort(key=lambda x: (x[0], -x[1]))  # an enclosing edit first: it replaces what it contains
        out = []
        pos = a
        for s, e, rep in edits:
            if s < pos:
                continue
            out.append(k.text(pos, s))
            out.append(rep + "\n" * k.src[s:e].count(b"\n"))
            pos = e
        out.append(k.text(pos, b))
        return "".join(out)

    def _escape(self, n: Any, ctx: _Ctx) -> str | None:
        k = self.k
        p = n.parent
        target = None
        while p is not None and p.id != k.body.id:
            if p.type == "lambda_expression":
                return None
            if n.type != "return_statement" and (p.type in _LOOPS or (
                    p.type == "switch_statement" and n.type == "break_statement")):
                target = p
                break
            p = p.parent
        if n.type == "return_statement":
            clears = [m for m, _ in ctx.chain]
        else:
            if target is None or target.id not in ctx.loop_masks:
                return None  # the loop is inside the region
            _, mi = ctx.loop_masks[target.id]
            clears = []
            inside = False
            for m, c in ctx.chain:
                if isinstance(c, Loop) and c.node.id == target.id:
                    inside = True
                    if n.type == "break_statement" or m == mi:
                        clears.append(m)
                    continue
                if inside:
                    clears.append(m)
        saves = ""
        if n.type != "return_statement" and self._unit is not None:
            saves = "".join(self._save(v) for v in self._unit_saves
                            if id(v) not in self._unit.declared or v.ident.start_byte < n.start_byte)
        return "{ " + saves + " ".join(f"vf_m{m}[vf_t] = 0;" for m in dict.fromkeys(clears)) + " return; }"

    @staticmethod
    def _save(v: Var) -> str:
        return f"::vf::region_store(vf_s{v.index}[vf_t], {v.name}); "

    def _shared_decl(self, node: Any, vs: list[Var]) -> str:
        k = self.k
        if vs[0].shared == "extern":
            v = vs[0]
            t = _abstract_type(k, node, v.declarator, v.ident)
            t = re.sub(r"\[\s*\]\s*$", "", t)
            t = re.sub(r"__align__\s*\([^)]*\)|alignas\s*\([^)]*\)|__attribute__\s*\(\([^)]*\)\)", " ", t)
            t = " ".join(t.split())
            return f"#line {_line(node)}\n{t}* {v.name} = reinterpret_cast<{t}*>(::vf::dynamic_shared());\n"
        return f"#line {_line(node)}\n{k.ntext(node)}\n"

    def _single_decl(self, node: Any, v: Var, rename: str | None = None) -> str:
        """``SPEC declarator [= init]`` for one declarator of a declaration."""
        k = self.k
        first = next((c for c in node.named_children if c.type in (
            "init_declarator", "identifier", "pointer_declarator", "array_declarator", "reference_declarator",
            "parenthesized_declarator")), None)
        spec = k.text(node.start_byte, first.start_byte if first is not None else node.end_byte)
        d = v.declarator
        return (spec + k.text(d.start_byte, v.ident.start_byte) + (rename or v.name)
                + self._render(v.ident.end_byte, d.end_byte))

    def _site(self, call: Any) -> str:
        return f"vf_w{self.k.site_of[call.id]}"

    def _tile(self, call: Any) -> str:
        return self.k.group_info(call.child_by_field_name("function").child_by_field_name("argument"))[1]

    def _result(self, call: Any) -> str:
        k = self.k
        kind, name = _collective_kind(k, call)
        args = _args(call)
        if kind == "block":
            return f"vf_rb{k.site_of[call.id]}.result({_BLOCK_REDUCE[name]})"
        w = self._site(call)
        if kind == "shfl":
            op, has_mask = _SHFL[name]
            var = args[1] if has_mask else args[0]
            return f"{w}.shfl<std::decay_t<decltype({k.ntext(var)})>>(vf_t, ::vf::{op})"
        if kind == "tshfl":
            return f"{w}.shfl<std::decay_t<decltype({k.ntext(args[0])})>>(vf_t, ::vf::{_TILE_SHFL[name]})"
        if kind == "vote":
            return f"{w}.{_VOTE[name][0]}(vf_t)"
        if kind == "tvote":
            if name == "ballot":
                return f"::vf::region_tile_ballot({w}.ballot(vf_t), vf_t, {self._tile(call)})"
            return f"{w}.{name}(vf_t)"
        if kind == "reduce":
            signed, unsigned = _WREDUCE[name]
            r = f"decltype({name}(0u, {k.ntext(args[1])}))"
            return f"{w}.reduce<{r}>(vf_t, std::is_signed_v<{r}> ? ::vf::{signed} : ::vf::{unsigned})"
        if kind == "active":
            return f"{w}.active(vf_t)"
        return f"{w}.syncwarp(vf_t)"

    def _put(self, call: Any) -> str:
        k = self.k
        kind, name = _collective_kind(k, call)
        args = [k.ntext(a) for a in _args(call)]
        if kind == "block":
            return f"vf_rb{k.site_of[call.id]}.put({args[0]});"
        w = self._site(call)
        if kind == "shfl":
            if not _SHFL[name][1]:
                args = ["0xffffffffu", *args]
            rest = "".join(f", (int)({a})" for a in args[2:4])
            return f"{w}.put(vf_t, {args[0]}, {args[1]}{rest});"
        if kind == "tshfl":
            tile = self._tile(call)
            return f"{w}.put(vf_t, ::vf::region_tile_mask(vf_t, {tile}), {args[0]}, (int)({args[1]}), {tile});"
        if kind == "vote":
            if not _VOTE[name][1]:
                args = ["0xffffffffu", *args]
            return f"{w}.put_pred(vf_t, {args[0]}, {args[1]});"
        if kind == "tvote":
            return f"{w}.put_pred(vf_t, ::vf::region_tile_mask(vf_t, {self._tile(call)}), {args[0]});"
        if kind == "reduce":
            return f"{w}.put_reduce(vf_t, {args[0]}, {args[1]});"
        if kind == "active":
            return f"{w}.put_none(vf_t, 1u << (vf_t & 31u));"
        return f"{w}.put_none(vf_t, {args[0] if args else '0xffffffffu'});"

    # ---- final text -----------------------------------------------------------------------------
    def _emit(self, items: list) -> str:
        out = []
        for it in items:
            if isinstance(it, _Unit):
                out.append(self._emit_unit(it))
                continue
            tag = it[0]
            if tag == "block":
                out.append(it[1])
            elif tag == "scope":
                out.append("{\n" + self._emit(it[1]) + "}\n")
            elif tag == "if":
                _, node, cond, then, other = it
                out.append(f"#line {_line(node.cond)}\nif ({cond}) {{\n" + self._emit(then) + "}\n")
                if other is not None:
                    out.append("else {\n" + self._emit(other) + "}\n")
            elif tag == "mif":
                _, node, unit, then, other = it
                mt = node.masks[0]
                out.append(_GLUE + f"{{\nunsigned vf_n{mt} = 0, vf_x{mt} = 0;\n")
                if node.has_block_barrier:
                    out.append(f"int vf_f{mt} = -1, vf_d{mt} = -1; bool vf_v{mt} = false;\n")
                out.append(self._emit_unit(unit))
                if node.has_block_barrier:
                    out.append(_GLUE + f"if (vf_d{mt} >= 0) ::vf::region_divergence(vf_b, vf_f{mt}, vf_d{mt}, "
                               f"{_line(node.cond)});\n")
                out.append(_GLUE + f"if (vf_n{mt}) {{\n" + self._emit(then) + "}\n")
                if other is not None:
                    out.append(_GLUE + f"if (vf_x{mt}) {{\n" + self._emit(other) + "}\n")
                out.append("}\n")
            elif tag == "loop":
                _, lp, init, cond, upd, body, guard = it
                alive = ""
                if (lp.returns or lp.cond is None) and guard is not None:
                    alive = _GLUE + f"if (!::vf::region_any(vf_m{guard}, vf_b.n)) break;\n"
                line = _line(lp.cond) if lp.cond is not None else _line(lp.node)
                out.append("{\n" + self._emit(init))
                if lp.kind == "do":
                    out.append("do {\n" + alive + self._emit(body) + f"}}\n#line {line}\nwhile ({cond});\n")
                else:
                    out.append(f"#line {line}\nfor (; {cond}; {upd}) {{\n" + alive + self._emit(body) + "}\n")
                out.append("}\n")
            elif tag == "mloop":
                _, lp, init, cunit, body, guard = it
                ma, mi = lp.masks
                parent = f"vf_m{guard}" if guard is not None else "nullptr"
                out.append("{\n" + self._emit(init) + _GLUE + f"::vf::region_mask_init(vf_m{ma}, {parent}, vf_b.n);\n")
                head = f"unsigned vf_n{ma} = 0;\n"
                check = ""
                if lp.has_block_barrier:
                    head += f"int vf_f{ma} = -1, vf_d{ma} = -1; bool vf_v{ma} = false;\n"
                    line = _line(lp.cond) if lp.cond is not None else _line(lp.node)
                    check = f"if (vf_d{ma} >= 0) ::vf::region_divergence(vf_b, vf_f{ma}, vf_d{ma}, {line});\n"
                copy = f"std::memcpy(vf_m{mi}, vf_m{ma}, vf_b.n);\n" if mi != ma else ""
                cond = _GLUE + head + self._emit_unit(cunit) + _GLUE + check + f"if (!vf_n{ma}) break;\n"
                if lp.kind == "do":
                    out.append(_GLUE + "for (const bool vf_first = false;;) {\n(void)vf_first;\n" + copy
                               + self._emit(body) + cond + "}\n")
                else:
                    out.append(_GLUE + "for (bool vf_first = true;; vf_first = false) {\n(void)vf_first;\n" + cond
                               + _GLUE + copy + self._emit(body) + "}\n")
                out.append("}\n")
        return "".join(out)

    _LAMBDA = "[&](uint3 threadIdx, const unsigned vf_t) VF_FLATTEN {\n(void)threadIdx; (void)vf_t;\n"

    def _emit_unit(self, u: _Unit) -> str:
        k = self.k
        out = _GLUE + "{\n"
        for c in u.tail:
            out += (f"vf_rb{k.site_of[c.id]}.begin();\n" if _collective_kind(k, c)[0] == "block"
                    else f"{self._site(c)}.begin();\n")
        if self._has_lockstep(u):
            return out + "::vf::region_loop_plain(vf_b, " + self._LAMBDA + self._emit_body(u, {}) + "});\n}\n"
        narrow = self._narrowing(u)
        split = None if narrow else self._split(u)
        if split:
            lo = self._emit_body(u, split[1])
            hi = self._emit_body(u, split[2])
            return out + split[0] + self._LAMBDA + lo + "}, " + self._LAMBDA + hi + "});\n}\n"
        return out + (narrow or "::vf::region_loop(vf_b, ") + self._LAMBDA + self._emit_body(u, {}) + "});\n}\n"

    def _has_lockstep(self, u: _Unit) -> bool:
        """Whether the region belongs to warp-synchronous code (a kernel with volatile accesses: its
        regions are small, those with the accesses cannot vectorise): one plain loop, a third of
        region_loop's code to compile."""
        return bool(self.k.lockstep)

    def _emit_body(self, u: _Unit, values: dict[int, str]) -> str:
        """A region's loop body: guard, bindings, the statements, the collectives' operands, the
        per-thread variables stored back. ``values``: comparisons replaced by constants."""
        k = self.k
        lines = []
        if not u.code and u.ctx.guard is not None:
            lines.append(f"if (!vf_m{u.ctx.guard}[vf_t]) return;\n")
        if self._has_calls(u):
            lines.append("::threadIdx = threadIdx;\n")
        bind = [v for v in u.used if id(v) not in u.declared]
        slots = sorted((v for v in bind if v.kind == "slot"), key=_decl_pos)
        for v in slots:
            if v.by_ref:
                lines.append(f"vf_T{v.index}& {v.name} = vf_s{v.index}[vf_t];\n")
            elif v.array:
                lines.append(f"vf_T{v.index} {v.name}; std::memcpy(static_cast<void*>(&{v.name}), "
                             f"static_cast<const void*>(&vf_s{v.index}[vf_t]), sizeof({v.name}));\n")
            else:
                lines.append(f"vf_T{v.index} {v.name} = vf_s{v.index}[vf_t];\n")
        for v in self._remat_closure([v for v in bind if v.kind == "remat"]):
            lines.append(f"#line {_line(v.decl)}\n{self._single_decl(v.decl, v)};\n")
        # copied-in variables this region changes, and those it declares: stored back at its end
        saves = [v for v in slots if not v.by_ref and self._changes(u, v)]
        saves += sorted((v for v in k.vars if id(v) in u.declared and v.kind == "slot" and not v.by_ref),
                        key=_decl_pos)
        self._unit, self._unit_saves, self._values = u, saves, values
        lines.append(u.code)
        for e in u.run:
            lines.append(self._emit_stmt(e, u.ctx))
        for c in u.tail:
            lines.append(f"#line {_line(c)}\n{self._put(c)}\n")
            if c.id in k.site_of and _collective_kind(k, c)[0] != "block":
                self.sites[k.site_of[c.id]]["next"] = self._next_sync(u.ctx)
        lines.append(_GLUE + "".join(self._save(v) for v in saves) + "\n")
        self._unit, self._unit_saves, self._values = None, [], {}
        return "".join(lines)

    def _next_sync(self, ctx: _Ctx) -> str:
        """The first barrier or collective after the innermost masked construct around ``ctx``:
        where lanes that skipped it go next."""
        k = self.k
        inner = next((c for _, c in reversed(ctx.chain) if c is not None), None)
        if inner is None:
            return ""
        after = [x for x in k.sync_sites if x.start_byte >= inner.node.end_byte]
        if not after:
            return ""
        x = min(after, key=lambda n: n.start_byte)
        name, obj = _callee_name(x) if x.type == "call_expression" else (_text(x), None)
        what = f"{_text(obj)}.{name}()" if obj is not None else f"{name}()"
        return f"{what} (line {_line(x)})"

    def _changes(self, u: _Unit, v: Var) -> bool:
        k = self.k
        for node in [e[1] for e in u.run] + list(u.ranges):
            for n in k.idents.get(v.name, ()):
                if node.start_byte <= n.start_byte < node.end_byte and k.resolve(n) is v and \
                        _mutating_use(k, n, v):
                    return True
        return False

    # ---- thread ranges: `if (tid < s)` regions and `tid >= d ? a : b` -----------------------
    def _comparisons(self, u: _Unit) -> list[tuple[Any, str, str, str, str]]:
        """Comparisons ``X op U`` in a region's statements, X the thread's x index (or linear rank
        in a one-dimensional block), U uniform: (node, op with X on the left, X's type, U's text,
        'x' or 'linear')."""
        k = self.k
        out = []
        for e in u.run:
            for n in _walk(e[1]):
                if n.type != "binary_expression" or _in_lambda(k, n):
                    continue
                r = self._comparison(n)
                if r is not None:
                    out.append((n, *r))
        return out

    def _comparison(self, c: Any) -> tuple[str, str, str, str] | None:
        k = self.k
        op = _text(c.child_by_field_name("operator"))
        flip = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}
        if op not in flip:
            return None
        a, b = c.child_by_field_name("left"), c.child_by_field_name("right")
        side = self._thread_x(a)
        if side is None:
            a, b, op, side = b, a, flip[op], self._thread_x(b)
        if side is None or _expr_class(k, b) != 0 or any(n.type == "call_expression" for n in _walk(b)):
            return None
        for n in _walk(b):  # a variable of the region itself (a loop counter) is not uniform
            if n.type == "identifier" and _text(n) in k.local_names:
                v = k.resolve(n)
                if v is None or v.kind != "uniform":
                    return None
        return op, side[0], self._render(b.start_byte, b.end_byte), side[1]

    def _predicate(self, op: str, typ: str, bound: str) -> str:
        """The comparison for a thread index ``vf_x`` in its own types, as a lambda."""
        return f"[&](unsigned vf_x) -> bool {{ return ({typ})(vf_x) {op} ({bound}); }}"

    def _narrowing(self, u: _Unit) -> str | None:
        """A region that is one ``if (tid < s) ...`` (also >, <=, >=, && of them) only visits the
        threads that satisfy the comparisons: the code that computes [vf_lo, vf_hi)."""
        if u.code or u.tail or len(u.run) != 1 or u.run[0][0] != "stmt":
            return None
        node = u.run[0][1]
        if node.type != "if_statement" or node.child_by_field_name("alternative") is not None:
            return None
        cond = node.child_by_field_name("condition")
        cond = cond.named_children[-1] if cond is not None and cond.named_children else None
        parts = [r for c in _conjuncts(cond) if c.type == "binary_expression" and (r := self._comparison(c))]
        if not parts:
            return None
        linear = any(p[3] == "linear" for p in parts)
        code = "long long vf_lo = 0, vf_hi = vf_b.bx;\n"
        for op, typ, bound, _ in parts:
            code += f"::vf::region_true_range(vf_b.bx, {self._predicate(op, typ, bound)}, vf_lo, vf_hi);\n"
        return code + f"::vf::region_range(vf_b, vf_lo, vf_hi, {'true' if linear else 'false'}, "

    def _split(self, u: _Unit) -> tuple[str, dict[int, str], dict[int, str]] | None:
        """A region whose statements compare the thread's index with one uniform bound
        (``t >= d ? s[t] + s[t - d] : s[t]``) runs as two loops, below and above the bound, each
        with the comparisons replaced by their value there (branch-free, vectorisable)."""
        if u.code:
            return None
        comps = self._comparisons(u)
        if not comps:
            return None
        keys = {(typ, bound, op in ("<", ">="), side) for _, op, typ, bound, side in comps}
        if len(keys) != 1:
            return None
        typ, bound, _, side = keys.pop()
        first = next(op for _, op, _, _, _ in comps)
        lo_vals = {n.id: ("true" if op in ("<", "<=") else "false") for n, op, _, _, _ in comps}
        hi_vals = {n.id: ("false" if op in ("<", "<=") else "true") for n, op, _, _, _ in comps}
        code = (f"const long long vf_at = ::vf::region_breakpoint(vf_b.bx, {self._predicate(first, typ, bound)}, "
                f"{'true' if first in ('<', '<=') else 'false'});\n")
        return code + f"::vf::region_split(vf_b, vf_at, {'true' if side == 'linear' else 'false'}, ", lo_vals, \
            hi_vals

    def _thread_x(self, node: Any) -> tuple[str, str] | None:
        """(type, 'x' | 'linear') of an expression that is the thread's threadIdx.x (or its linear
        rank, thread_rank()) - directly, cast, or through a recomputed variable - else None."""
        k = self.k
        while node is not None and node.type == "parenthesized_expression":
            node = node.named_children[0] if node.named_children else None
        if node is None:
            return None
        if node.type == "cast_expression":
            inner = self._thread_x(node.child_by_field_name("value"))
            t = node.child_by_field_name("type")
            return (_text(t), inner[1]) if inner is not None and t is not None else None
        if node.type == "field_expression" and _text(node).replace(" ", "") == "threadIdx.x":
            return ("unsigned", "x")
        if node.type == "call_expression":
            name, obj = _callee_name(node)
            if name == "thread_rank" and obj is not None and (k.group_info(obj) or ("", ""))[0] == "block":
                return ("unsigned long long", "linear")
            return None
        if node.type == "identifier":
            v = k.resolve(node)
            if v is not None and v.kind == "remat" and v.init is not None and not v.array:
                inner = self._thread_x(v.init)
                if inner is not None:
                    t = re.sub(r"\bconst\b", " ", _abstract_type(k, v.decl, v.declarator, v.ident))
                    return (" ".join(t.split()), inner[1])
        return None

    def _remat_closure(self, vs: list[Var]) -> list[Var]:
        k = self.k
        out: dict[int, Var] = {}
        todo = list(vs)
        while todo:
            v = todo.pop()
            if id(v) in out:
                continue
            out[id(v)] = v
            for n in _walk(v.init):
                if n.type == "identifier":
                    d = k.resolve(n)
                    if d is not None and d.kind == "remat" and id(d) not in out:
                        todo.append(d)
        return sorted(out.values(), key=_decl_pos)

    def _has_calls(self, u: _Unit) -> bool:
        """Whether the region calls code that may read the global threadIdx (device functions,
        assert, printf, thread_rank()): then the loop keeps it current."""
        k = self.k
        nodes = [e[1] for e in u.run] + list(u.ranges) + [a for c in u.tail for a in _args(c)]
        nodes += [v.init for v in u.used if v.kind == "remat" and v.init is not None]
        for node in nodes:
            for n in _walk(node):
                if n.type == "call_expression" and n.id not in k.collective_calls:
                    name, obj = _callee_name(n)
                    if obj is None and (name in _PURE_CALLS or name.startswith("atomic")):
                        continue
                    return True
                if n.type == "identifier" and "(" in k.ctx.macros.get(_text(n), ""):
                    return True  # a macro that calls something
        return False

    def _emit_stmt(self, e: tuple, ctx: _Ctx) -> str:
        k = self.k
        node = e[1]
        if e[0] == "stmt":
            return f"#line {_line(node)}\n{self._render(node.start_byte, node.end_byte, ctx)}\n"
        if e[0] == "expr":
            return f"#line {_line(node)}\n{self._render(node.start_byte, node.end_byte, ctx)};\n"
        vs = e[2]
        allv = [v for v in k.vars if v.decl is not None and v.decl.id == node.id]
        if all(v.kind in ("local", "remat") or (v.kind == "slot" and not v.by_ref) for v in allv):
            return f"#line {_line(node)}\n{self._render(node.start_byte, node.end_byte, ctx)}\n"
        out = [f"#line {_line(node)}\n"]
        for v in vs:
            if v.kind in ("local", "remat") or (v.kind == "slot" and not v.by_ref):
                out.append(self._single_decl(node, v) + ";\n")
            elif v.kind == "slot":
                if v.init is not None:
                    tmp = f"vf_i{v.index}"
                    out.append(self._single_decl(node, v, rename=tmp) + ";\n")
                    out.append(f"::vf::region_store(vf_s{v.index}[vf_t], {tmp});\n")
                out.append(f"vf_T{v.index}& {v.name} = vf_s{v.index}[vf_t];\n")
        return "".join(out)

    def _prologue(self) -> str:
        lines = [f"::vf::RegionBlock vf_b;  {self._range()}\n", _GLUE, "if (::vf::region_begin(vf_b)) {\n"]
        if self.k.lockstep:
            lines.append("[&]() __attribute__((noinline)) {\n")
        lines.append(_SHADOWS)
        # a volatile pointer parameter is a LockstepPtr on the fiber path: its plain pointer here
        for i, name in enumerate(self.k.vol.params):
            lines.append(f"auto vf_vp{i} = ::vf::lockstep_raw({name}); [[maybe_unused]] auto {name} = vf_vp{i};\n")
        for i, t in enumerate(self.slot_types):
            lines.append(f"using vf_T{i} = {t};\n")
        size = ["(size_t)64"]
        size += [f"::vf::region_bytes<vf_T{i}>(vf_b.n)" for i in range(len(self.slot_types))]
        if self.nmasks:
            size.append(f"{self.nmasks} * ::vf::region_bytes<unsigned char>(vf_b.n)")
        if self.sites:
            size.append(f"{len(self.sites)} * ::vf::RegionWarp::bytes(vf_b.n)")
        lines.append(f"::vf::RegionArena vf_a{{::vf::region_scratch({' + '.join(size)})}};\n")
        for i in range(len(self.slot_types)):
            lines.append(f"vf_T{i}* vf_s{i} = vf_a.take<vf_T{i}>(vf_b.n);\n")
        for i in range(self.nmasks):
            lines.append(f"unsigned char* vf_m{i} = vf_a.take<unsigned char>(vf_b.n);\n")
        if self.m0 is not None:
            lines.append(f"std::memset(vf_m{self.m0}, 1, vf_b.n);\n")
        m0 = f"vf_m{self.m0}" if self.m0 is not None else "nullptr"
        for i, s in enumerate(self.sites):
            op = _OP_NAMES.get(_SHFL[s["name"]][0], s["name"]) if s["name"] in _SHFL else s["name"]
            if s["kind"] in ("tshfl", "tvote"):
                op = f"tile.{s['name']}"
            nxt = s.get("next", "").replace('"', "'")
            lines.append(f"::vf::RegionWarp vf_w{i}; vf_w{i}.init(vf_a, vf_b, {m0}, \"{op}\", {s['line']}, "
                         f"\"{nxt}\");\n")
        for i in range(self.reduces):
            lines.append(f"::vf::RegionBarrierReduce vf_rb{i};\n")
        for v in self.param_slots:
            lines.append(f"::vf::region_loop(vf_b, [&](const uint3, const unsigned vf_t) {{ "
                         f"::vf::region_store(vf_s{v.index}[vf_t], {v.name}); }});\n")
        return "".join(lines)


def _decl_pos(v: Var) -> int:
    """Declaration order (parameters first): recomputed variables depend on earlier ones."""
    return -1 if v.is_param or v.ident is None else v.ident.start_byte


def _conjuncts(node: Any | None) -> list[Any]:
    while node is not None and node.type == "parenthesized_expression" and node.named_children:
        node = node.named_children[0]
    if node is None:
        return []
    if node.type == "binary_expression" and _text(node.child_by_field_name("operator")) == "&&":
        return _conjuncts(node.child_by_field_name("left")) + _conjuncts(node.child_by_field_name("right"))
    return [node]


def _walk_range(root: Any, a: int, b: int):
    """Nodes of ``root`` that lie within [a, b)."""
    stack = [root]
    while stack:
        n = stack.pop()
        if n.end_byte <= a or n.start_byte >= b:
            continue
        if a <= n.start_byte and n.end_byte <= b:
            yield n
        stack.extend(reversed(n.children))
