"""The kernel launches a host function makes, found by interpreting it for concrete scalar arguments.

The cost model prices one launch at a time, but a candidate's ``solve`` may launch several kernels,
launch inside loops whose trip count depends on ``n`` (multi-pass reductions, scans, sorts), size its
grid from ``dim3`` members, helper functions, ternaries, ``min``/``max``, ceil-div helpers, or from
the device's SM count. So instead of pattern-matching launch expressions this module *executes* the
host function with tree-sitter over the C++ subset such launchers use: integer/float variables,
``dim3``, ``for``/``while``/``do``/``if``, ``return``/``break``/``continue``, calls of host
functions defined in the same source (including templates), file-level constants and ``#define``s.
The result is the exact launch sequence for those scalar values.

Nothing is guessed. A value that cannot be known (a pointer, something copied back from the
device, an unknown library call) is stored as *unknown with the reason*; reading it in a launch
configuration, a branch condition or a loop bound that decides which launches happen raises
:class:`HostUnknownError` with that reason. Deliberate assumptions are returned with the launches:
CUDA runtime calls succeed (an estimate is only made for a candidate that ran correctly) and the
device queried is the modelled GPU (``cudaDeviceGetAttribute``/``cudaGetDeviceProperties`` answer with
its SM count and limits; ``cudaOccupancyMaxPotentialBlockSize`` uses ptxas registers and the
occupancy calculator for its architecture).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from veriforge.cuda.analysis.parse import AnalysisError, ParsedSource, node_text, parse_expression, parse_source

__all__ = ["HostLaunch", "HostRun", "HostUnknownError", "host_launches"]

MAX_STEPS = 200_000
MAX_LAUNCHES = 4096
HOST_LOOP_STEPS = 20_000
_LIBRARY = re.compile(r"\b(cub|thrust|cublas\w*|cublasLt\w*|cudnn\w*|cufft\w*|curand\w*|cusparse\w*|cutlass)\b")
MAX_DEPTH = 32

_INT_TYPES = ("int", "unsigned", "size_t", "long", "short", "char", "bool", "int8_t", "int16_t", "int32_t",
              "int64_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t", "ptrdiff_t", "uintptr_t", "intptr_t",
              "ssize_t", "cudaError_t")
_FLOAT_TYPES = ("float", "double")
_SIZEOF = {"float": 4, "double": 8, "int": 4, "unsigned": 4, "unsigned int": 4, "short": 2, "char": 1,
           "unsigned char": 1, "long": 8, "long long": 8, "size_t": 8, "half": 2, "__half": 2, "bool": 1,
           "__nv_bfloat16": 2, "float2": 8, "float4": 16, "int2": 8, "int4": 16, "double2": 16,
           "int8_t": 1, "uint8_t": 1, "int16_t": 2, "uint16_t": 2, "int32_t": 4, "uint32_t": 4,
           "int64_t": 8, "uint64_t": 8, "unsigned long long": 8, "half2": 4, "__half2": 4}
_HARMLESS = {"printf", "fprintf", "puts", "assert", "cudaDeviceSynchronize", "cudaStreamSynchronize",
             "cudaGetLastError", "cudaPeekAtLastError", "cudaFree", "cudaFreeAsync", "free", "malloc", "memset",
             "memcpy"}


class HostUnknownError(AnalysisError):
    """The launch sequence cannot be determined statically (the message says why)."""

    def __init__(self, message: str, root: str | None = None) -> None:
        super().__init__(message)
        self.root = root or message  # the first cause, without the chain of variables it flowed through


@dataclass(frozen=True)
class _Unknown:
    reason: str


class Dim3:
    """A ``dim3`` value (members default to 1, as in CUDA)."""

    def __init__(self, x: int = 1, y: int = 1, z: int = 1) -> None:
        self.x, self.y, self.z = int(x), int(y), int(z)

    def dims(self) -> tuple[int, int, int]:
        return (self.x, self.y, self.z)

    def copy(self) -> Dim3:
        return Dim3(self.x, self.y, self.z)


@dataclass(frozen=True)
class Pointer:
    """A device pointer: a synthetic byte address (256-byte aligned per allocation) and element size.

    ``param`` names the entry's pointer parameter it points into (None for a host-side cudaMalloc).
    """

    addr: int
    elem: int
    param: str | None = None
    base: int = 0

    def offset(self, elems: int) -> Pointer:
        return Pointer(self.addr + elems * self.elem, self.elem, self.param, self.base)


def _pointee_size(type_text: str) -> int:
    t = " ".join(type_text.replace("*", " ").replace("const", " ").replace("__restrict__", " ").split())
    return _SIZEOF.get(t, 1)


@dataclass
class _Struct:
    type: str
    fields: dict[str, Any]


@dataclass(frozen=True)
class HostLaunch:
    """One ``kernel<<<grid, block, smem>>>(args)`` the host code makes, in execution order."""

    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    smem: int
    args: tuple[Any, ...]  # evaluated argument values; None where unknown (pointers, device data)
    template_args: tuple[Any, ...]  # ints for value arguments, type names as strings
    line: int
    addresses: tuple[int | None, ...] = ()  # synthetic byte address of each pointer argument, else None
    #: for each pointer argument into one of the entry's pointer parameters: (that parameter, byte
    #: offset from its start); None for other arguments and host-side allocations
    bindings: tuple[tuple[str, int] | None, ...] = ()


@dataclass
class HostRun:
    launches: list[HostLaunch] = field(default_factory=list)
    assumptions: list[str] = field(default_factory=list)
    steps: int = 0


class _Return(Exception):
    def __init__(self, value: Any) -> None:
        self.value = value


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


def _type_kind(type_text: str) -> str:
    t = type_text.replace("const", "").replace("constexpr", "").replace("static", "").strip()
    if t == "dim3":
        return "dim3"
    if t in _FLOAT_TYPES:
        return "float"
    if t == "auto":
        return "auto"
    if any(t == k or t.startswith(k + " ") or t.endswith(" " + k) for k in _INT_TYPES) or t.startswith("unsigned"):
        return "int"
    return "other"


def _convert(value: Any, kind: str) -> Any:
    if isinstance(value, _Unknown):
        return value
    if kind in ("int", "float") and not isinstance(value, int | float):
        raise HostUnknownError(f"`{value!r}` is not a number")
    if kind == "int" and isinstance(value, int | float):
        return int(value)  # C truncates toward zero
    if kind == "float" and isinstance(value, int | float):
        return float(value)
    if kind == "dim3":
        return value.copy() if isinstance(value, Dim3) else Dim3(int(value))
    return value


def _number(text: str) -> int | float:
    t = text.replace("'", "").lower()
    if t.startswith(("0x", "0b")):
        return int(t.rstrip("ul"), 0)
    t = t.rstrip("ul")
    if any(c in t for c in ".e") or t.endswith("f"):
        return float(t.rstrip("f"))
    return int(t, 8) if len(t) > 1 and t.startswith("0") else int(t)


def _cdiv(a: Any, b: Any) -> Any:
    if isinstance(a, int) and isinstance(b, int):
        if b == 0:
            raise HostUnknownError("integer division by zero in host code")
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b >= 0) else -q
    return a / b


def _cmod(a: Any, b: Any) -> Any:
    if isinstance(a, int) and isinstance(b, int):
        if b == 0:
            raise HostUnknownError("integer modulo by zero in host code")
        return a - b * _cdiv(a, b)
    return math.fmod(a, b)


_BINOPS = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b, "/": _cdiv, "%": _cmod,
    "<<": lambda a, b: a << b, ">>": lambda a, b: a >> b, "&": lambda a, b: a & b, "|": lambda a, b: a | b,
    "^": lambda a, b: a ^ b, "<": lambda a, b: int(a < b), ">": lambda a, b: int(a > b),
    "<=": lambda a, b: int(a <= b), ">=": lambda a, b: int(a >= b), "==": lambda a, b: int(a == b),
    "!=": lambda a, b: int(a != b),
}
_MATH1 = {"ceil": math.ceil, "ceilf": math.ceil, "floor": math.floor, "floorf": math.floor, "sqrt": math.sqrt,
          "sqrtf": math.sqrt, "log2": math.log2, "log2f": math.log2, "abs": abs, "fabs": abs, "fabsf": abs,
          "llabs": abs, "exp2": math.exp2, "exp2f": math.exp2}
_MATH2 = {"min": min, "max": max, "fmin": min, "fmax": max, "fminf": min, "fmaxf": max, "pow": math.pow,
          "powf": math.pow}


def _pointer_op(op: str, a: Any, b: Any) -> Any:
    if isinstance(a, Pointer) and isinstance(b, int) and op in "+-":
        return a.offset(b if op == "+" else -b)
    if isinstance(b, Pointer) and isinstance(a, int) and op == "+":
        return b.offset(a)
    if isinstance(a, Pointer) and isinstance(b, Pointer):
        if op == "-" and a.elem == b.elem:
            return (a.addr - b.addr) // a.elem
        if op in ("==", "!=", "<", ">", "<=", ">="):
            return _BINOPS[op](a.addr, b.addr)
    if op in ("==", "!=") and (a == 0 or b == 0):
        return int(op == "!=")  # a valid allocation is never null
    raise HostUnknownError(f"pointer operation `{op}` is not interpreted")


def _launching(node: Any, parsed: ParsedSource, seen: frozenset[str] = frozenset()) -> bool:
    """Whether executing ``node`` may launch a kernel (directly or through a host function)."""
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type == "kernel_call_syntax":
            return True
        if n.type == "call_expression":
            fn = n.child_by_field_name("function")
            name = _callee_name(fn) if fn is not None else ""
            if name.startswith(("cudaLaunch", "cudaGraphLaunch")) or _LIBRARY.search(node_text(fn)):
                return True
            for f in parsed.functions.get(name, []):
                if not f.is_kernel and name not in seen and f.body is not None and _launching(
                        f.body, parsed, seen | {name}):
                    return True
        stack.extend(n.children)
    return False


def _callee_name(fn: Any) -> str:
    if fn.type == "template_function":
        fn = fn.child_by_field_name("name")
    text = node_text(fn)
    return text.split("::")[-1]


def _written(node: Any) -> set[str]:
    """Identifiers a statement may write: assignment targets, ``++``/``--`` operands, ``&x`` arguments."""
    out: set[str] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        target = None
        if n.type == "assignment_expression":
            target = n.child_by_field_name("left")
        elif n.type == "update_expression":
            target = n.child_by_field_name("argument")
        elif n.type == "pointer_expression" and node_text(n).startswith("&"):
            target = n.child_by_field_name("argument")
        elif n.type == "call_expression":
            fn = n.child_by_field_name("function")
            if fn is not None and _callee_name(fn) == "swap":
                args = n.child_by_field_name("arguments")
                out.update(node_text(a) for a in (args.named_children if args else []))
        while target is not None and target.type in ("field_expression", "subscript_expression"):
            target = target.child_by_field_name("argument")
        if target is not None and target.type == "identifier":
            out.add(node_text(target))
        stack.extend(n.children)
    return out


class _Interpreter:
    def __init__(self, parsed: ParsedSource, gpu: Any, run: HostRun, max_steps: int, max_launches: int) -> None:
        self.parsed = parsed
        self.gpu = gpu
        self.run = run
        self.max_steps = max_steps
        self.max_launches = max_launches
        self.scopes: list[dict[str, list[Any]]] = []  # name -> [value, kind]
        self.globals: dict[str, list[Any]] | None = None
        self.depth = 0
        self.line = 0
        self.inputs: Mapping[str, Any] = {}
        self.next_alloc = 1 << 40

    # ----- environment -------------------------------------------------------------------------------------
    def _file_globals(self) -> dict[str, list[Any]]:
        if self.globals is None:
            self.globals = {}
            saved, self.scopes = self.scopes, [self.globals]
            for decl in self.parsed.file_decls:
                text = node_text(decl)
                if "__device__" in text or "__constant__" in text or "__shared__" in text:
                    continue
                self._declaration(decl)
            self.scopes = saved
        return self.globals

    def _cell(self, name: str) -> list[Any] | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return self._file_globals().get(name)

    def lookup(self, name: str) -> Any:
        cell = self._cell(name)
        if cell is not None:
            value = cell[0]
        elif name in self.parsed.macros and self.parsed.macros[name].params is None:
            body = self.parsed.macros[name].body
            expr = parse_expression(body) if body else None
            if expr is None:
                raise HostUnknownError(f"macro {name} (`{body}`) is not an expression")
            value = self.eval(expr)
        elif name in ("cudaSuccess", "NULL", "nullptr", "false"):
            value = 0
        elif name == "true":
            value = 1
        else:
            raise HostUnknownError(f"`{name}` is not known in the host code")
        if isinstance(value, _Unknown):
            raise HostUnknownError(f"`{name}` is not known statically ({value.reason})", value.reason)
        return value

    def declare(self, name: str, value: Any, kind: str) -> None:
        self.scopes[-1][name] = [_convert(value, kind), kind]

    def assign(self, name: str, value: Any) -> None:
        cell = self._cell(name)
        if cell is None:
            self.scopes[-1][name] = [value, "auto"]
            return
        cell[0] = _convert(value, cell[1]) if not isinstance(value, _Unknown) else value

    def forget(self, names: set[str], reason: str) -> None:
        for name in names:
            cell = self._cell(name)
            if cell is not None:
                cell[0] = _Unknown(reason)

    def step(self) -> None:
        self.run.steps += 1
        if self.run.steps > self.max_steps:
            raise HostUnknownError(f"host code ran more than {self.max_steps} steps (loop bound not evaluated)")

    # ----- statements ------------------------------------------------------------------------------------
    def exec(self, node: Any) -> None:
        self.step()
        self.line = int(node.start_point[0]) + 1
        t = node.type
        if t == "compound_statement":
            self.scopes.append({})
            try:
                for child in node.named_children:
                    self.exec(child)
            finally:
                self.scopes.pop()
        elif t == "declaration":
            self._declaration(node)
        elif t == "expression_statement":
            if node.named_child_count:
                self._guarded(node, lambda: self.eval(node.named_children[0]))
        elif t == "if_statement":
            self._if(node)
        elif t == "for_statement":
            self._for(node)
        elif t == "while_statement":
            self._while(node, do=False)
        elif t == "do_statement":
            self._while(node, do=True)
        elif t == "return_statement":
            value = node.named_children[0] if node.named_child_count else None
            raise _Return(self.eval(value) if value is not None else None)
        elif t == "break_statement":
            raise _Break
        elif t == "continue_statement":
            raise _Continue
        elif t in ("comment", "empty_statement", "type_definition", "using_declaration", "alias_declaration",
                   "static_assert_declaration", "preproc_call"):
            return
        elif _launching(node, self.parsed):
            raise HostUnknownError(f"line {self.line}: `{t}` statements that launch kernels are not interpreted")
        else:
            self.forget(_written(node), f"assigned in a `{t}` statement that is not interpreted")

    def _guarded(self, node: Any, action: Any) -> None:
        """Run ``action``; an unknown that cannot affect launches only makes what it writes unknown."""
        try:
            action()
        except HostUnknownError as exc:
            if _launching(node, self.parsed):
                raise
            self.forget(_written(node), exc.root)

    def _declaration(self, node: Any) -> None:
        type_node = node.child_by_field_name("type")
        type_text = node_text(type_node) if type_node is not None else "auto"
        kind = _type_kind(type_text)
        for decl in node.children_by_field_name("declarator"):
            name_node, value_node = decl, None
            if decl.type == "init_declarator":
                name_node, value_node = decl.child_by_field_name("declarator"), decl.child_by_field_name("value")
            if name_node is None:
                continue
            if name_node.type == "function_declarator" and kind in ("dim3", "int", "float"):
                # `dim3 block(TILE, TILE);` parses as a function declaration (C++'s most vexing parse)
                plist = name_node.child_by_field_name("parameters")
                exprs = [parse_expression(node_text(p)) for p in (plist.named_children if plist else [])]
                name = node_text(name_node.child_by_field_name("declarator"))
                try:
                    if any(e is None for e in exprs):
                        raise HostUnknownError(f"cannot read the constructor arguments of `{name}`")
                    values = [self.eval(e) for e in exprs]
                    value = Dim3(*[int(v) for v in values]) if kind == "dim3" else values[0]
                except HostUnknownError as exc:
                    value = _Unknown(exc.root)
                self.declare(name, value, kind)
                continue
            if name_node.type != "identifier":
                ident = name_node
                while ident is not None and ident.type != "identifier":
                    ident = ident.child_by_field_name("declarator")
                if ident is None:
                    continue
                value = _Unknown(f"`{node_text(ident)}` is a reference or array")
                if name_node.type == "pointer_declarator":
                    value = _Unknown(f"pointer `{node_text(ident)}` has no known address")
                    if value_node is not None:
                        try:
                            v = self.eval(value_node)
                            if isinstance(v, Pointer):
                                value = Pointer(v.addr, _pointee_size(type_text), v.param, v.base)
                        except HostUnknownError as exc:
                            if _launching(value_node, self.parsed):
                                raise
                            value = _Unknown(exc.root)
                self.declare(node_text(ident), value, "other")
                continue
            name = node_text(name_node)
            try:
                value = self._initial(kind, type_text, value_node)
            except HostUnknownError as exc:
                if value_node is not None and _launching(value_node, self.parsed):
                    raise
                value = _Unknown(exc.root)
            self.declare(name, value, kind)

    def _initial(self, kind: str, type_text: str, value_node: Any) -> Any:
        if value_node is None:
            if kind == "dim3":
                return Dim3()
            if type_text == "cudaDeviceProp":
                return _Struct("cudaDeviceProp", {})
            return _Unknown("declared without an initial value")
        if value_node.type in ("argument_list", "initializer_list"):
            values = [self.eval(a) for a in value_node.named_children]
            if kind == "dim3":
                return Dim3(*[int(v) for v in values])
            if len(values) == 1:
                return values[0]
            if not values:
                return 0
            raise HostUnknownError(f"cannot evaluate the initializer `{node_text(value_node)}`")
        return self.eval(value_node)

    def _cond(self, node: Any) -> bool:
        cond = node.child_by_field_name("condition")
        if cond is None:
            return True
        if cond.type == "condition_clause":
            value = cond.child_by_field_name("value")
            init = cond.child_by_field_name("initializer")
            if init is not None:
                self.exec(init) if init.type == "declaration" else self.eval(init)
            cond = value if value is not None else cond.named_children[-1]
        return bool(self.eval(cond))

    def _if(self, node: Any) -> None:
        try:
            taken = self._cond(node)
        except HostUnknownError as exc:
            if _launching(node, self.parsed) or any(n.type == "return_statement" for n in _walk(node)):
                raise HostUnknownError(f"line {self.line}: which kernels run depends on a condition that is "
                                       f"not known statically: {exc}") from None
            self.forget(_written(node), exc.root)
            return
        branch = node.child_by_field_name("consequence") if taken else node.child_by_field_name("alternative")
        if branch is not None:
            if branch.type == "else_clause":
                branch = branch.named_children[0] if branch.named_child_count else None
            if branch is not None:
                self.exec(branch)

    def _loop_cond(self, node: Any, loop: Any) -> bool:
        try:
            return self._cond(node) if node is loop else bool(self.eval(node))
        except HostUnknownError as exc:
            raise HostUnknownError(f"line {int(loop.start_point[0]) + 1}: the loop's trip count is not known "
                                   f"statically: {exc}") from None

    def _for(self, node: Any) -> None:
        self._loop(node, lambda: self._for_run(node))

    def _loop(self, node: Any, run: Any) -> None:
        """A loop that launches nothing (a host-side fill, a search) may be skipped: if it cannot be
        interpreted within :data:`HOST_LOOP_STEPS` steps, only the variables it writes become unknown."""
        if _launching(node, self.parsed):
            run()
            return
        steps, limit = self.run.steps, self.max_steps
        self.max_steps = min(limit, steps + HOST_LOOP_STEPS)
        try:
            run()
        except HostUnknownError as exc:
            self.run.steps = steps
            self.forget(_written(node), exc.root)
        finally:
            self.max_steps = limit

    def _for_run(self, node: Any) -> None:
        self.scopes.append({})
        try:
            init = node.child_by_field_name("initializer")
            if init is not None:
                self.exec(init) if init.type == "declaration" else self.eval(init)
            cond = node.child_by_field_name("condition")
            update = node.child_by_field_name("update")
            body = node.child_by_field_name("body")
            while cond is None or self._loop_cond(cond, node):
                self.step()
                try:
                    if body is not None:
                        self.exec(body)
                except _Break:
                    break
                except _Continue:
                    pass
                if update is not None:
                    self.eval(update)
        finally:
            self.scopes.pop()

    def _while(self, node: Any, do: bool) -> None:
        self._loop(node, lambda: self._while_run(node, do))

    def _while_run(self, node: Any, do: bool) -> None:
        body = node.child_by_field_name("body")
        first = True
        while (do and first) or self._loop_cond(node, node):
            first = False
            self.step()
            try:
                self.exec(body)
            except _Break:
                break
            except _Continue:
                pass

    # ----- expressions ----------------------------------------------------------------------------------
    def eval(self, node: Any) -> Any:
        try:
            return self._eval(node)
        except (TypeError, ValueError, ZeroDivisionError, OverflowError, AttributeError, KeyError) as exc:
            raise HostUnknownError(f"line {int(node.start_point[0]) + 1}: cannot evaluate `{node_text(node)}`: "
                                   f"{type(exc).__name__}") from None

    def _eval(self, node: Any) -> Any:
        t = node.type
        if t == "number_literal":
            return _number(node_text(node))
        if t in ("identifier", "type_identifier"):  # a template argument `k<B>` parses B as a type
            return self.lookup(node_text(node))
        if t in ("true", "false", "null", "nullptr"):
            return 1 if t == "true" else 0
        if t == "parenthesized_expression":
            return self.eval(node.named_children[-1])
        if t == "binary_expression":
            op = node_text(node.child_by_field_name("operator"))
            left = self.eval(node.child_by_field_name("left"))
            if op == "&&":
                return int(bool(left) and bool(self.eval(node.child_by_field_name("right"))))
            if op == "||":
                return int(bool(left) or bool(self.eval(node.child_by_field_name("right"))))
            right = self.eval(node.child_by_field_name("right"))
            if isinstance(left, Pointer) or isinstance(right, Pointer):
                return _pointer_op(op, left, right)
            if op not in _BINOPS:
                raise HostUnknownError(f"operator {op} is not interpreted")
            return _BINOPS[op](left, right)
        if t == "unary_expression":
            op = node_text(node.child_by_field_name("operator"))
            v = self.eval(node.child_by_field_name("argument"))
            return {"-": lambda: -v, "+": lambda: v, "!": lambda: int(not v), "~": lambda: ~v}[op]()
        if t == "conditional_expression":
            branch = "consequence" if self.eval(node.child_by_field_name("condition")) else "alternative"
            return self.eval(node.child_by_field_name(branch))
        if t == "cast_expression":
            return self._cast(self.eval(node.child_by_field_name("value")), node_text(node.child_by_field_name("type")))
        if t == "sizeof_expression":
            what = node.child_by_field_name("type") or node.child_by_field_name("value")
            name = " ".join(node_text(what).replace("(", " ").replace(")", " ").split())
            if name in _SIZEOF:
                return _SIZEOF[name]
            raise HostUnknownError(f"sizeof({name}) is not known")
        if t == "field_expression":
            obj = self.eval(node.child_by_field_name("argument"))
            fld = node_text(node.child_by_field_name("field"))
            if isinstance(obj, Dim3) and fld in ("x", "y", "z"):
                return getattr(obj, fld)
            if isinstance(obj, _Struct) and fld in obj.fields:
                return obj.fields[fld]
            raise HostUnknownError(f"member `{node_text(node)}` is not known")
        if t == "assignment_expression":
            return self._assignment(node)
        if t == "update_expression":
            target = node.child_by_field_name("argument")
            name = node_text(target)
            old = self.lookup(name)
            step = 1 if "++" in node_text(node) else -1
            new = old.offset(step) if isinstance(old, Pointer) else old + step
            self.assign(name, new)
            return new if node_text(node).startswith(("++", "--")) else old
        if t == "comma_expression":
            self.eval(node.child_by_field_name("left"))
            return self.eval(node.child_by_field_name("right"))
        if t == "call_expression":
            return self._call(node)
        if t == "char_literal":
            text = node_text(node)
            return ord(text[1]) if len(text) == 3 else 0
        raise HostUnknownError(f"`{node_text(node)}` ({t}) is not interpreted")

    def _cast(self, value: Any, type_text: str) -> Any:
        if isinstance(value, Pointer):
            if "*" in type_text:
                return Pointer(value.addr, _pointee_size(type_text), value.param, value.base)
            if _type_kind(type_text) == "int":
                self._assume("pointer arguments are distinct cudaMalloc allocations (aligned to 256 bytes)")
                return value.addr
            raise HostUnknownError(f"cast of a pointer to {type_text} is not interpreted")
        if "*" in type_text:
            raise HostUnknownError(f"cast of {value!r} to a pointer is not interpreted")
        return _convert(value, _type_kind(type_text))

    def _assignment(self, node: Any) -> Any:
        left = node.child_by_field_name("left")
        op = node_text(node.child_by_field_name("operator"))
        value = self.eval(node.child_by_field_name("right"))
        if left.type == "field_expression":
            obj = self.eval(left.child_by_field_name("argument"))
            fld = node_text(left.child_by_field_name("field"))
            if isinstance(obj, Dim3) and fld in ("x", "y", "z"):
                if op != "=":
                    value = _BINOPS[op[:-1]](getattr(obj, fld), value)
                setattr(obj, fld, int(value))
                return value
            raise HostUnknownError(f"cannot assign to `{node_text(left)}`")
        if left.type != "identifier":
            raise HostUnknownError(f"cannot assign to `{node_text(left)}`")
        name = node_text(left)
        if op != "=":
            old = self.lookup(name)
            value = (_pointer_op(op[:-1], old, value) if isinstance(old, Pointer) or isinstance(value, Pointer)
                     else _BINOPS[op[:-1]](old, value))
        if isinstance(value, Dim3):
            value = value.copy()
        self.assign(name, value)
        return value

    def _out_arg(self, node: Any) -> str:
        if node.type == "pointer_expression" and node_text(node).startswith("&"):
            return node_text(node.child_by_field_name("argument"))
        raise HostUnknownError(f"expected `&variable`, got `{node_text(node)}`")

    def _call(self, node: Any) -> Any:
        fn = node.child_by_field_name("function")
        args_node = node.child_by_field_name("arguments")
        args = list(args_node.named_children) if args_node is not None else []
        config = next((c for c in node.children if c.type == "kernel_call_syntax"), None)
        if config is not None:
            return self._launch(fn, config, args, node)
        name = _callee_name(fn)
        if name in ("reinterpret_cast", "static_cast", "const_cast") and fn.type == "template_function" and args:
            targs = fn.child_by_field_name("arguments")
            return self._cast(self.eval(args[0]), node_text(targs)[1:-1])
        if name == "dim3" and len(args) <= 3:
            return Dim3(*[int(self.eval(a)) for a in args])
        if name in _MATH2 and len(args) == 2:
            return _MATH2[name](self.eval(args[0]), self.eval(args[1]))
        if name in _MATH1 and len(args) == 1:
            value = _MATH1[name](self.eval(args[0]))
            return float(value) if name.startswith(("ceil", "floor")) else value
        if name == "swap" and len(args) == 2:
            a, b = (self._cell(node_text(x)) for x in args)
            if a is None or b is None:
                raise HostUnknownError(f"cannot swap `{node_text(args_node)}`")
            a[0], b[0] = b[0], a[0]
            return None
        gpu_value = self._device_query(name, args)
        if gpu_value is not None:
            return gpu_value
        defs = [f for f in self.parsed.functions.get(name, []) if not f.is_kernel and f.body is not None]
        if defs:
            return self._inline(defs, fn, args)
        if name.startswith(("cudaLaunch", "cudaGraphLaunch")) or _LIBRARY.search(node_text(fn)):
            raise HostUnknownError(f"line {self.line}: `{node_text(fn)}` launches GPU work this reading does not "
                                   "price (only <<<...>>> launches are interpreted)")
        if name.startswith(("cudaMemset", "cudaMemcpy")):
            self._assume(f"{name} is not priced (only kernel launches are)")
        if name in _HARMLESS or name.startswith("cuda"):
            for a in args:  # what a runtime call writes through a pointer is device-side data we do not know
                if a.type == "pointer_expression" and node_text(a).startswith("&"):
                    self.forget({node_text(a.child_by_field_name("argument"))}, f"written by {name}()")
            return 0  # cudaSuccess: estimates are only made for candidates that ran correctly
        raise HostUnknownError(f"line {self.line}: call of `{name}` is not interpreted (not defined in the source)")

    def _device_query(self, name: str, args: list[Any]) -> Any:
        from veriforge.cuda.arch import get_gpu

        gpu = get_gpu(self.gpu) if isinstance(self.gpu, str) else self.gpu
        a = gpu.arch_info
        props = {"multiProcessorCount": gpu.sm_count, "maxThreadsPerBlock": a.max_threads_per_block,
                 "maxThreadsPerMultiProcessor": a.max_threads_per_sm, "warpSize": a.warp_size,
                 "sharedMemPerBlock": a.smem_per_block_default, "sharedMemPerBlockOptin": a.smem_per_block_optin,
                 "sharedMemPerMultiprocessor": a.smem_per_sm, "regsPerBlock": a.max_regs_per_block,
                 "regsPerMultiprocessor": a.regs_per_sm, "l2CacheSize": gpu.l2_bytes, "major": a.major,
                 "minor": a.minor, "maxBlocksPerMultiProcessor": a.max_blocks_per_sm}
        attrs = {"cudaDevAttrMultiProcessorCount": "multiProcessorCount",
                 "cudaDevAttrMaxThreadsPerBlock": "maxThreadsPerBlock",
                 "cudaDevAttrMaxThreadsPerMultiProcessor": "maxThreadsPerMultiProcessor",
                 "cudaDevAttrWarpSize": "warpSize", "cudaDevAttrMaxSharedMemoryPerBlock": "sharedMemPerBlock",
                 "cudaDevAttrMaxSharedMemoryPerBlockOptin": "sharedMemPerBlockOptin",
                 "cudaDevAttrMaxSharedMemoryPerMultiprocessor": "sharedMemPerMultiprocessor",
                 "cudaDevAttrL2CacheSize": "l2CacheSize", "cudaDevAttrComputeCapabilityMajor": "major",
                 "cudaDevAttrComputeCapabilityMinor": "minor",
                 "cudaDevAttrMaxBlocksPerMultiprocessor": "maxBlocksPerMultiProcessor"}
        if name in ("cudaMalloc", "cudaMallocAsync", "cudaMallocManaged") and args:
            self.next_alloc += 1 << 32
            self.assign(self._out_arg(args[0]), Pointer(self.next_alloc, 1, None, self.next_alloc))
            return 0
        if name in ("cudaMemcpy", "cudaMemcpyAsync") and len(args) >= 3:
            self._assume(f"{name} is not priced (only kernel launches are)")
            return self._memcpy(args)
        if name == "cudaGetDevice" and args:
            self.assign(self._out_arg(args[0]), 0)
            return 0
        if name == "cudaGetDeviceCount" and args:
            self.assign(self._out_arg(args[0]), 1)
            return 0
        if name == "cudaDeviceGetAttribute" and len(args) >= 2:
            attr = node_text(args[1]).split("::")[-1]
            target = self._out_arg(args[0])
            if attr not in attrs:
                self.forget({target}, f"device attribute {attr} is not modelled")
                return 0
            self.assign(target, props[attrs[attr]])
            self._assume(f"the device is the modelled {gpu.name}: {attr} = {props[attrs[attr]]}")
            return 0
        if name == "cudaGetDeviceProperties" and args:
            self.assign(self._out_arg(args[0]), _Struct("cudaDeviceProp", dict(props)))
            self._assume(f"the device is the modelled {gpu.name} (cudaGetDeviceProperties: "
                         f"{gpu.sm_count} SMs, {a.max_threads_per_block} threads per block)")
            return 0
        if name in ("cudaOccupancyMaxPotentialBlockSize", "cudaOccupancyMaxActiveBlocksPerMultiprocessor"):
            return self._occupancy_query(name, args, gpu)
        return None

    def _memcpy(self, args: list[Any]) -> int:
        """A copy of one element of an *input* array to a host variable reads the real input value."""
        try:
            dst = self._out_arg(args[0])
        except HostUnknownError:
            return 0  # a copy into device memory or a host buffer: no host scalar changes
        try:
            src, count = self.eval(args[1]), int(self.eval(args[2]))
            if not isinstance(src, Pointer) or src.param not in self.inputs:
                raise HostUnknownError(f"`{dst}` is copied from device data that is not a task input")
            array = self.inputs[src.param]
            index, rem = divmod(src.addr - src.base, array.itemsize)
            if rem or count != array.itemsize or not 0 <= index < array.size:
                raise HostUnknownError(f"copy into `{dst}` is not one whole element of input {src.param}")
            value = array.reshape(-1)[index].item()
        except HostUnknownError as exc:
            self.forget({dst}, exc.root)
            return 0
        self.assign(dst, value)
        self._assume(f"`{dst}` read from the input {src.param}[{index}] = {value} (cudaMemcpy)")
        return 0

    def _occupancy_query(self, name: str, args: list[Any], gpu: Any) -> int:
        from veriforge.cuda import occupancy
        from veriforge.cuda.analysis.resources import ptxas_resources

        kernel_arg = args[2] if name == "cudaOccupancyMaxPotentialBlockSize" else args[1]
        kernel = _callee_name(kernel_arg).lstrip("&(").strip()
        res, why = ptxas_resources(self.parsed.text, kernel, gpu.arch, None, True)
        if res is None:
            raise HostUnknownError(f"{name}({kernel}): {why}")
        if name == "cudaOccupancyMaxPotentialBlockSize":
            smem = int(self.eval(args[3])) if len(args) > 3 else 0
            limit = int(self.eval(args[4])) if len(args) > 4 else 0
            sug = occupancy.max_potential_block_size(gpu.name, res["registers"], res["smem_static"], smem,
                                                     block_size_limit=limit or None)
            self.assign(self._out_arg(args[0]), int(sug.min_grid_size))
            self.assign(self._out_arg(args[1]), int(sug.block_size))
            self._assume(f"{name}({kernel}) answered for the modelled {gpu.name} with ptxas registers "
                         f"({res['registers']}/thread): block {sug.block_size}, min grid {sug.min_grid_size}")
            return 0
        block = int(self.eval(args[2]))
        smem = int(self.eval(args[3])) if len(args) > 3 else 0
        occ = occupancy.theoretical(gpu.arch, block, res["registers"], res["smem_static"], smem)
        self.assign(self._out_arg(args[0]), int(occ.active_blocks_per_sm))
        self._assume(f"{name}({kernel}, {block}) answered for the modelled {gpu.name}: "
                     f"{occ.active_blocks_per_sm} blocks/SM")
        return 0

    def _assume(self, text: str) -> None:
        if text not in self.run.assumptions:
            self.run.assumptions.append(text)

    def _template_values(self, fn: Any) -> list[Any]:
        if fn.type != "template_function":
            return []
        out: list[Any] = []
        for a in fn.child_by_field_name("arguments").named_children:
            text = node_text(a)
            try:
                value = self.eval(a.named_children[0] if a.type == "type_descriptor" and a.named_child_count == 1
                                  and a.named_children[0].type == "type_identifier" and self._cell(text) is not None
                                  else a)
            except HostUnknownError:
                if a.type == "type_descriptor":
                    value = text
                else:
                    raise
            out.append(value)
        return out

    def _launch(self, fn: Any, config: Any, args: list[Any], node: Any) -> int:
        kernel = _callee_name(fn)
        line = int(node.start_point[0]) + 1
        cfg = config.named_children
        if len(cfg) < 2:
            raise HostUnknownError(f"line {line}: launch of {kernel} has no block size")
        try:
            grid, block = (self._dims(self.eval(c)) for c in cfg[:2])
            smem = int(self.eval(cfg[2])) if len(cfg) > 2 else 0
            tvals = tuple(self._template_values(fn))
        except HostUnknownError as exc:
            raise HostUnknownError(f"line {line}: launch configuration of {kernel}: {exc}") from None
        values, addresses, values_raw = [], [], []
        for a in args:
            try:
                v = self.eval(a)
            except HostUnknownError:
                v = None
            values.append(v if isinstance(v, int | float) else None)
            addresses.append(v.addr if isinstance(v, Pointer) else None)
            values_raw.append(v)
        if len(self.run.launches) >= self.max_launches:
            raise HostUnknownError(f"more than {self.max_launches} kernel launches")
        bindings = tuple((v.param, v.addr - v.base) if isinstance(v, Pointer) and v.param is not None else None
                         for v in values_raw)
        self.run.launches.append(HostLaunch(kernel, grid, block, smem, tuple(values), tvals, line, tuple(addresses),
                                            bindings))
        return 0

    @staticmethod
    def _dims(value: Any) -> tuple[int, int, int]:
        if isinstance(value, Dim3):
            return value.dims()
        if isinstance(value, int | float):
            return (int(value), 1, 1)
        raise HostUnknownError(f"`{value!r}` is not a launch dimension")

    def _inline(self, defs: list[Any], fn: Any, args: list[Any]) -> Any:
        fdef = next((f for f in defs if len(f.params) == len(args)), None)
        if fdef is None:
            raise HostUnknownError(f"no overload of {fdef or defs[0].name}() takes {len(args)} arguments")
        if self.depth >= MAX_DEPTH:
            raise HostUnknownError(f"host call depth above {MAX_DEPTH} (recursion is not interpreted)")
        frame: dict[str, list[Any]] = {}
        for tp, value in zip(fdef.template, self._template_values(fn), strict=False):
            frame[tp.name] = [value, "auto"]
        for p, a in zip(fdef.params, args, strict=True):
            kind = "other" if p.is_pointer or p.is_ref or "&" in p.type_text else _type_kind(p.type_text)
            try:
                value = self.eval(a)
            except HostUnknownError as exc:
                value = _Unknown(exc.root)
            if kind == "other" and not (p.is_pointer and isinstance(value, Pointer)):
                value = _Unknown(f"`{p.name}` is passed by reference")
            frame[p.name] = [_convert(value, kind) if kind != "other" else value, kind]
        saved, self.scopes = self.scopes, [frame]
        self.depth += 1
        try:
            self.exec(fdef.body)
        except _Return as ret:
            return ret.value
        finally:
            self.scopes = saved
            self.depth -= 1
        return None


def _walk(node: Any) -> Any:
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(n.children)


def host_launches(source: str | ParsedSource, entry: str, scalars: Mapping[str, Any], gpu: Any = "H100-SXM",
                  max_steps: int = MAX_STEPS, max_launches: int = MAX_LAUNCHES,
                  inputs: Mapping[str, Any] | None = None) -> HostRun:
    """Execute host function ``entry`` for the scalar argument values ``scalars``; its launches in order.

    Pointer parameters get distinct synthetic 256-byte-aligned addresses (what cudaMalloc
    guarantees); ``inputs`` (read-only input arrays by parameter name) lets ``cudaMemcpy`` from
    them to a host variable read the real value (e.g. ``nnz = row_ptr[rows]``). Scalars missing
    from ``scalars`` are unknown. Raises
    :class:`HostUnknownError` when the launch sequence cannot be determined, with the reason.
    """
    parsed = source if isinstance(source, ParsedSource) else parse_source(source)
    defs = [f for f in parsed.functions.get(entry, []) if not f.is_kernel and f.body is not None]
    if not defs:
        raise HostUnknownError(f"no definition of host function {entry}() found")
    fdef = defs[0]
    run = HostRun()
    it = _Interpreter(parsed, gpu, run, max_steps, max_launches)
    it.inputs = inputs if inputs is not None else {}  # a lazy mapping stays lazy: read only when host code reads
    frame: dict[str, list[Any]] = {}
    for i, p in enumerate(fdef.params):
        kind = "other" if p.is_pointer else _type_kind(p.type_text)
        if p.is_pointer:
            base = (i + 1) << 32
            frame[p.name] = [Pointer(base, _pointee_size(p.type_text), p.name, base), kind]
        elif p.name in scalars and kind != "other":
            frame[p.name] = [_convert(scalars[p.name], kind), kind]
        else:
            frame[p.name] = [_Unknown(f"parameter `{p.name}` has no static value"), kind]
    it.scopes = [frame]
    try:
        it.exec(fdef.body)
    except _Return:
        pass
    except (_Break, _Continue):
        raise HostUnknownError("break/continue outside a loop") from None
    except RecursionError:
        raise HostUnknownError("host code nests too deeply to interpret") from None
    except (TypeError, ValueError, ZeroDivisionError, OverflowError, AttributeError) as exc:
        raise HostUnknownError(f"line {it.line}: cannot evaluate host code: {type(exc).__name__}: {exc}") from None
    return run
