"""Which operations count as floating-point operations, so static counts match Nsight Compute.

ncu's ``flops`` feature counts fp32 FFMA twice and FADD/FMUL once; special functions (``expf``,
``sqrtf``: the MUFU unit) and conversions are not counted. The analysis counts ``+ - * /`` whose
operands are floating point (a division is counted once, although it compiles to several
instructions), the same operators in compound assignments, and the explicit FMA intrinsics as 2.
Integer arithmetic (index computation) never counts. fp64 and fp16 arithmetic count as well and
are reported separately in the traits, since ncu's fp32 metric would not see them.
"""

from __future__ import annotations

import re

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

FLOP_CALLS.update({"__hsub": 1, "__hsub2": 2, "__hdiv": 1, "__h2div": 2, "__hneg": 0, "__hneg2": 0, "fdividef": 1})

_MATH = (
    "sqrt rsqrt cbrt rcbrt exp exp2 exp10 expm1 log log2 log10 log1p pow sin cos tan asin acos atan atan2 "
    "sinh cosh tanh asinh acosh atanh erf erfc erfinv erfcinv erfcx lgamma tgamma floor ceil round rint trunc "
    "nearbyint lrint llrint lround llround fmod remainder remquo modf frexp ldexp scalbn scalbln logb ilogb "
    "copysign nextafter hypot rhypot norm3d rnorm3d norm4d rnorm4d norm rnorm sincos sincospi sinpi cospi fdim "
    "nan j0 j1 jn y0 y1 yn cyl_bessel_i0 cyl_bessel_i1 normcdf normcdfinv signbit isnan isinf isfinite"
).split()
#: calls that neither touch memory nor do counted FLOPs (special functions run on the MUFU unit and
#: are not FFMA/FADD/FMUL, conversions, bit tricks, intrinsics, debugging, cooperative-groups handles)
WORK_FREE_CALLS = frozenset(
    [*(_MATH), *(m + "f" for m in _MATH)]
    + [f"__{m}f" for m in ("exp", "exp10", "log", "log2", "log10", "pow", "sin", "cos", "tan", "sincos")]
    + (
        "__saturatef __frcp_rn __frcp_rz __frcp_ru __frcp_rd __fsqrt_rn __fsqrt_rz __fsqrt_ru __fsqrt_rd "
        "__frsqrt_rn __drcp_rn __dsqrt_rn __popc __popcll __clz __clzll __ffs __ffsll __brev __brevll "
        "__byte_perm __mul24 __umul24 __mulhi __umulhi __mul64hi __umul64hi __sad __usad __rhadd __uhadd "
        "__urhadd __funnelshift_l __funnelshift_r __funnelshift_lc __funnelshift_rc __dp4a __dp2a_lo __dp2a_hi "
        "__isnanf __isinff __finitef __isnan __isinf __finite __signbitf __hisnan __hisinf __hgt __hlt __hge __hle "
        "__heq __hne __hmax __hmin __habs __hgt2 __hlt2 __heq2 __hmax2 __hmin2 __habs2 __low2half __high2half "
        "__lows2half2 __highs2half2 __halves2half2 __low2float __high2float __half2half2 __half22float2 "
        "__float22half2_rn __bfloat162float __bfloat1622float2 "
        "printf assert __assert_fail __trap __brkpt clock clock64 __globaltimer __nanosleep __prof_trigger "
        "__threadfence __threadfence_block __threadfence_system __isGlobal __isShared __isConstant __isLocal "
        "__cvta_generic_to_shared __cvta_generic_to_global __builtin_assume __builtin_expect __assume "
        "__builtin_unreachable this_thread_block this_grid this_cluster tiled_partition coalesced_threads "
        "thread_rank size num_threads group_dim group_index thread_index meta_group_rank meta_group_size "
        "sizeof alignof static_assert dim3"
    ).split()
)
_WORK_FREE_RE = re.compile(
    r"^(__(u?int|u?ll|u?short|float|double|half|bfloat16|float2|half2|bfloat162|floats|uint|longlong)"
    r"(2|_as_)\w*|__\w+_as_\w+|make_\w+|h2?(exp|exp2|exp10|log|log2|log10|sqrt|rsqrt|rcp|sin|cos|floor|ceil|"
    r"trunc|rint))$"
)


def counts_as_flop(op: str, is_float: bool) -> bool:
    return is_float and op in ARITH_OPS


def work_free_call(name: str) -> bool:
    """A builtin that does no counted FLOPs and no memory access (math, conversion, bit intrinsics)."""
    return name in WORK_FREE_CALLS or bool(_WORK_FREE_RE.match(name))
