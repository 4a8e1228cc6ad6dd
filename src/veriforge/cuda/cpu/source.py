"""Reading and rewriting CUDA C++ source for the CPU runtime.

g++ compiles the user's file almost unchanged; only three constructs are not C++ and need a
textual rewrite: ``kernel<<<grid, block, shared, stream>>>(args)`` launches, ``extern __shared__``
arrays (their size is a launch parameter), and nothing else. Every rewrite keeps the number of
newlines of the text it replaces, so line numbers in compiler diagnostics, ASan reports and
barrier faults are the user's own; the block functions regions.py inserts into kernels add lines
but restore the numbering with ``#line``. Scans work on a *masked* copy of the source where comments
and string literals are blanked out, so a ``<<<`` in a comment or an ``asm`` in a string never
triggers anything.
"""

from __future__ import annotations

import bisect
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from veriforge.cuda.source_reader import FunctionDef, enclosing_heads, functions
from veriforge.errors import UnsupportedFeatureError

from .ptx import PtxError, translate_asm

__all__ = [
    "HostFunctionDecl",
    "KernelDecl",
    "Project",
    "Refusal",
    "ScannedSource",
    "args_launch_shims",
    "check_supported",
    "find_unsupported",
    "launch_targets",
    "mask_source",
    "normalize_kernel_name",
    "rewrite",
    "scan",
]

_IDENT = re.compile(r"[A-Za-z_]\w*")
_TOKEN = re.compile(r"[A-Za-z_]\w*|\d[\w.]*|::|<<<|>>>|\S")


def mask_source(src: str, *, literals: bool = True) -> str:
    """Return ``src`` with comments and string/char literals replaced by spaces (newlines kept).
    ``literals=False`` blanks only the comments (the literals' contents are kept, e.g. PTX templates).
    The one reader of the project does it: :func:`veriforge.cuda.source_reader.blank`."""
    from veriforge.cuda.source_reader import blank

    return blank(src, literals=literals)


def line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


@dataclass(frozen=True)
class KernelDecl:
    """A ``__global__`` function definition found in the source."""

    name: str  # qualified (ns::kernel)
    line: int
    is_template: bool
    template_params: int | None = None  # template parameters (None: unknown, a pack or a default)


@dataclass(frozen=True)
class HostFunctionDecl:
    """An ``extern "C"`` host function defined in the source (callable with ``Module.call``)."""

    name: str  # the C symbol
    expr: str  # how to name it in C++ at namespace scope (ns::name)
    line: int


@dataclass
class ScannedSource:
    """What the front end needs to know about a translation unit."""

    text: str
    masked: str
    kernels: list[KernelDecl] = field(default_factory=list)
    overloaded: set[str] = field(default_factory=set)
    has_main: bool = False
    host_functions: list[HostFunctionDecl] = field(default_factory=list)

    @property
    def plain_kernels(self) -> list[KernelDecl]:
        return [k for k in self.kernels if not k.is_template and k.name not in self.overloaded]

    @property
    def template_kernels(self) -> list[KernelDecl]:
        return [k for k in self.kernels if k.is_template]


class _Scopes:
    """Brace structure: which positions are inside a function body (vs. namespace scope)."""

    def __init__(self, masked: str) -> None:
        self.positions: list[int] = []
        self.function_depth: list[int] = []
        self.namespaces: list[list[str]] = []
        stack: list[str | None] = []  # namespace name ("" anonymous) or None for other braces
        for m in re.finditer(r"[{}]", masked):
            if m.group() == "{":
                head = masked[max(0, m.start() - 200) : m.start()]
                ns = re.search(r"\bnamespace\s+([\w:]*)\s*(?:__attribute__\s*\(\([^)]*\)\)\s*)?$", head)
                extern_c = re.search(r"\bextern\s+\"?\s*\"?\s*$", head) or re.search(r'\bextern\s+"C"\s*$', head)
                if ns:
                    stack.append(ns.group(1))
                elif extern_c:
                    stack.append("")
                else:
                    stack.append(None)
            elif stack:
                stack.pop()
            self.positions.append(m.start())
            self.function_depth.append(sum(1 for s in stack if s is None))
            self.namespaces.append([s for s in stack if s])

    def _index(self, pos: int) -> int:
        return bisect.bisect_right(self.positions, pos) - 1

    def in_function(self, pos: int) -> bool:
        i = self._index(pos)
        return i >= 0 and self.function_depth[i] > 0

    def namespace_at(self, pos: int) -> list[str]:
        i = self._index(pos)
        return self.namespaces[i] if i >= 0 else []


def _match_paren(masked: str, open_pos: int, open_ch: str = "(", close_ch: str = ")") -> int:
    depth = 0
    for k in range(open_pos, len(masked)):
        ch = masked[k]
        if ch == open_ch:
            depth += 1
        elif ch == close_ch:
            depth -= 1
            if depth == 0:
                return k
    return -1


def _split_top_level(text: str) -> list[str]:
    """``text`` split at the commas outside brackets (``<>``, ``()``, ``[]``, ``{}``)."""
    parts, depth, start = [], 0, 0
    for k, ch in enumerate(text):
        if ch in "<([{":
            depth += 1
        elif ch in ">)]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:k])
            start = k + 1
    parts.append(text[start:])
    return [p.strip() for p in parts]


def _template_param_count(masked: str, start: int, end: int) -> int | None:
    """How many template parameters the ``template <...>`` head in ``masked[start:end]`` declares;
    None if it has a parameter pack or a default argument (then naming all of them is not enough
    to know the instantiation)."""
    m = re.search(r"\btemplate\s*<", masked[start:end])
    if m is None:
        return None
    open_pos = start + m.end() - 1
    close = _match_paren(masked, open_pos, "<", ">")
    if close < 0 or close > end:
        return None
    params = [p for p in _split_top_level(masked[open_pos + 1 : close]) if p]
    if any("..." in p or "=" in p for p in params):
        return None
    return len(params)


def launch_targets(scanned: Sequence[ScannedSource]) -> dict[str, int]:
    """Kernels whose parameter types a launch can name, by unqualified name: -1 for a kernel
    that is not a template, N for a template of N parameters (all of which a launch must name,
    ``k<4, float><<<...>>>``). A name defined more than once (overloads, several namespaces) is
    left out: its launches keep deducing their argument types."""
    seen: dict[str, list[int | None]] = {}
    for s in scanned:
        for k in s.kernels:
            short = k.name.split("::")[-1]
            value = (k.template_params if k.is_template else -1)
            seen.setdefault(short, []).append(value)
            if k.name in s.overloaded:
                seen[short].append(None)
    return {name: v[0] for name, v in seen.items() if len(v) == 1 and v[0] is not None}


def scan(src: str) -> ScannedSource:
    """Find kernel definitions (names, template-ness), the ``extern "C"`` host functions and whether
    the file has ``main``. Functions are found by the project's one reader
    (:func:`veriforge.cuda.source_reader.functions`), so ``extern "C"`` blocks and namespaces are
    transparent and directives inside a declaration do not cut it."""
    masked = mask_source(src)
    defs = functions(masked, declarations=True)
    found: list[KernelDecl] = []
    definitions: dict[str, int] = {}
    for fn in defs:
        if not fn.kernel or fn.body is None:
            continue
        qual = fn.qualified_name
        is_template = "template" in fn.qualifiers
        definitions[qual] = definitions.get(qual, 0) + 1
        found.append(KernelDecl(name=qual, line=line_of(masked, fn.name_start), is_template=is_template,
                                template_params=_template_param_count(masked, fn.start, fn.name_start)
                                if is_template else None))
    overloaded = {k for k, c in definitions.items() if c > 1}
    unique: dict[str, KernelDecl] = {}
    for k in found:
        unique.setdefault(k.name, k)
    has_main = re.search(r"\bint\s+main\s*\(", masked) is not None
    return ScannedSource(text=src, masked=masked, kernels=list(unique.values()), overloaded=overloaded,
                         has_main=has_main, host_functions=_extern_c_functions(masked, defs))


def _extern_c_functions(masked: str, defs: Sequence[FunctionDef]) -> list[HostFunctionDecl]:
    """``extern "C"`` host functions with a definition in this file (``extern "C" T f(...) {}``,
    inside an ``extern "C" { }`` block, or declared ``extern "C"`` and defined anywhere at namespace
    scope). Kernels, device-only functions, templates, operators and variadic functions are not
    callable through ``Module.call`` and are left out."""
    found: dict[str, HostFunctionDecl] = {}
    declared: dict[str, str] = {}

    def callable_(fn: FunctionDef) -> bool:
        device_only = fn.device and "__host__" not in fn.qualifiers
        return not (fn.kernel or device_only or "template" in fn.qualifiers or fn.name.startswith("operator")
                    or "..." in masked[fn.params[0]:fn.params[1]])

    for fn in defs:
        if not fn.extern_c or fn.name == "main" or not callable_(fn):
            continue
        if fn.body is not None:
            found.setdefault(fn.name, HostFunctionDecl(fn.name, fn.qualified_name, line_of(masked, fn.name_start)))
        else:
            declared.setdefault(fn.name, fn.qualified_name)
    for fn in defs:  # declared extern "C" and defined later without the linkage
        if fn.body is not None and fn.name in declared and fn.name not in found:
            found[fn.name] = HostFunctionDecl(fn.name, declared[fn.name], line_of(masked, fn.name_start))
    return sorted(found.values(), key=lambda f: f.line)


# ---- unsupported features ---------------------------------------------------------------------

_UNSUPPORTED: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\b(?:asm|__asm__|__asm)\s*(?:volatile\s*|__volatile__\s*)?\("), "inline PTX assembly (asm)"),
    (re.compile(r"\bwgmma\b"), "wgmma tensor-core operations"),
    (re.compile(r"\bthis_cluster\b|\bcluster_group\b|\b__cluster_dims__\b"), "thread block clusters"),
    (re.compile(r"\bCUtensorMap\b|\bcuTensorMapEncode\w*|\bcp_async_bulk\w*"), "TMA (tensor memory accelerator)"),
    # Textures and surfaces are supported (runtime/vf_texture.h, textures.cpp) except these:
    (re.compile(r"\bsurface\s*<\s*void\b|\bcudaBindSurfaceToArray\b|\bcudaGetSurfaceReference\b"),
     "surface references (surface<void, dim>, removed in CUDA 12; surface objects are supported)"),
    (re.compile(r"\btex(?:1D|2D|3D|1DLayered|2DLayered|Cubemap|CubemapLayered)Grad(?:_v2)?\b|"
                r"\bcudaBindTextureToMipmappedArray\b"),
     "texture fetches with explicit gradients (tex*Grad) and texture references to mipmapped arrays"),
]
#: NVIDIA's libraries beside the runtime API (the header's stem -> the library): their kernels ship as
#: binaries for real GPUs, so the CPU runtime has none of them (llm.c's dev/cuda programs include
#: cublas_v2.h in their common header; before, g++ said only "No such file or directory")
_LIBRARY_HEADERS = {
    "cublas": "cuBLAS", "cublas_v2": "cuBLAS", "cublas_api": "cuBLAS", "cublasLt": "cuBLASLt",
    "cublasXt": "cuBLASXt", "cufft": "cuFFT", "cufftXt": "cuFFT", "curand": "cuRAND (host API)",
    "curand_kernel": "cuRAND (device API)", "cusparse": "cuSPARSE", "cusparseLt": "cuSPARSELt",
    "cusolverDn": "cuSOLVER", "cusolverSp": "cuSOLVER", "cusolver_common": "cuSOLVER", "cudnn": "cuDNN",
    "nccl": "NCCL", "nvrtc": "NVRTC", "nvjpeg": "nvJPEG", "npp": "NPP", "cutensor": "cuTENSOR",
}
_UNSUPPORTED_INCLUDES = re.compile(
    r'^\s*#\s*include\s*[<"](cub/[\w/.]+|thrust/[\w/.]+|cutlass/[\w/.]+|cute/[\w/.]+|'
    r'(?:' + "|".join(sorted(_LIBRARY_HEADERS, key=len, reverse=True)) + r')\.h)[>"]',
    re.M,
)
_INCLUDE_FEATURES: dict[str, str] = {
    f"{stem}.h": f"NVIDIA's {lib} library (<{stem}.h>: its kernels ship as GPU binaries; run the program "
                 "on a GPU, or replace its calls)"
    for stem, lib in _LIBRARY_HEADERS.items()
}


@dataclass(frozen=True)
class Refusal:
    """One use of a feature the CPU runtime cannot execute: where, what, and the line's code."""

    file: str
    line: int
    feature: str
    code: str

    def message(self) -> str:
        return f"{self.feature} is not supported by the CPU runtime ({self.file}:{self.line}: {self.code[:120]})"


_PTX_TEXT = re.compile(r"\b[a-z]+(?:\.[a-z0-9]+)*\.(?:[usbf](?:8|16|32|64)|pred|b128|f16x2|bf16x2|e4m3|e5m2)\b|"
                       r"%%(?:tid|laneid|warpid|smid|clock|globaltimer|lanemask)|\bmembar\.|\bbar\.sync\b|"
                       r"\.reg\b|\bld\.global\b|\bcp\.async\b")


def _blank_inactive(masked: str, active_lines: set[int] | frozenset[int]) -> str:
    """``masked`` with every line the preprocessor dropped (``#if 0``, the other branch of an
    ``#ifdef``) blanked, newlines kept."""
    lines = masked.split("\n")
    return "\n".join(line if i in active_lines else " " * len(line) for i, line in enumerate(lines, 1))


def _asm_side(masked: str, text: str, pos: int) -> str:
    """Where an ``asm`` statement at ``pos`` is compiled: ``"device"`` (inside a ``__global__`` or
    ``__device__``-only function, a lambda in one, or with a PTX template), ``"both"`` (a
    ``__host__ __device__`` function: its host side is what g++ compiles) or ``"host"``."""
    paren = masked.find("(", pos)
    close = _match_paren(masked, paren) if paren >= 0 else -1
    template = text[paren:close + 1] if close > paren else ""
    if _PTX_TEXT.search(template):
        return "device"
    side = "host"
    for head in enclosing_heads(masked, pos):
        if re.search(r"\b__global__\b", head):
            return "device"
        if re.search(r"\b__device__\b", head):
            side = "both" if re.search(r"\b__host__\b", head) else "device"
    return side


def _ptx_problem(text: str, masked: str, paren: int) -> str | None:
    """Why the device-side ``asm(`` whose parenthesis is at ``paren`` cannot be translated, or None."""
    close = _match_paren(masked, paren)
    if close < 0:
        return "an unterminated asm statement"
    try:
        translate_asm(text, paren, close)
    except PtxError as exc:
        return f"'{exc.instruction}' ({exc.reason})"
    return None


def _rewrite_asm(text: str, masked: str, edits: list[tuple[int, int, str]]) -> None:
    """Device-side ``asm(...)`` statements in the supported PTX subset become C++ (ptx.py); the
    others are left for :func:`find_unsupported` to refuse."""
    for m in _UNSUPPORTED[0][0].finditer(masked):
        if _asm_side(masked, text, m.start()) != "device":
            continue
        paren = m.end() - 1
        close = _match_paren(masked, paren)
        if close < 0:
            continue
        try:
            code = translate_asm(text, paren, close)
        except PtxError:
            continue
        original = text[m.start() : close + 1]
        # keep the line structure, including a macro's backslash continuations
        breaks = "".join(" \\\n" if original[k - 1 : k] == "\\" else "\n"
                         for k, ch in enumerate(original) if ch == "\n")
        edits.append((m.start(), close + 1, code + breaks))


def find_unsupported(scanned: ScannedSource, filename: str,
                     active_lines: set[int] | frozenset[int] | None = None) -> list[Refusal]:
    """Every use of a feature the CPU runtime cannot execute, in source order.

    ``active_lines`` (from :func:`veriforge.cuda.cpu.build.active_lines`: the lines the
    preprocessor kept) drops what ``#if 0`` / ``#ifdef __CUDA_ARCH__`` / an unused branch hides.
    Inline assembly counts only on the device side: in a ``__global__``/``__device__`` function or
    with a PTX template; host-side x86 ``asm`` (``rdtsc``, compiler barriers) compiles as usual.
    """
    text = scanned.text
    masked = scanned.masked if active_lines is None else _blank_inactive(scanned.masked, active_lines)
    hits: list[tuple[int, str]] = []
    for index, (pattern, feature) in enumerate(_UNSUPPORTED):
        for m in pattern.finditer(masked):
            if index == 0:
                if _asm_side(masked, text, m.start()) != "device":
                    continue
                problem = _ptx_problem(text, masked, m.end() - 1)
                if problem is None:
                    continue  # inside the supported PTX subset (ptx.py)
                hits.append((m.start(), f"{feature} {problem}"))
                break
            hits.append((m.start(), feature))
            break
    for m in _UNSUPPORTED_INCLUDES.finditer(text):
        if masked[m.start() : m.end()].strip().startswith("#"):
            inc = m.group(1)
            feature = _INCLUDE_FEATURES.get(inc)
            if feature is None:
                lib = inc.split("/")[0]
                feature = (f"the {lib.upper() if lib in ('cub', 'cute') else lib.capitalize()} library (<{inc}>)"
                           if "/" in inc else f"<{inc}> (asynchronous copies / hardware barriers)")
            hits.append((m.start(), feature))
    lines = text.splitlines()
    out = []
    for pos, feature in sorted(hits):
        line = line_of(text, pos)
        code = lines[line - 1].strip() if 0 < line <= len(lines) else ""
        out.append(Refusal(filename, line, feature, code))
    return out


def check_supported(scanned: ScannedSource, filename: str,
                    active_lines: set[int] | frozenset[int] | None = None) -> None:
    """Raise UnsupportedFeatureError naming the first feature the CPU runtime cannot execute
    (with ``file:line``); see :func:`find_unsupported`."""
    found = find_unsupported(scanned, filename, active_lines)
    if found:
        raise UnsupportedFeatureError(found[0].message())


def unsupported_include_lines(text: str) -> list[int]:
    """Lines with an ``#include`` of a header the runtime refuses (``<mma.h>``, CUB, ...): replaced
    by a plain marker before preprocessing, so the preprocessor says whether they are active
    without needing the header."""
    masked = mask_source(text)
    return [line_of(text, m.start()) for m in _UNSUPPORTED_INCLUDES.finditer(text)
            if masked[m.start() : m.end()].strip().startswith("#")]


# ---- rewriting --------------------------------------------------------------------------------

def _balanced_parens(depth: int) -> str:
    """A regex for a parenthesised group with up to ``depth`` levels of nesting:
    ``__align__(sizeof(T))``, ``alignas(alignof(float4))``, ``__attribute__((aligned(16)))``."""
    inner = r"[^()]*"
    for _ in range(depth):
        inner = r"(?:[^()]|\(" + inner + r"\))*"
    return r"\(" + inner + r"\)"


_PARENS = _balanced_parens(4)
_QUALIFIER = rf"(?:[\w:<>,*\s]|(?:__align__|alignas|__attribute__|__declspec)\s*{_PARENS})"
_EXTERN_SHARED = re.compile(
    rf"\bextern\s+({_QUALIFIER}*?)\b__shared__\b({_QUALIFIER}*?)\b(\w+)\s*\[\s*\]((?:\s*\[[^\[\];]*\])*)\s*;"
)
_ALIGN = re.compile(rf"(?:__align__|alignas|__attribute__|__declspec)\s*{_PARENS}")


_ALIGNAS_AFTER_SPECIFIER = re.compile(
    r"\b(?:__shared__|__device__|__constant__|__managed__|static|extern|thread_local|const|volatile|inline|"
    r"constexpr)\s+(alignas)\s*\(")


def _rewrite_alignas(text: str, masked: str, edits: list[tuple[int, int, str]]) -> None:
    """``__shared__ alignas(16) float a[N];``: nvcc accepts ``alignas`` among the decl-specifiers,
    where standard C++ (and g++, once ``__shared__`` is ``thread_local``) only allows it first; GCC's
    ``__attribute__((aligned(N)))`` means the same and may stand there."""
    for m in _ALIGNAS_AFTER_SPECIFIER.finditer(masked):
        paren = masked.find("(", m.end(1))
        close = _match_paren(masked, paren)
        if close < 0:
            continue
        inner = text[paren + 1 : close]
        edits.append((m.start(1), close + 1, f"__attribute__((aligned({inner})))"))


def _keep_newlines(original: str, replacement: str) -> str:
    return replacement + "\n" * original.count("\n")


def _rewrite_extern_shared(text: str, masked: str, scopes: _Scopes, edits: list[tuple[int, int, str]]) -> None:
    for m in _EXTERN_SHARED.finditer(masked):
        type_text = _ALIGN.sub(" ", m.group(1) + " " + m.group(2))
        type_text = " ".join(type_text.split())
        name = m.group(3)
        dims = " ".join(m.group(4).split())  # `extern __shared__ half s[][40];`: rows of 40
        if not type_text:
            continue
        if scopes.in_function(m.start()):
            if dims:
                new = f"{type_text} (*{name}){dims} = reinterpret_cast<{type_text} (*){dims}>(::vf::dynamic_shared());"
            else:
                new = f"{type_text}* {name} = reinterpret_cast<{type_text}*>(::vf::dynamic_shared());"
        else:
            new = f"static ::vf::DynamicShared<{type_text}{dims}> {name};"
        edits.append((m.start(), m.end(), _keep_newlines(text[m.start() : m.end()], new)))


# ---- volatile pointers: lockstep warps (see runtime/vf_lockstep.h) ----------------------------

_SCALAR = (r"(?:(?:unsigned|signed)\s+)?(?:long\s+long(?:\s+int)?|long(?:\s+int)?|short(?:\s+int)?|int|char|"
           r"unsigned|signed|float|double|bool|__half|__nv_bfloat16|[A-Za-z_]\w*(?:::[A-Za-z_]\w*)*)")
_NOT_A_TYPE = {"return", "struct", "class", "union", "typename", "void", "const", "volatile", "static", "extern",
               "inline", "auto", "else", "case", "goto", "throw", "new", "delete", "sizeof", "operator"}
# `volatile T* name`, `T volatile* name`, `volatile const T* const __restrict__ name` (T a plain type name)
_VOLATILE_DECL = re.compile(
    rf"(?<![\w:])(?:volatile\s+(?P<c1>const\s+)?(?P<t1>{_SCALAR})(?P<c2>\s+const)?"
    rf"|(?P<c3>const\s+)?(?P<t2>{_SCALAR})\s+volatile(?P<c4>\s+const)?)"
    r"\s*\*\s*(?P<quals>(?:(?:const|__restrict__|__restrict)\b\s*)*)(?P<name>[A-Za-z_]\w*)\s*(?P<next>[=;,)])"
)
_VOLATILE_CAST = re.compile(rf"\(\s*volatile\s+(?P<c1>const\s+)?(?P<t>{_SCALAR})\s*\*\s*\)")


def _volatile_type(m: re.Match[str]) -> str | None:
    t = " ".join((m.group("t1") or m.group("t2")).split())
    if t.split()[0] in _NOT_A_TYPE or t.split()[-1] in _NOT_A_TYPE:
        return None
    const = any(m.group(g) for g in ("c1", "c2", "c3", "c4") if g in m.re.groupindex)
    return ("const " if const else "") + t


def _function_body_after(masked: str, close: int) -> int:
    """Index of the ``{`` of a function body right after the parameter list closing at ``close``, or -1."""
    tail = re.compile(r"(?:\s|\bconst\b|\bnoexcept\b|\boverride\b|\bfinal\b|"
                      r"__attribute__\s*\(\([^)]*\)\))*").match(masked, close + 1)
    pos = tail.end() if tail else close + 1
    return pos if masked.startswith("{", pos) else -1


def _host_only_spans(masked: str) -> list[tuple[int, int]]:
    """``(start, end)`` of every function definition that is host code only (neither ``__global__``
    nor ``__device__``): parameter list through body. Host code runs on one thread, so its
    ``volatile`` pointers need no lockstep, and rewriting them would turn ordinary host C++ (an
    integer cast to ``volatile T*``) into errors that name runtime internals."""
    from veriforge.cuda.source_reader import functions

    return [(f.start, f.body[1]) for f in functions(masked)
            if f.body is not None and not f.qualifiers & {"__global__", "__device__"}]


def _rewrite_volatile(text: str, masked: str, scopes: _Scopes, edits: list[tuple[int, int, str]]) -> None:
    """``volatile T* p`` (variables, parameters of function definitions) and ``(volatile T*)`` casts
    in device code become ``::vf::LockstepPtr<T>``, whose accesses keep the lanes of a warp in
    lockstep. Host-only functions are left alone (:func:`_host_only_spans`)."""
    host = _host_only_spans(masked)

    def in_host(pos: int) -> bool:
        return any(a <= pos <= b for a, b in host)

    for m in _VOLATILE_DECL.finditer(masked):
        t = _volatile_type(m)
        if t is None or in_host(m.start()):
            continue
        name, nxt = m.group("name"), m.group("next")
        start, name_end = m.start(), m.end("name")
        if nxt in ",)":
            # a parameter: only of a function *definition*; the body gets a LockstepPtr of that name
            depth, k = 0, start - 1
            while k >= 0:
                ch = masked[k]
                if ch == ")":
                    depth += 1
                elif ch == "(":
                    if depth == 0:
                        break
                    depth -= 1
                elif ch in ";{}" and depth == 0:
                    k = -1
                    break
                k -= 1
            if k < 0:
                continue
            close = _match_paren(masked, k)
            body = _function_body_after(masked, close) if close > 0 else -1
            if body < 0:
                continue
            raw = f"vf_volatile_{name}"
            edits.append((m.start("name"), name_end, raw))
            edits.append((body + 1, body + 1, f" ::vf::LockstepPtr<{t}> {name}({raw});"))
            continue
        if not scopes.in_function(start):
            continue  # a namespace-scope pointer: left alone
        if nxt == "=":
            # `volatile int *a = x, *b = y;` declares b differently: only single declarations
            semi = masked.find(";", name_end)
            if semi < 0:
                continue
            depth = 0
            single = True
            for ch in masked[name_end:semi]:
                if ch in "([{<":
                    depth += 1
                elif ch in ")]}>":
                    depth -= 1
                elif ch == "," and depth <= 0:
                    single = False
                    break
            if not single:
                continue
        edits.append((start, name_end, f"::vf::LockstepPtr<{t}> {name}"))
    for m in _VOLATILE_CAST.finditer(masked):
        t = " ".join(m.group("t").split())
        if t.split()[0] in _NOT_A_TYPE or not scopes.in_function(m.start()) or in_host(m.start()):
            continue
        edits.append((m.start(), m.end(), f"(::vf::LockstepPtr<{'const ' if m.group('c1') else ''}{t}>)"))


def _match_back(masked: str, close_pos: int, open_ch: str, close_ch: str) -> int:
    """Index of the bracket opening the one at ``close_pos``, skipping parenthesised text."""
    depth, paren = 0, 0
    for k in range(close_pos, -1, -1):
        ch = masked[k]
        if open_ch != "(" and ch == ")":
            paren += 1
        elif open_ch != "(" and ch == "(":
            paren -= 1
        elif paren == 0 and ch == close_ch:
            depth += 1
        elif paren == 0 and ch == open_ch:
            depth -= 1
            if depth == 0:
                return k
    return 0


def _callee_start(masked: str, end: int) -> int:
    """Start of the callee expression that ends just before ``end`` (the ``<<<``):
    ``ns::kernel<T, 4>``, ``table[i]``, ``obj.member``, ``(*fn)``."""

    def skip_ws(i: int) -> int:
        while i > 0 and masked[i - 1].isspace():
            i -= 1
        return i

    i = skip_ws(end)
    while i > 0:
        ch = masked[i - 1]
        if ch == ">":
            i = skip_ws(_match_back(masked, i - 1, "<", ">"))
            continue
        if ch == "]":
            i = skip_ws(_match_back(masked, i - 1, "[", "]"))
            continue
        if ch == ")":
            return _match_back(masked, i - 1, "(", ")")
        if ch.isalnum() or ch == "_":
            while i > 0 and (masked[i - 1].isalnum() or masked[i - 1] == "_"):
                i -= 1
            j = skip_ws(i)
            if masked[j - 2 : j] in ("::", "->"):
                i = skip_ws(j - 2)
                continue
            if j > 0 and masked[j - 1] == ".":
                i = skip_ws(j - 1)
                continue
            return i
        return i
    return i


_LAUNCH_OPEN = re.compile(r"(?<!<)<\s*<\s*<(?!<)")
_LAUNCH_CLOSE = re.compile(r">\s*>\s*>")


_CALLEE = re.compile(r"(?:::)?(?:[A-Za-z_]\w*\s*::\s*)*(?P<name>[A-Za-z_]\w*)\s*(?:<(?P<targs>.*)>)?")


def _typed_callee(callee: str, targets: Mapping[str, int] | None) -> bool:
    """Whether ``callee`` names one kernel whose parameter types are known (see
    :func:`launch_targets`): then the launch converts its arguments to them, as a direct call does."""
    if not targets:
        return False
    m = _CALLEE.fullmatch(callee)
    if m is None or m.group("name") not in targets:
        return False
    want = targets[m.group("name")]
    if m.group("targs") is None:
        return want == -1
    return want > 0 and len(_split_top_level(m.group("targs"))) == want


def _rewrite_launches(text: str, masked: str, edits: list[tuple[int, int, str]],
                      targets: Mapping[str, int] | None = None) -> None:
    """``k<<<g, b>>>(args)``, also spelled with spaces or newlines between the angle brackets
    (``k << < g, b >> > (args)``; nvcc accepts any spacing). A launch of a kernel whose parameter
    types are known (``targets``) converts its arguments to them (``k<<<g, b>>>(0, n)`` passes a
    null pointer, as nvcc's direct call does)."""
    pos = 0
    while True:
        mo = _LAUNCH_OPEN.search(masked, pos)
        if mo is None:
            return
        start, open_end = mo.start(), mo.end()
        depth, k = 0, open_end
        end = end_close = -1
        while k < len(masked):
            ch = masked[k]
            if ch == ">" and depth == 0:
                mc = _LAUNCH_CLOSE.match(masked, k)
                if mc:
                    end, end_close = k, mc.end()
                    break
            if ch in "([{":
                depth += 1
            elif ch in ")]}":
                depth -= 1
            elif ch == ";":
                break
            k += 1
        if end < 0:
            pos = open_end
            continue
        callee_start = _callee_start(masked, start)
        callee = text[callee_start:start].strip()
        if not callee:
            pos = end_close
            continue
        config = text[open_end:end]
        label = " ".join(callee.split()).replace("\\", "\\\\").replace('"', '\\"')
        # __FILE__/__LINE__ first, on the launch's own line (before a configuration that spans
        # lines): the per-launch trace of the race check names where each launch is.
        spelled = " ".join(callee.split())
        # A kernel whose parameter types are known is launched as a compile-time constant: its
        # thread loop is then the one its by-name shim uses (vf_launch.h KernelLoop), one copy of
        # the kernel per file for g++ to optimise instead of one per launch site.
        maker = (f"make_kernel_launch_at<::vf::kernel_ptr(&{spelled})>" if _typed_callee(spelled, targets)
                 else "make_launch_at")
        new = (f'::vf::{maker}(__FILE__, __LINE__, ::vf::LaunchConfig({config}), "{label}", '
               f"[&](auto&&... vf_args_) {{ {spelled}(vf_args_...); }})")
        original = text[callee_start:end_close]
        edits.append((callee_start, end_close, new + "\n" * (original.count("\n") - config.count("\n"))))
        pos = end_close


# ---- race check: the interleaving probe (see runtime/vf_probe.h) -------------------------------

_GLOBAL_KW = re.compile(r"\b__global__\b")
_PROBE_PARAM = re.compile(
    rf"^\s*(?P<t>{_SCALAR})\s*\*\s*(?:(?:__restrict__|__restrict)\b\s*)?(?P<name>[A-Za-z_]\w*)\s*$")


def _rewrite_probe_params(text: str, masked: str, edits: list[tuple[int, int, str]]) -> None:
    """``T* p`` parameters of ``__global__`` function definitions (T a non-const plain type) become
    ``::vf::ProbePtr<T>`` in the body: each access yields to the block's next thread. Line numbers
    are kept (the parameter is renamed in place, the wrapper declared right after the ``{``)."""
    for m in _GLOBAL_KW.finditer(masked):
        pos = m.end()
        while True:
            paren = masked.find("(", pos)
            if paren < 0 or ";" in masked[pos:paren] or "{" in masked[pos:paren]:
                paren = -1
                break
            if re.search(r"__launch_bounds__\s*$|__attribute__\s*\(?$|__declspec\s*$|alignas\s*$",
                         masked[pos:paren]):
                close = _match_paren(masked, paren)
                if close < 0:
                    paren = -1
                    break
                pos = close + 1
                continue
            break
        if paren < 0:
            continue
        close = _match_paren(masked, paren)
        body = _function_body_after(masked, close) if close > 0 else -1
        if body < 0:
            continue  # a declaration
        start, depth = paren + 1, 0
        params: list[tuple[int, int]] = []
        for k in range(paren + 1, close + 1):
            ch = masked[k]
            if ch in "([{<":
                depth += 1
            elif ch in ")]}>" and k != close:
                depth -= 1
            elif (ch == "," and depth == 0) or k == close:
                params.append((start, k))
                start = k + 1
        decls = []
        for a, b in params:
            pm = _PROBE_PARAM.match(masked[a:b])
            if not pm:
                continue
            t = " ".join(pm.group("t").split())
            if t.split()[0] in _NOT_A_TYPE or t.split()[-1] in _NOT_A_TYPE or "volatile" in masked[a:b]:
                continue
            name = pm.group("name")
            edits.append((a + pm.start("name"), a + pm.end("name"), f"vf_probe_{name}"))
            decls.append(f" ::vf::ProbePtr<{t}> {name}(vf_probe_{name});")
        if decls:
            edits.append((body + 1, body + 1, "".join(decls)))


def rewrite(scanned: ScannedSource, *, probe: bool = False, targets: Mapping[str, int] | None = None,
            region_context: Any = None) -> str:
    """The user's source with launches and ``extern __shared__`` turned into plain C++, and
    ``__CUDA_ARCH__`` in device code given its device value (:mod:`veriforge.cuda.cpu.arch`).

    ``probe``: also the race check's interleaving probe (kernels' pointer parameters become
    ``::vf::ProbePtr``; runtime/vf_probe.h). ``targets``: the kernels whose launches convert their
    arguments to the parameter types (:func:`launch_targets`; default: this file's kernels).
    Otherwise (not ``probe``) kernels with barriers or warp collectives get a block function that
    runs the whole block as region loops (regions.py), unless ``VERIFORGE_CPU_REGIONS=0``;
    ``region_context`` (a ``regions.RegionContext``) describes the other files of a project (which
    of their functions synchronise), default: this file alone."""
    from .arch import arch_edits

    text, masked = scanned.text, scanned.masked
    scopes = _Scopes(masked)
    edits: list[tuple[int, int, str]] = arch_edits(text, masked)
    if not probe and "__global__" in masked and regions_enabled():
        from .arch import DEVICE_MACRO
        from .regions import region_edits

        # a block function is device code: it sees __CUDA_ARCH__ as the kernel body does (arch.py)
        edits += [(a, b, re.sub(r"\b__CUDA_ARCH__\b", DEVICE_MACRO, code))
                  for a, b, code in region_edits(text, region_context)]
    _rewrite_extern_shared(text, masked, scopes, edits)
    if "alignas" in masked:
        _rewrite_alignas(text, masked, edits)
    _rewrite_launches(text, masked, edits, launch_targets([scanned]) if targets is None else targets)
    if re.search(r"\b(?:asm|__asm__|__asm)\b", masked):
        _rewrite_asm(text, masked, edits)
    first: set[int] = set()
    if "volatile" in masked:
        volatile_edits: list[tuple[int, int, str]] = []
        _rewrite_volatile(text, masked, scopes, volatile_edits)
        # a volatile parameter's LockstepPtr is declared before a block function inserted at the
        # same place: the block function reads the plain pointer behind it (vf::lockstep_raw)
        first = {id(e) for e in volatile_edits}
        edits += volatile_edits
    if probe and "__global__" in masked:
        _rewrite_probe_params(text, masked, edits)
    edits.sort(key=lambda e: (e[0], e[1], id(e) not in first, e[2]))
    out: list[str] = []
    last = 0
    for a, b, new in edits:
        if a < last:
            continue  # overlapping edit (should not happen); keep the first
        out.append(text[last:a])
        out.append(new)
        last = b
    out.append(text[last:])
    return "".join(out)


# Uses of a kernel by address: cudaLaunchKernel and CUDA graph kernel nodes (cudaKernelNodeParams::func).
_BY_ADDRESS = re.compile(r"\b(?:cudaLaunch(?:Cooperative)?Kernel(?:Ex|ExC)?|cudaKernelNodeParams|cudaGraphNodeParams|"
                         r"cudaGraphAddKernelNode|cudaGraphKernelNodeSetParams|cudaGraphExecKernelNodeSetParams|"
                         r"cudaGraphAddNode)\b")


def regions_enabled() -> bool:
    """Region splitting of kernels with barriers (regions.py) is on unless ``VERIFORGE_CPU_REGIONS=0``."""
    return os.environ.get("VERIFORGE_CPU_REGIONS", "").strip().lower() not in ("0", "no", "false", "off")


def args_launch_shims(scanned: ScannedSource) -> list[str]:
    """Registrations (C++ lines, to append after the user's code) that let
    ``cudaLaunchKernel((const void*)kernel, grid, block, args, ...)`` (and its cooperative and ``Ex``
    forms) and CUDA graph kernel nodes (``cudaKernelNodeParams::func``) find each plain kernel's
    parameter types by address. Only for files that use kernels by address, so taking a kernel's
    address can never break a file that does not need it."""
    if not _BY_ADDRESS.search(scanned.masked):
        return []
    return [f'static ::vf::ArgsLaunchRegistrar vf_args_shim_{i}("{k.name}", &{k.name});'
            for i, k in enumerate(scanned.plain_kernels)]


def normalize_kernel_name(name: str) -> str:
    """Canonical spelling of a kernel name: ``reduce< 256 >`` and ``reduce<256>`` are the same."""
    name = " ".join(name.split())
    return re.sub(r"\s*([<>,*&()\[\]:])\s*", r"\1", name)


# ---- projects: several files, include directories, macros -------------------------------------

SOURCE_SUFFIXES = (".cu", ".cpp", ".cc", ".cxx", ".c++", ".C", ".c")
_SAFE_FLAG = re.compile(
    r"-O[0-3sgz]?|-Ofast|-g[0-3]?|-ggdb|-W(?![lap],)[\w=+-]*|-w|-pedantic(?:-errors)?|-pthread|-fopenmp|"
    r"-f(?:no-)?(?:fast-math|finite-math-only|strict-aliasing|exceptions|rtti|unroll-loops|openmp-simd|"
    r"permissive|signed-char|unsigned-char|math-errno|trapping-math|tree-vectorize|inline|PIC|pic|"
    r"ms-extensions|gnu-keywords|char8_t|diagnostics-color(?:=\w+)?)|"
    r"-march=[\w.-]+|-mtune=[\w.-]+|-m(?:no-)?(?:avx\w*|sse\w*|fma|f16c|bmi2?|popcnt|lzcnt)|-l[\w+.-]+"
)
_STD = re.compile(r"--?std=(?P<std>(?:c|gnu)(?:\+\+)?(?P<ver>\w+))")
_NVCC_ONLY = re.compile(
    r"-arch(?:=.*)?|--gpu-architecture(?:=.*)?|-gencode(?:=.*)?|--generate-code(?:=.*)?|-code(?:=.*)?|"
    r"--use_fast_math|-use_fast_math|-lineinfo|--generate-line-info|-G|--device-debug|-rdc(?:=.*)?|"
    r"--relocatable-device-code(?:=.*)?|-dc|-dlink|--expt-relaxed-constexpr|--expt-extended-lambda|"
    r"--extended-lambda|-ccbin(?:=.*)?|--compiler-bindir(?:=.*)?|-Xptxas(?:=.*)?|-Xnvlink(?:=.*)?|"
    r"--ptxas-options(?:=.*)?|-maxrregcount(?:=.*)?|--maxrregcount(?:=.*)?|-m64|--machine(?:=.*)?|"
    r"-cudart(?:=.*)?|--cudart(?:=.*)?|-t\d+|--threads(?:=.*)?|-diag-suppress(?:=.*)?|--diag-suppress(?:=.*)?|"
    r"--forward-unknown-to-host-compiler|--options-file(?:=.*)?|-res-usage|--resource-usage|-Xcudafe(?:=.*)?|"
    r"--keep|-keep|--default-stream(?:=.*)?|-default-stream(?:=.*)?|--display-error-number|-cuda|"
    r"--source-in-ptx|-src-in-ptx|--restrict|-restrict|--Werror(?:=.*)?|-Werror=all-warnings"
)
_NVCC_TAKES_VALUE = {"-arch", "-gencode", "--generate-code", "-code", "-ccbin", "--compiler-bindir", "-Xptxas",
                     "-Xnvlink", "-maxrregcount", "-cudart", "--cudart", "--default-stream", "-default-stream",
                     "-Xcudafe", "--options-file", "--gpu-architecture", "-diag-suppress", "--diag-suppress",
                     "--machine", "--threads", "-t", "-rdc"}
_SYSTEM_PREFIXES = ("/usr/include", "/usr/lib", "/usr/local/include", "/usr/local/cuda", "/opt/cuda", "/opt/nvidia")


def is_system_dir(path: Path) -> bool:
    """Directories whose headers are the system's or CUDA's (never staged, never rewritten)."""
    text = str(path)
    return (any(text == p or text.startswith(p + "/") or text.startswith(p + "-") for p in _SYSTEM_PREFIXES)
            or "site-packages/nvidia" in text or (path / "cuda_runtime_api.h").is_file())


def _std_year(ver: str) -> int:
    aliases = {"2a": 20, "2b": 23, "2c": 26, "1z": 17, "1y": 14, "0x": 11}
    ver = aliases.get(ver, ver)
    try:
        year = int(ver)
    except (TypeError, ValueError):
        return 0
    return year + (100 if year < 50 and year not in (89, 90, 99) else 0) if year < 98 else year


@dataclass
class Project:
    """Several CUDA/C++ sources compiled as separate translation units and linked together, with
    include directories and macros - what ``nvcc a.cu b.cpp -Idir -DX=1`` would build.

    ``files``: the ``.cu``/``.cpp``/``.c`` sources (relative paths are taken from ``root``, default:
    the current directory). ``include_dirs`` are searched for ``#include`` like ``-I`` (the project's
    own headers there and next to the sources are rewritten like the sources; system and CUDA
    directories are used as they are). ``defines``: ``-D`` macros (``None`` = no value).
    ``flags``: extra host-compiler flags that are safe to pass (``-std=``, ``-O``, ``-g``, ``-W…``,
    ``-ffast-math``, ``-march=``, ``-l…``; anything else is a ``ValueError``). ``timeout``: the
    default wall-clock limit of :func:`~veriforge.cuda.cpu.run_program` for this project.
    ``notes`` says what :meth:`from_compile_commands` ignored.
    """

    files: list[Path]
    include_dirs: list[Path] = field(default_factory=list)
    defines: dict[str, str | None] = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)
    root: Path | None = None
    timeout: float | None = None
    system_include_dirs: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    data: list[Path] = field(default_factory=list)
    """Inputs outside the working directory the program reads (``../../data``), lent read-only
    when it runs (:mod:`veriforge.cuda.cpu.data`); relative paths are taken from ``root``."""

    def __post_init__(self) -> None:
        root = Path(self.root) if self.root is not None else Path.cwd()
        self.root = Path(os.path.abspath(root))

        def absolute(p: str | os.PathLike[str]) -> Path:
            return Path(os.path.normpath(os.path.join(self.root, os.fspath(p))))

        if isinstance(self.files, (str, Path)):
            self.files = [self.files]
        self.files = [absolute(f) for f in self.files]
        if not self.files:
            raise ValueError("a Project needs at least one source file")
        for f in self.files:
            if not f.is_file():
                raise ValueError(f"source file {f} does not exist")
            if f.suffix not in SOURCE_SUFFIXES:
                raise ValueError(f"{f}: a project's files are sources to compile ({', '.join(SOURCE_SUFFIXES)}); "
                                 "headers are found through include_dirs")
        twice = sorted({str(f) for f in self.files if self.files.count(f) > 1})
        if twice:
            raise ValueError(f"{twice[0]} is listed twice: each source is compiled once, as one translation unit")
        includes, systems = [], [absolute(d) for d in self.system_include_dirs]
        for d in self.include_dirs:
            p = absolute(d)
            if not p.is_dir():
                raise ValueError(f"include directory {p} does not exist")
            (systems if is_system_dir(p) else includes).append(p)
        self.include_dirs = list(dict.fromkeys(includes))
        self.system_include_dirs = list(dict.fromkeys(systems))
        defines: dict[str, str | None] = {}
        for name, value in (self.defines or {}).items():
            if not re.fullmatch(r"[A-Za-z_]\w*", str(name)):
                raise ValueError(f"invalid macro name {name!r}")
            if value is not None:
                value = str(int(value) if isinstance(value, bool) else value)
                if "\n" in value:
                    raise ValueError(f"macro {name}: the value must be one line")
            defines[str(name)] = value
        self.defines = defines
        kept = []
        for flag in self.flags:
            if _NVCC_ONLY.fullmatch(flag):  # a Makefile's -rdc=true or -arch=sm_80: no GPU code here
                self.notes.append(f"{flag}: an nvcc-only option, ignored (the CPU runtime has no GPU code generation)")
                continue
            kept.append(flag)
        self.flags = kept
        for flag in self.flags:
            if not (_SAFE_FLAG.fullmatch(flag) or _STD.fullmatch(flag)):
                raise ValueError(
                    f"compiler flag {flag!r} is not allowed for the CPU runtime (allowed: -std=, -O…, -g…, -W…, "
                    "-pedantic, -ffast-math and similar -f options, -march=/-mtune=/-mavx…, -l<lib>; give include "
                    "directories as include_dirs and macros as defines)")
        if self.timeout is not None and not self.timeout > 0:
            raise ValueError(f"timeout must be positive, got {self.timeout!r}")
        if isinstance(self.data, (str, os.PathLike)):
            self.data = [self.data]
        from .data import resolve_data

        self.data = [Path(p) for p in resolve_data(self.data or [], self.root)]

    @property
    def cxx_flags(self) -> list[str]:
        """Flags for the C++/CUDA translation units (a ``-std=`` below C++20 is raised to C++20: the
        runtime needs it)."""
        out = []
        for f in self.flags:
            m = _STD.fullmatch(f)
            if m:
                if "++" not in m.group("std"):
                    continue
                if _std_year(m.group("ver")) < 2020:
                    continue
                out.append("-std=" + m.group("std"))
            elif not f.startswith("-l"):
                out.append(f)
        return out

    @property
    def c_flags(self) -> list[str]:
        out = []
        for f in self.flags:
            m = _STD.fullmatch(f)
            if m:
                if "++" not in m.group("std"):
                    out.append("-std=" + m.group("std"))
            elif not f.startswith(("-l", "-fno-rtti", "-frtti", "-fno-exceptions", "-fexceptions")):
                out.append(f)
        return out

    @property
    def link_flags(self) -> list[str]:
        return [f for f in self.flags if f.startswith("-l") or f in ("-fopenmp", "-pthread")]

    @classmethod
    def from_args(cls, files: Sequence[str | os.PathLike[str]],
                  include_dirs: Sequence[str | os.PathLike[str]] = (),
                  defines: Mapping[str, Any] | Sequence[str] | None = None, flags: Sequence[str] = (), *,
                  root: str | os.PathLike[str] | None = None, timeout: float | None = None) -> Project:
        """A project from command-line style pieces; ``defines`` may be ``{"X": 1}`` or
        ``["X=1", "DEBUG"]``."""
        parsed: dict[str, str | None] = {}
        if isinstance(defines, Mapping):
            parsed = {str(k): (None if v is None else str(v)) for k, v in defines.items()}
        else:
            for item in defines or ():
                name, sep, value = str(item).partition("=")
                parsed[name.strip()] = value if sep else None
        return cls(files=[Path(f) for f in files], include_dirs=[Path(d) for d in include_dirs], defines=parsed,
                   flags=list(flags), root=Path(root) if root is not None else None, timeout=timeout)

    @classmethod
    def from_compile_commands(cls, path: str | os.PathLike[str], *, files: Sequence[str] | None = None,
                              timeout: float | None = None) -> Project:
        """A project from a ``compile_commands.json`` (CMake's ``CMAKE_EXPORT_COMPILE_COMMANDS``,
        Bear): every entry's file (or those named in ``files``) with the union of the entries'
        ``-I``/``-isystem``/``-D``/``-std=`` and safe flags. nvcc-only options (``-arch``,
        ``-gencode``, ``--use_fast_math``, ``-rdc``…) and anything else are ignored, each with a
        note in ``Project.notes``."""
        import json
        import shlex

        path = Path(path)
        try:
            entries = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise ValueError(f"{path}: not a readable compile_commands.json: {exc}") from exc
        if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
            raise ValueError(f"{path}: a compile_commands.json is a list of {{directory, file, arguments}} objects")
        sources: list[Path] = []
        includes: list[Path] = []
        systems: list[Path] = []
        defines: dict[str, str | None] = {}
        flags: list[str] = []
        notes: list[str] = []

        def note(text: str) -> None:
            if text not in notes:
                notes.append(text)

        wanted = None if files is None else {os.path.normpath(os.path.join(os.getcwd(), f)) for f in files}
        for entry in entries:
            directory = Path(entry.get("directory") or path.parent)
            if not directory.is_absolute():
                directory = path.parent / directory
            if "file" not in entry:
                raise ValueError(f"{path}: an entry without 'file'")
            file = Path(os.path.normpath(directory / entry["file"]))
            if file.suffix not in SOURCE_SUFFIXES:
                note(f"{file.name}: not a C/C++/CUDA source, skipped")
                continue
            if wanted is not None and str(file) not in wanted:
                continue
            if "arguments" in entry:
                args = [str(a) for a in entry["arguments"]]
            elif "command" in entry:
                args = shlex.split(str(entry["command"]))
            else:
                raise ValueError(f"{path}: the entry for {file} has neither 'arguments' nor 'command'")
            if file not in sources:
                sources.append(file)
            it = iter(args[1:])
            for arg in it:
                def value(prefix: str, arg: str = arg, it: Any = it) -> str:
                    rest = arg[len(prefix):]
                    if rest.startswith("="):
                        rest = rest[1:]
                    return rest if rest else next(it, "")

                if arg in ("-c", "-x") or arg.startswith("-x"):
                    if arg == "-x":
                        next(it, None)
                    continue
                if arg in ("-o", "--output-file", "-MF", "-MT", "-MQ"):
                    next(it, None)
                    continue
                if arg.startswith(("-MD", "-MMD", "-MP")) or arg in ("-M", "-MM"):
                    continue
                if Path(os.path.normpath(directory / arg)) == file or arg == entry["file"]:
                    continue
                if arg.startswith("-I") or arg.startswith("--include-path"):
                    d = Path(os.path.normpath(directory / value("--include-path" if arg.startswith("--") else "-I")))
                    (systems if is_system_dir(d) else includes).append(d)
                elif arg.startswith("-isystem"):
                    d = Path(os.path.normpath(directory / value("-isystem")))
                    (systems if is_system_dir(d) else includes).append(d)
                elif arg.startswith("-D") or arg.startswith("--define-macro"):
                    name, sep, val = value("--define-macro" if arg.startswith("--") else "-D").partition("=")
                    if name in defines and defines[name] != (val if sep else None):
                        note(f"-D{name} differs between entries; the first value is used")
                    defines.setdefault(name, val if sep else None)
                elif arg.startswith("-U"):
                    note(f"{arg}: -U is ignored")
                elif _STD.fullmatch(arg) or arg.startswith("-std") or arg.startswith("--std"):
                    m = _STD.fullmatch(arg.replace("--std", "-std", 1) if arg.startswith("--std") else arg)
                    if m is None:
                        note(f"{arg}: not understood, ignored")
                    elif "++" in m.group("std") and _std_year(m.group("ver")) < 2020:
                        note(f"{arg}: compiled as C++20 (the CPU runtime needs C++20)")
                    elif arg not in flags:
                        flags.append("-std=" + m.group("std"))
                elif arg.split("=")[0] in ("-Xcompiler", "--compiler-options"):
                    for host_arg in value(arg.split("=")[0]).split(","):
                        if _SAFE_FLAG.fullmatch(host_arg) and host_arg not in flags:
                            flags.append(host_arg)
                        elif host_arg:
                            note(f"-Xcompiler {host_arg}: ignored")
                elif _NVCC_ONLY.fullmatch(arg) or arg.split("=")[0] in _NVCC_TAKES_VALUE:
                    if arg in _NVCC_TAKES_VALUE:
                        next(it, None)
                    note(f"{arg}: an nvcc-only option, ignored (the CPU runtime has no GPU code generation)")
                elif _SAFE_FLAG.fullmatch(arg):
                    if arg not in flags and not (arg.startswith("-O") and any(f.startswith("-O") for f in flags)):
                        flags.append(arg)
                elif arg.startswith("-"):
                    note(f"{arg}: not a flag the CPU runtime passes on, ignored")
                else:
                    note(f"{arg}: an extra input, ignored")
        if not sources:
            raise ValueError(f"{path}: no C/C++/CUDA source files" + (" matching files=" if files else ""))
        project = cls(files=sources, include_dirs=list(dict.fromkeys(includes)), defines=defines, flags=flags,
                      root=path.parent, timeout=timeout, system_include_dirs=list(dict.fromkeys(systems)))
        project.notes = notes
        return project
