"""Tidy the winner before it is written as ``best.cu``: what the edits left behind, not what they did.

Edit operators rewrite a kernel's body and its launch, but leave the text around them alone, so
the winner keeps the start's comments about its performance ("the B loads are fully
uncoalesced") after the edit removed the reason, and host variables the old launch used
(``dim3 grid(...)``) after the new launch stopped using them. Both mislead a reader of ``best.cu``.

Only two things are changed, both without changing what the program does: a comment the start
had, attached to a function the edits changed, that talks about performance (coalescing, bank
conflicts, idle threads...) is replaced by one line saying the notes no longer apply; and a host
variable the start used, now declared but never used, whose initialiser calls nothing (numbers,
names, operators, ``dim3(...)``), is removed. Everything else stays byte for byte.
"""

from __future__ import annotations

import re

from veriforge.cuda.source_reader import blank, functions, lex

__all__ = ["STALE_NOTE", "tidy_best"]

STALE_NOTE = "// (OptiML-X edited this function: the original's performance notes no longer applied and were removed)"
_PERF_WORDS = re.compile(
    r"coalesc|uncoalesc|bank.?conflict|naive|slow|serial|diverg|idle|occupancy|one thread per|strided|"
    r"memory.bound|compute.bound|latency|bandwidth|cache|shared memory|registers?|spill|unroll|vectori[sz]",
    re.I)
_PURE_INIT = re.compile(r"^[\w\s+\-*/%()<>=!&|^~?:.,]*$")
_HOST_DECL = re.compile(
    r"^[^\S\n]*(?:const\s+)?(?P<type>dim3|int|unsigned(?:\s+int)?|long(?:\s+long)?|size_t|float|double|auto)\s+"
    r"(?P<name>[A-Za-z_]\w*)\s*(?P<init>\((?P<args>[^;{}]*)\)|=\s*(?P<expr>[^;{}]*)|\{(?P<brace>[^;{}]*)\})?\s*;"
    r"[^\S\n]*\n?", re.M)


def _changed_functions(start: str, best: str) -> list[tuple[int, int]]:
    """``(start, end)`` spans in ``best`` of function definitions whose text differs from the
    start's function of the same name (or that the start did not have)."""
    old = {f.name: start[f.start:f.body[1] + 1] for f in functions(blank(start)) if f.body is not None}
    spans = []
    for f in functions(blank(best)):
        if f.body is not None and old.get(f.name) != best[f.start:f.body[1] + 1]:
            spans.append((f.start, f.body[1] + 1))
    return spans


def _comment_blocks(text: str) -> list[tuple[int, int]]:
    """Comments of ``text`` as blocks: consecutive ``//`` lines (only indentation between them) are
    one block, read together, so a sentence split over lines is kept or replaced whole."""
    blocks: list[tuple[int, int]] = []
    for c in lex(text):
        if c.kind != "comment":
            continue
        if blocks and re.fullmatch(r"[^\S\n]*\n[^\S\n]*", text[blocks[-1][1]:c.start]):
            blocks[-1] = (blocks[-1][0], c.end)
        else:
            blocks.append((c.start, c.end))
    return blocks


def _stale_comments(start: str, best: str, changed: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Spans of comment blocks in ``best`` to replace: copied from the start, about performance, and
    in or right above (only blank space between) a changed function."""
    start_comments = {start[a:b] for a, b in _comment_blocks(start)}
    out = []
    for c_start, c_end in _comment_blocks(best):
        text = best[c_start:c_end]
        if text not in start_comments or not _PERF_WORDS.search(text):
            continue
        for a, b in changed:
            above = c_end <= a and not best[c_end:a].strip()
            if a <= c_start < b or above:
                out.append((c_start, c_end))
                break
    return out


def _dead_host_variables(start: str, best: str) -> list[tuple[int, int]]:
    """Spans of declarations in host functions of ``best`` of a variable nothing uses, with an
    initialiser that calls nothing, that the start used (the edit orphaned it)."""
    code = blank(best)
    start_code = blank(start)
    out = []
    for f in functions(code):
        if f.body is None or f.qualifiers & {"__global__", "__device__"}:
            continue
        lo, hi = f.body[0] + 1, f.body[1]
        body = code[lo:hi]
        for m in _HOST_DECL.finditer(body):
            name = m.group("name")
            init = m.group("args") or m.group("expr") or m.group("brace") or ""
            if not _PURE_INIT.match(init) or re.search(r"\b(?!dim3\b)[A-Za-z_]\w*\s*\(", init):
                continue  # it calls something: removing it could change what the program does
            # anywhere else in the file (a macro defined outside the function may use it)
            rest = code[:lo + m.start()] + code[lo + m.end():]
            if re.search(rf"\b{re.escape(name)}\b", rest):
                continue
            if len(re.findall(rf"\b{re.escape(name)}\b", start_code)) < 2:
                continue  # unused in the start too: the author's, not the edit's
            out.append((lo + m.start(), lo + m.end()))
    return out


def tidy_best(start: str, best: str) -> str:
    """``best`` with the start's performance comments on changed functions replaced by
    :data:`STALE_NOTE` (once per function) and orphaned host variables removed (module docstring).
    Returns ``best`` unchanged when it is the start."""
    if start == best:
        return best
    changed = _changed_functions(start, best)
    edits: list[tuple[int, int, str]] = [(a, b, "") for a, b in _dead_host_variables(start, best)]
    noted: set[tuple[int, int]] = set()
    for a, b in _stale_comments(start, best, changed):
        fn = next((s for s in changed if s[0] >= b or s[0] <= a < s[1]), None)
        edits.append((a, b, "" if fn in noted else STALE_NOTE))
        if fn is not None:
            noted.add(fn)
    out = best
    for a, b, new in sorted(edits, reverse=True):
        if not new:  # a whole line goes: take its indentation and newline with it
            line_start = out.rfind("\n", 0, a) + 1
            if not out[line_start:a].strip():
                a = line_start
                if out[b:b + 1] == "\n" and new == "":
                    b += 1
        out = out[:a] + new + out[b:]
    return out
