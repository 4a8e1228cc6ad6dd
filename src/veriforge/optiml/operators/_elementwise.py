"""Launch rewriting for 1-D element-wise kernels (:func:`~veriforge.optiml.kernel_reader.match_elementwise`):
shared by the operators that give each thread several elements (``vectorize``, ``coarsen``).

A kernel that handles ``per_thread`` elements per thread needs ``ceil(B / per_thread)`` threads where it
had ``B``; the grid is rewritten from the kernel's bound ``B`` in the launch's own arguments, with the
block expression unchanged, so ``tune`` still finds (and may change) the block size.
"""

from __future__ import annotations

import re

from veriforge.optiml.kernel_reader import ElemKernel
from veriforge.optiml.source_scan import DIM3_DECL, EXPR_DECL, SourceScan, identifiers
from veriforge.optiml.source_tokens import trim_span

__all__ = ["depends_on", "elementwise_launch_edits", "paren", "substitute"]


def elementwise_launch_edits(sc: SourceScan, k: ElemKernel, per_thread: int | str
                             ) -> list[tuple[int, int, str]] | None:
    """The grid edits that launch ``ceil(ceil(B / per_thread) / block)`` blocks of the unchanged block size
    at every launch of ``k`` (``per_thread`` elements per thread: an int, or the name of a constant);
    None when a launch cannot be read or rewritten safely: ``k`` used other than by ``<<<>>>``
    launches, a written pointer aliasing another pointer argument, a bound not expressible in the
    launch's arguments, a grid that does not follow the bound, a multi-dimensional block."""
    text = sc.text
    launches = sc.launches_of(k.name)
    if not launches:
        return None
    for m in re.finditer(rf"(?<![\w.]){re.escape(k.name)}\b", text):
        head = text[max(text.rfind(c, 0, m.start()) for c in ";{}") + 1:m.start()]
        if re.compile(r"\s*(?:<[^<>;]*>)?\s*<<<").match(text, m.end()) or "__global__" in head:
            continue
        return None  # used other than by a launch (a function pointer, cudaLaunchKernel): launches unseen
    edits = []
    for la in launches:
        call = sc.launch_call(la)
        if call is None:
            return None
        args = [" ".join(text[s:e].split()) for s, e in call[0]]
        if len(args) != len(k.params):
            return None
        arg_of = {p.name: a for p, a in zip(k.params, args, strict=True)}
        # Distinct buffers: a written pointer must not alias another pointer argument.
        for p in k.params:
            if p.pointer and k.mode.get(p.name) in ("rw", "wo"):
                others = [arg_of[q.name] for q in k.params if q.pointer and q.name != p.name]
                if arg_of[p.name] in others:
                    return None
        # Bound in host terms: kernel parameters -> the launch's arguments.
        ids = identifiers(k.bound)
        consts = sc.constants()
        if any(i not in arg_of and i not in consts for i in ids):
            return None
        if any(next(p for p in k.params if p.name == i).pointer for i in ids if i in arg_of):
            return None
        host_bound = substitute(k.bound, arg_of)
        host_ids = identifiers(host_bound)
        if not host_ids:
            return None
        host_fn = sc.host_function(la)
        defs: dict[str, str] = {}
        dim3s: set[str] = set()
        if host_fn is not None:
            hbody = text[host_fn.body_start:host_fn.body_end]
            for m in EXPR_DECL.finditer(hbody):
                defs.setdefault(m.group(1), m.group(2))
            for m in DIM3_DECL.finditer(hbody):
                dim3s.add(m.group(1))
        grid = sc.expr(la.grid)
        block = sc.expr(la.block)
        bare_dim3 = {m.group(1) for m in re.finditer(r"(?<![\w.])([A-Za-z_]\w*)\b(?!\s*\.)", grid)} & dim3s
        if "dim3" in grid or "{" in grid or bare_dim3 or "dim3" in block or "{" in block:
            return None
        if not depends_on(grid, host_ids, defs):
            return None  # the grid does not follow the bound: it is not the one-thread-per-element grid
        dims = sc.block_dims(la)
        if dims is not None and dims[1] * dims[2] != 1:
            return None
        if re.fullmatch(r"[A-Za-z_]\w*", block) and block in dim3s:
            block = f"{block}.x"
        b = block if re.fullmatch(r"[A-Za-z_][\w.]*|\d+[uU]?", block) else f"({block})"
        lit = re.fullmatch(r"(\d+)[uU]?", block)
        minus = f" + {int(lit.group(1)) - 1}" if lit else f" + {b} - 1"
        per = f"{per_thread - 1}) / {per_thread}" if isinstance(per_thread, int) else \
            f"{per_thread} - 1) / {per_thread}"
        new_grid = f"(({host_bound} + {per}{minus}) / {b}"
        edits.append((*trim_span(sc.source, la.grid), new_grid))
    return edits


def substitute(expr: str, values: dict[str, str]) -> str:
    """``expr`` with each identifier in ``values`` replaced by its (parenthesised) value."""
    return re.sub(r"(?<![\w.])[A-Za-z_]\w*\b",
                  lambda m: paren(values[m.group(0)]) if m.group(0) in values else m.group(0), expr)


def paren(expr: str) -> str:
    return expr if re.fullmatch(r"[A-Za-z_][\w.]*|\d+", expr) else f"({expr})"


def depends_on(expr: str, names: set[str], defs: dict[str, str]) -> bool:
    seen: set[str] = set()
    todo = list(identifiers(expr))
    while todo:
        name = todo.pop()
        if name in names:
            return True
        if name in seen:
            continue
        seen.add(name)
        todo.extend(identifiers(defs.get(name, "")))
    return False
