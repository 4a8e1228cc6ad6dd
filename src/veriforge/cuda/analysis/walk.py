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
  except the loop variable and induction variables: pointers/numbers advanced by a loop-invariant
  step (``A += BK;``), which hold ``entry + i × step`` at iteration ``i``.
* ``while``/``do``: walked like a ``for`` when the condition reads a counter the body advances by
  a loop-invariant step; otherwise trip count unknown and the body is walked once for its structure.
* calls to ``__device__`` functions defined in the source are walked inline with the arguments
  (template arguments, pointers, references) bound (depth-limited); a call that cannot be followed
  makes FLOPs and the traffic through its pointer arguments unknown, never zero.
"""

from __future__ import annotations

import itertools
import math
import re
import zlib
from collections.abc import Mapping
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
from veriforge.cuda.analysis.flops import COMPOUND_OPS, FLOP_CALLS, counts_as_flop, work_free_call
from veriforge.cuda.analysis.launch import Lanes
from veriforge.cuda.analysis.parse import FunctionDef, ParsedSource, node_text, parse_expression
from veriforge.cuda.analysis.report import GlobalAccess, Loop, SharedAccess

EXACT_TRIPS = 4
MAX_SIMULATED_TRIPS = 64
MAX_CALL_DEPTH = 8
MAX_MACRO_DEPTH = 16

ATOMIC_RE = re.compile(r"^atomic(Add|Sub|Exch|Min|Max|Inc|Dec|CAS|And|Or|Xor)(_block|_system)?$")
LOAD_INTRINSICS = {"__ldg": True, "__ldca": False, "__ldcg": False, "__ldcs": False, "__ldlu": False, "__ldcv": False}
STORE_INTRINSICS = frozenset({"__stwb", "__stcg", "__stcs", "__stwt"})
ELEMENTWISE = {
    "__mul24": np.multiply,  # 24-bit integer multiplies: exact for the index arithmetic they serve
    "__umul24": np.multiply,
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
NEVER_EXECUTED = "never executed by the sampled threads"
#: the dependency of values fixed at launch time (blockDim, gridDim): uniform, known for the
#: analysed launch, but not compile-time constants
LAUNCH = frozenset({"launch"})
#: visits of one global access site kept for the cache-reuse estimate (later ones are not paired)
MAX_REUSE_VISITS = 64
#: distinct atomic target addresses tracked per site; more is "scattered"
ATOMIC_ADDRESS_CAP = 4096
#: inline-asm instructions that move memory, and ones that do floating-point arithmetic
_ASM_MEMORY = re.compile(r"\b(ld|st|cp|red|atom|ldmatrix|stmatrix|ldu|tex|tld4|suld|sust|multimem)\.")
_ASM_FLOPS = re.compile(
    r"\b(w?gmma|mma|fma|mad|add|sub|mul|div|rcp|sqrt|rsqrt|neg)\.[\w.]*?(f16|f32|f64|bf16|tf32|e4m3|e5m2)\b"
)
_INT_LIT = re.compile(r"^(0[xX][0-9a-fA-F']+|0[bB][01']+|[0-9']+)([uUlL]*)$")


_ARITH = frozenset({"+", "-", "*", "/", "%"})


def _does_work(node: Any) -> bool:
    """Whether a statement can access memory or do arithmetic the model counts: a subscript, a
    dereference, a call, or arithmetic on the right of an assignment (conditions alone are not
    work: ``if (c + 1 >= n) v.y = 0.0f;`` costs nothing the model prices)."""
    stack = [node]
    while stack:
        n = stack.pop()
        t = n.type
        if t in ("subscript_expression", "call_expression"):
            return True
        if t == "pointer_expression" and node_text(n).lstrip().startswith("*"):
            return True
        if t == "assignment_expression":
            op = n.child_by_field_name("operator")
            if op is not None and node_text(op) not in ("=",):
                return True
            right = n.child_by_field_name("right")
            sub = [right] if right is not None else []
            while sub:
                m = sub.pop()
                if m.type == "binary_expression" and node_text(m.child_by_field_name("operator")) in _ARITH:
                    return True
                sub.extend(m.named_children)
        if t != "lambda_expression":
            stack.extend(n.named_children)
    return False


class _Unsupported(Exception):
    """A construct the walker does not follow; becomes an unknown with this reason."""


@dataclass(frozen=True)
class Toggle:
    """The step of a ping-pong variable (``cur ^= 1``): each iteration flips it between two values."""

    kind: str  # "xor" | "reflect" (x = c - x) | "not" (x = !x)
    operand: Value

    def after(self, base: Value, count: Any, shape: tuple[int, int]) -> Value:
        """``base`` flipped ``count`` times (per lane when ``count`` is an array of trip counts)."""
        b = np.asarray(base.lanes(shape), dtype=np.float64)
        c = np.asarray(self.operand.lanes(shape), dtype=np.float64)
        if self.kind == "xor":
            flipped = np.bitwise_xor(b.astype(np.int64), c.astype(np.int64)).astype(np.float64)
        elif self.kind == "reflect":
            flipped = c - b
        else:
            flipped = (b == 0).astype(np.float64)
        odd = np.broadcast_to(np.mod(np.asarray(count, dtype=np.float64), 2) == 1, shape)
        return Value(np.where(odd, flipped, b), False, base.deps | self.operand.deps | {"loop"})


@dataclass(frozen=True)
class Ctx:
    mask: np.ndarray  # (W, 32) bool
    mult: np.ndarray  # (W,) float
    count_unknown: str | None = None  # why the execution count under this context is unknown
    value_unknown: str | None = None  # why assignments here produce unknown values (data-dependent branch)
    #: (frames, scopes of the innermost frame) where value_unknown began: variables declared deeper
    #: are the branch's own, and their values are exact on the lanes that run it
    value_unknown_at: tuple[int, int] = (0, 0)
    conds: tuple[Cond, ...] = ()
    loop_lines: tuple[int, ...] = ()
    #: (loop line, iteration index, trip count if a compile-time constant else 0) of every
    #: enclosing loop being walked: the cache-reuse estimate pairs visits of one site at two
    #: iterations to get each lane's address stride; shared loads use it to see what ptxas merges
    iters: tuple[tuple[int, int, int], ...] = ()
    #: why the execution count under this context is only an upper bound (a loop that can exit early
    #: is walked for its condition's trip count)
    count_upper: str | None = None
    #: the active mask became empty because of a blockIdx-dependent condition: blocks outside the
    #: sample may run what follows
    block_gated: bool = False


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
    lines: float = 0.0  # Σ over requests of distinct 128-byte lines (L1 passes)
    first_warp: int | None = None
    visited: bool = False
    unknown: str | None = None
    count_unknown: str | None = None
    #: sampled visits (iterations, lane addresses, mask, multiplicity) for the cache-reuse estimate
    visits: list[tuple[tuple[tuple[int, int], ...], np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=list)
    visits_dropped: int = 0
    #: atomics: lane operations, serialised same-address lane operations per request, weighted
    #: operations per address (None once more than ATOMIC_ADDRESS_CAP distinct addresses are seen)
    atomic_ops: float = 0.0
    atomic_serial: float = 0.0
    atomic_addresses: dict[float, float] | None = field(default_factory=dict)
    #: requests and lane operations of visits whose addresses were not determined
    blind_requests: float = 0.0
    blind_lanes: float = 0.0
    count_upper: str | None = None  # requests are an upper bound (a loop that can exit early)
    unreached_block_dependent: bool = False

    def result(self) -> GlobalAccess:
        size = self.elem.size
        width = self.elem.width if size else 1
        if self.unknown is not None or size is None:
            counted = self.count_unknown is None and self.blind_requests > 0 and self.requests == 0
            return GlobalAccess(
                self.line,
                self.kind,
                self.array,
                size,
                requests=self.blind_requests if counted else None,
                vector_width=width,  # type: ignore[arg-type]
                read_only=self.read_only,
                unknown=self.unknown or f"element type `{self.elem.name}` has no known size",
                text=self.text,
                atomic_ops=self.blind_lanes if counted and self.kind == "atomic" else None,
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
            else (None if self.requests else NEVER_EXECUTED),
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
    count_upper: str | None = None
    unreached_block_dependent: bool = False
    #: loads in constant-trip loops: (iterations, addresses, mask, multiplicity) per visit, so the
    #: analysis can see consecutive per-lane loads ptxas merges into one 64/128-bit load
    visits: list[tuple[Any, np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=list)
    blind_requests: float = 0.0  # requests of visits whose addresses were not determined

    def result(self) -> SharedAccess:
        if self.unknown is not None or self.elem.size is None:
            counted = self.count_unknown is None and self.blind_requests > 0 and self.requests == 0
            return SharedAccess(
                self.line,
                self.kind,
                self.array,
                None,
                self.blind_requests if counted else None,  # type: ignore[arg-type]
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
                NEVER_EXECUTED,
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
    #: reference parameters bound to a memory lvalue (``f(a[i])`` for ``float &x``): their address;
    #: reading/writing the parameter is an access of that memory
    refs: dict[str, Value] = field(default_factory=dict)
    #: template type parameters of the function (``T(0)`` is a cast even when T has no value)
    type_params: frozenset[str] = frozenset()


def _assignment_to_name(e: Any) -> tuple[str, str, Any] | None:
    """``(name, operator, right-hand side)`` of an assignment expression to a plain identifier."""
    if e.type != "assignment_expression":
        return None
    left, right = e.child_by_field_name("left"), e.child_by_field_name("right")
    if left is None or right is None or left.type != "identifier":
        return None
    return node_text(left), node_text(e.child_by_field_name("operator")), right


MAX_TRIP_CLASSES = 16


def _iteration_samples(trips: np.ndarray, mask: np.ndarray, t: int) -> list[tuple[int, Any]]:
    """Which iterations of a loop of at most ``t`` trips to walk, each with its weight (a number,
    or one per warp).

    When every working warp runs ``t`` trips: the first, a middle one standing for the ``t - 2``
    others, and the last. When lanes run different numbers (a loop bound read from the input, as in
    CSR rows): every iteration if there are at most :data:`MAX_SIMULATED_TRIPS` (exact per lane);
    else the first, then the rest split where lanes' trip counts end (at most
    :data:`MAX_TRIP_CLASSES` pieces, at quantiles), each walked at its first iteration and weighted,
    per warp, by how many of that warp's iterations it covers: every warp's iteration count is
    exact; a lane that stops inside a piece counts as running all of it.
    """
    lane_trips = np.where(mask, trips, 0)
    per_warp = lane_trips.max(axis=1)
    busy = lane_trips[mask]
    three = [(0, 1.0), (t // 2, float(t - 2)), (t - 1, 1.0)]
    if busy.size == 0 or busy.min() == busy.max():
        return three
    # what the three samples would count for each lane, against its real trip count: kept when
    # the lanes differ only a little (a grid-stride tail)
    counted = (busy > 0) + (t - 2) * (busy > t // 2) + (busy >= t)
    if np.abs(counted - busy).sum() <= 0.02 * busy.sum():
        return three
    if t <= MAX_SIMULATED_TRIPS:
        return [(i, 1.0) for i in range(t)]
    ends = np.unique(np.concatenate([busy[busy > 1], per_warp[per_warp > 1]]))
    if ends.size > MAX_TRIP_CLASSES:
        ends = np.unique(np.quantile(ends, np.linspace(0, 1, MAX_TRIP_CLASSES), method="higher"))
    cuts = [1] + [int(e) for e in ends if 1 < e < t] + [t]
    samples: list[tuple[int, Any]] = [(0, 1.0)]
    for a, b in itertools.pairwise(cuts):
        weight = np.clip(np.minimum(per_warp, b) - a, 0, None).astype(np.float64)
        if weight.any():
            samples.append((a, weight))
    return samples


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
        data: Mapping[str, tuple[np.ndarray, int]] | None = None,
    ) -> None:
        self.parsed = parsed
        # the real contents of read-only integer inputs, by kernel parameter: (flat array, element
        # offset of the parameter into it). Loads from them return the values, so index arrays (CSR
        # row pointers, gather indices, histogram bins) give real addresses and trip counts.
        self.data: dict[str, tuple[np.ndarray, int]] = dict(data or {})
        self.data_reads: set[str] = set()
        self.kernel = kernel
        self.lanes = lanes
        self.shape = lanes.shape
        self.params = params
        # byte address of a pointer parameter, when the caller knows it (``params[name] = int``); only
        # pointer-to-integer casts use it (alignment peeling such as `((uintptr_t)p >> 2) & 3`)
        self.pointer_addr: dict[str, int] = {}
        #: pointer parameters given as None: the caller (a host launch it could not follow) does not
        #: know what they point to, not even whether they are null
        self.untraced_pointers: set[str] = set()
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
        self.flops_upper: set[str] = set()  # FLOPs counted under an upper-bound trip count
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
        #: a `return` under a blockIdx-dependent condition has been walked
        self.block_dependent_exit = False
        #: statements with work no sampled block reaches, behind blockIdx-dependent conditions
        self.unreached: dict[tuple, str] = {}
        self._struct_arrays: dict[str, str | None] = {}  # struct name -> its extern __shared__ array
        self._reached: set[tuple] = set()
        #: per sampled warp: how many recorded work events (accesses, FLOPs) it took part in
        self.warp_work = np.zeros(self.shape[0], dtype=np.int64)
        #: per sampled warp: which work sites (accesses, FLOPs) it reached, one bit per site (a hash
        #: of its place in the source, so separate walks agree): blocks that reach other sites -
        #: the loads of ``i < n`` in the first blocks, none past them - are told apart even where
        #: both do some work (launch.pin_boundaries)
        self.warp_sites = np.zeros(self.shape[0], dtype=np.uint64)
        self._site_bits: dict[Any, np.uint64] = {}

    # ---------------------------------------------------------------- helpers
    def did_work(self, site: Any, active: np.ndarray) -> None:
        """Record a work event at ``site`` for the warps in ``active`` (bool per warp)."""
        self.warp_work += active
        bit = self._site_bits.get(site)
        if bit is None:
            bit = self._site_bits[site] = np.uint64(1) << np.uint64(zlib.crc32(repr(site).encode()) % 64)
        self.warp_sites[active] |= bit

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
        for depth in range(len(frame.scopes) - 1, -1, -1):
            scope = frame.scopes[depth]
            if name in scope:
                old = scope[name]
                if ctx.value_unknown is not None and not self._inside_branch(ctx, depth):
                    value = Value(None, value.is_float, value.deps | old.deps | {"data"}, ctx.value_unknown)
                scope[name] = ev.merge(ctx.mask | ~self.lanes.valid, value, old)
                return
        # assignment to a file-scope variable or an undeclared name: nothing to track per lane

    def _scope_mark(self) -> tuple[int, int]:
        return len(self.frames), len(self.frames[-1].scopes)

    def _inside_branch(self, ctx: Ctx, depth: int) -> bool:
        """Whether scope ``depth`` of the current frame was opened inside the data-dependent branch
        that set ``ctx.value_unknown`` (its variables are the branch's own)."""
        frames, scopes = ctx.value_unknown_at
        return len(self.frames) > frames or depth >= scopes

    def push(self) -> None:
        self.frames[-1].scopes.append({})
        self.frames[-1].decl_float.append({})

    def pop(self) -> None:
        self.frames[-1].scopes.pop()
        self.frames[-1].decl_float.pop()

    def elem(self, type_text: str) -> Elem:
        return ev.elem_type(type_text, self.typedefs)

    # ---------------------------------------------------------------- setup
    def _template_value(self, name: str, raw: Any) -> Value:
        """A value template argument: a number, a bool, or an expression (`true`, `BLOCK / 2`,
        a macro); what cannot be evaluated is unknown with the reason, never an exception."""
        if isinstance(raw, bool):
            return Value(np.asarray(float(raw)), False, frozenset())
        try:
            return Value(np.asarray(float(raw)), False, frozenset())
        except (TypeError, ValueError):
            pass
        v = self._eval_text(str(raw))
        if v.arr is None:
            why = f"template parameter `{name}` = {raw!r} is not a number"
            self.note(why)
            return ev.unknown(why)
        return Value(v.arr, False, frozenset())

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
                    self.template_values[tp.name] = self._template_value(tp.name, targs[tp.name])
                elif tp.default is not None:
                    self.template_values[tp.name] = self._eval_text(tp.default)
                else:
                    why = f"template parameter `{tp.name}` has no value (pass template_args={{'{tp.name}': ...}})"
                    self.template_values[tp.name] = ev.unknown(why)
                    self.note(why)
        for name, macro in self.macros.items():
            # a macro that names a type (`-D floatX=float`, `#define real double`) is one where a
            # type is expected, as the preprocessor would make it
            if macro.params is None and name not in self.typedefs and ev.elem_type(macro.body.strip(),
                                                                                    self.typedefs).size:
                self.typedefs[name] = macro.body.strip()
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
                elif p.name in self.params and addr is None:
                    self.untraced_pointers.add(p.name)  # the caller could not tell what was passed
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
        if self.recording:
            if ctx.mask.any():
                self._reached.add(self.key(st))
            elif t != "compound_statement" and (self.block_dependent_exit or ctx.block_gated):
                self._unreached(st, ctx)
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
            if len(self.frames) == 1 and ctx.mask.any() and any(c.block_dependent for c in ctx.conds):
                self.block_dependent_exit = True  # later code may run in blocks the sample never shows
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
            "namespace_alias_definition",  # `namespace cg = cooperative_groups;` inside a kernel
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
            if (ctx.value_unknown is not None and not file_scope
                    and not self._inside_branch(ctx, len(self.frames[-1].scopes) - 1)):
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
        self._note_unreached(acc, ctx)
        tdep = "tid" in cv.deps
        acc.thread_dependent = acc.thread_dependent or tdep
        cond_info = Cond(" ".join(text.split()), line, tdep, "bid" in cv.deps)
        arr = cv.lanes(self.shape)
        cons = st.child_by_field_name("consequence")
        alt = st.child_by_field_name("alternative")
        if alt is not None and alt.type == "else_clause":
            alt = alt.named_children[0] if alt.named_children else None
        if arr is None or np.isnan(arr[ctx.mask]).any():
            reason = f"condition `{cond_info.text}` at line {line} depends on {cv.reason or 'unknown values'}"
            if self.recording and ctx.mask.any():
                acc.unknown = acc.unknown or reason
            # Where the branch goes is unknown, but what it does is not: both sides are walked for
            # every lane, so the counts are an upper bound (count_upper), never left out
            sub = replace(
                ctx,
                count_upper=ctx.count_upper or reason,
                value_unknown=ctx.value_unknown or reason,
                value_unknown_at=ctx.value_unknown_at if ctx.value_unknown else self._scope_mark(),
                conds=(*ctx.conds, cond_info),
            )
            # lanes where the condition is known (`lane == 0 && v != 0`: false off lane 0) go their way
            known = np.broadcast_to(arr, self.shape) if arr is not None else None
            then_mask = ctx.mask if known is None else ctx.mask & ~(known == 0)
            else_mask = ctx.mask if known is None else ctx.mask & ~((known != 0) & ~np.isnan(known))
            exits = self.statement(cons, replace(sub, mask=then_mask)) if cons is not None else Exits()
            if alt is not None:
                exits.add(self.statement(alt, replace(sub, mask=else_mask)))
            # lanes that may have returned are unknown: keep walking with the enclosing mask
            return Exits()
        truth = (arr != 0) & ctx.mask
        if self.recording:
            div = divergent_warps(truth, ctx.mask)
            acc.add(div, ctx.mask.any(axis=1), ctx.mult, self.lanes.tail_block)
        gate = cond_info.block_dependent and bool(ctx.mask.any())
        then_ctx = replace(ctx, mask=truth, conds=(*ctx.conds, cond_info),
                           block_gated=ctx.block_gated or (gate and not truth.any()))
        exits = self.statement(cons, then_ctx) if cons is not None else Exits()
        if alt is not None:
            else_info = Cond(f"!({cond_info.text})", line, tdep, cond_info.block_dependent)
            rest = ctx.mask & ~truth
            exits.add(self.statement(alt, replace(ctx, mask=rest, conds=(*ctx.conds, else_info),
                                                  block_gated=ctx.block_gated or (gate and not rest.any()))))
        return exits

    def switch_statement(self, st: Any, ctx: Ctx) -> Exits:
        cond_node = st.child_by_field_name("condition")
        text = " ".join(node_text(cond_node).split()) if cond_node is not None else "?"
        cv = self.eval(cond_node, ctx) if cond_node is not None else ev.unknown("no condition")
        line = self.line(st)
        acc = self.branch_acc.setdefault(self.key(st), BranchAcc(line, text, "switch"))
        self._note_unreached(acc, ctx)
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
            value_unknown_at=ctx.value_unknown_at if ctx.value_unknown else self._scope_mark(),
            conds=(*ctx.conds, Cond(text, line, tdep)),
        )
        if body is not None:
            self.block(body, sub)
        return Exits()

    # ---------------------------------------------------------------- loops
    def _pragma_unroll(self, pragma: Any) -> bool | int:
        if pragma is None:
            return False
        text = pragma if isinstance(pragma, str) else node_text(pragma)
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
            elif n.type == "call_expression":
                assigned.update(self._ref_targets(n))
            stack.extend(n.named_children)
        return assigned, declared

    def _ref_targets(self, call: Any) -> list[str]:
        """Variables a call may assign: identifiers passed to a non-const reference parameter of a
        function defined in the source (``advance(i, 32)`` for ``void advance(int &i, int s)``)."""
        fn = call.child_by_field_name("function")
        args_node = call.child_by_field_name("arguments")
        if fn is None or args_node is None:
            return []
        name, _ = self._callee_name(fn)
        defs = self.parsed.functions.get(name)
        if not defs:
            return []
        args = [c for c in args_node.named_children if c.type != "comment"]
        out = []
        for f in defs:
            for p, a in zip(f.params, args, strict=False):
                const_ref = "const" in p.type_text.split() and not p.is_pointer  # `const T *&p` can change
                if p.is_ref and not const_ref and a.type == "identifier":
                    out.append(node_text(a))
        return out

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
        if pragma is None and not self.origin:
            pragma = self.parsed.stray_pragmas.get(st.start_byte)
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
            declared_here = init is not None and init.type == "declaration"
            if var is None and (init is None or init.type != "declaration"):
                var = self._update_var(update, cond)  # `for (; i < n; i += stride)`
            assigned, declared = self._assigned_names(body) if body is not None else (set(), set())
            updated = self._assigned_names(update)[0] if update is not None else set()
            changing = {n for n in (assigned | updated) - declared if n != var}
            affine = self._affine_steps(body, update, var, assigned | updated, declared, ctx) if changing else {}
            if cond is not None and affine:
                # a bound that moves with the loop (`i < j` with `--j`) has no closed-form trip count
                in_cond = {node_text(n) for n in self._nodes(cond) if n.type == "identifier"}
                affine = {n: v for n, v in affine.items() if n not in in_cond}
            reason_changes = f"changes across iterations of the loop at line {line}"
            self._invalidate(changing - set(affine), reason_changes)
            entry = self.lookup(var) if var else None
            trips, history, why = self._trip_counts(var, cond, update, body, ctx, assigned)
            self._loop_body(st, acc, body, cond, var, trips, history, why, ctx, line, affine)
            after = (changing - set(affine)) | ({var} if var else set())
            if trips is None or why is not None:  # unknown, or an upper bound (early exit)
                after |= set(affine)
            else:
                # value after the loop: base + trips × step on every lane (0 trips: unchanged)
                for name, (base, step) in affine.items():
                    self._set_affine(name, base, step, trips)
                if var and not declared_here and entry is not None and entry.arr is not None:
                    step_op, step = self._step(var, update, ctx)
                    if step_op == "add" and step is not None and step.arr is not None:
                        self._set_affine(var, entry, step, trips)
                        after.discard(var)
        finally:
            self.pop()
        self._invalidate(after - {var} if var in declared else after, f"value after the loop at line {line}")
        return Exits()

    def _affine_steps(
        self, body: Any, update: Any, var: str | None, assigned: set[str], declared: set[str], ctx: Ctx
    ) -> dict[str, tuple[Value, Value]]:
        """Variables that advance by a loop-invariant step each iteration: ``{name: (value at entry, step)}``.

        ``p += s`` / ``p -= s`` / ``p++`` / ``p = p + s`` as statements of the loop body itself (not
        under an ``if`` or an inner loop) or in the ``for`` update, where ``s`` names nothing the
        loop changes, has no side effects and is known on every lane at loop entry, and nothing
        else in the loop assigns ``p``. At iteration ``i`` the value is ``entry + i × step`` (the
        pointer-advance idiom: ``A += BK; B += BK * N;``), so sampled iterations need not make it
        unknown. Pointers (byte offset per lane) and numbers both qualify.
        """
        if ctx.value_unknown is not None:
            return {}
        if body is not None and self._has(
            body, {"continue_statement"}, {"for_statement", "while_statement", "do_statement", "lambda_expression"}
        ):
            return {}  # lanes that `continue` skip the step: not the same step every iteration
        exprs: list[Any] = []
        if body is not None:
            tops = body.named_children if body.type == "compound_statement" else [body]
            for st in tops:
                if st.type == "expression_statement":
                    exprs.extend(self._comma_parts(c) for c in st.named_children)
        if update is not None:
            exprs.append(self._comma_parts(update))
        incs: dict[str, list[tuple[int, Any]]] = {}
        toggles: dict[str, list[tuple[str, Any]]] = {}
        for parts in exprs:
            for e in parts:
                inc = self._increment(e)
                if inc is not None and inc[0] != var:
                    incs.setdefault(inc[0], []).append((inc[1], inc[2]))
                tog = self._toggle(e)
                if tog is not None and tog[0] != var:
                    toggles.setdefault(tog[0], []).append((tog[1], tog[2]))
        if not incs and not toggles:
            return {}
        counts: dict[str, int] = {}
        for n in [x for x in (body, update) if x is not None]:
            stack = [n]
            while stack:
                m = stack.pop()
                target = None
                if m.type == "assignment_expression":
                    target = m.child_by_field_name("left")
                elif m.type == "update_expression":
                    target = m.child_by_field_name("argument")
                elif m.type == "pointer_expression" and node_text(m.child_by_field_name("operator")) == "&":
                    target = m.child_by_field_name("argument")  # address taken: may change through it
                elif m.type == "call_expression":
                    for name in self._ref_targets(m):  # passed by reference: may change in the call
                        counts[name] = counts.get(name, 0) + 1
                if target is not None and target.type == "identifier":
                    counts[node_text(target)] = counts.get(node_text(target), 0) + 1
                stack.extend(m.named_children)
        forbidden = assigned | declared | ({var} if var else set())
        out: dict[str, tuple[Value, Value]] = {}
        for name, steps in incs.items():
            if name in declared or counts.get(name, 0) != len(steps):
                continue
            base = self.lookup(name)
            if base is None or (base.arr is None if base.ptr is None else base.ptr.offset is None):
                continue
            total: Value | None = ev.const(0)
            for sign, expr in steps:
                if expr is None:
                    v = ev.const(1)
                else:
                    if not self._invariant_expr(expr, forbidden):
                        total = None
                        break
                    v = self._peek(expr, ctx)
                    if v.ptr is not None or v.arr is None or np.isnan(v.lanes(self.shape)[ctx.mask]).any():
                        total = None
                        break
                total = ev.binary("+" if sign > 0 else "-", total, v)  # type: ignore[arg-type]
            if total is None or total.arr is None:
                continue
            out[name] = (base, total)
        for name, togs in toggles.items():
            # a ping-pong index (`cur ^= 1`, `pout = 1 - pout`): period 2, so iteration i's value
            # is the entry value or its flip by the parity of i
            if name in declared or name in incs or len(togs) != 1 or counts.get(name, 0) != 1:
                continue
            base = self.lookup(name)
            if base is None or base.ptr is not None or base.arr is None or base.is_float:
                continue
            kind, expr = togs[0]
            if expr is None:
                flip = ev.const(0)
            else:
                if not self._invariant_expr(expr, forbidden):
                    continue
                flip = self._peek(expr, ctx)
                if flip.ptr is not None or flip.arr is None or flip.is_float:
                    continue
            if np.isnan(base.lanes(self.shape)[ctx.mask]).any() or np.isnan(flip.lanes(self.shape)[ctx.mask]).any():
                continue
            out[name] = (base, Toggle(kind, flip))
        return out

    def _update_var(self, update: Any, cond: Any) -> str | None:
        """The loop variable of a ``for`` without an initialiser: what the update changes, if the
        condition reads it."""
        if update is None or cond is None:
            return None
        for part in self._comma_parts(update):
            target = None
            if part.type == "update_expression":
                target = part.child_by_field_name("argument")
            elif part.type == "assignment_expression":
                target = part.child_by_field_name("left")
            if target is None or target.type != "identifier":
                continue
            name = node_text(target)
            stack = [cond]
            while stack:
                n = stack.pop()
                if n.type == "identifier" and node_text(n) == name:
                    return name
                stack.extend(n.named_children)
        return None

    @staticmethod
    def _comma_parts(node: Any) -> list[Any]:
        if node.type == "comma_expression":
            return [
                *Walker._comma_parts(node.child_by_field_name("left")),
                *Walker._comma_parts(node.child_by_field_name("right")),
            ]
        return [node]

    @staticmethod
    def _increment(e: Any) -> tuple[str, int, Any] | None:
        """``(name, sign, step expression or None for 1)`` when ``e`` adds a step to an identifier."""
        if e.type == "update_expression":
            arg = e.child_by_field_name("argument")
            if arg is not None and arg.type == "identifier":
                return node_text(arg), (1 if "++" in node_text(e) else -1), None
            return None
        parts = _assignment_to_name(e)
        if parts is None:
            return None
        name, op, right = parts
        if op in ("+=", "-="):
            return name, (1 if op == "+=" else -1), right
        if op == "=" and right.type == "binary_expression":
            rop = node_text(right.child_by_field_name("operator"))
            rl, rr = right.child_by_field_name("left"), right.child_by_field_name("right")
            if rop in ("+", "-") and rl is not None and rl.type == "identifier" and node_text(rl) == name:
                return name, (1 if rop == "+" else -1), rr
            if rop == "+" and rr is not None and rr.type == "identifier" and node_text(rr) == name:
                return name, 1, rl
        return None

    @staticmethod
    def _invariant_expr(expr: Any, forbidden: set[str]) -> bool:
        stack = [expr]
        while stack:
            n = stack.pop()
            if n.type in (
                "call_expression",
                "assignment_expression",
                "update_expression",
                "subscript_expression",
                "pointer_expression",
                "lambda_expression",
            ):
                return False
            if n.type == "identifier" and node_text(n) in forbidden:
                return False
            if n.type == "field_expression":
                arg = n.child_by_field_name("argument")
                if arg is not None:
                    stack.append(arg)
                continue
            stack.extend(n.named_children)
        return True

    @staticmethod
    def _toggle(e: Any) -> tuple[str, str, Any] | None:
        """``(name, kind, operand)`` when ``e`` flips an identifier between two values each time it
        runs: ``x ^= c`` (kind ``xor``), ``x = c - x`` (``reflect``), ``x = !x`` (``not``, operand None)."""
        parts = _assignment_to_name(e)
        if parts is None:
            return None
        name, op, right = parts
        if op == "^=":
            return name, "xor", right
        if op != "=":
            return None
        while right.type == "parenthesized_expression" and right.named_children:
            right = right.named_children[0]
        if right.type == "binary_expression":
            rop = node_text(right.child_by_field_name("operator"))
            rl, rr = right.child_by_field_name("left"), right.child_by_field_name("right")
            if rr is not None and rr.type == "identifier" and node_text(rr) == name and rl is not None:
                if rop == "-":
                    return name, "reflect", rl
                if rop == "^":
                    return name, "xor", rl
            if rop == "^" and rl is not None and rl.type == "identifier" and node_text(rl) == name and rr is not None:
                return name, "xor", rr
        if right.type == "unary_expression" and node_text(right.child_by_field_name("operator")) == "!":
            arg = right.child_by_field_name("argument")
            if arg is not None and arg.type == "identifier" and node_text(arg) == name:
                return name, "not", None
        return None

    def _set_affine(self, name: str, base: Value, step: Value | Toggle, count: Any) -> None:
        """Set ``name`` to ``base + count × step`` in the scope that holds it (all lanes); for a
        :class:`Toggle`, to ``base`` flipped ``count`` times."""
        if isinstance(step, Toggle):
            value = step.after(base, count, self.shape)
            for scope in reversed(self.frames[-1].scopes):
                if name in scope:
                    scope[name] = value
                    return
            return
        n = Value(np.asarray(count, dtype=np.float64), False, frozenset())
        delta = ev.binary("*", n, step)
        if base.ptr is not None:
            value = self._pointer_arith("+", base, delta)
            value = replace(value, deps=base.deps | step.deps | {"loop"})
        else:
            value = ev.binary("+", base, delta)
            value = replace(ev.convert(value, base.is_float), deps=base.deps | step.deps | {"loop"})
        for scope in reversed(self.frames[-1].scopes):
            if name in scope:
                scope[name] = value
                return

    def _trip_counts(
        self, var: str | None, cond: Any, update: Any, body: Any, ctx: Ctx, assigned: set[str]
    ) -> tuple[np.ndarray | None, np.ndarray | None, str | None]:
        """Per-lane trip counts (and, for simulated loops, the variable's value per iteration).

        The reason is None for exact counts. A loop that can ``break``/``return`` early gets the
        trip count of its condition as an *upper bound*, with a reason: the work under it is then
        counted as at most that much (the cost model prices it as a worst case), and values the
        loop leaves behind are unknown."""
        trips, history, why = self._condition_trips(var, cond, update, body, ctx, assigned)
        if body is not None and self._has(
            body,
            {"break_statement", "return_statement", "goto_statement"},
            {"for_statement", "while_statement", "do_statement", "switch_statement", "lambda_expression"},
        ):
            if trips is None:
                return None, None, f"the loop can exit early (break/return) and {why}"
            return trips, history, "the loop can exit early (break/return): counted at its condition's trip count"
        return trips, history, why

    def _condition_trips(
        self, var: str | None, cond: Any, update: Any, body: Any, ctx: Ctx, assigned: set[str]
    ) -> tuple[np.ndarray | None, np.ndarray | None, str | None]:
        if cond is None:
            return None, None, "loop without a condition"
        if var is None:
            return None, None, "loop variable not recognised"
        if var in assigned:
            return None, None, f"loop variable `{var}` is modified in the body"
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
        if update.type == "comma_expression":
            # `++i, p += 4`: the part that updates the loop variable (others are affine steps)
            for part in self._comma_parts(update):
                op, step = self._step(var, part, ctx)
                if op is not None:
                    return op, step
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
        affine: dict[str, tuple[Value, Value]] | None = None,
        update: Any = None,
    ) -> None:
        cond_text = " ".join(node_text(cond).split()) if cond is not None else "(none)"
        bacc = self.branch_acc.setdefault(self.key(st), BranchAcc(line, cond_text, "loop"))
        self._note_unreached(bacc, ctx)
        start = self.lookup(var) if var else None
        tdep = False
        bdep = False
        const_bound = False  # the trip count is a compile-time constant: the compiler can unroll
        if cond is not None:
            prev = self.recording
            self.recording = False
            try:
                deps = self.eval(cond, ctx).deps
                tdep, bdep = "tid" in deps, "bid" in deps
                const_bound = not (deps & {"tid", "bid", "param", "data", *LAUNCH})
            finally:
                self.recording = prev
        bacc.thread_dependent = bacc.thread_dependent or tdep
        loop_cond = Cond(f"loop condition `{cond_text}`", line, tdep, bdep)
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
            if self.recording and ctx.mask.any() and loop_cond.block_dependent:
                self._unreached(body, replace(ctx, conds=(*ctx.conds, loop_cond)))
            return
        t = int(tmax)
        samples: list[tuple[int, Any]]
        if t <= EXACT_TRIPS or history is not None:
            # geometric loops (simulated, at most MAX_SIMULATED_TRIPS) change their pattern every
            # iteration, so every iteration is walked
            samples = [(i, 1.0) for i in range(t)]
        else:
            samples = _iteration_samples(trips, ctx.mask, t)
        if update is None:
            update = st.child_by_field_name("update")
        _step_op, step = self._step(var, update, ctx) if var else (None, None)
        for it, weight in samples:
            for name, (base, step_value) in (affine or {}).items():
                self._set_affine(name, base, step_value, it)
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
                    iters=(*ctx.iters, (line, it, t if const_bound else 0)),
                    count_upper=ctx.count_upper or (f"loop at line {line}: {why}" if why else None),
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
        if cond is not None and body is not None and self._counted_while(st, kind, acc, cond, body, ctx, line):
            return Exits()
        if cond is not None and body is not None and self._simulated_while(st, kind, acc, cond, body, ctx, line, text):
            return Exits()
        assigned, declared = self._assigned_names(st)
        changing = assigned - declared
        self._invalidate(changing, f"changes across iterations of the loop at line {line}")
        cv = self.eval(cond, ctx) if cond is not None else ev.unknown("no condition")
        if self.recording and ctx.mask.any():
            acc.add(None, False, why)
            bacc = self.branch_acc.setdefault(self.key(st), BranchAcc(line, text, "loop"))
            self._note_unreached(bacc, ctx)
            bacc.thread_dependent = bacc.thread_dependent or "tid" in cv.deps
            bacc.unknown = bacc.unknown or why
        reason = f"trip count of the loop at line {line} is unknown: {why}"
        sub = replace(
            ctx,
            count_unknown=ctx.count_unknown or reason,
            conds=(*ctx.conds, Cond(f"loop condition `{text}`", line, "tid" in cv.deps, "bid" in cv.deps)),
            loop_lines=(*ctx.loop_lines, line),
        )
        if body is not None:
            self.statement(body, sub)
        return Exits()

    def _simulated_while(self, st: Any, kind: str, acc: LoopAcc, cond: Any, body: Any, ctx: Ctx, line: int,
                         text: str) -> bool:
        """A ``while``/``do`` loop whose condition is known on every lane each time it is tested (a
        binary search over an input index array, a convergence loop over known values) is run
        iteration by iteration: first without recording, on a copy of the variables, to learn which
        lanes run which iterations (at most :data:`MAX_SIMULATED_TRIPS`), then walked for real with
        those masks — every iteration counted, none guessed. False when it is not such a loop."""
        if ctx.value_unknown is not None or self._has(
            body, {"break_statement", "return_statement", "continue_statement", "goto_statement"},
            {"lambda_expression"},
        ):
            return False
        saved = [([dict(sc) for sc in f.scopes], dict(f.refs)) for f in self.frames]
        prev = self.recording
        self.recording = False
        tested: list[np.ndarray] = []  # lanes that test the condition before iteration i (and after the last)
        runs: list[np.ndarray] = []  # lanes that run iteration i
        try:
            mask = ctx.mask.copy()
            for it in range(MAX_SIMULATED_TRIPS + 1):
                if kind == "while" or it > 0:
                    tested.append(mask.copy())
                    cv = self.eval(cond, replace(ctx, mask=mask))
                    lanes = cv.lanes(self.shape)
                    if lanes is None or np.isnan(lanes[mask]).any():
                        return False
                    mask = mask & (lanes != 0)
                if not mask.any():
                    break
                if it == MAX_SIMULATED_TRIPS:
                    return False
                runs.append(mask.copy())
                self.statement(body, replace(ctx, mask=mask))
        except _Unsupported:
            return False
        finally:
            self.recording = prev
            for f, (scopes, refs) in zip(self.frames, saved, strict=False):
                f.scopes[:] = scopes
                f.refs = refs
        trips = np.sum(runs, axis=0).astype(np.float64) if runs else np.zeros(self.shape)
        bacc = self.branch_acc.setdefault(self.key(st), BranchAcc(line, text, "loop"))
        self._note_unreached(bacc, ctx)
        if self.recording and ctx.mask.any():
            tm = trips[ctx.mask]
            acc.add(float(tm.max()), bool(tm.min() != tm.max()), None)
            bacc.add(varying_warps(trips, ctx.mask), ctx.mask.any(axis=1), ctx.mult, self.lanes.tail_block)
        loop_cond = Cond(f"loop condition `{text}`", line, bool(np.any(trips[ctx.mask] != trips[ctx.mask].max()))
                         if ctx.mask.any() else False, False)
        for it in range(len(runs) + 1):
            j = it if kind == "while" else it - 1  # the test made before iteration `it`
            if 0 <= j < len(tested):
                self.eval(cond, replace(ctx, mask=tested[j]))
            if it == len(runs):
                break
            sub = replace(ctx, mask=runs[it], conds=(*ctx.conds, loop_cond), loop_lines=(*ctx.loop_lines, line),
                          iters=(*ctx.iters, (line, it, 0)))
            self.statement(body, sub)
        return True

    def _counted_while(self, st: Any, kind: str, acc: LoopAcc, cond: Any, body: Any, ctx: Ctx, line: int) -> bool:
        """A ``while``/``do`` loop whose condition reads a counter that the body advances by a
        loop-invariant step (``while (i < n) { ...; i += gridSize; }``, ``do { k += BK; ... } while
        (k < K);``) is walked like the equivalent ``for`` loop; False when it is not one."""
        if cond.type in ("assignment_expression", "update_expression") or self._has(
            cond, {"assignment_expression", "update_expression"}, set()
        ):
            return False
        assigned, declared = self._assigned_names(body)
        tops = body.named_children if body.type == "compound_statement" else [body]
        names_in_cond = {node_text(n) for n in self._nodes(cond) if n.type == "identifier"}
        var = update = None
        for top in tops:
            if top.type != "expression_statement":
                continue
            for part in (p for c in top.named_children for p in self._comma_parts(c)):
                inc = self._increment(part)
                if inc is not None and inc[0] in names_in_cond and inc[0] not in declared:
                    var, update = inc[0], part
                    break
            if var is not None:
                break
        if var is None:
            return False
        affine_all = self._affine_steps(body, None, None, assigned, declared, ctx)
        if var not in affine_all:
            return False
        entry, _ = affine_all.pop(var)
        if entry.ptr is not None or entry.arr is None:
            return False
        step_op, step = self._step(var, update, ctx)
        if step_op != "add" or step is None or step.arr is None:
            return False
        changing = assigned - declared - {var}
        affine_all = {n: v for n, v in affine_all.items() if n not in names_in_cond}
        self._invalidate(changing - set(affine_all), f"changes across iterations of the loop at line {line}")
        affine = {n: v for n, v in affine_all.items() if n in changing}
        if kind == "do":
            # the condition is tested after each iteration: 1 + the trips of the loop from entry + step
            self._set_affine(var, entry, step, 1)
            trips, history, why = self._trip_counts(var, cond, update, body, ctx, assigned - {var})
            self._set_affine(var, entry, step, 0)
            if history is not None:
                trips, why = None, "do loop with a simulated trip count"
            if trips is not None:
                trips = np.where(ctx.mask, trips + 1, 0.0)
            history = None
        else:
            trips, history, why = self._trip_counts(var, cond, update, body, ctx, assigned - {var})
        self._loop_body(st, acc, body, cond, var, trips, history, why, ctx, line, affine, update)
        if trips is None or why is not None:
            self._invalidate(set(affine) | {var}, f"value after the loop at line {line}")
        else:
            for name, (base, inc) in affine.items():
                self._set_affine(name, base, inc, trips)
            self._set_affine(var, entry, step, trips)
        return True

    @staticmethod
    def _nodes(node: Any) -> list[Any]:
        out, stack = [], [node]
        while stack:
            n = stack.pop()
            out.append(n)
            stack.extend(n.named_children)
        return out

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
        return ev.const(0.0)  # compared with a pointer (_pointer_arith); as a number it is 0

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

    def _ref_alias(self, name: str) -> Value | None:
        """The address a reference parameter of the current call is bound to, if ``name`` is one."""
        if not self.frames or not self.frames[-1].refs:
            return None
        frame = self.frames[-1]
        for scope in reversed(frame.scopes):
            if name in scope:
                return frame.refs.get(name) if scope is frame.scopes[0] else None
        return None

    def e_identifier(self, node: Any, ctx: Ctx) -> Value:
        name = node_text(node)
        ref = self._ref_alias(name)
        if ref is not None:
            return self.memory_access(node, ctx, "load", ptr_value=ref)
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
        if name == "NULL":  # <stddef.h>'s null pointer constant, when the file does not define it
            return ev.const(0.0)
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
                # known for this launch, but set at launch time: a loop bounded by them is not a
                # compile-time trip count (ptxas cannot unroll it or merge its shared loads)
                if base == "blockDim":
                    return Value(np.asarray(float(L.block[dim])), False, LAUNCH)
                if base == "gridDim":
                    return Value(np.asarray(float(L.grid[dim])), False, LAUNCH)
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
        self.did_work(("flop", node.start_byte if node is not None else None), ctx.mask.any(axis=1))
        if ctx.count_upper is not None and ctx.count_unknown is None:
            self.flops_upper.add(f"line {self.line(node)}: {ctx.count_upper}")
        if ctx.count_unknown is not None:
            self.flops_unknown.append(f"line {self.line(node)}: {ctx.count_unknown}")
            return
        threads = float((ctx.mask.sum(axis=1) * ctx.mult).sum()) * n
        self.flops += threads
        names = " ".join(node_text(node).split())
        if "double" in names or any(o.is_float and o.reason and "double" in o.reason for o in operands):
            self.flops_fp64 += threads

    def _pointer_arith(self, op: str, a: Value, b: Value) -> Value:
        if op in ("==", "!=") and (a.ptr is None) != (b.ptr is None):
            # `mean != nullptr` (an optional output, llm.c's layernorm): a kernel's pointer
            # parameter is an allocation unless its address was given as 0; arrays are never null
            p, other = (a.ptr, b) if a.ptr is not None else (b.ptr, a)  # type: ignore[assignment]
            if other.arr is not None and other.arr.size == 1 and float(other.arr) == 0.0:
                null = self._is_null(p)
                if null is not None:
                    return ev.const(float((op == "==") == null))
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

    def _is_null(self, p: Ptr) -> bool | None:
        """Whether a pointer is null: never for shared, local or constant arrays; for a kernel's
        pointer parameter (and pointers derived from it), only when its address was given as 0
        (``params={"mean": 0}``, or a host launch passing ``nullptr``); None when not traced (given
        as None: a host launch whose argument could not be followed - a candidate could otherwise
        hide work behind ``if (p == nullptr)`` and pass a null the interpreter cannot see)."""
        if p.space in ("shared", "local", "constant"):
            return False
        if p.space != "global" or p.base in self.untraced_pointers:
            return None
        return self.pointer_addr.get(p.base) == 0 and p.offset is not None and not np.any(p.offset)

    def e_unary_expression(self, node: Any, ctx: Ctx) -> Value:
        op = node_text(node.child_by_field_name("operator"))
        return ev.unary(op, self.eval(node.child_by_field_name("argument"), ctx))

    def e_conditional_expression(self, node: Any, ctx: Ctx) -> Value:
        c = self.eval(node.child_by_field_name("condition"), ctx)
        carr = c.lanes(self.shape)
        cons, alt = node.child_by_field_name("consequence"), node.child_by_field_name("alternative")
        if carr is None:
            sub = replace(ctx, count_upper=ctx.count_upper or f"both sides of a ternary on {c.reason}")
            a = self.eval(cons, sub) if cons is not None else ev.unknown("?")
            b = self.eval(alt, sub) if alt is not None else ev.unknown("?")
        else:
            truth = carr != 0
            gate = "bid" in c.deps and bool(ctx.mask.any())
            m_a, m_b = ctx.mask & truth, ctx.mask & ~truth
            a = (self.eval(cons, replace(ctx, mask=m_a, block_gated=ctx.block_gated or (gate and not m_a.any())))
                 if cons is not None else ev.unknown("?"))
            b = (self.eval(alt, replace(ctx, mask=m_b, block_gated=ctx.block_gated or (gate and not m_b.any())))
                 if alt is not None else ev.unknown("?"))
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
            ref = self._ref_alias(node_text(arg))
            if ref is not None:
                self.memory_access(arg, ctx, "store", ptr_value=ref)
            else:
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
            ref = self._ref_alias(name)
            if ref is not None:
                self.memory_access(left, ctx, "store", ptr_value=ref)
                return new
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
            ref = self._ref_alias(node_text(node))
            if ref is not None:
                return ref
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
        loaded = self._input_values(p, ctx, kind) if self.data else None
        if loaded is None:
            loaded = Value(
                None, p.elem.is_float, pv.deps | {"data"}, f"data loaded from `{p.base}` at line {self.line(node)}"
            )
        else:
            loaded = replace(loaded, deps=loaded.deps | pv.deps)
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

    def _input_values(self, p: Ptr, ctx: Ctx, kind: str) -> Value | None:
        """The values a load from a read-only input gives on each lane (NaN where a lane is inactive
        or reads outside the input), or None when this load is not one of those."""
        bound = self.data.get(p.base) if kind == "load" and p.space == "global" else None
        if bound is None or p.offset is None or p.dims:
            return None
        arr, first = bound
        size = p.elem.size
        if size is None or size != arr.itemsize or p.elem.is_float:
            return None
        idx = np.broadcast_to(np.asarray(p.offset, dtype=np.float64) / size + first, self.shape)
        ok = ctx.mask & np.isfinite(idx) & (idx == np.floor(idx)) & (idx >= 0) & (idx < arr.size)
        vals = np.full(self.shape, np.nan)
        if ok.any():
            vals[ok] = arr[idx[ok].astype(np.int64)].astype(np.float64)
            self.data_reads.add(p.base)
        return Value(vals, False, frozenset({"data"}))

    def _record_global(self, node: Any, ctx: Ctx, kind: str, p: Ptr, text: str, read_only: bool) -> None:
        key = (*self.key(node), kind)
        acc = self.global_acc.get(key)
        if acc is None:
            acc = self.global_acc[key] = GlobalAcc(self.line(node), kind, p.base, p.elem, read_only, text)
        acc.read_only = acc.read_only or read_only
        self._note_unreached(acc, ctx)
        if p.space == "unknown":
            acc.unknown = acc.unknown or (p.reason or "pointer not traced")
            self._count_blind(acc, ctx)
            return
        addr = self._lane_addresses(acc, ctx, p)
        if addr is None:
            self._count_blind(acc, ctx)
            return
        sec, useful = memory.sectors_per_warp(addr, p.elem.size, ctx.mask)
        active = ctx.mask.any(axis=1)
        self.did_work(("access", type(acc).__name__, acc.line, acc.kind, acc.text), active)
        acc.count_upper = acc.count_upper or ctx.count_upper
        acc.requests += float(ctx.mult[active].sum())
        acc.sectors += float((ctx.mult * sec).sum())
        acc.useful += float((ctx.mult * useful).sum())
        if acc.first_warp is None and active[0]:
            acc.first_warp = int(sec[0])
        acc.lines += float((ctx.mult * memory.lines_per_warp(addr, p.elem.size, ctx.mask)).sum())
        if len(acc.visits) < MAX_REUSE_VISITS:
            acc.visits.append((ctx.iters, np.array(addr, dtype=np.float64), ctx.mask.copy(), ctx.mult.copy()))
        else:
            acc.visits_dropped += 1
        if kind == "atomic":
            lanes = ctx.mask.sum(axis=1)
            acc.atomic_ops += float((ctx.mult * lanes).sum())
            acc.atomic_serial += float((ctx.mult * memory.same_address_lanes(addr, ctx.mask)).sum())
            if acc.atomic_addresses is not None:
                values, inverse = np.unique(addr[ctx.mask], return_inverse=True)
                weights = np.bincount(inverse, weights=np.broadcast_to(ctx.mult[:, None], self.shape)[ctx.mask])
                for v, wgt in zip(values.tolist(), weights.tolist(), strict=True):
                    acc.atomic_addresses[v] = acc.atomic_addresses.get(v, 0.0) + wgt
                if len(acc.atomic_addresses) > ATOMIC_ADDRESS_CAP:
                    acc.atomic_addresses = None

    def _unreached(self, st: Any, ctx: Ctx) -> None:
        """A statement with work that no sampled thread reaches, behind a blockIdx-dependent
        condition: blocks outside the sample may run it, so its work is not counted (``uncounted``
        unless every block was walked)."""
        key = self.key(st)
        if key in self.unreached or not _does_work(st):
            return
        cond = next((c for c in reversed(ctx.conds) if c.block_dependent), None)
        why = f"under `{cond.text}` (line {cond.line})" if cond else "after a blockIdx-dependent return"
        self.unreached[key] = (f"line {self.line(st)}: reached by no sampled block {why}; "
                               "blocks outside the sample may run it")

    def unreached_work(self) -> list[str]:
        """Statements flagged by :meth:`_unreached` that no sampled thread reached in the end."""
        return [msg for key, msg in self.unreached.items() if key not in self._reached]

    def _note_unreached(self, acc: GlobalAcc | SharedAcc | BranchAcc, ctx: Ctx) -> None:
        """Remember that no sampled lane reached this site while a blockIdx-dependent condition (or
        an earlier blockIdx-dependent return) stood in the way: unsampled blocks may reach it, so
        "never executed" is then unknown rather than zero."""
        if self.recording and not ctx.mask.any() and (self.block_dependent_exit or ctx.block_gated):
            acc.unreached_block_dependent = True

    def _count_blind(self, acc: GlobalAcc | SharedAcc, ctx: Ctx) -> None:
        """Count the requests of an access whose addresses are not determined (a gather, a
        histogram's bins): how many happen is still known, only where they go is not, so the cost
        model can price them at their worst case instead of leaving them out."""
        active = ctx.mask.any(axis=1)
        if acc.unknown is None or not active.any():
            return
        if ctx.count_unknown is not None:
            acc.count_unknown = acc.count_unknown or ctx.count_unknown
        self.did_work(("access", type(acc).__name__, acc.line, acc.kind, acc.text), active)
        acc.blind_requests += float(ctx.mult[active].sum())
        if isinstance(acc, GlobalAcc):
            acc.blind_lanes += float((ctx.mult * ctx.mask.sum(axis=1)).sum())

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
        self._note_unreached(acc, ctx)
        addr = self._lane_addresses(acc, ctx, p)
        if addr is None:
            self._count_blind(acc, ctx)  # how many requests is known; bank conflicts are not
            return
        if kind == "atomic":
            # no broadcast for atomics: every lane's read-modify-write is served by its bank in turn
            ways = waves = memory.atomic_bank_ways(addr, p.elem.size, ctx.mask)
        else:
            ways, waves = memory.bank_ways(addr, p.elem.size, ctx.mask)
        active = ctx.mask.any(axis=1)
        self.did_work(("access", type(acc).__name__, acc.line, acc.kind, acc.text), active)
        acc.count_upper = acc.count_upper or ctx.count_upper
        acc.requests += float(ctx.mult[active].sum())
        acc.wavefronts += float((ctx.mult * waves).sum())
        acc.ways = max(acc.ways, int(ways.max()))
        if kind == "load" and ctx.iters and ctx.iters[-1][2] and len(acc.visits) < MAX_REUSE_VISITS:
            acc.visits.append((ctx.iters, np.array(addr, dtype=np.float64), ctx.mask.copy(), ctx.mult.copy()))

    # ---------------------------------------------------------------- calls
    def _callee_name(self, fn: Any) -> tuple[str, Any]:
        """The called function's name and its explicit template arguments (``wt::f<BM, 4>`` → f)."""
        inner = fn
        while inner is not None and inner.type == "qualified_identifier":
            inner = inner.child_by_field_name("name")
        if inner is not None and inner.type == "template_function":
            return node_text(inner.child_by_field_name("name")), inner.child_by_field_name("arguments")
        if fn.type == "qualified_identifier":
            return node_text(fn).split("::")[-1].split("<")[0], None
        return node_text(fn), None

    @staticmethod
    def _callee_scope(fn: Any) -> str:
        """The namespace qualifier of a call (``wt::f`` → ``wt``), ``""`` when unqualified."""
        if fn.type != "qualified_identifier":
            return ""
        text = node_text(fn.child_by_field_name("name") or fn)
        return node_text(fn)[: -len(text)].rstrip(":").strip() if text else ""

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
            if method in ("thread_rank", "size", "num_threads", "meta_group_rank", "meta_group_size") and not args:
                rank = self._group_query(node_text(obj), method)
                if rank is not None:
                    return rank
            return ev.unknown(f"result of `{method}()`", frozenset({"data"}))
        if name in CASTS and targs is not None:
            v = self.eval(args[0], ctx) if args else ev.unknown("?")
            return self.cast(node_text(targs)[1:-1], v)
        if (name == "sync" and len(args) == 1 and name not in self.parsed.functions
                and node_text(fn).split("::")[0].strip() in ("cg", "cooperative_groups")):
            name = "cg::sync"  # cooperative groups' free-function barrier: cg::sync(this_thread_block())
            self.cooperative_groups = True
        if name in BARRIER_CALLS or name == "cg::sync":
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
        if name in ("printf", "vprintf") and self.recording and ctx.mask.any():
            # device printf formats on the GPU and copies its buffer to the host at the next
            # synchronisation: real work the cost model has no price for, so the totals would be
            # too low; it makes the launch's FLOP count (hence its estimate) unknown, saying why
            self.did_work(("printf", node.start_byte), ctx.mask.any(axis=1))
            msg = (f"line {self.line(node)}: device {name}() is executed, and its cost (formatting on the GPU, "
                   f"the buffer copied to the host) is not modelled")
            if msg not in self.flops_unknown:
                self.flops_unknown.append(msg)
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
            return self.inline_call(name, args, node, ctx, targs, self._callee_scope(fn))
        if len(args) == 1 and (fn.type in ("primitive_type", "sized_type_specifier") or self._is_type(name)):
            return self.cast(name, self.eval(args[0], ctx))  # functional cast: float(i), T(0)
        if not args:
            shared = self._shared_memory_struct(name, targs)
            if shared is not None:
                return shared
        # a reference parameter passed on is its address, not a load
        aliases = [self._ref_alias(node_text(a)) if a.type == "identifier" else None for a in args]
        vals = [alias if alias is not None else self.eval(a, ctx) for a, alias in zip(args, aliases, strict=True)]
        deps = frozenset().union(*(v.deps for v in vals)) if vals else frozenset()
        is_float = name.endswith("f") or any(v.is_float for v in vals)
        if fn.type in ("primitive_type", "sized_type_specifier") or self._is_type(name) or work_free_call(name):
            return ev.unknown(f"result of `{name}()`", deps | {"data"}, is_float)
        return self._unfollowed(name, "it is not defined in the analysed source", node, ctx, vals)

    def _group_query(self, obj: str, method: str) -> Value | None:
        """``cta.thread_rank()`` / ``cta.size()`` of a ``cg::thread_block`` (the linear thread index,
        the block's thread count) and ``thread_rank()`` / ``size()`` / ``meta_group_rank()`` /
        ``meta_group_size()`` of a ``thread_block_tile<N>`` (linear % N, N, linear / N, the
        block's tiles), from how the kernel declares the object - by type, or as
        ``auto t = cg::this_thread_block()`` / ``auto t = cg::tiled_partition<N>(cta)`` with N a
        number, template parameter or macro (the CUDA samples' reductions); None for any other group."""
        text = self.parsed.text
        L = self.lanes
        threads = L.block[0] * L.block[1] * L.block[2]
        linear = L.tid[0] + L.tid[1] * L.block[0] + L.tid[2] * L.block[0] * L.block[1]
        name = re.escape(obj)
        if (re.search(rf"\bthread_block\s+{name}\b", text)
                or re.search(rf"\b{name}\s*=\s*(?:\w+::)?this_thread_block\s*\(", text)):
            if method == "thread_rank":
                return Value(linear, False, frozenset({"tid"}))
            if method in ("size", "num_threads"):
                return Value(np.asarray(float(threads)), False, LAUNCH)
            return None
        m = (re.search(rf"\bthread_block_tile\s*<\s*([^<>,]+?)\s*(?:,[^<>]*)?>\s+{name}\b", text)
             or re.search(rf"\b{name}\s*=\s*(?:\w+::)?tiled_partition\s*<\s*([^<>]+?)\s*>\s*\(", text))
        if m is None:
            return None
        size = m.group(1)
        v = ev.const(float(size)) if size.isdigit() else self._eval_text(size)
        if v.arr is None or v.arr.size != 1 or not float(v.arr) > 0:
            return None
        n = int(float(v.arr))
        if method == "thread_rank":
            return Value(np.mod(linear, n), False, frozenset({"tid"}))
        if method in ("size", "num_threads"):
            return ev.const(float(n))
        if method == "meta_group_rank":
            return Value(np.floor_divide(linear, n), False, frozenset({"tid"}))
        if method == "meta_group_size":
            return Value(np.asarray(float(-(-threads // n))), False, LAUNCH)  # from blockDim at run time
        return None

    def _shared_memory_struct(self, name: str, targs: Any) -> Value | None:
        """``T* s = SharedMemory<T>();``: a struct of the file whose conversion operator returns an
        ``extern __shared__`` array (the CUDA samples' way to type dynamic shared memory in a
        template) is that array, as a pointer to ``T``, offset 0."""
        array = self._struct_arrays.get(name, ...)
        if array is ...:  # the source is searched once per name
            m = re.search(rf"\bstruct\s+{re.escape(name)}\b[^{{;]*\{{(?P<body>[^{{}}]*\{{[^}}]*\}}[^}}]*)\}}",
                          self.parsed.text)
            arr = re.search(r"extern\s+__shared__\s+[\w\s]+?\s+(\w+)\s*\[\s*\]", m.group("body")) if m else None
            array = arr.group(1) if arr is not None and m is not None and "operator" in m.group("body") else None
            self._struct_arrays[name] = array
        if array is None:
            return None
        type_name = node_text(targs)[1:-1].strip() if targs is not None else "float"
        value = self.template_values.get(type_name)
        elem = self.elem(str(self.template_values_input.get(type_name, type_name)) if value is None else type_name)
        self.shared_decls.setdefault(array, SharedDecl(array, elem, None, True, 0))
        return Value(None, False, frozenset(), None, Ptr("shared", array, np.asarray(0.0), elem))

    def _is_type(self, name: str) -> bool:
        if name in self.typedefs or self.elem(name).size is not None:
            return True
        if self.frames and len(self.frames) > 1:
            return name in self.frames[-1].type_params
        return any(tp.kind == "type" and tp.name == name for tp in self.kernel.template)

    def _unfollowed(self, name: str, why: str, node: Any, ctx: Ctx, vals: list[Value]) -> Value:
        """A call whose body is not walked: what it may do is unknown, never zero.

        Its FLOPs make the kernel's FLOPs unknown, and every global/shared pointer passed to it is
        an access whose address and count are unknown (so global traffic is unknown too).
        """
        line = self.line(node)
        msg = f"line {line}: call to `{name}()` is not followed: {why}"
        self.note(msg)
        if self.recording and ctx.mask.any():
            self.flops_unknown.append(f"{msg} (the FLOPs it does are not counted)")
            for v in vals:
                self._hidden_access(v, node, ctx, f"passed to `{name}()`, which is not followed ({why})")
        deps = frozenset().union(*(v.deps for v in vals)) if vals else frozenset()
        return ev.unknown(f"result of `{name}()` (not followed)", deps | {"data"}, any(v.is_float for v in vals))

    def _hidden_access(self, v: Value, node: Any, ctx: Ctx, reason: str) -> None:
        """Record an access through ``v`` that happens out of sight (unfollowed call, inline asm)."""
        p = v.ptr
        if p is None or p.space in ("local", "constant"):
            return
        hidden = Value(None, False, v.deps, None, replace(p, offset=None, reason=reason))
        # neither where nor how often: the call may access the memory any number of times
        self.memory_access(node, replace(ctx, count_unknown=ctx.count_unknown or reason), "load", ptr_value=hidden)

    def e_gnu_asm_expression(self, node: Any, ctx: Ctx) -> Value:
        """Inline PTX: outputs become unknown; memory instructions and floating-point arithmetic in
        it are work the analysis cannot see, so traffic/FLOPs become unknown rather than zero."""
        line = self.line(node)
        text = " ".join(
            node_text(c) for c in node.named_children if c.type in ("string_literal", "concatenated_string")
        )
        inputs: list[Value] = []
        outputs: list[Any] = []
        for lst in node.named_children:
            if lst.type == "gnu_asm_input_operand_list":
                for op in lst.named_children:
                    e = op.child_by_field_name("value") or (op.named_children[-1] if op.named_children else None)
                    if e is not None:
                        inputs.append(self.eval(e, ctx))
            elif lst.type == "gnu_asm_output_operand_list":
                for op in lst.named_children:
                    e = op.child_by_field_name("value") or (op.named_children[-1] if op.named_children else None)
                    if e is not None:
                        outputs.append(e)
        why = f"inline asm at line {line}"
        if self.recording and ctx.mask.any():
            if _ASM_FLOPS.search(text):
                msg = f"line {line}: inline asm does floating-point arithmetic that is not counted"
                self.note(msg)
                self.flops_unknown.append(msg)
            if _ASM_MEMORY.search(text):
                self.note(f"line {line}: inline asm accesses memory; those accesses are unknown")
                hidden = [v for v in inputs if v.ptr is not None and v.ptr.space not in ("local", "constant")]
                if not hidden:
                    space = "shared" if ".shared" in text and ".global" not in text else "unknown"
                    hidden = [Value(None, False, frozenset(), None, Ptr(space, "asm", None, Elem("?", None, False)))]
                for v in hidden:
                    self._hidden_access(v, node, ctx, f"accessed by {why}")
        for e in outputs:
            if e.type == "identifier":
                self.set_var(node_text(e), ev.unknown(f"output of {why}", frozenset({"data"})), ctx)
            elif e.type in ("subscript_expression", "pointer_expression"):
                self.memory_access(e, ctx, "store")
        return ev.unknown(f"result of {why}")

    def expand_call(self, macro: Any, args: list[Any], node: Any, ctx: Ctx) -> Value:
        if len(args) != len(macro.params):
            return ev.unknown(f"macro {macro.name} called with {len(args)} arguments")
        subst = {p: f"({node_text(a)})" for p, a in zip(macro.params, args, strict=True)}
        if not subst:
            return self.expand(macro.body, node, ctx)
        pattern = re.compile(r"\b(" + "|".join(re.escape(p) for p in subst) + r")\b")
        body = pattern.sub(lambda m: subst[m.group(1)], macro.body)  # simultaneous, like cpp
        return self.expand(body, node, ctx)

    def _pick_definition(self, name: str, nargs: int, scope: str) -> tuple[FunctionDef | None, str]:
        """The definition a call with ``nargs`` arguments resolves to (by namespace, then arity)."""
        defs = [f for f in self.parsed.functions[name] if not f.is_kernel and f.body is not None]
        if scope:
            scoped = [f for f in defs if f.scope == scope or f.scope.endswith("::" + scope)]
            defs = scoped or defs
        if not defs:
            return None, "it has no body in the analysed source"

        def arity(f: FunctionDef) -> tuple[int, int]:
            ps = [p for p in f.params if p.name or p.type_text.strip() != "void"]
            return sum(1 for p in ps if p.default is None), len(ps)

        fit = [f for f in defs if arity(f)[0] <= nargs <= arity(f)[1]]
        if len(fit) == 1:
            return fit[0], ""
        if not fit:
            return None, f"no definition of it takes {nargs} arguments"
        return None, f"it is overloaded ({len(fit)} definitions take {nargs} arguments; overloads are not resolved)"

    def _bind_template(
        self, fdef: FunctionDef, targs: Any, vals: list[tuple[str, Value]], line: int
    ) -> tuple[dict[str, Value], dict[str, str]]:
        """Template parameter values and types of a call: explicit arguments (evaluated where the
        call is), then deduction from the arguments (a type parameter naming a parameter's type
        takes the argument's element type; a scalar's is `float` or `int`), then defaults. A value
        still missing is unknown (and said so)."""
        given = [c for c in targs.named_children if c.type != "comment"] if targs is not None else []
        values: dict[str, Value] = {}
        types: dict[str, str] = dict(self.typedefs)
        saved_values, saved_types = self.template_values, self.typedefs
        try:
            for i, tp in enumerate(fdef.template):
                if i < len(given):
                    text = node_text(given[i]).strip()
                    if tp.kind == "type":
                        types[tp.name] = self.typedefs.get(text, text)
                    else:
                        values[tp.name] = self._constant(text, f"template argument `{text}` of `{fdef.name}()`")
                    continue
                if tp.kind == "type":
                    deduced = self._deduce_type(tp.name, fdef, vals)
                    if deduced is not None:
                        types[tp.name] = deduced
                        continue
                if tp.default is not None:
                    self.template_values, self.typedefs = values, types
                    if tp.kind == "type":
                        types[tp.name] = self.typedefs.get(tp.default, tp.default)
                    else:
                        values[tp.name] = self._constant(tp.default, f"default of `{tp.name}`")
                    self.template_values, self.typedefs = saved_values, saved_types
                    continue
                why = f"template parameter `{tp.name}` of `{fdef.name}()` has no value (not given/deduced/defaulted)"
                self.note(f"line {line}: {why}")
                if tp.kind != "type":
                    values[tp.name] = ev.unknown(why)
        finally:
            self.template_values, self.typedefs = saved_values, saved_types
        return values, types

    def _constant(self, text: str, what: str) -> Value:
        v = self._eval_text(text)
        arr = v.lanes(self.shape)
        if arr is None or not np.isfinite(arr).all() or not np.all(arr == arr.flat[0]):
            return ev.unknown(f"{what} is not a known constant ({v.reason or 'differs across threads'})")
        return Value(np.asarray(float(arr.flat[0])), v.is_float, frozenset())

    def _deduce_type(self, tname: str, fdef: FunctionDef, vals: list[tuple[str, Value]]) -> str | None:
        for p, (kind, v) in zip(fdef.params, vals, strict=False):
            if tname not in re.findall(r"\w+", p.type_text):
                continue
            if kind == "ref":
                return v.ptr.elem.name if v.ptr is not None and v.ptr.elem.name != "?" else None
            if v.ptr is not None and p.is_pointer and v.ptr.elem.size is not None:
                return v.ptr.elem.name
            if v.ptr is None and not p.is_pointer:
                return "float" if v.is_float else "int"
        return None

    def _bind_arg(self, p: Any, a: Any, ctx: Ctx) -> tuple[str, Value]:
        """Evaluate argument ``a`` for parameter ``p``: ``("ref", address)`` for a reference bound to
        global/shared memory (the callee's reads and writes of it are accesses), else ``("val", v)``."""
        if p is not None and p.is_ref and not p.is_pointer:
            if a.type == "identifier":
                alias = self._ref_alias(node_text(a))
                if alias is not None:
                    return "ref", alias
            elif a.type in ("subscript_expression", "pointer_expression", "parenthesized_expression"):
                addr = self.address(a, ctx)
                if addr.ptr is not None and addr.ptr.space in ("global", "shared", "unknown"):
                    return "ref", addr
        return "val", self.eval(a, ctx)

    def inline_call(self, name: str, args: list[Any], node: Any, ctx: Ctx, targs: Any = None, scope: str = "") -> Value:
        """Walk a ``__device__`` function's body with its parameters bound to the arguments.

        Template parameters come from the explicit arguments (evaluated at the call), deduction or
        defaults; pointer and array arguments keep their allocation and offsets (register tiles
        passed as ``float *regM`` stay local arrays); reference parameters write back to the
        caller's variable, or alias the memory they were bound to. A call that cannot be followed
        (no unique definition, recursion, depth > MAX_CALL_DEPTH) makes FLOPs and the traffic through
        its pointer arguments unknown."""
        line = self.line(node)
        fdef, why = self._pick_definition(name, len(args), scope)
        params = [p for p in fdef.params if p.name or p.type_text.strip() != "void"] if fdef is not None else []
        bound = [self._bind_arg(params[i] if i < len(params) else None, a, ctx) for i, a in enumerate(args)]
        vals = [v for _kind, v in bound]
        if fdef is None:
            return self._unfollowed(name, why, node, ctx, vals)
        if len(self.frames) > MAX_CALL_DEPTH or name in self._call_stack:
            why = "recursion" if name in self._call_stack else f"calls nest deeper than {MAX_CALL_DEPTH}"
            return self._unfollowed(name, why, node, ctx, vals)
        self.called_functions.add(name)
        tvalues, ttypes = self._bind_template(fdef, targs, bound, line)
        frame = Frame([{}], [{}], type_params=frozenset(tp.name for tp in fdef.template if tp.kind == "type"))
        writeback: dict[str, str] = {}
        saved_values, saved_types = self.template_values, self.typedefs
        self.frames.append(frame)
        self._call_stack.append(name)
        self.template_values, self.typedefs = tvalues, ttypes
        final: dict[str, Value | None] = {}
        try:
            for i, p in enumerate(params):
                if not p.name:
                    continue
                if i < len(bound):
                    kind, v = bound[i]
                elif p.default is not None:
                    kind, v = "val", self._eval_text(p.default)
                else:
                    continue
                el = self.elem(p.type_text)
                if kind == "ref":
                    frame.refs[p.name] = v
                    alias = ev.unknown(f"reference `{p.name}` to memory", frozenset({"data"}))
                    self.declare(p.name, alias, el.is_float)
                    continue
                if p.is_ref and i < len(args) and args[i].type == "identifier":
                    writeback[p.name] = node_text(args[i])
                if p.is_pointer and v.ptr is None:
                    v = Value(
                        None,
                        False,
                        v.deps,
                        v.reason,
                        Ptr("unknown", p.name, None, el, reason=v.reason),
                    )
                elif p.is_pointer and v.ptr is not None and el.size is not None:
                    old = v.ptr.elem
                    if (old.size, old.is_float, old.width) != (el.size, el.is_float, el.width):
                        v = replace(v, ptr=replace(v.ptr, elem=el, dims=()))
                if not p.is_pointer and v.ptr is None:
                    v = ev.convert(v, el.is_float) if el.size is not None else v
                self.declare(p.name, v, el.is_float)
            self.block(fdef.body, ctx)
            final = {pn: frame.scopes[0].get(pn) for pn in writeback}
        finally:
            self.frames.pop()
            self._call_stack.pop()
            self.template_values, self.typedefs = saved_values, saved_types
        for pn, caller_name in writeback.items():
            v = final.get(pn)
            if v is not None:
                self.set_var(caller_name, v, ctx)
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

