"""Which operations count as floating-point operations, so static counts match Nsight Compute.

ncu's ``flops`` feature counts fp32 FFMA twice and FADD/FMUL once; special functions (``expf``,
``sqrtf``: the MUFU unit) and conversions are not counted. The analysis counts ``+ - * /`` whose
operands are floating point (a division is counted once, although it compiles to several
instructions), the same operators in compound assignments, and the explicit FMA intrinsics as 2.
Integer arithmetic (index computation) never counts. fp64 and fp16 arithmetic count as well and
are reported separately in the traits, since ncu's fp32 metric would not see them.
"""

from __future__ import annotations

ARITH_OPS = frozenset({"+", "-", "*", "/"})
COMPOUND_OPS = {"+=": "+", "-=": "-", "*=": "*", "/=": "/"}

FLOP_CALLS: dict[str, int] = {
    "fmaf": 2,
    "fma": 2,
    "__fmaf_rn": 2,
    "__fmaf_rz": 2,
    "__fmaf_ru": 2,
    "__fmaf_rd": 2,
    "__fma_rn": 2,
    "__fadd_rn": 1,
    "__fadd_rz": 1,
    "__fsub_rn": 1,
    "__fmul_rn": 1,
    "__fmul_rz": 1,
    "__fdiv_rn": 1,
    "__fdividef": 1,
    "__dadd_rn": 1,
    "__dmul_rn": 1,
    "__hadd": 1,
    "__hmul": 1,
    "__hfma": 2,
    "__hadd2": 2,
    "__hmul2": 2,
    "__hfma2": 4,
}


def counts_as_flop(op: str, is_float: bool) -> bool:
    return is_float and op in ARITH_OPS
