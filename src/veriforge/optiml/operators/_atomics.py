"""Reading one atomic statement of a kernel: the helpers shared by the operators that rewrite atomics
(``aggregate``, ``privatize_histogram``).

An operator that moves an atomic (into a register, into shared memory) must know that the atomic is
a statement of its own (its old value unused, so nothing else depends on the order of the updates),
what its two arguments are, and which element type its address has.
"""

from __future__ import annotations

import re

from veriforge.optiml.source_scan import Function, SourceScan, param_parts
from veriforge.optiml.source_tokens import Refuse, Tok

__all__ = ["ATOMIC", "ATOMIC_TYPES", "atomic_statement", "called_device_bodies", "pointer_type"]

ATOMIC = re.compile(r"\batomic\w*\b")
# the spellings of the element types atomics are supported on -> canonical type
ATOMIC_TYPES = {"float": "float", "int": "int", "signed int": "int", "unsigned": "unsigned int",
                "unsigned int": "unsigned int", "unsigned long long": "unsigned long long",
                "unsigned long long int": "unsigned long long"}


def called_device_bodies(sc: SourceScan, body: str) -> list[str]:
    """The bodies of the device functions ``body`` calls (by name; one level)."""
    called = set(re.findall(r"\b([A-Za-z_]\w*)\s*\(", body))
    return [sc.text[f.body_start:f.body_end] for f in sc.functions if f.device and f.name in called]


def pointer_type(sc: SourceScan, fn: Function, name: str) -> str:
    """The canonical element type (a value of :data:`ATOMIC_TYPES`) of pointer parameter ``name`` of ``fn``;
    Refuse for a const, multi-level or unsupported pointer, or when ``name`` is not a pointer parameter."""
    parts = param_parts(sc.text, fn, at_call=True)
    if parts is None:
        raise Refuse("kernel header")
    for part in parts:
        m = re.fullmatch(r"\s*(.*?)\*\s*(?:__restrict__\s+)?([A-Za-z_]\w*)\s*", part, re.S)
        if m and m.group(2) == name:
            words = m.group(1).split()
            if "const" in words or "*" in m.group(1):
                raise Refuse("address is a const or multi-level pointer")
            ctype = ATOMIC_TYPES.get(" ".join(words))
            if ctype is None:
                raise Refuse(f"unsupported atomic type {' '.join(words)!r}")
            return ctype
    raise Refuse("atomic address is not a pointer parameter")


def atomic_statement(toks: list[Tok], k: int) -> tuple[int, list[tuple[int, int]]]:
    """``toks[k]`` starts ``atomicX(address, value);``, a statement of its own: (index of its ``)``,
    token ranges of the two arguments); Refuse otherwise (the old value is used, other arity)."""
    # a statement of its own: preceded by ; { } ) (an if/for header or a previous statement) or else
    prev = toks[k - 1].text if k else "{"
    if prev not in (";", "{", "}", ")", "else") or (prev == ")" and not _closes_header(toks, k - 1)):
        raise Refuse("the atomic's value is used")
    if k + 1 >= len(toks) or toks[k + 1].text != "(":
        raise Refuse("malformed atomic")
    close = _close(toks, k + 1)
    if close + 1 >= len(toks) or toks[close + 1].text != ";":
        raise Refuse("the atomic's value is used")
    args = _split_args(toks, k + 2, close)
    if len(args) != 2:
        raise Refuse("atomic with other than two arguments")
    return close, args


def _closes_header(toks: list[Tok], k: int) -> bool:
    """``toks[k]`` is a ``)`` closing an ``if``/``for`` header."""
    depth = 0
    for j in range(k, -1, -1):
        if toks[j].text == ")":
            depth += 1
        elif toks[j].text == "(":
            depth -= 1
            if depth == 0:
                return j > 0 and toks[j - 1].text in ("if", "for")
    return False


def _close(toks: list[Tok], i: int) -> int:
    depth = 0
    for j in range(i, len(toks)):
        if toks[j].text in "([{" and len(toks[j].text) == 1:
            depth += 1
        elif toks[j].text in ")]}" and len(toks[j].text) == 1:
            depth -= 1
            if depth == 0:
                return j
    raise Refuse("unbalanced brackets")


def _split_args(toks: list[Tok], a: int, b: int) -> list[tuple[int, int]]:
    out, cur, depth = [], a, 0
    for j in range(a, b):
        t = toks[j].text
        if t in ("(", "[", "{"):
            depth += 1
        elif t in (")", "]", "}"):
            depth -= 1
        elif t == "," and depth == 0:
            out.append((cur, j))
            cur = j + 1
    out.append((cur, b))
    return out
