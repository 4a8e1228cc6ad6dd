"""C→CUDA normalisation family: softmax, log-softmax, layernorm, rmsnorm, L2-normalise, logsumexp and
cross-entropy over the rows, the columns or the middle axis of a tensor.

Why generated from one description: every op here is "a few reductions over a slice, then an
element-wise rewrite of the slice". An op is described once (its reductions, the per-slice values
derived from them, the element and per-slice outputs) and four execution templates turn it into
kernels — one thread per slice, one block per slice (shared-memory tree), one warp per slice
(shuffles), and a 32-slice x 8-thread tile (shared-memory combine) — plus the serial C reference.

Which template is fast depends on the axis: for rows (the slice is contiguous) a warp or block per
slice coalesces; for columns or the middle axis of a 3-D tensor (slice stride > 1) neighbouring
*slices* are contiguous, so one-thread-per-slice coalesces and a warp per slice does not; the quality
labels follow that.

Structural variants: axis (rows / columns / middle of 3-D), op, pre-scaling (temperature, additive
bias), masking (explicit mask, causal), affine parameters (gamma/beta, gamma, 1+gamma), saved
statistics, fused residual add, in-place, eps handling, float/double.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from veriforge.cudaperf.dataset.family import FamilyError, GeneratedTask, Impl, family

from ._params import ParamList as _P

__all__ = ["generate_softmax"]

_FN = {"float": {"exp": "expf", "log": "logf", "sqrt": "sqrtf", "max": "fmaxf", "one": "1.0f", "zero": "0.0f"},
       "double": {"exp": "exp", "log": "log", "sqrt": "sqrt", "max": "fmax", "one": "1.0", "zero": "0.0"}}
_REF_FN = {"exp": "exp", "log": "log", "sqrt": "sqrt", "max": "fmax", "one": "1.0", "zero": "0.0"}
_SIZE = {"float": 4, "double": 8}
_TOL = {"float": {"rtol": 1e-4, "atol": 1e-5}, "double": {"rtol": 1e-9, "atol": 1e-11}}

# axis -> (dims, slice count S, slice length L, OFF(s, e) macro body, causal keep, configs)
_AXES: dict[str, dict[str, Any]] = {
    "row": {"dims": ("rows", "cols"), "S": "rows", "L": "cols",
            "off": "((long long)(s) * cols + (e))", "causal": "((e) <= (s))",
            "configs": ({"rows": 7, "cols": 33}, {"rows": 64, "cols": 300}),
            "words": "each row of the rows x cols row-major matrix x (x[r * cols + c]); the slice of row r is "
                     "x[r * cols + 0 .. cols - 1]"},
    "col": {"dims": ("rows", "cols"), "S": "cols", "L": "rows",
            "off": "((long long)(e) * cols + (s))", "causal": "((s) <= (e))",
            "configs": ({"rows": 29, "cols": 37}, {"rows": 300, "cols": 64}),
            "words": "each COLUMN of the rows x cols row-major matrix x (x[r * cols + c]); the slice of column c "
                     "is x[0 * cols + c], x[1 * cols + c], ..., x[(rows - 1) * cols + c] (stride cols)"},
    "mid": {"dims": ("batch", "rows", "cols"), "S": "batch * cols", "L": "rows",
            "off": "(((long long)((s) / cols) * rows + (e)) * cols + ((s) % cols))", "causal": "(((s) % cols) <= (e))",
            "configs": ({"batch": 3, "rows": 17, "cols": 5}, {"batch": 4, "rows": 120, "cols": 40}),
            "words": "the MIDDLE axis of the batch x rows x cols row-major tensor x (x[(b * rows + r) * cols + c]): "
                     "for every (b, c) the slice is x[(b * rows + r) * cols + c] for r in [0, rows) (stride cols); "
                     "slice (b, c) has index s = b * cols + c"},
}


_TIMING: dict[str, dict[str, int]] = {"row": {"rows": 65536, "cols": 256}, "col": {"rows": 256, "cols": 65536},
                                      "mid": {"batch": 64, "rows": 256, "cols": 1024}}


def _stable(text: str) -> int:
    return zlib.crc32(text.encode()) & 0x7FFFFFFF


@dataclass(frozen=True)
class _Var:
    """A structural point."""

    op: str  # softmax | log_softmax | layernorm | rmsnorm | l2norm | logsumexp | cross_entropy
    axis: str
    dt: str
    pre: str = "none"  # none | temp | bias
    mask: str = "none"  # none | mask | causal
    affine: str = "none"  # none | gb | g | g1 | scale (l2: scalar scale)
    stats: bool = False
    residual: bool = False
    inplace: bool = False
    eps: str = "add"  # add | clamp (l2norm)

    @property
    def tid(self) -> str:
        parts = ["sm", self.op, self.axis]
        if self.pre != "none":
            parts.append(self.pre)
        if self.mask != "none":
            parts.append(self.mask)
        if self.affine != "none":
            parts.append(self.affine)
        if self.stats:
            parts.append("stats")
        if self.residual:
            parts.append("residual")
        if self.inplace:
            parts.append("inplace")
        if self.op == "l2norm":
            parts.append(self.eps)
        parts.append(self.dt)
        return "_".join(parts)


@dataclass
class _Op:
    """An op as reductions + derived values + outputs (C snippets over v, e, s, OFF, KEEP)."""

    reds: list[tuple[str, str, str]]  # (variable, "max" | "sum", term over v)
    after: dict[str, list[str]]  # variable -> lines run once that reduction is known ({A} = acc type)
    elem: list[str]  # statements in the final per-element loop ({A}, v, e, kp)
    slice_out: list[str]  # statements writing per-slice outputs (s)


def _op(v: _Var) -> _Op:
    if v.op in ("softmax", "log_softmax", "logsumexp", "cross_entropy"):
        reds = [("m", "max", "v"), ("d", "sum", "{exp}(v - m)")]
        if v.op == "softmax":
            val = "{exp}(v - m) / d"
            val = f"kp ? {val} : {{zero}}" if v.mask != "none" else val
            elem = [f"{'x' if v.inplace else 'y'}[OFF(s, e)] = (T)({val});"]
            slice_out = ["m_out[s] = (T)m;", "d_out[s] = (T)d;"] if v.stats else []
        elif v.op == "log_softmax":
            val = "v - m - {log}(d)"
            val = f"kp ? {val} : -INFINITY" if v.mask != "none" else val
            elem, slice_out = [f"y[OFF(s, e)] = (T)({val});"], []
        elif v.op == "logsumexp":
            elem, slice_out = [], ["out[s] = (T)(m + {log}(d));"]
        else:
            elem = []
            slice_out = ["{ int e = labels[s]; {A} v = LOAD(s, e); loss[s] = (T)(m + {log}(d) - v); }"]
        return _Op(reds, {}, elem, slice_out)
    if v.op == "layernorm":
        g = {"none": "", "gb": " * ({A})gamma[e] + ({A})beta[e]", "g": " * ({A})gamma[e]"}[v.affine]
        elem = (["h[OFF(s, e)] = (T)v;"] if v.residual else []) + [f"y[OFF(s, e)] = (T)((v - mean) * rstd{g});"]
        return _Op([("s1", "sum", "v"), ("s2", "sum", "(v - mean) * (v - mean)")],
                   {"s1": ["{A} mean = s1 / ({A})L;"],
                    "s2": ["{A} rstd = {one} / {sqrt}(s2 / ({A})L + ({A})eps);"]},
                   elem, ["mean_out[s] = (T)mean;", "rstd_out[s] = (T)rstd;"] if v.stats else [])
    if v.op == "rmsnorm":
        g = {"none": "", "g": " * ({A})gamma[e]", "g1": " * ({one} + ({A})gamma[e])"}[v.affine]
        elem = (["h[OFF(s, e)] = (T)v;"] if v.residual else []) + [f"y[OFF(s, e)] = (T)(v * rstd{g});"]
        return _Op([("ss", "sum", "v * v")], {"ss": ["{A} rstd = {one} / {sqrt}(ss / ({A})L + ({A})eps);"]},
                   elem, ["rstd_out[s] = (T)rstd;"] if v.stats else [])
    if v.op == "l2norm":
        inv = ("{one} / {sqrt}(ss + ({A})eps)" if v.eps == "add"
               else "{one} / {max}({sqrt}(ss), ({A})eps)")
        g = {"none": "", "scale": " * ({A})scale", "g": " * ({A})gamma[e]"}[v.affine]
        return _Op([("ss", "sum", "v * v")], {"ss": [f"{{A}} inv = {inv};"]},
                   [f"y[OFF(s, e)] = (T)(v * inv{g});"], [])
    raise FamilyError(f"c_softmax: unknown op {v.op!r}")



def _params(v: _Var) -> _P:
    ax = _AXES[v.axis]
    total = " * ".join(ax["dims"])
    S, L = ax["S"], ax["L"]
    dt = v.dt
    p = _P()
    init = "normal(0, 3)" if v.op in ("softmax", "log_softmax", "logsumexp", "cross_entropy") else "normal(0.5, 2)"
    p.ptr("x", dt, "inout" if v.inplace else "in", total, init)
    if v.residual:
        p.ptr("res", dt, "in", total, "normal(0, 1)")
    if v.mask == "mask":
        p.ptr("mask", "int", "in", total, "randint(0, 4)")
    if v.pre == "bias":
        p.ptr("bias", dt, "in", L, "uniform(-2, 2)")
    if v.affine in ("gb", "g", "g1"):
        p.ptr("gamma", dt, "in", L, "uniform(0.5, 1.5)" if v.affine != "g1" else "uniform(-0.5, 0.5)")
    if v.affine == "gb":
        p.ptr("beta", dt, "in", L, "uniform(-1, 1)")
    if v.op == "cross_entropy":
        p.ptr("labels", "int", "in", S, f"randint(0, {L})")
    if v.op in ("logsumexp",):
        p.ptr("out", dt, "out", S)
    elif v.op == "cross_entropy":
        p.ptr("loss", dt, "out", S)
    elif not v.inplace:
        if v.residual:
            p.ptr("h", dt, "out", total)
        p.ptr("y", dt, "out", total)
    if v.stats:
        names = {"softmax": ("m_out", "d_out"), "layernorm": ("mean_out", "rstd_out"), "rmsnorm": ("rstd_out",)}
        for n in names[v.op]:
            p.ptr(n, dt, "out", S)
    if v.pre == "temp":
        p.scalar("temperature", dt)
    if v.op in ("layernorm", "rmsnorm", "l2norm"):
        p.scalar("eps", dt)
    if v.affine == "scale":
        p.scalar("scale", dt)
    for d in ax["dims"]:
        p.scalar(d, "int")
    return p


def _prelude(v: _Var, acc: str, fn: dict[str, str]) -> str:
    """Macros every template shares: T, the slice geometry, LOAD (with residual / pre-scaling) and KEEP."""
    ax = _AXES[v.axis]
    src = "x[OFF(s, e)]" if not v.residual else "(T)(x[OFF(s, e)] + res[OFF(s, e)])"
    load = f"(({acc}){src})"
    if v.pre == "temp":
        load = f"({load} / ({acc})temperature)"
    elif v.pre == "bias":
        load = f"({load} + ({acc})bias[e])"
    lines = [f"#define T {v.dt}", f"#define S_COUNT ({ax['S']})", f"#define L ({ax['L']})",
             f"#define OFF(s, e) {ax['off']}", f"#define LOAD(s, e) {load}"]
    if v.mask == "mask":
        lines.append("#define KEEP(s, e) (mask[OFF(s, e)] != 0)")
    elif v.mask == "causal":
        lines.append(f"#define KEEP(s, e) {ax['causal']}")
    return "\n".join(lines) + "\n"


def _fmt(text: str, acc: str, fn: dict[str, str]) -> str:
    out = text.replace("{A}", acc)
    for k, val in fn.items():
        out = out.replace("{" + k + "}", val)
    return out


def _init(kind: str, fn: dict[str, str]) -> str:
    return "-INFINITY" if kind == "max" else fn["zero"]


def _comb(kind: str, a: str, b: str, fn: dict[str, str]) -> str:
    return f"{fn['max']}({a}, {b})" if kind == "max" else f"{a} + {b}"


def _serial_body(v: _Var, op: _Op, acc: str, fn: dict[str, str], ind: str) -> str:
    """One slice, serially (the reference and the thread-per-slice kernel)."""
    lines = []
    masked = v.mask != "none"
    for var, kind, term in op.reds:
        t = _fmt(term, acc, fn)
        upd = f"{var} = {_comb(kind, var, t, fn)};"
        lines.append(f"{acc} {var} = {_init(kind, fn)};")
        if masked:
            lines.append(f"for (int e = 0; e < L; ++e) if (KEEP(s, e)) {{ {acc} v = LOAD(s, e); {upd} }}")
        else:
            lines.append(f"for (int e = 0; e < L; ++e) {{ {acc} v = LOAD(s, e); {upd} }}")
        lines += [_fmt(x, acc, fn) for x in op.after.get(var, [])]
    if op.elem:
        kp = " int kp = KEEP(s, e);" if masked else ""
        body = " ".join(_fmt(x, acc, fn) for x in op.elem)
        lines.append(f"for (int e = 0; e < L; ++e) {{ {acc} v = LOAD(s, e);{kp} {body} }}")
    lines += [_fmt(x, acc, fn) for x in op.slice_out]
    return "\n".join(ind + x for x in lines)


def _expand(src: str, v: _Var, acc: str) -> str:
    """Expand the prelude's macros in place: references are deduplicated on their tokens, and with
    the macros expanded every variant-specific piece (pre-scaling, mask, layout) appears at each use."""
    ax = _AXES[v.axis]
    off = ax["off"].replace("(long long)", "").replace("(s)", "s").replace("(e)", "e")
    load = f"x[{off}]" if not v.residual else f"(T)(x[{off}] + res[{off}])"
    load = f"({acc}){load}"
    if v.pre == "temp":
        load = f"{load} / temperature"
    elif v.pre == "bias":
        load = f"({load} + bias[e])"
    keep = {"mask": f"mask[{off}] != 0", "causal": ax["causal"].replace("(s)", "s").replace("(e)", "e")}.get(v.mask, "")
    out = src.replace("LOAD(s, e)", load).replace("KEEP(s, e)", keep).replace("OFF(s, e)", off)
    out = re.sub(r"\bT\b", v.dt, out)
    out = re.sub(r"\bS_COUNT\b", ax["S"], out)
    return re.sub(r"\bL\b", ax["L"], out)


def _reference(v: _Var, op: _Op, p: _P) -> str:
    body = _expand(_serial_body(v, op, "double", _REF_FN, "        "), v, "double")
    return f"""#include <math.h>

/* Serial reference ({v.op} over {v.axis} slices); every reduction accumulates in double. */
void reference({p.sig}) {{
    for (int s = 0; s < {_AXES[v.axis]["S"]}; ++s) {{
{body}
    }}
}}
"""


def _thread_kernel(v: _Var, op: _Op, p: _P, why: str) -> str:
    fn = _FN[v.dt]
    return f"""{_prelude(v, v.dt, fn)}
// One thread per slice running the serial algorithm. {why}
__global__ void norm_thread({p.sig}) {{
    int s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= S_COUNT) return;
{_serial_body(v, op, v.dt, fn, "    ")}
}}

extern "C" void solve({p.sig}) {{
    int slices = S_COUNT;
    if (slices <= 0) return;
    norm_thread<<<(slices + 127) / 128, 128>>>({p.args});
}}
"""


def _parallel_body(v: _Var, op: _Op, fn: dict[str, str], first: str, step: str, reduce: str,
                   leader: str) -> str:
    """One slice with the element loops split over ``first`` += ``step`` and ``reduce(kind, var)``
    combining each reduction across the cooperating threads."""
    acc = v.dt
    masked = v.mask != "none"
    lines = []
    for var, kind, term in op.reds:
        t = _fmt(term, acc, fn)
        upd = f"{var} = {_comb(kind, var, t, fn)};"
        guard = "if (KEEP(s, e)) " if masked else ""
        lines.append(f"{acc} {var} = {_init(kind, fn)};")
        lines.append(f"for (int e = {first}; e < L; e += {step}) {guard}{{ {acc} v = LOAD(s, e); {upd} }}")
        lines.append(reduce.replace("KIND", kind).replace("VAR", var))
        lines += [_fmt(x, acc, fn) for x in op.after.get(var, [])]
    if op.elem:
        kp = " int kp = KEEP(s, e);" if masked else ""
        body = " ".join(_fmt(x, acc, fn) for x in op.elem)
        lines.append(f"for (int e = {first}; e < L; e += {step}) {{ {acc} v = LOAD(s, e);{kp} {body} }}")
    if op.slice_out:
        lines.append(f"if ({leader}) {{")
        lines += ["    " + _fmt(x, acc, fn) for x in op.slice_out]
        lines.append("}")
    return "\n".join("    " + x for x in lines)


def _block_kernel(v: _Var, op: _Op, p: _P, why: str) -> str:
    fn = _FN[v.dt]
    reduce = "VAR = block_reduce(VAR, buf, KIND_IS_MAX);"
    body = _parallel_body(v, op, fn, "threadIdx.x", "THREADS", reduce, "threadIdx.x == 0")
    body = body.replace("max_IS_MAX", "true").replace("sum_IS_MAX", "false")
    return f"""{_prelude(v, v.dt, fn)}
// One block per slice. {why} Each reduction is a shared-memory tree whose result every thread reads.
#define THREADS 128

__device__ T block_reduce(T val, T* buf, bool is_max) {{
    buf[threadIdx.x] = val;
    __syncthreads();
    for (int k = THREADS / 2; k > 0; k >>= 1) {{
        if (threadIdx.x < k) {{
            T o = buf[threadIdx.x + k];
            buf[threadIdx.x] = is_max ? {fn["max"]}(buf[threadIdx.x], o) : buf[threadIdx.x] + o;
        }}
        __syncthreads();
    }}
    T r = buf[0];
    __syncthreads();   // all threads have read buf[0] before the buffer is reused
    return r;
}}

__global__ void norm_block({p.sig}) {{
    __shared__ T buf[THREADS];
    int s = blockIdx.x;
{body}
}}

extern "C" void solve({p.sig}) {{
    int slices = S_COUNT;
    if (slices <= 0) return;
    norm_block<<<slices, THREADS>>>({p.args});
}}
"""


def _warp_kernel(v: _Var, op: _Op, p: _P, why: str) -> str:
    fn = _FN[v.dt]
    reduce = "VAR = warp_reduce(VAR, KIND_IS_MAX);"
    body = _parallel_body(v, op, fn, "lane", "32", reduce, "lane == 0")
    body = body.replace("max_IS_MAX", "true").replace("sum_IS_MAX", "false")
    return f"""{_prelude(v, v.dt, fn)}
// One warp per slice, four slices per block. {why} Reductions are butterfly shuffles that leave the
// result in every lane: no shared memory, no block barrier.
#define WARPS 4

__device__ __forceinline__ T warp_reduce(T val, bool is_max) {{
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {{
        T o = __shfl_xor_sync(0xffffffffu, val, off);
        val = is_max ? {fn["max"]}(val, o) : val + o;
    }}
    return val;
}}

__global__ void norm_warp({p.sig}) {{
    int s = blockIdx.x * WARPS + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (s >= S_COUNT) return;   // warp-uniform
{body}
}}

extern "C" void solve({p.sig}) {{
    int slices = S_COUNT;
    if (slices <= 0) return;
    norm_warp<<<(slices + WARPS - 1) / WARPS, WARPS * 32>>>({p.args});
}}
"""


def _tile_kernel(v: _Var, op: _Op, p: _P, why: str) -> str:
    fn = _FN[v.dt]
    reduce = "VAR = tile_reduce(VAR, red, KIND_IS_MAX);"
    body = _parallel_body(v, op, fn, "threadIdx.y", "PARTS", reduce, "threadIdx.y == 0")
    body = body.replace("max_IS_MAX", "true").replace("sum_IS_MAX", "false")
    # threads of a slice past the end must still reach every barrier: run with an empty range instead
    body = body.replace("e < L;", "e < len;")
    return f"""{_prelude(v, v.dt, fn)}
// 32 slices x 8 threads per block. {why} threadIdx.x picks the slice (neighbouring slices are
// neighbouring addresses, so every load coalesces) and the 8 thread rows split the slice; partial
// results meet in a padded shared-memory array.
#define SLICES 32
#define PARTS 8

__device__ T tile_reduce(T val, T (*red)[SLICES + 1], bool is_max) {{
    red[threadIdx.y][threadIdx.x] = val;
    __syncthreads();
    if (threadIdx.y == 0) {{
        T r = red[0][threadIdx.x];
        for (int k = 1; k < PARTS; ++k) r = is_max ? {fn["max"]}(r, red[k][threadIdx.x]) : r + red[k][threadIdx.x];
        red[0][threadIdx.x] = r;
    }}
    __syncthreads();
    T r = red[0][threadIdx.x];
    __syncthreads();
    return r;
}}

__global__ void norm_tile({p.sig}) {{
    __shared__ T red[PARTS][SLICES + 1];
    int s = blockIdx.x * SLICES + threadIdx.x;
    bool live = s < S_COUNT;
    int len = live ? L : 0;
    if (!live) s = 0;
{body.replace("if (threadIdx.y == 0) {", "if (threadIdx.y == 0 && live) {")}
}}

extern "C" void solve({p.sig}) {{
    int slices = S_COUNT;
    if (slices <= 0) return;
    norm_tile<<<(slices + SLICES - 1) / SLICES, dim3(SLICES, PARTS)>>>({p.args});
}}
"""


def _impls(v: _Var, op: _Op, p: _P) -> list[Impl]:
    if v.axis == "row":
        return [Impl("thread_per_row", "naive", _thread_kernel(
                    v, op, p, "Lanes walk different rows, so loads do not coalesce and few threads exist."), 1,
                     "one thread per row, serial passes (uncoalesced)"),
                Impl("block_per_row", "coalesced", _block_kernel(
                    v, op, p, "Threads stride along the contiguous row, so loads coalesce."), 2,
                     "one 128-thread block per row, shared-memory tree reductions"),
                Impl("warp_per_row", "warp_shuffle", _warp_kernel(
                    v, op, p, "Lanes stride along the contiguous row (coalesced)."), 3,
                     "one warp per row, shuffle reductions")]
    return [Impl("warp_per_slice", "warp_shuffle", _warp_kernel(
                v, op, p, "The slice is strided, so the lanes of a warp touch 32 different cache lines."), 1,
                 "one warp per strided slice (uncoalesced)"),
            Impl("thread_per_slice", "naive", _thread_kernel(
                v, op, p, "Neighbouring threads own neighbouring slices, which are adjacent in memory, so "
                          "each serial step is a coalesced load."), 2,
                 "one thread per slice; coalesced across slices"),
            Impl("tiled_slices", "shared_tiled", _tile_kernel(
                v, op, p, "More parallelism than one thread per slice, still coalesced."), 3,
                 "32 slices x 8 partial threads, shared-memory combine")]


_OP_WORDS = {
    "softmax": "softmax: y_e = exp(v_e - m) / sum_k exp(v_k - m) with m = max_k v_k (subtracting the maximum is "
               "required: |x| can be large)",
    "log_softmax": "log-softmax: y_e = v_e - m - log(sum_k exp(v_k - m)), m = max_k v_k",
    "layernorm": "layer normalisation: mean = sum_k v_k / L, var = sum_k (v_k - mean)^2 / L (population variance), "
                 "rstd = 1 / sqrt(var + eps), y_e = (v_e - mean) * rstd",
    "rmsnorm": "RMS normalisation: rstd = 1 / sqrt(sum_k v_k^2 / L + eps), y_e = v_e * rstd",
    "l2norm": "L2 normalisation: y_e = v_e * inv",
    "logsumexp": "log-sum-exp per slice: out[s] = m + log(sum_k exp(v_k - m)), m = max_k v_k",
    "cross_entropy": "softmax cross-entropy per slice: loss[s] = logsumexp_k(v_k) - v_{labels[s]} (labels[s] in "
                     "[0, L) indexes the slice)",
}


def _describe(v: _Var) -> tuple[str, str]:
    ax = _AXES[v.axis]
    lines = [f"Compute {_OP_WORDS[v.op]}, independently for every slice.",
             f"Slices: {ax['words']}. There are S = {ax['S']} slices of L = {ax['L']} elements; "
             f"s indexes slices and e in [0, L) indexes elements within a slice."]
    vdef = "v_e = x_e"
    if v.residual:
        vdef = "v_e = x_e + res_e (computed in the data type; the sum is also written to h, same layout as x)"
    if v.pre == "temp":
        vdef += " / temperature (the scalar `temperature`)"
    elif v.pre == "bias":
        vdef += " + bias[e] (bias has L elements, indexed by the position e within the slice)"
    lines.append(f"Input values: {vdef}.")
    if v.mask == "mask":
        lines.append("Masking: element e of slice s takes part only if mask (int, same layout as x) is non-zero "
                     "there; masked elements are excluded from the max and the sum.")
    elif v.mask == "causal":
        lines.append("Causal masking: the element at matrix coordinates (row r, column c) takes part only if "
                     "c <= r; the others are excluded from the max and the sum.")
    if v.mask != "none":
        fill = "0" if v.op == "softmax" else "-infinity"
        lines.append(f"Masked outputs are {fill}; a slice with no unmasked element is entirely {fill}.")
    if v.op == "layernorm":
        lines.append({"none": "No affine transform.", "gb": "Then y_e = y_e * gamma[e] + beta[e] (L elements each).",
                      "g": "Then y_e = y_e * gamma[e] (L elements)."}[v.affine])
    if v.op == "rmsnorm":
        lines.append({"none": "No affine transform.", "g": "Then y_e = y_e * gamma[e] (L elements).",
                      "g1": "Then y_e = y_e * (1 + gamma[e]) (L elements)."}[v.affine])
    if v.op == "l2norm":
        lines.append("inv = 1 / sqrt(sum_k v_k^2 + eps)." if v.eps == "add"
                     else "inv = 1 / max(sqrt(sum_k v_k^2), eps).")
        lines.append({"none": "No further scaling.", "scale": "Then y_e = y_e * scale (a scalar).",
                      "g": "Then y_e = y_e * gamma[e] (L elements)."}[v.affine])
    if v.stats:
        lines.append({"softmax": "Also write m_out[s] = m and d_out[s] = sum_k exp(v_k - m) per slice.",
                      "layernorm": "Also write mean_out[s] = mean and rstd_out[s] = rstd per slice.",
                      "rmsnorm": "Also write rstd_out[s] = rstd per slice."}[v.op])
    if v.inplace:
        lines.append("In place: x is overwritten with the result (no separate output).")
    elif v.op in ("logsumexp", "cross_entropy"):
        lines.append(f"The output ({'out' if v.op == 'logsumexp' else 'loss'}) has S elements, one per slice.")
    else:
        lines.append("y has the same shape and layout as x.")
    lines.append("Every output element must be written. Sizes are arbitrary positive integers (not multiples of "
                 "the warp or block size). " + ("fp32 math is sufficient (rtol 1e-4)." if v.dt == "float"
                                                else "Use double throughout (rtol 1e-9)."))
    title = f"{v.op} over {v.axis} slices" + "".join(
        f", {w}" for w in (v.pre if v.pre != "none" else "", v.mask if v.mask != "none" else "",
                           v.affine if v.affine != "none" else "", "stats" if v.stats else "",
                           "residual" if v.residual else "", "in-place" if v.inplace else "") if w) + f" ({v.dt})"
    import textwrap

    return title, "\n".join(textwrap.fill(x, 110) for x in lines) + "\n"


def _task(v: _Var, seed: int) -> GeneratedTask:
    op = _op(v)
    p = _params(v)
    ax = _AXES[v.axis]
    base = seed * 7919 + _stable(v.tid) % 100000 + 1  # the task seed (> 0): config seeds derive from it
    configs = []
    for k, shape in enumerate(ax["configs"]):
        cfg: dict[str, Any] = {"name": ("small", "large")[k], "seed": base + k, **shape}
        if v.pre == "temp":
            cfg["temperature"] = (0.7, 2.5)[k]
        if v.op in ("layernorm", "rmsnorm", "l2norm"):
            cfg["eps"] = 1e-5 if v.op != "l2norm" else (1e-6 if v.eps == "add" else 1e-3)
        if v.affine == "scale":
            cfg["scale"] = (1.5, -0.75)[k]
        if k == 1 and v.op in ("softmax", "log_softmax"):
            cfg["init"] = {"x": "normal(0, 40)"}  # large logits: exp overflows without max subtraction
        configs.append(cfg)
    # the [[timing]] size (H100 scale, ~16M elements, estimated only): 65536 slices of 256 — many rows for
    # a warp/block per row, many strided slices for a thread per slice; other variables as the large config
    timing = {"name": "timing", "seed": base + 100,
              **{k: v for k, v in configs[-1].items() if k not in ("name", "seed")}, **_TIMING[v.axis]}
    total = " * ".join(ax["dims"])
    es = _SIZE[v.dt]
    reads = 2 if v.residual else 1
    writes = 0 if v.op in ("logsumexp", "cross_entropy") else (2 if v.residual else 1)
    title, desc = _describe(v)
    category = "softmax" if v.op in ("softmax", "log_softmax", "logsumexp", "cross_entropy") else "layernorm"
    return GeneratedTask(
        id=v.tid, kind="c2cuda", family="c_softmax", category=category, title=title, description=desc,
        reference=_reference(v, op, p), impls=_impls(v, op, p), configs=configs,
        metrics={"flops": f"5 * {total}", "bytes": f"{es * (reads + writes)} * {total}"},
        params=p.params, tolerance=dict(_TOL[v.dt]), tags=["memory-bound", "reduction", "normalization"],
        variant={"op": v.op, "axis": v.axis, "dtype": v.dt, "pre": v.pre, "mask": v.mask, "affine": v.affine,
                 "stats": v.stats, "residual": v.residual, "inplace": v.inplace,
                 **({"eps": v.eps} if v.op == "l2norm" else {})},
        seed=base, timing=[timing])


def _variants() -> Iterator[_Var]:
    for dt in ("float", "double"):
        for axis in _AXES:
            for op in ("softmax", "log_softmax"):
                for pre in ("none", "temp", "bias"):
                    for mask in ("none", "mask", "causal"):
                        yield _Var(op, axis, dt, pre=pre, mask=mask)
            for pre in ("none", "temp", "bias"):
                yield _Var("softmax", axis, dt, pre=pre, inplace=True)
            yield _Var("softmax", axis, dt, stats=True)
            for affine in ("none", "gb", "g"):
                for stats in (False, True):
                    yield _Var("layernorm", axis, dt, affine=affine, stats=stats)
            yield _Var("layernorm", axis, dt, affine="gb", residual=True)
            for affine in ("none", "g", "g1"):
                for stats in (False, True):
                    yield _Var("rmsnorm", axis, dt, affine=affine, stats=stats)
            yield _Var("rmsnorm", axis, dt, affine="g", residual=True)
            for affine in ("none", "scale", "g"):
                for eps in ("add", "clamp"):
                    yield _Var("l2norm", axis, dt, affine=affine, eps=eps)
            for pre in ("none", "temp"):
                yield _Var("logsumexp", axis, dt, pre=pre)
                yield _Var("cross_entropy", axis, dt, pre=pre)


@family("c_softmax", kind="c2cuda", category="softmax")
def generate_softmax(seed: int) -> Iterator[GeneratedTask]:
    """Softmax / log-softmax (temperature, bias, mask, causal, in-place, stats), layernorm, rmsnorm,
    L2-normalise, logsumexp and cross-entropy over rows, columns or the middle axis; float/double."""
    if not isinstance(seed, int):
        raise FamilyError(f"c_softmax: seed must be an int, not {type(seed).__name__}")
    for v in _variants():
        yield _task(v, seed)
