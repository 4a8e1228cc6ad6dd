"""Find the ``extern "C"`` functions of a CUDA source and what each parameter means to Python.

The binding's whole contract is the C signature: a pointer parameter takes a tensor whose dtype
matches the pointee, a scalar parameter takes a Python number converted to exactly that C type.
Both back-ends (CPU runtime, PyTorch extension) must agree on it, so the signature is read once,
here, from the source text — without a compiler, because the GPU back-end must generate its
wrappers *before* anything is compiled. Only the ``extern "C"`` surface is parsed; it is plain C
(no templates, no overloads), which is what makes a text parser sufficient.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from veriforge.cuda.source_reader import FunctionDef, blank, functions, line_of
from veriforge.errors import CudaError

__all__ = [
    "BindingSignatureError",
    "CFunction",
    "CParam",
    "parse_extern_c",
]


class BindingSignatureError(CudaError, ValueError):
    """An ``extern "C"`` function has a signature the binding cannot pass from Python."""


# Base C type -> (torch dtype name, python kind). kind: "int" | "uint" | "float" | "bool" | "half".
_BASE_TYPES: dict[str, tuple[str, str]] = {
    "float": ("float32", "float"),
    "double": ("float64", "float"),
    "int": ("int32", "int"),
    "signed int": ("int32", "int"),
    "signed": ("int32", "int"),
    "int32_t": ("int32", "int"),
    "unsigned int": ("uint32", "uint"),
    "unsigned": ("uint32", "uint"),
    "uint32_t": ("uint32", "uint"),
    "long long": ("int64", "int"),
    "long long int": ("int64", "int"),
    "signed long long": ("int64", "int"),
    "long": ("int64", "int"),
    "long int": ("int64", "int"),
    "int64_t": ("int64", "int"),
    "ptrdiff_t": ("int64", "int"),
    "unsigned long long": ("uint64", "uint"),
    "unsigned long long int": ("uint64", "uint"),
    "unsigned long": ("uint64", "uint"),
    "uint64_t": ("uint64", "uint"),
    "size_t": ("uint64", "uint"),
    "short": ("int16", "int"),
    "short int": ("int16", "int"),
    "int16_t": ("int16", "int"),
    "unsigned short": ("uint16", "uint"),
    "uint16_t": ("uint16", "uint"),
    "char": ("int8", "int"),
    "signed char": ("int8", "int"),
    "int8_t": ("int8", "int"),
    "unsigned char": ("uint8", "uint"),
    "uint8_t": ("uint8", "uint"),
    "bool": ("bool", "bool"),
    "half": ("float16", "half"),
    "__half": ("float16", "half"),
    "__nv_bfloat16": ("bfloat16", "half"),
    "nv_bfloat16": ("bfloat16", "half"),
    "void": ("", "void"),
}
_BITS = {"int8": 8, "uint8": 8, "int16": 16, "uint16": 16, "int32": 32, "uint32": 32,
         "int64": 64, "uint64": 64}
_QUALIFIERS = {"const", "volatile", "__restrict__", "__restrict", "restrict", "struct", "__host__",
               "__device__", "__forceinline__", "inline", "static", "__inline__"}


@dataclass(frozen=True)
class CParam:
    """One parameter of an ``extern "C"`` function.

    ``base`` is the normalised C base type (``"float"``, ``"unsigned int"``); ``pointer`` says
    whether Python passes a tensor; ``dtype`` is the torch dtype name a tensor must have (empty for
    ``void*``, which takes any dtype); ``const`` is the pointee's constness (a const pointer
    promises not to write, so the CPU back-end need not copy it back).
    """

    name: str
    ctype: str
    base: str
    pointer: bool
    const: bool
    dtype: str
    kind: str

    @property
    def bits(self) -> int:
        """Width of an integer scalar (for range checks)."""
        return _BITS.get(self.dtype, 0)

    def describe(self) -> str:
        return f"{self.ctype} {self.name}".strip()


@dataclass(frozen=True)
class CFunction:
    """An ``extern "C"`` function: what Python calls."""

    name: str
    return_type: str
    params: tuple[CParam, ...]
    line: int
    problem: str = ""  # why Python cannot call it ("" when it can)

    @property
    def signature(self) -> str:
        return f"{self.return_type} {self.name}({', '.join(p.describe() for p in self.params)})"


def _normalise_base(words: list[str]) -> str:
    return " ".join(w for w in words if w not in _QUALIFIERS)


def _parse_param(text: str, index: int, fname: str) -> CParam:
    raw = " ".join(text.split())
    if "(" in raw or "[" in raw:
        raise BindingSignatureError(
            f"function '{fname}': parameter {index} '{raw}' is a function pointer or array; "
            f"the binding passes only pointers to scalars and plain scalars")
    spaced = raw.replace("*", " * ").replace("&", " & ")
    tokens = spaced.split()
    if "&" in tokens:
        raise BindingSignatureError(f"function '{fname}': parameter {index} '{raw}' is a C++ reference; "
                                    f"extern \"C\" functions take pointers")
    stars = tokens.count("*")
    # The name is the last identifier when there is more than the type (it may be omitted).
    name = ""
    body = [t for t in tokens if t != "*"]
    if len(body) >= 2 and body[-1] not in _QUALIFIERS and body[-1] not in _BASE_TYPES \
            and not tokens[-1] == "*":
        name = body[-1]
        cut = len(tokens) - 1 - tokens[::-1].index(name)
        tokens = tokens[:cut]
    first_star = tokens.index("*") if "*" in tokens else len(tokens)
    base_words = tokens[:first_star]
    const = "const" in base_words
    base = _normalise_base(base_words)
    if base not in _BASE_TYPES:
        raise BindingSignatureError(
            f"function '{fname}': parameter {index} '{raw}' has type '{base}', which the binding cannot "
            f"pass; use a standard C scalar type (float, double, int, int64_t, unsigned, bool, __half, ...) "
            f"or a pointer to one")
    if stars > 1:
        raise BindingSignatureError(f"function '{fname}': parameter {index} '{raw}' is a pointer to a "
                                    f"pointer; pass flat buffers")
    dtype, kind = _BASE_TYPES[base]
    if stars == 0:
        if kind == "void":
            if len(tokens) == 1 and not name:
                raise _VoidParams()
            raise BindingSignatureError(f"function '{fname}': parameter {index} has type void")
        if kind == "half":
            raise BindingSignatureError(f"function '{fname}': parameter {index} '{raw}' is a half-precision "
                                        f"scalar; pass a float and convert inside the function")
    ctype = " ".join(t for t in tokens if t not in {"__restrict__", "__restrict", "restrict"})
    ctype = ctype.replace(" *", "*")
    return CParam(name=name or f"arg{index}", ctype=ctype, base=base, pointer=stars == 1, const=const,
                  dtype=dtype, kind=kind)


class _VoidParams(Exception):
    """``f(void)``: an explicit empty parameter list."""


def _split_params(text: str) -> list[str]:
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "(<[":
            depth += 1
        elif ch in ")>]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur))
    return parts


def parse_extern_c(source: str) -> dict[str, CFunction]:
    """Every ``extern "C"`` function of ``source`` by name, in source order.

    Handles ``extern "C" void f(...) {...}``, prototypes, and ``extern "C" { ... }`` blocks.
    A function Python cannot call (a kernel, a struct parameter, a pointer to pointer, a non-void
    return) is still listed, with :attr:`CFunction.problem` saying why; calling it raises
    :class:`BindingSignatureError` with that text, so one helper never breaks the whole source.
    """
    clean = blank(source)
    found: dict[str, CFunction] = {}
    for f in functions(clean, declarations=True):
        if f.extern_c:
            _add(found, f, clean)
    return found


def _add(out: dict[str, CFunction], f: FunctionDef, clean: str) -> None:
    """Record one ``extern "C"`` declaration or definition (a definition replaces a declaration)."""
    name = f.name
    prefix = re.sub(r'\bextern\s*"[^"]*"', " ", clean[f.start:f.name_start])
    words = prefix.replace("*", " * ").split()
    ret = " ".join(w for w in words if w not in _QUALIFIERS | {"__global__", "extern"}).replace(" *", "*")
    line = line_of(clean, f.name_start)
    params: list[CParam] = []
    problem = ""
    try:
        params = [_parse_param(p, i, name) for i, p in enumerate(_split_params(clean[f.params[0] + 1:f.params[1]]))]
    except _VoidParams:
        params = []
    except BindingSignatureError as exc:
        problem = str(exc)
    if f.kernel:
        problem = (f"'{name}' (line {line}) is an extern \"C\" __global__ kernel; the binding calls "
                   f"host functions - write an extern \"C\" launcher that launches it")
    elif ret != "void" and not problem:
        problem = (f"extern \"C\" function '{name}' (line {line}) returns '{ret or 'int'}'; bound "
                   f"functions must return void (write results into an output tensor)")
    fn = CFunction(name=name, return_type=ret or "int", params=tuple(params), line=line, problem=problem)
    previous = out.get(name)
    if previous is not None and [p.ctype for p in previous.params] != [p.ctype for p in fn.params]:
        raise BindingSignatureError(f"extern \"C\" function '{name}' is declared twice with "
                                    f"different parameters (lines {previous.line} and {fn.line})")
    if previous is None or f.body is not None:
        out[name] = fn
