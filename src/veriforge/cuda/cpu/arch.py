"""``__CUDA_ARCH__`` in a one-pass build: which code sees the device view.

nvcc compiles a ``.cu`` file twice: a host pass without ``__CUDA_ARCH__`` and a device pass with
``__CUDA_ARCH__`` = the target architecture (``900`` for sm_90); ``__CUDACC__`` is defined in both.
A kernel's body comes from the device pass, a host function's from the host pass. The CPU runtime
compiles each file once, so the front end decides per *conditional* which view it gets, and
rewrites the ``#if``/``#elif``/``#ifdef``/``#ifndef`` lines that take the device view to test
``VF_CUDA_ARCH_DEVICE_`` (defined to 900 by ``vf_cuda.h``, the compute capability
``cudaGetDeviceProperties`` reports) instead of ``__CUDA_ARCH__`` (never defined here):

* **inside a function body** - a ``__global__`` function or a ``__device__`` function without
  ``__host__`` (and lambdas or local classes inside one): device view, for conditionals and for
  ``__CUDA_ARCH__`` used in code (``printf("%d", __CUDA_ARCH__)``). Inside host functions and
  ``__host__ __device__`` functions: host view (one body serves host and device callers here; the
  host branch is the one that compiles everywhere).
* **outside function bodies** (namespace or class scope): device view when the conditional guards
  device code only - it defines at least one function and every function it defines is
  ``__global__`` or ``__device__``-only (``#if __CUDA_ARCH__ >= 800`` around a device
  specialisation); a conditional with one branch that only includes headers
  (``#if __CUDA_ARCH__ >= 700`` / ``#include <cuda/barrier>``) includes them if either pass would;
  every other conditional (constants, types, macros, host functions) takes the host view, as before.

Every rewrite replaces text on the directive's own lines, so line numbers do not move.
"""

from __future__ import annotations

import re

from veriforge.cuda.source_reader import balanced, blank, enclosing_heads, functions, line_end

__all__ = ["DEVICE_MACRO", "apply_arch", "arch_edits"]

DEVICE_MACRO = "VF_CUDA_ARCH_DEVICE_"
_ARCH = re.compile(r"\b__CUDA_ARCH__\b")
_DIRECTIVE = re.compile(r"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|elifdef|elifndef|else|endif)\b", re.M)
_FUNCTION_HEAD = re.compile(
    r"\)\s*(?:const\b\s*|noexcept\b\s*(?:\([^()]*\)\s*)?|override\b\s*|final\b\s*|mutable\b\s*|"
    r"__attribute__\s*\(\([^()]*\)\)\s*|->\s*[\w:<>,*&\s]+?)*$")
_CONTROL = re.compile(r"^\s*(?:if|for|while|switch|catch|do|else)\b")
_INCLUDE_ONLY = re.compile(r"^\s*(?:#\s*include\b.*)?$")


def _brace_heads(masked: str, pos: int) -> list[str]:
    """The text before each ``{`` enclosing ``pos``, outermost first, without preprocessor lines."""
    return [_strip_directives(head) for head in enclosing_heads(masked, pos)]


def _strip_directives(head: str) -> str:
    return "\n".join(line for line in head.split("\n") if not line.lstrip().startswith("#"))


def _is_function_head(head: str) -> bool:
    return bool(_FUNCTION_HEAD.search(head)) and "(" in head and not _CONTROL.match(head)


def _device_only(head: str) -> bool | None:
    """True for a ``__global__`` or ``__device__``-only declarator, False for host or
    ``__host__ __device__``."""
    if re.search(r"\b__global__\b", head):
        return True
    if re.search(r"\b__device__\b", head):
        return not re.search(r"\b__host__\b", head)
    return False


def _function_side(masked: str, pos: int) -> str | None:
    """``"device"``/``"host"`` for a position inside a function body (the outermost function
    decides: a lambda in a kernel is device code), None at namespace or class scope."""
    for head in _brace_heads(masked, pos):
        if _is_function_head(head):
            return "device" if _device_only(head) else "host"
    return None


def _span_functions(masked: str, start: int, end: int) -> list[str] | None:
    """Heads of the function definitions at namespace scope of ``masked[start:end]``; None when the
    span's braces do not balance (a conditional that opens or closes a scope)."""
    if not balanced(masked, start, end):
        return None
    return [_strip_directives(f.head(masked)) for f in functions(masked, start, end)]


class _Group:
    __slots__ = ("branches", "end", "start")

    def __init__(self, start: int) -> None:
        self.start = start
        self.branches: list[tuple[int, int, str]] = []  # (directive start, line end, kind)
        self.end = -1


def _groups(text: str, masked: str) -> list[_Group]:
    groups: list[_Group] = []
    stack: list[_Group] = []
    for m in _DIRECTIVE.finditer(masked):
        kind = m.group(1)
        end = line_end(text, m.start())
        if kind in ("if", "ifdef", "ifndef"):
            g = _Group(m.start())
            g.branches.append((m.start(), end, kind))
            stack.append(g)
            groups.append(g)
        elif not stack:
            continue
        elif kind == "endif":
            stack.pop().end = end
        else:
            stack[-1].branches.append((m.start(), end, kind))
    return [g for g in groups if g.end >= 0]


def _view(text: str, masked: str, g: _Group) -> str:
    """``"device"``, ``"union"`` (include-only, one branch) or ``"host"``."""
    side = _function_side(masked, g.start)
    if side is not None:
        return side
    heads = _span_functions(masked, g.branches[0][1], g.end)
    if heads is None:
        return "host"
    if heads:
        return "device" if all(_device_only(h) for h in heads) else "host"
    if len(g.branches) == 1:
        body = masked[g.branches[0][1] : masked.rfind("\n", 0, g.end) if g.end > g.start else g.end]
        if "#" in body and all(_INCLUDE_ONLY.match(line) for line in body.split("\n")):
            return "union"
    return "host"


def arch_edits(text: str, masked: str) -> list[tuple[int, int, str]]:
    """Edits ``(start, end, replacement)`` giving device code its view of ``__CUDA_ARCH__``
    (see the module docstring); empty when the file does not mention it."""
    if "__CUDA_ARCH__" not in masked:
        return []
    edits: list[tuple[int, int, str]] = []
    directive_spans: list[tuple[int, int]] = []
    for g in _groups(text, masked):
        conds = [(a, b, k) for a, b, k in g.branches if k not in ("else", "endif")]
        directive_spans += [(a, b) for a, b, _ in g.branches]
        if not any(_ARCH.search(masked, a, b) for a, b, _ in conds):
            continue
        view = _view(text, masked, g)
        if view == "device":
            for a, b, _ in conds:
                for m in _ARCH.finditer(masked, a, b):
                    edits.append((m.start(), m.end(), DEVICE_MACRO))
        elif view == "union":
            a, b, kind = conds[0]
            line = text[a:b]
            if "\n" in line:
                continue
            if kind in ("ifdef", "ifndef"):
                edits.append((a, b, "#if 1"))
            else:
                cond = re.sub(r"^\s*#\s*if\b", "", line).strip()
                edits.append((a, b, f"#if ({_ARCH.sub(DEVICE_MACRO, cond)}) || ({cond})"))
    # __CUDA_ARCH__ in code (not in a directive) inside device-only function bodies
    directive_spans.sort()
    for m in _ARCH.finditer(masked):
        if any(a <= m.start() < b for a, b in directive_spans):
            continue
        line_start = masked.rfind("\n", 0, m.start()) + 1
        if masked[line_start:m.start()].lstrip().startswith("#"):
            continue  # another directive (#define ...): left alone
        if _function_side(masked, m.start()) == "device":
            edits.append((m.start(), m.end(), DEVICE_MACRO))
    return edits


def apply_arch(text: str, masked: str | None = None) -> str:
    """``text`` with :func:`arch_edits` applied (the preprocessing that decides refusals must see
    what the compiler will see)."""
    if masked is None:
        masked = blank(text)
    edits = sorted(arch_edits(text, masked))
    if not edits:
        return text
    out, last = [], 0
    for a, b, new in edits:
        if a < last:
            continue
        out.append(text[last:a])
        out.append(new)
        last = b
    out.append(text[last:])
    return "".join(out)
