"""The ``launch_bounds`` operator: ``__launch_bounds__(N)`` from the kernel's single block size.

N is the resolved thread count of every launch of the kernel (all launches must agree); when the
block size is written as a file-level constant the bound names the constant, so a later ``tune``
of it keeps the two consistent (``tune`` also raises a literal bound that would fall below a new
block size). ``__global__ __launch_bounds__(N) void k(...)`` is accepted by nvcc like the canonical
order. The prior grows with ``low_occupancy``/``register_spill`` findings (0.5 without).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from veriforge.optiml.operators.registry import EditProposal, motivating_findings, operator
from veriforge.optiml.source_scan import scan

__all__ = ["launch_bounds_edits"]

_MOTIVES = frozenset({"low_occupancy", "register_spill"})


@operator("launch_bounds", order=40, motives=_MOTIVES)
def launch_bounds_edits(source: str, findings: Sequence[Any] = ()) -> list[EditProposal]:
    sc = scan(source)
    consts = sc.constants()
    out = []
    for fn in sc.kernels():
        header = sc.text[fn.header_start:fn.body_start]
        if "__launch_bounds__" in header:
            continue
        launches = [launch for launch in sc.launches if launch.kernel == fn.name]
        if not launches:
            continue
        sizes = {sc.block_dims(launch) for launch in launches}
        if len(sizes) != 1 or None in sizes:
            continue
        dims = sizes.pop()
        assert dims is not None
        threads = dims[0] * dims[1] * dims[2]
        expr = sc.expr(launches[0].block)
        if re.fullmatch(r"[A-Za-z_]\w*", expr) and expr in consts and "dim3" not in expr:
            bound = expr  # follows later tuning of that constant
        else:
            bound = str(threads)
        g = header.find("__global__")
        pos = fn.header_start + g + len("__global__")
        new = sc.source[:pos] + f" __launch_bounds__({bound})" + sc.source[pos:]
        # `__global__ __launch_bounds__(N) void k(...)` is accepted by nvcc like the canonical order.
        motive = motivating_findings(findings, _MOTIVES)
        prior = 1.0 + sum(float(f["severity"] or 0) for f in motive) if motive else 0.5
        out.append(EditProposal("launch_bounds", new, f"__launch_bounds__({bound}) on {fn.name}",
                                {"threads": threads, "bound": bound, "findings": motive}, prior))
    return out
