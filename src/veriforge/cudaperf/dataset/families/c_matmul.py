"""C→CUDA dense linear-algebra family: GEMM in every layout with epilogues, GEMV, batched forms, outer products.

Why generated: the layout of each operand (row- or column-major storage, op = N or T) decides which
index is contiguous, and that is exactly what separates a coalesced kernel from a slow one. One code
generator takes an *indexer* per operand (the C expression of element (i, k) / (k, j) / (i, j)) and
knows which index is contiguous, so every kernel it writes loads its shared-memory tiles along the
contiguous direction:

* GEMM — ``naive`` (one thread per C element), ``shared_tiled`` (16x16 tiles, layout-aware tile loads),
  ``register_tiled`` (64x64 block tile, 4x4 register micro-tiles);
* GEMV — row-dot form (warp or block per row) and column form (split over rows, partial sums);
* outer products / rank-1 updates — per-element, coalesced 2-D and register-reuse kernels.

Structural variants: storage order, op(A), op(B), epilogue (alpha/beta with C in-out, bias along
rows or columns, ReLU, residual add), dtype (float/double/int), batching (and broadcast B).
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from veriforge.cudaperf.dataset.family import FamilyError, GeneratedTask, Impl, family

from ._params import ParamList as _P

__all__ = ["generate_matmul"]

_DT: dict[str, dict[str, Any]] = {
    "float": {"size": 4, "init": "uniform(-1, 1)", "cinit": "uniform(-1, 1)", "zero": "0.0f",
              "alpha": (1.5, 0.75), "beta": (-0.5, 2.0), "tol": {"rtol": 1e-4, "atol": 5e-5}, "acc": "double"},
    "double": {"size": 8, "init": "uniform(-1, 1)", "cinit": "uniform(-1, 1)", "zero": "0.0",
               "alpha": (1.5, 0.75), "beta": (-0.5, 2.0), "tol": {"rtol": 1e-10, "atol": 1e-11}, "acc": "double"},
    "int": {"size": 4, "init": "randint(-8, 9)", "cinit": "randint(-50, 50)", "zero": "0",
            "alpha": (2, -1), "beta": (-3, 2), "tol": {}, "acc": "int"},
}

# epilogue -> (expression over acc / alpha / beta / bias / the output's old value OLD / residual RES,
#              extra params, words)
_EPI: dict[str, tuple[str, tuple[str, ...], str]] = {
    "plain": ("acc", (), "C = op(A) * op(B)"),
    "alpha_beta": ("alpha * acc + beta * OLD", ("alpha", "beta", "inout"),
                   "C = alpha * op(A) * op(B) + beta * C (C is read and overwritten)"),
    "bias_col": ("acc + bias[j]", ("bias_n",), "C[i][j] = (op(A) * op(B))[i][j] + bias[j] (bias has N elements)"),
    "bias_row": ("acc + row_bias[i]", ("bias_m",),
                 "C[i][j] = (op(A) * op(B))[i][j] + row_bias[i] (row_bias has M elements)"),
    "relu": ("RELU(acc)", (), "C = max(op(A) * op(B), 0) element-wise"),
    "bias_relu": ("RELU(acc + bias[j])", ("bias_n",),
                  "C[i][j] = max((op(A) * op(B))[i][j] + bias[j], 0) (bias has N elements)"),
    "residual": ("acc + RES", ("residual",),
                 "C = op(A) * op(B) + D, D an M x N input stored exactly like C"),
    "alpha_beta_relu": ("RELU(alpha * acc + beta * OLD)", ("alpha", "beta", "inout"),
                        "C = max(alpha * op(A) * op(B) + beta * C, 0) (C is read and overwritten)"),
}
_GEMM_EPIS = tuple(_EPI)
_BATCH_EPIS = ("plain", "alpha_beta", "bias_col", "relu", "residual")
_GEMV_EPIS: dict[str, tuple[str, tuple[str, ...], str]] = {
    "plain": ("acc", (), "y = op(A) x"),
    "scale": ("alpha * acc", ("alpha",), "y = alpha * op(A) x"),
    "alpha_beta": ("alpha * acc + beta * OLD", ("alpha", "beta", "inout"),
                   "y = alpha * op(A) x + beta * y (y is read and overwritten)"),
    "bias": ("acc + bias[o]", ("bias",), "y[o] = (op(A) x)[o] + bias[o]"),
    "relu": ("RELU(acc)", (), "y = max(op(A) x, 0) element-wise"),
    "bias_relu": ("RELU(acc + bias[o])", ("bias",), "y[o] = max((op(A) x)[o] + bias[o], 0)"),
}


def _stable(text: str) -> int:
    return zlib.crc32(text.encode()) & 0x7FFFFFFF


def _relu_macro(dt: str) -> str:
    z = _DT[dt]["zero"]
    return f"#define RELU(v) ((v) > {z} ? (v) : {z})\n"


def _args(sig: str) -> str:
    return ", ".join(p.split()[-1] for p in sig.split(", "))



def _task_seed(tid: str, seed: int) -> int:
    """The task's seed (> 0), derived from the family seed and the id; config seeds follow it."""
    return seed * 7919 + _stable(tid) % 100000 + 1


def _configs(tid: str, seed: int, shapes: list[dict[str, int]], scalars: tuple[str, ...], dt: str) -> list[dict]:
    base = _task_seed(tid, seed)
    out = []
    for k, shape in enumerate(shapes):
        cfg: dict[str, Any] = {"name": ("small", "large")[k], "seed": base + k, **shape}
        for s in scalars:
            cfg[s] = _DT[dt][s][k]
        out.append(cfg)
    return out


def _timing(tid: str, seed: int, shape: dict[str, int], scalars: tuple[str, ...], dt: str) -> list[dict]:
    """The one ``[[timing]]`` configuration (H100 scale, estimated only): ``shape``, the large config's scalars."""
    cfg: dict[str, Any] = {"name": "timing", "seed": _task_seed(tid, seed) + 100, **shape}
    for s in scalars:
        cfg[s] = _DT[dt][s][1]
    return [cfg]


# [[timing]] shapes: 1024^3 GEMMs, 16 batched 512^3 products; GEMV over a tall 16384 x 1024 matrix (many
# rows for a warp/block per row; A^T x: the row-split kernel is built for tall matrices, 1024 columns for a
# thread per column), 16 batched 4096 x 256; outer products of 4096 x 4096 (64 batched 512 x 512).
_GEMM_TIMING = {"M": 1024, "N": 1024, "K": 1024}
_BGEMM_TIMING = {"batch": 16, "M": 512, "N": 512, "K": 512}
_GEMV_TIMING = {"M": 16384, "N": 1024}
_BGEMV_TIMING = {"batch": 16, "M": 4096, "N": 256}
_OUTER_TIMING = {"M": 4096, "N": 4096}
_BOUTER_TIMING = {"batch": 64, "M": 512, "N": 512}


# ======================================================================================================
# GEMM
# ======================================================================================================
@dataclass(frozen=True)
class _Gemm:
    storage: str  # "row" | "col"
    op_a: str  # "n" | "t"
    op_b: str
    epi: str
    dt: str
    batched: str = ""  # "" | "batched" | "bcast_b"

    @property
    def tid(self) -> str:
        kind = {"": "gemm", "batched": "bgemm", "bcast_b": "bgemm_bcastb"}[self.batched]
        return f"mm_{kind}_{self.storage}_{self.op_a}{self.op_b}_{self.epi}_{self.dt}"

    # indexers: element (i, k) of op(A), (k, j) of op(B), (i, j) of C
    def a_at(self, i: str, k: str) -> str:
        if self.storage == "row":
            return f"A[(long long)({i}) * K + ({k})]" if self.op_a == "n" else f"A[(long long)({k}) * M + ({i})]"
        return f"A[({i}) + (long long)({k}) * M]" if self.op_a == "n" else f"A[({k}) + (long long)({i}) * K]"

    def b_at(self, k: str, j: str) -> str:
        if self.storage == "row":
            return f"B[(long long)({k}) * N + ({j})]" if self.op_b == "n" else f"B[(long long)({j}) * K + ({k})]"
        return f"B[({k}) + (long long)({j}) * K]" if self.op_b == "n" else f"B[({j}) + (long long)({k}) * N]"

    def c_idx(self, i: str, j: str) -> str:
        return f"(long long)({i}) * N + ({j})" if self.storage == "row" else f"({i}) + (long long)({j}) * M"

    @property
    def a_k_contig(self) -> bool:
        return (self.storage == "row") == (self.op_a == "n")

    @property
    def b_j_contig(self) -> bool:
        return (self.storage == "row") == (self.op_b == "n")

    @property
    def c_j_contig(self) -> bool:
        return self.storage == "row"

    def build(self) -> _P:
        p = _P()
        dt, extra = self.dt, _EPI[self.epi][1]
        nb = "batch * " if self.batched else ""
        p.ptr("A", dt, "in", f"{nb}M * K", _DT[dt]["init"])
        p.ptr("B", dt, "in", ("batch * " if self.batched == "batched" else "") + "K * N", _DT[dt]["init"])
        if "bias_n" in extra:
            p.ptr("bias", dt, "in", "N", _DT[dt]["cinit"])
        if "bias_m" in extra:
            p.ptr("row_bias", dt, "in", "M", _DT[dt]["cinit"])
        if "residual" in extra:
            p.ptr("D", dt, "in", f"{nb}M * N", _DT[dt]["cinit"])
        if "inout" in extra:
            p.ptr("C", dt, "inout", f"{nb}M * N", _DT[dt]["cinit"])
        else:
            p.ptr("C", dt, "out", f"{nb}M * N")
        if "alpha" in extra:
            p.scalar("alpha", dt)
            p.scalar("beta", dt)
        if self.batched:
            p.scalar("batch", "int")
        for s in ("M", "N", "K"):
            p.scalar(s, "int")
        return p

    def epilogue(self, i: str, j: str) -> str:
        """Statement storing the accumulator ``acc`` of element (i, j) through the epilogue."""
        expr = _EPI[self.epi][0].replace("row_bias[i]", f"row_bias[{i}]").replace("bias[j]", f"bias[{j}]")
        idx = self.c_idx(i, j)
        expr = expr.replace("OLD", f"C[{idx}]").replace("RES", f"D[{idx}]")
        return f"C[{idx}] = ({self.dt})({expr});"

    def batch_offsets(self, z: str) -> str:
        if not self.batched:
            return ""
        lines = [f"    A += (long long)({z}) * M * K;"]
        if self.batched == "batched":
            lines.append(f"    B += (long long)({z}) * K * N;")
        lines.append(f"    C += (long long)({z}) * M * N;")
        if self.epi == "residual":
            lines.append(f"    D += (long long)({z}) * M * N;")
        return "\n".join(lines) + "\n"


def _ref_index(expr: str) -> str:
    """An indexer as the (compact) reference writes it: no casts, no parentheses around single names.

    References are deduplicated on their tokens, so they are kept short: what differs between two
    variants (an index expression, an epilogue) is then a large share of the text."""
    return re.sub(r"(?<![\w)])\((?!int\b|float\b|double\b)(\w+)\)", r"\1", _plain(expr))


def _gemm_reference(g: _Gemm, sig: str) -> str:
    acc = _DT[g.dt]["acc"]
    a = _ref_index(g.a_at("i", "k"))
    b = _ref_index(g.b_at("k", "j"))
    store = _ref_index(g.epilogue("i", "j"))
    head, tail, ind = "", "", "    "
    if g.batched:
        # advance by one stored matrix (dims in storage order: M x K for op N, K x M for op T)
        moves = ["A += M * K;" if g.op_a == "n" else "A += K * M;"]
        if g.batched == "batched":
            moves.append("B += K * N;" if g.op_b == "n" else "B += N * K;")
        moves.append("C += M * N;")
        if g.epi == "residual":
            moves.append("D += M * N;")
        head = "    for (int b = 0; b < batch; ++b) {\n"
        tail = "        " + " ".join(moves) + "\n    }\n"
        ind = "        "
    relu = _relu_macro(g.dt) if "RELU" in _EPI[g.epi][0] else ""
    return f"""{relu}/* Serial reference: {_EPI[g.epi][2]}; {g.storage}-major storage, op(A) = {g.op_a.upper()},
   op(B) = {g.op_b.upper()}{', batched' if g.batched else ''}. */
void reference({sig}) {{
{head}{ind}for (int i = 0; i < M; ++i)
{ind}    for (int j = 0; j < N; ++j) {{
{ind}        {acc} acc = 0;
{ind}        for (int k = 0; k < K; ++k) acc += ({acc}){a} * {b};
{ind}        {store}
{ind}    }}
{tail}}}
"""


def _gemm_naive(g: _Gemm, sig: str) -> str:
    acc = g.dt
    zdim = ", batch" if g.batched else ""
    return f"""{_relu_macro(g.dt)}
// One thread per C element: the dot product walks op(A) and op(B) straight from global memory, so every
// operand element is re-read by N (resp. M) threads.
__global__ void gemm_naive({sig}) {{
{g.batch_offsets("blockIdx.z")}    int i = blockIdx.y * blockDim.y + threadIdx.y;
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= M || j >= N) return;
    {acc} acc = 0;
    for (int k = 0; k < K; ++k) acc += {g.a_at("i", "k")} * {g.b_at("k", "j")};
    {g.epilogue("i", "j")}
}}

extern "C" void solve({sig}) {{
    if (M <= 0 || N <= 0) return;
    dim3 block(16, 16);
    dim3 grid((N + 15) / 16, (M + 15) / 16{zdim});
    gemm_naive<<<grid, block>>>({_args(sig)});
}}
"""


def _gemm_tiled(g: _Gemm, sig: str) -> str:
    acc = g.dt
    zdim = ", batch" if g.batched else ""
    if g.a_k_contig:
        load_a = (f"{{ int gi = bi + ty, gk = k0 + tx; As[ty][tx] = (gi < M && gk < K) ? {g.a_at('gi', 'gk')} : "
                  f"({g.dt})0; }}")
    else:
        load_a = (f"{{ int gi = bi + tx, gk = k0 + ty; As[tx][ty] = (gi < M && gk < K) ? {g.a_at('gi', 'gk')} : "
                  f"({g.dt})0; }}")
    if g.b_j_contig:
        load_b = (f"{{ int gk = k0 + ty, gj = bj + tx; Bs[ty][tx] = (gk < K && gj < N) ? {g.b_at('gk', 'gj')} : "
                  f"({g.dt})0; }}")
    else:
        load_b = (f"{{ int gk = k0 + tx, gj = bj + ty; Bs[tx][ty] = (gk < K && gj < N) ? {g.b_at('gk', 'gj')} : "
                  f"({g.dt})0; }}")
    li, lj = ("ty", "tx") if g.c_j_contig else ("tx", "ty")
    return f"""{_relu_macro(g.dt)}
// 16x16 shared-memory tiles of op(A) and op(B) per K step: each global element is read once per block.
// Tile loads walk the operand's contiguous index with threadIdx.x (coalesced for this layout) and the
// padded tiles keep the transposed shared-memory stores conflict-free; the thread -> C mapping puts
// threadIdx.x on C's contiguous index so the epilogue stores coalesce too.
#define TS 16

__global__ void gemm_tiled({sig}) {{
    __shared__ {g.dt} As[TS][TS + 1];   // As[i][k]
    __shared__ {g.dt} Bs[TS][TS + 1];   // Bs[k][j]
{g.batch_offsets("blockIdx.z")}    int tx = threadIdx.x, ty = threadIdx.y;
    int bi = blockIdx.y * TS, bj = blockIdx.x * TS;
    int li = {li}, lj = {lj};
    int i = bi + li, j = bj + lj;
    {acc} acc = 0;
    for (int k0 = 0; k0 < K; k0 += TS) {{
        {load_a}
        {load_b}
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TS; ++k) acc += As[li][k] * Bs[k][lj];
        __syncthreads();
    }}
    if (i < M && j < N) {{
        {g.epilogue("i", "j")}
    }}
}}

extern "C" void solve({sig}) {{
    if (M <= 0 || N <= 0) return;
    dim3 block(TS, TS);
    dim3 grid((N + TS - 1) / TS, (M + TS - 1) / TS{zdim});
    gemm_tiled<<<grid, block>>>({_args(sig)});
}}
"""


def _gemm_regtile(g: _Gemm, sig: str) -> str:
    zdim = ", batch" if g.batched else ""
    amap = "int am = e / BK, ak = e % BK;" if g.a_k_contig else "int am = e % BM, ak = e / BM;"
    bmap = "int bk = e / BN, bn = e % BN;" if g.b_j_contig else "int bk = e % BK, bn = e / BK;"
    tmap = "int tr = tid / 16, tc = tid % 16;" if g.c_j_contig else "int tr = tid % 16, tc = tid / 16;"
    z = _DT[g.dt]["zero"]
    return f"""{_relu_macro(g.dt)}
// Register blocking: a 256-thread block owns a 64x64 tile of C and each thread a 4x4 micro-tile kept in
// registers. Per BK = 8 slice the block stages op(A) (as As[k][i]) and op(B) (as Bs[k][j]) in shared
// memory with loads ordered along each operand's contiguous index; each thread then performs 16 FMAs
// per 8 shared loads (4x the arithmetic intensity of the one-output-per-thread tiled kernel).
#define BM 64
#define BN 64
#define BK 8
#define TM 4
#define TN 4

__global__ void __launch_bounds__(256) gemm_regtile({sig}) {{
    __shared__ {g.dt} As[BK][BM];
    __shared__ {g.dt} Bs[BK][BN];
{g.batch_offsets("blockIdx.z")}    const int tid = threadIdx.x;
    {tmap}
    const int bi = blockIdx.y * BM, bj = blockIdx.x * BN;
    {g.dt} acc_r[TM][TN];
#pragma unroll
    for (int x = 0; x < TM; ++x)
#pragma unroll
        for (int y = 0; y < TN; ++y) acc_r[x][y] = {z};
    for (int k0 = 0; k0 < K; k0 += BK) {{
#pragma unroll
        for (int l = 0; l < 2; ++l) {{
            int e = tid + l * 256;
            {amap}
            int gi = bi + am, gk = k0 + ak;
            As[ak][am] = (gi < M && gk < K) ? {g.a_at("gi", "gk")} : ({g.dt})0;
            {bmap}
            int gkb = k0 + bk, gj = bj + bn;
            Bs[bk][bn] = (gkb < K && gj < N) ? {g.b_at("gkb", "gj")} : ({g.dt})0;
        }}
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {{
            {g.dt} a[TM], b[TN];
#pragma unroll
            for (int x = 0; x < TM; ++x) a[x] = As[k][tr * TM + x];
#pragma unroll
            for (int y = 0; y < TN; ++y) b[y] = Bs[k][tc * TN + y];
#pragma unroll
            for (int x = 0; x < TM; ++x)
#pragma unroll
                for (int y = 0; y < TN; ++y) acc_r[x][y] += a[x] * b[y];
        }}
        __syncthreads();
    }}
#pragma unroll
    for (int x = 0; x < TM; ++x) {{
        int i = bi + tr * TM + x;
        if (i >= M) break;
#pragma unroll
        for (int y = 0; y < TN; ++y) {{
            int j = bj + tc * TN + y;
            if (j < N) {{
                {g.dt} acc = acc_r[x][y];
                {g.epilogue("i", "j")}
            }}
        }}
    }}
}}

extern "C" void solve({sig}) {{
    if (M <= 0 || N <= 0) return;
    dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM{zdim});
    gemm_regtile<<<grid, 256>>>({_args(sig)});
}}
"""


def _plain(expr: str) -> str:
    """An index expression as the description shows it (no casts)."""
    return expr.replace("(long long)", "")


def _gemm_desc(g: _Gemm) -> tuple[str, str]:
    def stored(name: str, op: str, rows: str, cols: str) -> str:
        if op == "n":
            return f"{name} is stored as a {rows} x {cols} {g.storage}-major matrix and op({name}) = {name}"
        return (f"{name} is stored as a {cols} x {rows} {g.storage}-major matrix and op({name}) = {name}^T "
                f"({rows} x {cols})")

    batch = ""
    if g.batched == "batched":
        batch = ("There are `batch` independent problems: matrix b of A, B, C (and D) starts at offset "
                 "b * (its M*K, K*N, M*N element count). ")
    elif g.batched == "bcast_b":
        batch = ("There are `batch` problems sharing ONE B: matrix b of A and C (and D) starts at offset "
                 "b * (M*K, M*N); B is used by every batch entry. ")
    kind = "Batched general" if g.batched else "General"
    title = (f"{kind} matrix multiply, {g.storage}-major, op(A)={g.op_a.upper()}, op(B)={g.op_b.upper()}, "
             f"epilogue {g.epi} ({g.dt})")
    ex = {"row": "element (r, c) of an R x C row-major matrix is at [r * C + c]",
          "col": "element (r, c) of an R x C column-major matrix is at [r + c * R]"}[g.storage]
    prec = {"float": "Accumulate in fp32 or better; any summation order is accepted within a relative "
                     "tolerance (rtol 1e-4).",
            "double": "Accumulate in double; any summation order is accepted (rtol 1e-10).",
            "int": "Integer arithmetic (values are small, no overflow); the result must be exact."}[g.dt]
    desc = f"""Compute a {g.dt} matrix product with an epilogue: {_EPI[g.epi][2]}.

op(A) is M x K, op(B) is K x N, C is M x N. {stored("A", g.op_a, "M", "K")}; {stored("B", g.op_b, "K", "N")};
C is an M x N {g.storage}-major matrix. Storage convention: {ex}.
So op(A)(i, k) = {_plain(g.a_at("i", "k"))}, op(B)(k, j) = {_plain(g.b_at("k", "j"))},
C(i, j) = C[{_plain(g.c_idx("i", "j"))}].
{batch}Every element of C must be written. M, N and K are arbitrary positive integers that need not be
multiples of any tile size, so partial tiles must be handled. {prec}
"""
    return title, desc


def _gemm_task(g: _Gemm, seed: int) -> GeneratedTask:
    p = g.build()
    sig = p.sig
    extra = _EPI[g.epi][1]
    if g.batched:
        shapes = [{"batch": 3, "M": 17, "N": 23, "K": 19}, {"batch": 4, "M": 48, "N": 40, "K": 36}]
    else:
        shapes = [{"M": 33, "N": 47, "K": 29}, {"M": 96, "N": 80, "K": 72}]
    scalars = ("alpha", "beta") if "alpha" in extra else ()
    nb = "batch * " if g.batched else ""
    es = _DT[g.dt]["size"]
    bsz = "K * N" if g.batched != "batched" else f"{nb}K * N"
    c_traffic = 2 if "inout" in extra or "residual" in extra else 1
    nbytes = f"{es} * ({nb}M * K + {bsz} + {c_traffic} * {nb}M * N)"
    title, desc = _gemm_desc(g)
    impls = [Impl("naive", "naive", _gemm_naive(g, sig), 1, "one thread per C element, operands from global memory"),
             Impl("shared_tiled", "shared_tiled", _gemm_tiled(g, sig), 3,
                  "16x16 shared tiles loaded along each operand's contiguous index"),
             Impl("register_tiled", "register_tiled", _gemm_regtile(g, sig), 5,
                  "64x64 block tile, BK=8, 4x4 register micro-tile per thread")]
    return GeneratedTask(
        id=g.tid, kind="c2cuda", family="c_matmul", category="matmul", title=title, description=desc,
        reference=_gemm_reference(g, sig), impls=impls, configs=_configs(g.tid, seed, shapes, scalars, g.dt),
        metrics={"flops": f"2 * {nb}M * N * K", "bytes": nbytes}, params=p.params, tolerance=dict(_DT[g.dt]["tol"]),
        timing=_timing(g.tid, seed, _BGEMM_TIMING if g.batched else _GEMM_TIMING, scalars, g.dt),
        tags=["compute-bound", "gemm"] + (["batched"] if g.batched else []),
        variant={"op": "gemm", "storage": g.storage, "op_a": g.op_a, "op_b": g.op_b, "epilogue": g.epi,
                 "dtype": g.dt, "batched": g.batched or "none"},
        seed=_task_seed(g.tid, seed))


# ======================================================================================================
# GEMV (row-major A, y = A x or y = A^T x, optionally batched)
# ======================================================================================================
@dataclass(frozen=True)
class _Gemv:
    trans: bool
    epi: str
    dt: str
    batched: bool

    @property
    def tid(self) -> str:
        return f"mm_{'bgemv' if self.batched else 'gemv'}_{'t' if self.trans else 'n'}_{self.epi}_{self.dt}"

    @property
    def ylen(self) -> str:
        return "N" if self.trans else "M"

    @property
    def xlen(self) -> str:
        return "M" if self.trans else "N"

    def build(self) -> _P:
        p = _P()
        dt, extra = self.dt, _GEMV_EPIS[self.epi][1]
        nb = "batch * " if self.batched else ""
        p.ptr("A", dt, "in", f"{nb}M * N", _DT[dt]["init"])
        p.ptr("x", dt, "in", f"{nb}{self.xlen}", _DT[dt]["init"])
        if "bias" in extra:
            p.ptr("bias", dt, "in", self.ylen, _DT[dt]["cinit"])
        p.ptr("y", dt, "inout" if "inout" in extra else "out", f"{nb}{self.ylen}",
              _DT[dt]["cinit"] if "inout" in extra else None)
        if "alpha" in extra:
            p.scalar("alpha", dt)
        if "beta" in extra:
            p.scalar("beta", dt)
        if self.batched:
            p.scalar("batch", "int")
        p.scalar("M", "int")
        p.scalar("N", "int")
        return p

    def store(self, o: str) -> str:
        expr = _GEMV_EPIS[self.epi][0].replace("bias[o]", f"bias[{o}]").replace("OLD", f"y[{o}]")
        return f"y[{o}] = ({self.dt})({expr});"

    def offsets(self, b: str) -> str:
        if not self.batched:
            return ""
        return (f"    A += (long long)({b}) * M * N;\n    x += (long long)({b}) * {self.xlen};\n"
                f"    y += (long long)({b}) * {self.ylen};\n")


def _gemv_reference(v: _Gemv, sig: str) -> str:
    acc = _DT[v.dt]["acc"]
    a = "A[i * N + o]" if v.trans else "A[o * N + i]"
    inner = "M" if v.trans else "N"
    relu = _relu_macro(v.dt) if "RELU" in _GEMV_EPIS[v.epi][0] else ""
    body = (f"for (int o = 0; o < {v.ylen}; ++o) {{\n"
            f"        {acc} acc = 0;\n"
            f"        for (int i = 0; i < {inner}; ++i) acc += ({acc}){a} * x[i];\n"
            f"        {v.store('o')}\n    }}")
    if v.batched:
        body = (f"for (int b = 0; b < batch; ++b) {{\n    {body}\n"
                f"    A += M * N; x += {v.xlen}; y += {v.ylen};\n    }}").replace("\n    ", "\n        ")
    opa = "A^T" if v.trans else "A"
    return f"""{relu}/* Serial reference: {_GEMV_EPIS[v.epi][2]} with A row-major M x N, op(A) = {opa}. */
void reference({sig}) {{
    {body}
}}
"""


def _gemv_n_impls(v: _Gemv, sig: str) -> list[Impl]:
    relu = _relu_macro(v.dt)
    bgrid = ", batch" if v.batched else ""
    naive = f"""{relu}
// One thread per output row: each thread walks its own row of A, so the lanes of a warp read addresses
// N elements apart (no coalescing) and only M threads exist.
__global__ void gemv_thread_row({sig}) {{
{v.offsets("blockIdx.y")}    int o = blockIdx.x * blockDim.x + threadIdx.x;
    if (o >= M) return;
    {v.dt} acc = 0;
    for (int i = 0; i < N; ++i) acc += A[(long long)o * N + i] * x[i];
    {v.store("o")}
}}

extern "C" void solve({sig}) {{
    if (M <= 0) return;
    dim3 grid((M + 127) / 128{bgrid});
    gemv_thread_row<<<grid, 128>>>({_args(sig)});
}}
"""
    block = f"""{relu}
// One 128-thread block per row: threads stride along the row (coalesced) and combine their partial sums
// with a shared-memory tree reduction.
#define THREADS 128

__global__ void gemv_block_row({sig}) {{
    __shared__ {v.dt} buf[THREADS];
{v.offsets("blockIdx.y")}    int o = blockIdx.x;
    {v.dt} acc = 0;
    for (int i = threadIdx.x; i < N; i += THREADS) acc += A[(long long)o * N + i] * x[i];
    buf[threadIdx.x] = acc;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {{
        if (threadIdx.x < s) buf[threadIdx.x] += buf[threadIdx.x + s];
        __syncthreads();
    }}
    if (threadIdx.x == 0) {{
        acc = buf[0];
        {v.store("o")}
    }}
}}

extern "C" void solve({sig}) {{
    if (M <= 0) return;
    dim3 grid(M{bgrid});
    gemv_block_row<<<grid, THREADS>>>({_args(sig)});
}}
"""
    warp = f"""{relu}
// One warp per row, four rows per block: coalesced strided reads and a butterfly shuffle reduction; no
// shared memory and no block barrier, and short rows waste at most one warp.
#define WARPS 4

__global__ void gemv_warp_row({sig}) {{
{v.offsets("blockIdx.y")}    int o = blockIdx.x * WARPS + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (o >= M) return;   // warp-uniform
    {v.dt} acc = 0;
    for (int i = lane; i < N; i += 32) acc += __ldg(&A[(long long)o * N + i]) * __ldg(&x[i]);
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, off);
    if (lane == 0) {{
        {v.store("o")}
    }}
}}

extern "C" void solve({sig}) {{
    if (M <= 0) return;
    dim3 grid((M + WARPS - 1) / WARPS{bgrid});
    gemv_warp_row<<<grid, WARPS * 32>>>({_args(sig)});
}}
"""
    return [Impl("naive", "naive", naive, 1, "one thread per row; uncoalesced row walks"),
            Impl("block_row", "coalesced", block, 2, "one block per row, shared-memory tree reduction"),
            Impl("warp_row", "warp_shuffle", warp, 3, "one warp per row, shuffle reduction")]


def _gemv_t_impls(v: _Gemv, sig: str) -> list[Impl]:
    relu = _relu_macro(v.dt)
    bgrid = ", batch" if v.batched else ""
    naive = f"""{relu}
// One thread per output column o: it walks column o of A down the rows. Neighbouring threads read
// neighbouring columns (coalesced), but only N threads exist and each does M sequential steps.
__global__ void gemvt_thread_col({sig}) {{
{v.offsets("blockIdx.y")}    int o = blockIdx.x * blockDim.x + threadIdx.x;
    if (o >= N) return;
    {v.dt} acc = 0;
    for (int i = 0; i < M; ++i) acc += A[(long long)i * N + o] * x[i];
    {v.store("o")}
}}

extern "C" void solve({sig}) {{
    if (N <= 0) return;
    dim3 grid((N + 127) / 128{bgrid});
    gemvt_thread_col<<<grid, 128>>>({_args(sig)});
}}
"""
    tiled = f"""{relu}
// 32 x 8 thread blocks: 32 consecutive columns (coalesced), the 8 thread rows split the M rows; partial
// sums meet in shared memory and the first thread row finishes the column.
__global__ void gemvt_tiled({sig}) {{
    __shared__ {v.dt} part[8][33];
{v.offsets("blockIdx.y")}    int o = blockIdx.x * 32 + threadIdx.x;
    {v.dt} acc = 0;
    if (o < N)
        for (int i = threadIdx.y; i < M; i += 8) acc += A[(long long)i * N + o] * x[i];
    part[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && o < N) {{
        acc = 0;
#pragma unroll
        for (int r = 0; r < 8; ++r) acc += part[r][threadIdx.x];
        {v.store("o")}
    }}
}}

extern "C" void solve({sig}) {{
    if (N <= 0) return;
    dim3 grid((N + 31) / 32{bgrid});
    gemvt_tiled<<<grid, dim3(32, 8)>>>({_args(sig)});
}}
"""
    nb = "batch" if v.batched else "1"
    multi = f"""{relu}
// Two passes: the rows are cut into chunks of 32; block (column tile, chunk) writes one partial sum per
// column to a temporary buffer (coalesced), exposing M/32 times more parallelism than one thread per
// column. A second kernel adds the chunk partials and applies the epilogue.
#define CHUNK 32

__global__ void gemvt_partial({sig}, {v.dt}* part, int chunks) {{
{v.offsets("blockIdx.z")}    int o = blockIdx.x * blockDim.x + threadIdx.x;
    int c = blockIdx.y;
    if (o >= N) return;
    {v.dt} acc = 0;
    int end = min(M, (c + 1) * CHUNK);
    for (int i = c * CHUNK; i < end; ++i) acc += A[(long long)i * N + o] * x[i];
    part[((long long)blockIdx.z * chunks + c) * N + o] = acc;
}}

__global__ void gemvt_finish({sig}, const {v.dt}* part, int chunks) {{
{v.offsets("blockIdx.y")}    int o = blockIdx.x * blockDim.x + threadIdx.x;
    if (o >= N) return;
    {v.dt} acc = 0;
    for (int c = 0; c < chunks; ++c) acc += part[((long long)blockIdx.y * chunks + c) * N + o];
    {v.store("o")}
}}

extern "C" void solve({sig}) {{
    if (N <= 0) return;
    int nb = {nb};
    int chunks = (M + CHUNK - 1) / CHUNK;
    if (chunks < 1) chunks = 1;
    {v.dt}* part = nullptr;
    cudaMalloc(&part, sizeof({v.dt}) * (size_t)nb * chunks * N);
    gemvt_partial<<<dim3((N + 127) / 128, chunks, nb), 128>>>({_args(sig)}, part, chunks);
    gemvt_finish<<<dim3((N + 127) / 128, nb), 128>>>({_args(sig)}, part, chunks);
    cudaFree(part);
}}
"""
    return [Impl("naive", "naive", naive, 1, "one thread per output column walking all rows"),
            Impl("tiled_columns", "shared_tiled", tiled, 2,
                 "32 columns x 8 row groups per block, shared-memory combine"),
            Impl("split_rows", "multi_pass", multi, 3, "row chunks to a partial buffer, then a reduce+epilogue pass")]


def _gemv_task(v: _Gemv, seed: int) -> GeneratedTask:
    p = v.build()
    sig = p.sig
    extra = _GEMV_EPIS[v.epi][1]
    shapes = ([{"batch": 3, "M": 21, "N": 30}, {"batch": 6, "M": 90, "N": 77}] if v.batched
              else [{"M": 37, "N": 53}, {"M": 300, "N": 257}])
    scalars = tuple(s for s in ("alpha", "beta") if s in extra)
    nb = "batch * " if v.batched else ""
    es = _DT[v.dt]["size"]
    ytraffic = 2 if "inout" in extra else 1
    impls = _gemv_t_impls(v, sig) if v.trans else _gemv_n_impls(v, sig)
    opa = "A^T" if v.trans else "A"
    batch = (f" There are `batch` independent problems: A_b starts at A + b*M*N, x_b at x + b*{v.xlen}, y_b at "
             f"y + b*{v.ylen}" + ("; bias is shared by all of them." if "bias" in extra else ".")) if v.batched else ""
    prec = {"float": "Accumulate in fp32 or better (rtol 1e-4).", "double": "Accumulate in double (rtol 1e-10).",
            "int": "Integer arithmetic, exact (values are small)."}[v.dt]
    inner = "M" if v.trans else "N"
    a_el = "A[i * N + o]" if v.trans else "A[o * N + i]"
    desc = f"""{'Batched matrix' if v.batched else 'Matrix'}-vector product ({v.dt}): {_GEMV_EPIS[v.epi][2]}.

A is an M x N row-major matrix (element (r, c) at A[r * N + c]); op(A) = {opa}. x has {v.xlen} elements,
y has {v.ylen}. For every o in [0, {v.ylen}): (op(A) x)[o] = sum over i in [0, {inner}) of {a_el} * x[i].{batch}
Every element of y must be written. M and N are arbitrary positive integers. {prec}
"""
    title = f"{'Batched ' if v.batched else ''}GEMV y = {opa} x, epilogue {v.epi} ({v.dt})"
    return GeneratedTask(
        id=v.tid, kind="c2cuda", family="c_matmul", category="gemv", title=title, description=desc,
        reference=_gemv_reference(v, sig), impls=impls, configs=_configs(v.tid, seed, shapes, scalars, v.dt),
        metrics={"flops": f"2 * {nb}M * N", "bytes": f"{es} * ({nb}M * N + {nb}{v.xlen} + {ytraffic} * {nb}{v.ylen})"},
        params=p.params, tolerance=dict(_DT[v.dt]["tol"]), tags=["memory-bound", "gemv"],
        timing=_timing(v.tid, seed, _BGEMV_TIMING if v.batched else _GEMV_TIMING, scalars, v.dt),
        variant={"op": "gemv", "trans": v.trans, "epilogue": v.epi, "dtype": v.dt, "batched": v.batched},
        seed=_task_seed(v.tid, seed))


# ======================================================================================================
# Outer products
# ======================================================================================================
_OUTER = {
    "plain": "out = x y^T",
    "scaled": "out = alpha * x y^T",
    "ger": "A = A + alpha * x y^T (rank-1 update, A is read and overwritten)",
    "batched": "out_b = x_b y_b^T for every batch entry b",
}


def _outer_task(kind: str, storage: str, dt: str, seed: int) -> GeneratedTask:
    tid = f"mm_outer_{kind}_{storage}_{dt}"
    p = _P()
    nb = "batch * " if kind == "batched" else ""
    p.ptr("x", dt, "in", f"{nb}M", _DT[dt]["init"])
    p.ptr("y", dt, "in", f"{nb}N", _DT[dt]["init"])
    out = "A" if kind == "ger" else "out"
    p.ptr(out, dt, "inout" if kind == "ger" else "out", f"{nb}M * N", _DT[dt]["cinit"] if kind == "ger" else None)
    if kind in ("scaled", "ger"):
        p.scalar("alpha", dt)
    if kind == "batched":
        p.scalar("batch", "int")
    p.scalar("M", "int")
    p.scalar("N", "int")
    sig = p.sig
    idx = "(long long)i * N + j" if storage == "row" else "i + (long long)j * M"
    val = {"plain": "x[i] * y[j]", "scaled": "alpha * x[i] * y[j]", "ger": f"A[{idx}] + alpha * x[i] * y[j]",
           "batched": "x[i] * y[j]"}[kind]
    offs = ("    x += (long long)b * M;\n    y += (long long)b * N;\n    out += (long long)b * M * N;\n"
            if kind == "batched" else "")
    ridx = idx.replace("(long long)", "")
    rval = val.replace(idx, ridx)
    loops = (f"for (int i = 0; i < M; ++i)\n        for (int j = 0; j < N; ++j)\n"
             f"            {out}[{ridx}] = {rval};")
    if kind == "batched":
        loops = (f"for (int b = 0; b < batch; ++b) {{\n    {loops}\n    x += M; y += N; out += M * N;\n    }}"
                 ).replace("\n    ", "\n        ")
    ref = f"""/* Serial reference: {_OUTER[kind]}; the M x N result is {storage}-major. */
void reference({sig}) {{
    {loops}
}}
"""
    # the contiguous ("fast") index of the result and the other one
    fast, slow, flen, slen = ("j", "i", "N", "M") if storage == "row" else ("i", "j", "M", "N")
    bz = "blockIdx.z" if kind == "batched" else "0"
    boff = offs.replace("b *", f"{bz} *") if kind == "batched" else ""
    bgrid = ", batch" if kind == "batched" else ""
    naive = f"""// One thread per result element with a 1-D launch: the element index is split into (i, j) with a
// division per element, and x and y are re-read from global memory by every thread.
__global__ void outer_naive({sig}) {{
{offs.replace("b *", "blockIdx.y *")}    long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= (long long)M * N) return;
    int {slow} = (int)(e / {flen}), {fast} = (int)(e % {flen});
    {out}[{idx}] = {val};
}}

extern "C" void solve({sig}) {{
    long long total = (long long)M * N;
    if (total <= 0) return;
    dim3 grid((unsigned)((total + 255) / 256){bgrid});
    outer_naive<<<grid, 256>>>({_args(sig)});
}}
"""
    coal = f"""// 2-D launch with threadIdx.x on the result's contiguous index: stores coalesce, no division, and the
// {slow}-vector element is a broadcast load shared by the whole warp.
__global__ void outer_2d({sig}) {{
{boff}    int {fast} = blockIdx.x * blockDim.x + threadIdx.x;
    int {slow} = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= M || j >= N) return;
    {out}[{idx}] = {val};
}}

extern "C" void solve({sig}) {{
    if (M <= 0 || N <= 0) return;
    dim3 block(64, 4);
    dim3 grid(({flen} + 63) / 64, ({slen} + 3) / 4{bgrid});
    outer_2d<<<grid, block>>>({_args(sig)});
}}
"""
    reg = f"""// Register reuse: each thread owns one contiguous-index position and RPT = 8 positions along the other
// index; its x/y element for the contiguous index is loaded once into a register and reused 8 times,
// while the stores of a warp stay coalesced.
#define RPT 8

__global__ void outer_regtile({sig}) {{
{boff}    int {fast} = blockIdx.x * blockDim.x + threadIdx.x;
    if ({fast} >= {flen}) return;
    {dt} vf = {"y[j]" if fast == "j" else "x[i]"};
    int s0 = blockIdx.y * RPT;
#pragma unroll
    for (int r = 0; r < RPT; ++r) {{
        int {slow} = s0 + r;
        if ({slow} >= {slen}) break;
        {out}[{idx}] = {val.replace("y[j]" if fast == "j" else "x[i]", "vf")};
    }}
}}

extern "C" void solve({sig}) {{
    if (M <= 0 || N <= 0) return;
    dim3 grid(({flen} + 127) / 128, ({slen} + RPT - 1) / RPT{bgrid});
    outer_regtile<<<grid, 128>>>({_args(sig)});
}}
"""
    layout = ("row-major: element (i, j) at [i * N + j]" if storage == "row"
              else "column-major: element (i, j) at [i + j * M]")
    bdesc = (" There are `batch` problems: x_b = x + b*M, y_b = y + b*N, out_b = out + b*M*N." if kind == "batched"
             else "")
    tol = {"float": {"rtol": 1e-5, "atol": 1e-6}, "double": {"rtol": 1e-12, "atol": 1e-13}, "int": {}}[dt]
    exact = "Exact integer results." if dt == "int" else "Compared with a tight relative tolerance (FMA is fine)."
    desc = f"""Outer product ({dt}): {_OUTER[kind]}.

x has M elements, y has N; the M x N result `{out}` is {layout}. For every i in [0, M), j in [0, N):
{out}(i, j) = {val.replace("A[" + idx + "]", "A(i, j)")}.{bdesc} Every element must be written.
M and N are arbitrary positive integers. {exact}
"""
    es = _DT[dt]["size"]
    traffic = 2 if kind == "ger" else 1
    return GeneratedTask(
        id=tid, kind="c2cuda", family="c_matmul", category="matmul",
        title=f"Outer product {kind}, {storage}-major result ({dt})", description=desc, reference=ref,
        impls=[Impl("naive", "naive", naive, 1, "1-D launch, div/mod per element, no operand reuse"),
               Impl("coalesced_2d", "coalesced", coal, 2, "2-D launch along the contiguous index"),
               Impl("register_tiled", "register_tiled", reg, 3, "8 results per thread reusing a register operand")],
        configs=_configs(tid, seed, [{"batch": 3, "M": 19, "N": 23}, {"batch": 5, "M": 60, "N": 70}]
                         if kind == "batched" else [{"M": 37, "N": 53}, {"M": 200, "N": 173}],
                         ("alpha",) if kind in ("scaled", "ger") else (), dt),
        metrics={"flops": f"{2 if kind != 'plain' and kind != 'batched' else 1} * {nb}M * N",
                 "bytes": f"{es} * ({nb}M + {nb}N + {traffic} * {nb}M * N)"},
        params=p.params, tolerance=tol, tags=["memory-bound", "outer-product"],
        timing=_timing(tid, seed, _BOUTER_TIMING if kind == "batched" else _OUTER_TIMING,
                       ("alpha",) if kind in ("scaled", "ger") else (), dt),
        variant={"op": "outer", "kind": kind, "storage": storage, "dtype": dt}, seed=_task_seed(tid, seed))


# ======================================================================================================
def _all(seed: int) -> Iterator[Callable[[], GeneratedTask]]:
    for dt in _DT:
        for storage in ("row", "col"):
            for op_a in ("n", "t"):
                for op_b in ("n", "t"):
                    for epi in _GEMM_EPIS:
                        g = _Gemm(storage, op_a, op_b, epi, dt)
                        yield lambda g=g: _gemm_task(g, seed)
        for op_a in ("n", "t"):
            for op_b in ("n", "t"):
                for epi in _BATCH_EPIS:
                    g = _Gemm("row", op_a, op_b, epi, dt, "batched")
                    yield lambda g=g: _gemm_task(g, seed)
                g = _Gemm("row", op_a, op_b, "bias_relu", dt, "bcast_b")  # a linear layer over a batch
                yield lambda g=g: _gemm_task(g, seed)
        for batched in (False, True):
            for trans in (False, True):
                for epi in _GEMV_EPIS:
                    v = _Gemv(trans, epi, dt, batched)
                    yield lambda v=v: _gemv_task(v, seed)
        for kind in _OUTER:
            for storage in ("row", "col"):
                yield lambda k=kind, s=storage, d=dt: _outer_task(k, s, d, seed)


@family("c_matmul", kind="c2cuda", category="matmul")
def generate_matmul(seed: int) -> Iterator[GeneratedTask]:
    """GEMM in 8 layouts x 8 epilogues, batched and broadcast-B GEMM, GEMV / GEMV^T (plain and batched)
    with epilogues, and outer products / rank-1 updates, over float/double/int."""
    if not isinstance(seed, int):
        raise FamilyError(f"c_matmul: seed must be an int, not {type(seed).__name__}")
    for make in _all(seed):
        yield make()
