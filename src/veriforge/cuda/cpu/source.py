"""Reading and rewriting CUDA C++ source for the CPU runtime.

g++ compiles the user's file almost unchanged; only three constructs are not C++ and need a
textual rewrite: ``kernel<<<grid, block, shared, stream>>>(args)`` launches, ``extern __shared__``
arrays (their size is a launch parameter), and nothing else. Every rewrite keeps the number of
newlines of the text it replaces, so line numbers in compiler diagnostics, ASan reports and
barrier faults are the user's own. Scans work on a *masked* copy of the source where comments
and string literals are blanked out, so a ``<<<`` in a comment or an ``asm`` in a string never
triggers anything.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

from veriforge.errors import UnsupportedFeatureError

__all__ = [
    "HostFunctionDecl",
    "KernelDecl",
    "ScannedSource",
    "args_launch_shims",
    "check_supported",
    "mask_source",
    "normalize_kernel_name",
    "rewrite",
    "scan",
]

_IDENT = re.compile(r"[A-Za-z_]\w*")
_TOKEN = re.compile(r"[A-Za-z_]\w*|\d[\w.]*|::|<<<|>>>|\S")


def mask_source(src: str) -> str:
    """Return ``src`` with comments and string/char literals replaced by spaces (newlines kept)."""
    out = list(src)
    i, n = 0, len(src)

    def blank(a: int, b: int) -> None:
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = src[i]
        if c == "/" and i + 1 < n and src[i + 1] == "/":
            j = src.find("\n", i)
            j = n if j < 0 else j
            # a backslash-newline continues a // comment
            while j < n and j > 0 and src[j - 1] == "\\":
                k = src.find("\n", j + 1)
                j = n if k < 0 else k
            blank(i, j)
            i = j
        elif c == "/" and i + 1 < n and src[i + 1] == "*":
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            blank(i, j)
            i = j
        elif c == "R" and src[i + 1 : i + 2] == '"' and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_")):
            m = re.match(r'R"([^(\s]*)\(', src[i:])
            if not m:
                i += 1
                continue
            end = src.find(")" + m.group(1) + '"', i + m.end())
            end = n if end < 0 else end + len(m.group(1)) + 2
            blank(i + 1, end)
            i = end
        elif c in "\"'":
            if c == "'" and i > 0 and (src[i - 1].isalnum()) and i + 1 < n and src[i + 1].isalnum():
                i += 1  # digit separator 1'000'000
                continue
            j = i + 1
            while j < n and src[j] != c and src[j] != "\n":
                j += 2 if src[j] == "\\" else 1
            j = min(j + 1, n)
            blank(i + 1, j - 1)
            i = j
        else:
            i += 1
    return "".join(out)


def line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


@dataclass(frozen=True)
class KernelDecl:
    """A ``__global__`` function definition found in the source."""

    name: str  # qualified (ns::kernel)
    line: int
    is_template: bool


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


def scan(src: str) -> ScannedSource:
    """Find kernel definitions (names, template-ness) and whether the file has ``main``."""
    masked = mask_source(src)
    scopes = _Scopes(masked)
    found: list[KernelDecl] = []
    definitions: dict[str, int] = {}
    for m in re.finditer(r"\b__global__\b", masked):
        pos = m.end()
        name = None
        name_pos = pos
        while pos < len(masked):
            t = _TOKEN.match(masked, pos) or re.compile(r"\s+").match(masked, pos)
            if t is None:
                break
            tok = t.group()
            if tok.strip() == "":
                pos = t.end()
                continue
            if tok in ("__launch_bounds__", "__attribute__", "__declspec", "alignas", "__maxnreg__",
                       "__cluster_dims__", "decltype"):
                paren = masked.find("(", t.end())
                close = _match_paren(masked, paren) if paren >= 0 else -1
                pos = close + 1 if close >= 0 else t.end()
                continue
            if tok == "(":
                break
            if tok in (";", "{", "}", "="):
                name = None
                break
            if _IDENT.fullmatch(tok):
                name = tok
                name_pos = t.start()
                # qualified definition (void ns::kernel(...)) keeps the last component
            pos = t.end()
        if not name or pos >= len(masked) or masked[pos] != "(":
            continue
        close = _match_paren(masked, pos)
        if close < 0:
            continue
        after = masked[close + 1 : close + 400].lstrip()
        is_definition = after.startswith("{") or re.match(r"(?:const\s*)?(?:noexcept\s*)?\{", after) is not None
        if not is_definition:
            continue
        # template-ness: look back to the previous statement boundary
        head_start = max(masked.rfind(";", 0, m.start()), masked.rfind("}", 0, m.start()),
                         masked.rfind("{", 0, m.start()), masked.rfind("#", 0, m.start()))
        head = masked[head_start + 1 : m.start()]
        is_template = re.search(r"\btemplate\b", head) is not None
        qual = "::".join([*scopes.namespace_at(m.start()), name])
        definitions[qual] = definitions.get(qual, 0) + 1
        found.append(KernelDecl(name=qual, line=line_of(masked, name_pos), is_template=is_template))
    overloaded = {k for k, c in definitions.items() if c > 1}
    unique: dict[str, KernelDecl] = {}
    for k in found:
        unique.setdefault(k.name, k)
    has_main = re.search(r"\bint\s+main\s*\(", masked) is not None
    return ScannedSource(text=src, masked=masked, kernels=list(unique.values()), overloaded=overloaded,
                         has_main=has_main, host_functions=_extern_c_functions(src, masked, scopes))


# ---- extern "C" host functions ----------------------------------------------------------------

_EXTERN_C = re.compile(r'\bextern\s*"\s*"')
_NOT_A_NAME = {"__attribute__", "__declspec", "__launch_bounds__", "alignas", "decltype", "__align__",
               "if", "while", "for", "switch", "return", "sizeof", "void", "int", "float", "double", "char",
               "short", "long", "unsigned", "signed", "bool", "const", "auto"}


def _statements(masked: str, start: int, end: int, single: bool):
    """Function-like statements in ``masked[start:end]`` at namespace scope: yields
    ``(head_start, name, name_pos, params, is_definition)``. Skips struct/initializer braces."""
    pos = head = start
    while pos < end:
        m = re.compile(r"[({;]").search(masked, pos, end)
        if m is None:
            return
        ch = m.group()
        if ch == ";":
            pos = head = m.end()
            if single:
                return
            continue
        if ch == "{":
            close = _match_paren(masked, m.start(), "{", "}")
            if close < 0:
                return
            pos = close + 1
            nxt = re.compile(r"\s*;").match(masked, pos)
            if nxt:  # struct S {...}; / int x[] = {...};
                pos = nxt.end()
            head = pos
            if single:
                return
            continue
        # "(": the statement's first call-like parenthesis names the function
        before = re.search(r"([A-Za-z_]\w*)\s*$", masked[head : m.start()])
        close = _match_paren(masked, m.start())
        if close < 0:
            return
        if before is None or before.group(1) in _NOT_A_NAME:
            pos = close + 1
            continue
        name = before.group(1)
        tail = re.compile(r"(?:\s|\bconst\b|\bnoexcept\b(?:\s*\([^)]*\))?|\bthrow\s*\(\s*\)|"
                          r"__attribute__\s*\(\([^)]*\)\))*").match(masked, close + 1)
        after = tail.end() if tail else close + 1
        is_def = masked.startswith("{", after)
        yield head, name, head + before.start(1), masked[m.start() + 1 : close], is_def
        if is_def:
            body_end = _match_paren(masked, after, "{", "}")
            if body_end < 0:
                return
            pos = head = body_end + 1
        else:
            semi = masked.find(";", close)
            pos = head = (end if semi < 0 else semi + 1)
        if single:
            return


def _extern_c_functions(text: str, masked: str, scopes: _Scopes) -> list[HostFunctionDecl]:
    """``extern "C"`` host functions with a definition in this file (``extern "C" T f(...) {}``,
    inside an ``extern "C" { }`` block, or declared ``extern "C"`` and defined later)."""
    found: dict[str, HostFunctionDecl] = {}
    declared: dict[str, str] = {}

    def head_ok(head: str, params: str) -> bool:
        device_only = re.search(r"\b__device__\b", head) and not re.search(r"\b__host__\b", head)
        return not (re.search(r"\b(?:__global__|template|typedef)\b", head) or device_only or "..." in params
                    or re.search(r"\boperator\b", head))

    for m in _EXTERN_C.finditer(masked):
        if text[m.start() : m.end()].replace(" ", "").replace("\t", "") != 'extern"C"':
            continue
        if scopes.in_function(m.start()):
            continue
        rest = re.compile(r"\s*").match(masked, m.end()).end()
        if masked.startswith("{", rest):
            close = _match_paren(masked, rest, "{", "}")
            ranges = (rest + 1, close if close > 0 else len(masked), False)
        else:
            ranges = (m.end(), len(masked), True)
        start, end, single = ranges
        for head_start, name, name_pos, params, is_def in _statements(masked, start, end, single):
            if name == "main" or not head_ok(masked[head_start:name_pos], params):
                continue
            qual = "::".join([*scopes.namespace_at(name_pos), name])
            if is_def:
                found.setdefault(name, HostFunctionDecl(name, qual, line_of(masked, name_pos)))
            else:
                declared.setdefault(name, qual)
    for name, qual in declared.items():
        if name in found:
            continue
        for d in re.finditer(r"\b" + re.escape(name) + r"\s*\(", masked):
            if scopes.in_function(d.start()):
                continue
            close = _match_paren(masked, d.end() - 1)
            after = masked[close + 1 : close + 200].lstrip() if close > 0 else ""
            if re.match(r"(?:const\s*)?(?:noexcept\s*)?\{", after):
                found[name] = HostFunctionDecl(name, qual, line_of(masked, d.start()))
                break
    return sorted(found.values(), key=lambda f: f.line)


# ---- unsupported features ---------------------------------------------------------------------

_UNSUPPORTED: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\b(?:asm|__asm__|__asm)\s*(?:volatile\s*|__volatile__\s*)?\("), "inline PTX assembly (asm)"),
    (re.compile(r"\bwmma\b|\bmma_sync\b|\bload_matrix_sync\b"), "WMMA tensor-core operations (nvcuda::wmma / mma)"),
    (re.compile(r"\bwgmma\b"), "wgmma tensor-core operations"),
    (re.compile(r"\b__pipeline_memcpy_async\b|\b__pipeline_commit\b|\b__pipeline_wait_prior\b|"
                r"\bmemcpy_async\b|\bcp_async\b|\bmake_pipeline\b|\bcuda::pipeline\b"),
     "asynchronous copies (cp.async / memcpy_async / pipelines)"),
    (re.compile(r"\bthis_cluster\b|\bcluster_group\b|\b__cluster_dims__\b|\bcudaLaunchKernelEx\b"),
     "thread block clusters"),
    (re.compile(r"\bCUtensorMap\b|\bcuTensorMapEncode\w*|\bcp_async_bulk\w*"), "TMA (tensor memory accelerator)"),
    (re.compile(r"\bcudaLaunchCooperativeKernel\w*"), "cooperative grid launch (cudaLaunchCooperativeKernel)"),
    (re.compile(r"\btex1Dfetch\b|\btex[123]D\b|\btexture\s*<|\bcudaCreateTextureObject\b|\bsurf[123]Dwrite\b"),
     "textures and surfaces"),
]
_UNSUPPORTED_INCLUDES = re.compile(
    r'^\s*#\s*include\s*[<"](mma\.h|cuda_pipeline\w*\.h|cuda_awbarrier\w*\.h|cuda/barrier|cuda/pipeline|'
    r'cooperative_groups/memcpy_async\.h|cub/[\w/.]+|thrust/[\w/.]+|cutlass/[\w/.]+|cute/[\w/.]+)[>"]',
    re.M,
)
_INCLUDE_FEATURES = {
    "mma.h": "WMMA tensor-core operations (<mma.h>)",
    "cuda/barrier": "libcu++ hardware barriers (<cuda/barrier>)",
    "cuda/pipeline": "asynchronous copies (<cuda/pipeline>)",
}


def check_supported(scanned: ScannedSource, filename: str) -> None:
    """Raise UnsupportedFeatureError naming the first feature the CPU runtime cannot execute."""
    masked, text = scanned.masked, scanned.text
    hits: list[tuple[int, str]] = []
    for pattern, feature in _UNSUPPORTED:
        m = pattern.search(masked)
        if m:
            hits.append((m.start(), feature))
    # grid-wide sync: this_grid() is fine for thread_rank(), its sync() is not
    if re.search(r"\bthis_grid\b", masked):
        m = re.search(r"\bgrid_group\b[^;]*;|\bthis_grid\s*\(\s*\)\s*\.\s*sync\b", masked)
        gm = re.search(r"\b(\w+)\s*=\s*(?:\w+::)*this_grid\s*\(\s*\)", masked)
        sync_m = re.search(r"\bthis_grid\s*\(\s*\)\s*\.\s*sync\s*\(", masked)
        if gm and not sync_m:
            sync_m = re.search(r"\b" + re.escape(gm.group(1)) + r"\s*\.\s*sync\s*\(|\bsync\s*\(\s*"
                               + re.escape(gm.group(1)) + r"\s*\)", masked)
        if sync_m:
            hits.append((sync_m.start(), "cooperative grid-wide synchronisation (this_grid().sync())"))
        del m
    for m in _UNSUPPORTED_INCLUDES.finditer(text):
        if masked[m.start() : m.end()].strip().startswith("#"):
            inc = m.group(1)
            feature = _INCLUDE_FEATURES.get(inc)
            if feature is None:
                lib = inc.split("/")[0]
                feature = (f"the {lib.upper() if lib in ('cub', 'cute') else lib.capitalize()} library (<{inc}>)"
                           if "/" in inc else f"<{inc}> (asynchronous copies / hardware barriers)")
            hits.append((m.start(), feature))
    if not hits:
        return
    pos, feature = min(hits)
    line = line_of(text, pos)
    code = text.splitlines()[line - 1].strip() if text.splitlines() else ""
    raise UnsupportedFeatureError(
        f"{feature} is not supported by the CPU runtime ({filename}:{line}: {code[:120]})"
    )


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
    rf"\bextern\s+({_QUALIFIER}*?)\b__shared__\b({_QUALIFIER}*?)\b(\w+)\s*\[\s*\]\s*;"
)
_ALIGN = re.compile(rf"(?:__align__|alignas|__attribute__|__declspec)\s*{_PARENS}")


def _keep_newlines(original: str, replacement: str) -> str:
    return replacement + "\n" * original.count("\n")


def _rewrite_extern_shared(text: str, masked: str, scopes: _Scopes, edits: list[tuple[int, int, str]]) -> None:
    for m in _EXTERN_SHARED.finditer(masked):
        type_text = _ALIGN.sub(" ", m.group(1) + " " + m.group(2))
        type_text = " ".join(type_text.split())
        name = m.group(3)
        if not type_text:
            continue
        if scopes.in_function(m.start()):
            new = f"{type_text}* {name} = reinterpret_cast<{type_text}*>(::vf::dynamic_shared());"
        else:
            new = f"static ::vf::DynamicShared<{type_text}> {name};"
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


def _rewrite_volatile(text: str, masked: str, scopes: _Scopes, edits: list[tuple[int, int, str]]) -> None:
    """``volatile T* p`` (variables, parameters of function definitions) and ``(volatile T*)`` casts
    become ``::vf::LockstepPtr<T>``, whose accesses keep the lanes of a warp in lockstep."""
    for m in _VOLATILE_DECL.finditer(masked):
        t = _volatile_type(m)
        if t is None:
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
        if t.split()[0] in _NOT_A_TYPE or not scopes.in_function(m.start()):
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


def _rewrite_launches(text: str, masked: str, edits: list[tuple[int, int, str]]) -> None:
    pos = 0
    while True:
        start = masked.find("<<<", pos)
        if start < 0:
            return
        depth, k = 0, start + 3
        end = -1
        while k < len(masked):
            if masked.startswith(">>>", k) and depth == 0:
                end = k
                break
            ch = masked[k]
            if ch in "([{":
                depth += 1
            elif ch in ")]}":
                depth -= 1
            elif ch == ";":
                break
            k += 1
        if end < 0:
            pos = start + 3
            continue
        callee_start = _callee_start(masked, start)
        callee = text[callee_start:start].strip()
        if not callee:
            pos = end + 3
            continue
        config = text[start + 3 : end]
        label = " ".join(callee.split()).replace("\\", "\\\\").replace('"', '\\"')
        new = (f'::vf::make_launch(::vf::LaunchConfig({config}), "{label}", '
               f"[&](auto&&... vf_args_) {{ {' '.join(callee.split())}(vf_args_...); }})")
        original = text[callee_start : end + 3]
        edits.append((callee_start, end + 3, new + "\n" * (original.count("\n") - config.count("\n"))))
        pos = end + 3


def rewrite(scanned: ScannedSource) -> str:
    """The user's source with launches and ``extern __shared__`` turned into plain C++."""
    text, masked = scanned.text, scanned.masked
    scopes = _Scopes(masked)
    edits: list[tuple[int, int, str]] = []
    _rewrite_extern_shared(text, masked, scopes, edits)
    _rewrite_launches(text, masked, edits)
    if "volatile" in masked:
        _rewrite_volatile(text, masked, scopes, edits)
    edits.sort()
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


def args_launch_shims(scanned: ScannedSource) -> list[str]:
    """Registrations (C++ lines, to append after the user's code) that let
    ``cudaLaunchKernel((const void*)kernel, grid, block, args, ...)`` find each plain kernel's
    parameter types by address. Only for files that call cudaLaunchKernel, so taking a kernel's
    address can never break a file that does not need it."""
    if not re.search(r"\bcudaLaunchKernel\b", scanned.masked):
        return []
    return [f'static ::vf::ArgsLaunchRegistrar vf_args_shim_{i}("{k.name}", &{k.name});'
            for i, k in enumerate(scanned.plain_kernels)]


def normalize_kernel_name(name: str) -> str:
    """Canonical spelling of a kernel name: ``reduce< 256 >`` and ``reduce<256>`` are the same."""
    name = " ".join(name.split())
    return re.sub(r"\s*([<>,*&()\[\]:])\s*", r"\1", name)
