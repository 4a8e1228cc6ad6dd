"""The ``unroll`` operator: ``#pragma unroll`` on innermost loops.

A loop whose bound resolves to a constant (``#define``/``const`` values, literals) gets a plain
``#pragma unroll`` (full unrolling); any other innermost loop ``#pragma unroll 4``. A loop that
already carries an unroll pragma, or that contains another loop, is left alone. The prior is 1.0
when the parent's diagnosis reports ``loop_not_unrolled`` at that line, 0.6 otherwise.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from veriforge.optiml.operators.registry import EditProposal, motivating_findings, operator
from veriforge.optiml.source_scan import eval_int, scan
from veriforge.optiml.source_tokens import close_of, statement_after

__all__ = ["unroll_edits"]

_MOTIVES = frozenset({"loop_not_unrolled", "memory_bound", "compute_bound"})


@operator("unroll", order=20, motives=_MOTIVES)
def unroll_edits(source: str, findings: Sequence[Any] = ()) -> list[EditProposal]:
    sc = scan(source)
    env = sc.constants()
    out = []
    for fn in sc.functions:
        if not (fn.kernel or fn.device):
            continue
        body = sc.text[fn.body_start:fn.body_end]
        for m in re.finditer(r"\bfor\s*\(", body):
            start = fn.body_start + m.start()
            line_start = sc.text.rfind("\n", 0, start) + 1
            before = sc.text[:line_start].rstrip().rsplit("\n", 1)[-1]
            if "#pragma" in before and "unroll" in before:
                continue
            header_end = close_of(sc.text, fn.body_start + m.end() - 1)
            if header_end is None:
                continue
            loop_body = statement_after(sc.text, header_end + 1)
            if re.search(r"\b(for|while)\s*\(", loop_body):
                continue  # not innermost
            parts = sc.text[fn.body_start + m.end():header_end].split(";")
            bound = parts[1] if len(parts) == 3 else ""
            constant = bool(bound) and all(eval_int(x, env) is not None for x in re.split(r"<=|<|>=|>|!=", bound)[1:])
            pragma = "#pragma unroll" if constant else "#pragma unroll 4"
            indent = re.match(r"[ \t]*", sc.source[line_start:]).group(0)  # type: ignore[union-attr]
            new = sc.source[:line_start] + indent + pragma + "\n" + sc.source[line_start:]
            line = sc.line(start)
            motive = [f for f in motivating_findings(findings, _MOTIVES)
                      if f["kind"] != "loop_not_unrolled" or f["line"] == line]
            prior = 1.0 if any(f["kind"] == "loop_not_unrolled" for f in motive) else 0.6
            out.append(EditProposal("unroll", new, f"{pragma} on the loop at line {line} of {fn.name}",
                                    {"line": line, "pragma": pragma, "findings": motive}, prior))
    return out
