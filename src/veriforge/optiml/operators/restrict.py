"""The ``restrict`` operator: ``__restrict__`` on a kernel's pointer parameters, ``const`` where read-only.

Every pointer parameter of a kernel gets ``__restrict__`` (the compiler may then keep loads in
registers and reorder them) and ``const`` when the kernel never writes through it (the read-only
data path). ``const`` on a pointer that *is* written does not compile, so anything that may write is
a write here: a subscript or dereference assigned or incremented, the pointer reassigned, an
atomic's first argument mentioning it, an element's address taken (``&p[i]``, passed anywhere or
stored) and the pointer itself passed to a function or stored in another variable (an alias). The
prior is 1.0 with a ``no_restrict`` finding, 0.5 otherwise.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from veriforge.cuda.source_reader import close_of, open_of
from veriforge.optiml.operators.registry import EditProposal, motivating_findings, operator
from veriforge.optiml.source_scan import scan

__all__ = ["restrict_edits"]

_MOTIVES = frozenset({"no_restrict", "memory_bound", "uncoalesced_load"})


@operator("restrict", order=30, motives=_MOTIVES)
def restrict_edits(source: str, findings: Sequence[Any] = ()) -> list[EditProposal]:
    sc = scan(source)
    out = []
    for fn in sc.kernels():
        header = sc.text[fn.header_start:fn.body_start]
        open_pos = header.find("(", header.find(fn.name))
        close = close_of(sc.text, fn.header_start + open_pos)
        if open_pos < 0 or close is None:
            continue
        p0 = fn.header_start + open_pos + 1
        params = sc.source[p0:close]
        body = sc.text[fn.body_start:fn.body_end]
        new_params, changed, made_const = [], [], []
        for part in params.split(","):
            m = re.fullmatch(r"(\s*)(.*?\*)\s*([A-Za-z_]\w*)(\s*)", part, re.S)
            if not m or "__restrict__" in part or "restrict" in part.split():
                new_params.append(part)
                continue
            lead, ptype, name, trail = m.groups()
            if "const" not in ptype.split() and not _written(body, name) and ptype.count("*") == 1:
                ptype = "const " + ptype
                made_const.append(name)
            new_params.append(f"{lead}{ptype} __restrict__ {name}{trail}")
            changed.append(name)
        if not changed:
            continue
        new = sc.source[:p0] + ",".join(new_params) + sc.source[close:]
        extra = f" and const on {', '.join(made_const)}" if made_const else ""
        motive = motivating_findings(findings, _MOTIVES)
        prior = 1.0 if any(f["kind"] == "no_restrict" for f in motive) else 0.5
        out.append(EditProposal("restrict", new, f"__restrict__ on {', '.join(changed)} of {fn.name}{extra}",
                                {"params": changed, "const": made_const, "findings": motive}, prior))
    return out


_TOKEN = re.compile(r"[A-Za-z_]\w*|\d[\w.]*|->|\+\+|--|<<=|>>=|&&|\|\||::|[-+*/%&|^!=<>]=|\S")
_ASSIGN = {"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=", "++", "--"}
_LOADS = {"__ldg", "__ldca", "__ldcs", "__ldcg", "__ldlu", "__ldcv"}  # read-only loads: they take const T*
_CONDITION = {"!", "&&", "||", "?"}


def _close(toks: list[str], k: int) -> int:
    """Index of the bracket closing ``toks[k]`` (the last token when it never closes)."""
    end = close_of(toks, k, toks[k])
    return len(toks) - 1 if end is None else end


def _open(toks: list[str], k: int) -> int:
    """Index of the bracket that ``toks[k]`` (a ``)`` or ``>``) closes (0 when none)."""
    return open_of(toks, k, "(" if toks[k] == ")" else "<") or 0


def _written(body: str, name: str) -> bool:
    """Whether the kernel ``body`` (blanked) may write through pointer ``name``: anything not proven a
    read counts (see the module docstring)."""
    toks = _TOKEN.findall(body)
    at = lambda j: toks[j] if 0 <= j < len(toks) else ""  # noqa: E731
    for k, tok in enumerate(toks):
        if tok != name or at(k - 1) in (".", "->", "::"):
            continue
        prev, nxt = at(k - 1), at(k + 1)
        if nxt == "[":  # an element
            j = _close(toks, k + 1) + 1
            while at(j) == "[":
                j = _close(toks, j) + 1
            if at(j) == "." and at(j + 2) in _ASSIGN:
                j += 2  # p[i].x = ...
            if at(j) in _ASSIGN or prev in ("++", "--"):
                return True
            if prev == "&" and not (at(k - 2) == "(" and at(k - 3) in _LOADS):
                return True  # the element's address escapes (atomicAdd(&p[i], v), float* q = &p[i])
            continue
        if nxt in _ASSIGN or prev in ("++", "--"):
            return True  # the pointer itself is reassigned
        if prev == "*" or (prev == "(" and at(k - 2) == "*"):  # *p, *(p + i): written when assigned
            end = k + 1 if prev == "*" else _close(toks, k - 1) + 1
            if at(end) in _ASSIGN:
                return True
            continue
        tested = (prev == "(" and at(k - 2) in ("if", "while") and nxt == ")") or prev in _CONDITION \
            or nxt in ("&&", "||", "?")
        if tested or nxt in ("==", "!=") or prev in ("==", "!="):
            continue  # compared or tested
        if prev == "(" and at(k - 2) in _LOADS:
            continue
        if prev == "(" and at(k - 2) == ">":  # reinterpret_cast<const T*>(p)
            if "const" in toks[_open(toks, k - 2):k - 2]:
                continue
            return True
        if prev == ")" and "*" in toks[_open(toks, k - 1):k - 1]:  # (const T*)p
            if "const" in toks[_open(toks, k - 1):k - 1]:
                continue
            return True
        if prev == "=" or (prev in ("+", "-") and at(k - 2) == "="):  # an alias: const T* q = p + ...;
            j = k - 1
            while j > 0 and at(j - 1) not in (";", "{", "}", ","):
                j -= 1
            decl = toks[j:k]
            if "const" in decl and "*" in decl and decl.index("const") < decl.index("*"):
                continue
            return True
        return True  # passed on, stored, offset: it may be written
    return False
