"""C→CUDA sparse family: SpMV in CSR, CSC, row-sorted COO, ELL (row- and column-major), DIA, 2x2 BSR,
symmetric upper-triangle CSR and transposed CSR; CSR x dense SpMM (row-/column-major, transposed) and
SDDMM; five epilogues (plain, alpha, alpha/beta in-out, bias, bias+ReLU); float/double.

Why these variants: the storage format decides which kernels are fast (CSR: thread/warp/sub-warp per
row; COO: atomics or a segmented warp reduction; ELL/DIA: thread per row coalesces only in the
column-major layout; A^T x, CSC and symmetric storage need scatter atomics; SpMM/SDDMM add a dense
dimension), and the sparsity pattern decides how much load imbalance each kernel suffers. The
matrices come from a generated ``inputs.py`` (custom inputs, see docs/tasks.md) that draws exactly
``nnz`` distinct positions with the pattern's weights, so the task.toml buffer sizes are exact.

The pattern (random / banded / power-law) is input data, not structure: tasks that differ only in it
have identical references and the dataset's deduplication keeps one of them, so patterns rotate
over the tasks instead of multiplying them. References are written compactly (and CSC is generated
from CSR-transposed by renaming) so that each format/epilogue pair stays distinct.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from dataclasses import replace as dc_replace
from typing import Any

from veriforge.cudaperf.dataset.family import FamilyError, GeneratedTask, Impl, family

from ._params import ParamList as _P

__all__ = ["generate_sparse"]

_FORMATS = ("csr", "csc", "coo", "ell_row", "ell_col", "csr_t", "sym", "dia", "bsr", "spmm_row", "spmm_col", "spmm_t",
            "sddmm")
_PATTERNS = ("random", "banded", "powerlaw")
_EPIS = ("plain", "scale", "alpha_beta", "bias", "bias_relu")
_SIZE = {"float": 4, "double": 8}
_NP = {"float": "float32", "double": "float64"}
_TOL = {"float": {"rtol": 1e-4, "atol": 1e-5}, "double": {"rtol": 1e-10, "atol": 1e-12}}
# formats whose matrices only make sense with one pattern (a DIA matrix is banded by construction)
_FIXED_PATTERN = {"dia": "banded"}


def _stable(text: str) -> int:
    return zlib.crc32(text.encode()) & 0x7FFFFFFF


@dataclass(frozen=True)
class _Var:
    """A structural point. The sparsity ``pattern`` is input data, not structure (two tasks that differ
    only in it have the same reference and would be deduplicated), so it rotates over the tasks of a
    format instead of multiplying them."""

    fmt: str
    pattern: str
    epi: str
    dt: str

    @property
    def tid(self) -> str:
        return f"sp_{self.fmt}_{self.epi}_{self.dt}"

    @property
    def spmm(self) -> bool:
        return self.fmt.startswith("spmm")

    @property
    def ell(self) -> bool:
        return self.fmt.startswith("ell")

    @property
    def csr_like(self) -> bool:
        return self.fmt in ("csr", "csr_t", "sym", "spmm_row", "spmm_col", "spmm_t", "sddmm")

    @property
    def as_csr_t(self) -> _Var:
        """CSC SpMV of A is CSR-transposed SpMV of A^T: the csc task is generated from this variant."""
        return dc_replace(self, fmt="csr_t")

    @property
    def out(self) -> str:
        return "C" if self.spmm else ("out" if self.fmt == "sddmm" else "y")

    @property
    def ylen(self) -> str:
        return {"csr_t": "cols", "spmm_t": "cols * k", "sddmm": "nnz", "bsr": "2 * brows"}.get(
            self.fmt, "rows * k" if self.spmm else "rows")

    @property
    def xlen(self) -> str:
        return {"csr_t": "rows", "bsr": "2 * bcols"}.get(self.fmt, "cols")

    @property
    def bias_len(self) -> str:
        return "k" if self.spmm else ("rows" if self.fmt == "sddmm" else self.ylen)



_CSC_NAMES = {"row_ptr": "col_ptr", "col_idx": "row_idx", "rows": "cols", "cols": "rows"}


def _to_csc(text: str) -> str:
    """Rename a CSR-transposed artefact into its CSC twin; the scalars keep the order rows, cols."""
    out = re.sub(r"\b(row_ptr|col_idx|rows|cols)\b", lambda m: _CSC_NAMES[m.group(1)], text)
    return out.replace("int cols, int rows", "int rows, int cols").replace("cols, rows, nnz", "rows, cols, nnz")


def _params(v: _Var) -> _P:
    if v.fmt == "csc":
        q, p = _params(v.as_csr_t), _P()
        for prm in q.params:
            e = {k: (_to_csc(val) if isinstance(val, str) and k in ("name", "size", "value") else val)
                 for k, val in prm.items()}
            p.params.append(e)
        names = [e["name"] for e in p.params]
        i, j = names.index("cols"), names.index("rows")  # restore the order rows, cols
        p.params[i], p.params[j] = p.params[j], p.params[i]
        p.parts = [_to_csc(x) for x in q.parts]
        p.parts[i], p.parts[j] = "int rows", "int cols"
        return p
    p, dt = _P(), v.dt
    if v.csr_like:
        p.ptr("row_ptr", "int", "in", "rows + 1", "custom")
        p.ptr("col_idx", "int", "in", "nnz", "custom")
        p.ptr("values", dt, "in", "nnz", "custom")
    elif v.fmt == "coo":
        p.ptr("row_idx", "int", "in", "nnz", "custom")
        p.ptr("col_idx", "int", "in", "nnz", "custom")
        p.ptr("values", dt, "in", "nnz", "custom")
    elif v.ell:
        p.ptr("ell_col", "int", "in", "rows * width", "custom")
        p.ptr("ell_val", dt, "in", "rows * width", "custom")
    elif v.fmt == "dia":
        p.ptr("offsets", "int", "in", "ndiag", "custom")
        p.ptr("data", dt, "in", "ndiag * rows", "custom")
    else:  # bsr
        p.ptr("brow_ptr", "int", "in", "brows + 1", "custom")
        p.ptr("bcol_idx", "int", "in", "nnzb", "custom")
        p.ptr("bvals", dt, "in", "4 * nnzb", "custom")
    if v.fmt == "spmm_t":
        p.ptr("B", dt, "in", "rows * k", "uniform(-1, 1)")
    elif v.spmm:
        p.ptr("B", dt, "in", "cols * k", "uniform(-1, 1)")
    elif v.fmt == "sddmm":
        p.ptr("X", dt, "in", "rows * k", "uniform(-1, 1)")
        p.ptr("Y", dt, "in", "cols * k", "uniform(-1, 1)")
    else:
        p.ptr("x", dt, "in", v.xlen, "uniform(-1, 1)")
    if v.epi in ("bias", "bias_relu"):
        p.ptr("bias", dt, "in", v.bias_len, "uniform(-0.5, 0.5)")
    p.ptr(v.out, dt, "inout" if v.epi == "alpha_beta" else "out", v.ylen,
          "uniform(-1, 1)" if v.epi == "alpha_beta" else None)
    if v.epi in ("scale", "alpha_beta"):
        p.scalar("alpha", dt)
    if v.epi == "alpha_beta":
        p.scalar("beta", dt)
    if v.fmt == "bsr":
        for d in ("brows", "bcols", "nnzb"):
            p.scalar(d)
        return p
    p.scalar("rows")
    p.scalar("cols")
    if v.ell:
        p.scalar("width")
    elif v.fmt == "dia":
        p.scalar("ndiag")
    else:
        p.scalar("nnz")
    if v.spmm or v.fmt == "sddmm":
        p.scalar("k")
    return p


# -- inputs.py ---------------------------------------------------------------------------------------------
_INPUTS = """\"\"\"Sparse matrix for {tid}: format {fmt!r}, pattern {pattern!r} (generated by c_sparse).

Exactly `nnz` distinct positions are drawn with the pattern's weights: "random" = uniform, "banded" =
only |c - r * cols / rows| <= bw, "powerlaw" = row weights ~ 1 / rank (a few very long rows) with about
5 % empty rows. ELL truncates rows longer than `width`; "sym" draws from the upper triangle (c >= r);
DIA draws `ndiag` distinct diagonal offsets; BSR draws `nnzb` distinct 2 x 2 blocks. Values are non-zero:
magnitude in [0.1, 1), random sign.
\"\"\"

from __future__ import annotations

import numpy as np

PATTERN = {pattern!r}
FORMAT = {fmt!r}
DTYPE = np.{npdt}


def _vals(n: int, rng: np.random.Generator) -> np.ndarray:
    return (rng.uniform(0.1, 1.0, size=n) * np.where(rng.random(n) < 0.5, -1.0, 1.0)).astype(DTYPE)


#: Above this many matrix positions (the [[timing]] sizes; every verified size is far below) positions are
#: drawn without materialising the rows x cols grid: same patterns, rejection-sampled in O(nnz).
_DENSE_LIMIT = 1 << 24


def _positions_large(rows: int, cols: int, nnz: int, rng: np.random.Generator,
                     upper: bool = False) -> tuple[np.ndarray, np.ndarray]:
    if PATTERN == "banded":
        bw = 2 * max(1, -(-nnz // rows))  # a band of 2 * bw + 1 >= 4 * nnz / rows positions per row
    elif PATTERN == "powerlaw":
        roww = 1.0 / (rng.permutation(rows).astype(float) + 1.0)
        roww[rng.random(rows) < 0.05] = 0.0
        cdf = np.cumsum(roww)
    chosen = np.zeros(0, dtype=np.int64)
    while chosen.size < nnz:
        m = int((nnz - chosen.size) * 1.25) + 1024
        if PATTERN == "random":
            r = rng.integers(0, rows, size=m)
            c = rng.integers(0, cols, size=m)
        elif PATTERN == "banded":
            r = rng.integers(0, rows, size=m)
            c = np.round(r * (cols / rows)).astype(np.int64) + rng.integers(-bw, bw + 1, size=m)
        else:
            r = np.minimum(np.searchsorted(cdf, rng.random(m) * cdf[-1], side="right"), rows - 1)
            c = rng.integers(0, cols, size=m)
        keep = (c >= 0) & (c < cols)
        r, c = r[keep], c[keep]
        if upper:
            r, c = np.minimum(r, c), np.maximum(r, c)
        chosen = np.sort(np.concatenate([chosen, r * cols + c]))
        chosen = chosen[np.concatenate(([True], chosen[1:] != chosen[:-1]))]  # np.unique, without its cost
    chosen = np.sort(chosen[rng.permutation(chosen.size)[:nnz]])  # row-major order: sorted by (row, col)
    return (chosen // cols).astype(np.int32), (chosen % cols).astype(np.int32)


def _positions(rows: int, cols: int, nnz: int, rng: np.random.Generator,
               upper: bool = False) -> tuple[np.ndarray, np.ndarray]:
    if rows * cols > _DENSE_LIMIT:
        return _positions_large(rows, cols, nnz, rng, upper)
    r = np.repeat(np.arange(rows), cols)
    c = np.tile(np.arange(cols), rows)
    if PATTERN == "random":
        w = np.ones(rows * cols)
    elif PATTERN == "banded":
        centre = np.round(r * (cols / rows))
        bw = 1
        while np.count_nonzero((np.abs(c - centre) <= bw) & ((c >= r) if upper else True)) < 2 * nnz:
            bw += 1
        w = (np.abs(c - centre) <= bw).astype(float)
    else:
        rank = rng.permutation(rows).astype(float)
        roww = 1.0 / (rank + 1.0)
        roww[rng.random(rows) < 0.05] = 0.0
        if np.count_nonzero(roww) * cols < 4 * nnz:
            roww[:] = 1.0
        w = np.repeat(roww, cols)
    if upper:
        w = w * (c >= r)
    pick = rng.choice(rows * cols, size=nnz, replace=False, p=w / w.sum())
    pick.sort()  # row-major order: sorted by (row, col)
    return r[pick].astype(np.int32), c[pick].astype(np.int32)


def _csr(ri: np.ndarray, rows: int) -> np.ndarray:
    row_ptr = np.zeros(rows + 1, dtype=np.int32)
    np.cumsum(np.bincount(ri, minlength=rows), out=row_ptr[1:])
    return row_ptr


def make_inputs(config: dict, rng: np.random.Generator) -> dict[str, np.ndarray]:
    if FORMAT == "dia":
        rows, cols, ndiag = int(config["rows"]), int(config["cols"]), int(config["ndiag"])
        offsets = np.sort(rng.choice(np.arange(-ndiag, ndiag + 1), size=ndiag, replace=False)).astype(np.int32)
        return {{"offsets": offsets, "data": _vals(ndiag * rows, rng)}}
    if FORMAT == "bsr":
        brows, bcols, nnzb = int(config["brows"]), int(config["bcols"]), int(config["nnzb"])
        ri, ci = _positions(brows, bcols, nnzb, rng)
        return {{"brow_ptr": _csr(ri, brows), "bcol_idx": ci, "bvals": _vals(4 * nnzb, rng)}}
    rows, cols, nnz = int(config["rows"]), int(config["cols"]), int(config["nnz"])
    ri, ci = _positions(rows, cols, nnz, rng, upper=FORMAT == "sym")
    if FORMAT.startswith("ell"):
        width = int(config["width"])
        ell_col = np.full((rows, width), -1, dtype=np.int32)
        ell_val = np.zeros((rows, width), dtype=DTYPE)
        fill = np.zeros(rows, dtype=np.int64)
        vals = _vals(nnz, rng)
        if nnz > (1 << 20):  # the same fill, vectorised: ri is sorted, so a row's entries are consecutive
            slot = np.arange(nnz) - np.searchsorted(ri, ri, side="left")
            keep = slot < width
            ell_col[ri[keep], slot[keep]] = ci[keep]
            ell_val[ri[keep], slot[keep]] = vals[keep]
        for r, c, a in zip(ri, ci, vals) if nnz <= (1 << 20) else ():
            if fill[r] < width:
                ell_col[r, fill[r]] = c
                ell_val[r, fill[r]] = a
                fill[r] += 1
        if FORMAT == "ell_col":
            ell_col, ell_val = ell_col.T.copy(), ell_val.T.copy()
        return {{"ell_col": ell_col.reshape(-1), "ell_val": ell_val.reshape(-1)}}
    if FORMAT == "coo":
        return {{"row_idx": ri, "col_idx": ci, "values": _vals(nnz, rng)}}
    if FORMAT == "csc":
        order = np.lexsort((ri, ci))  # by column, then row
        return {{"col_ptr": _csr(ci, cols), "row_idx": ri[order], "values": _vals(nnz, rng)}}
    return {{"row_ptr": _csr(ri, rows), "col_idx": ci, "values": _vals(nnz, rng)}}
"""


def _inputs(v: _Var) -> str:
    return _INPUTS.format(tid=v.tid, pattern=v.pattern, fmt=v.fmt, npdt=_NP[v.dt])


# -- epilogue and reference --------------------------------------------------------------------------------
def _store(v: _Var, o: str, bi: str, acc: str = "acc") -> str:
    out = v.out
    expr = {"plain": acc, "scale": f"alpha * {acc}", "alpha_beta": f"alpha * {acc} + beta * {out}[{o}]",
            "bias": f"{acc} + bias[{bi}]", "bias_relu": f"RELU({acc} + bias[{bi}])"}[v.epi]
    return f"{out}[{o}] = ({v.dt})({expr});"


def _relu(v: _Var) -> str:
    z = "0.0f" if v.dt == "float" else "0.0"
    return f"#define RELU(t) ((t) > {z} ? (t) : {z})\n" if v.epi == "bias_relu" else ""


def _reference(v: _Var, p: _P) -> str:
    """Compact serial references (deduplication compares reference tokens: keep the shared scaffolding
    small so the format and the epilogue dominate). Gathers accumulate in a local double; scatters
    into a calloc'd double array."""
    if v.fmt == "csc":
        return _to_csc(_reference(v.as_csr_t, _params(v.as_csr_t))).replace("(csr_t,", "(csc,")
    f = v.fmt
    scatter = None  # (size, accumulation statement, epilogue loop) for scatter formats
    if f == "csr":
        body = ["for (int r = 0; r < rows; ++r) {", "    double t = 0;",
                "    for (int q = row_ptr[r]; q < row_ptr[r + 1]; ++q) t += (double)values[q] * x[col_idx[q]];",
                f"    {_store(v, 'r', 'r', 't')}", "}"]
    elif f in ("ell_row", "ell_col"):
        at = "r * width + w" if f == "ell_row" else "w * rows + r"
        body = ["for (int r = 0; r < rows; ++r) {", "    double t = 0;",
                "    for (int w = 0; w < width; ++w)",
                f"        if (ell_col[{at}] >= 0) t += (double)ell_val[{at}] * x[ell_col[{at}]];",
                f"    {_store(v, 'r', 'r', 't')}", "}"]
    elif f == "dia":
        body = ["for (int r = 0; r < rows; ++r) {", "    double t = 0;",
                "    for (int d = 0; d < ndiag; ++d) {", "        int c = r + offsets[d];",
                "        if (c >= 0 && c < cols) t += (double)data[d * rows + r] * x[c];", "    }",
                f"    {_store(v, 'r', 'r', 't')}", "}"]
    elif f == "bsr":
        body = ["for (int br = 0; br < brows; ++br)", "    for (int i = 0; i < 2; ++i) {", "        double t = 0;",
                "        for (int q = brow_ptr[br]; q < brow_ptr[br + 1]; ++q)",
                "            for (int j = 0; j < 2; ++j)",
                "                t += (double)bvals[4 * q + 2 * i + j] * x[2 * bcol_idx[q] + j];",
                f"        {_store(v, '2 * br + i', '2 * br + i', 't')}", "    }"]
    elif f in ("spmm_row", "spmm_col"):
        o = "r * k + j" if f == "spmm_row" else "r + j * rows"
        bat = "col_idx[q] * k + j" if f == "spmm_row" else "col_idx[q] + j * cols"
        body = ["for (int r = 0; r < rows; ++r)", "    for (int j = 0; j < k; ++j) {", "        double t = 0;",
                f"        for (int q = row_ptr[r]; q < row_ptr[r + 1]; ++q) t += (double)values[q] * B[{bat}];",
                f"        {_store(v, o, 'j', 't')}", "    }"]
    elif f == "sddmm":
        body = ["for (int r = 0; r < rows; ++r)", "    for (int q = row_ptr[r]; q < row_ptr[r + 1]; ++q) {",
                "        double t = 0;",
                "        for (int j = 0; j < k; ++j) t += (double)X[r * k + j] * Y[col_idx[q] * k + j];",
                "        t *= values[q];", f"        {_store(v, 'q', 'r', 't')}", "    }"]
    elif f == "coo":
        scatter = ("rows", ["for (int q = 0; q < nnz; ++q) acc[row_idx[q]] += (double)values[q] * x[col_idx[q]];"],
                   "rows", "o")
    elif f == "csr_t":
        scatter = ("cols", ["for (int r = 0; r < rows; ++r)",
                            "    for (int q = row_ptr[r]; q < row_ptr[r + 1]; ++q)",
                            "        acc[col_idx[q]] += (double)values[q] * x[r];"],
                   "cols", "o")
    elif f == "sym":
        scatter = ("rows", ["for (int r = 0; r < rows; ++r)",
                            "    for (int q = row_ptr[r]; q < row_ptr[r + 1]; ++q) {",
                            "        acc[r] += (double)values[q] * x[col_idx[q]];",
                            "        if (col_idx[q] != r) acc[col_idx[q]] += (double)values[q] * x[r];", "    }"],
                   "rows", "o")
    else:  # spmm_t
        scatter = ("cols * k", ["for (int r = 0; r < rows; ++r)",
                                "    for (int q = row_ptr[r]; q < row_ptr[r + 1]; ++q)",
                                "        for (int j = 0; j < k; ++j)",
                                "            acc[col_idx[q] * k + j] += (double)values[q] * B[r * k + j];"],
                   "cols * k", "o % k")
    head = ""
    if scatter is not None:
        n, acc_lines, count, bi = scatter
        head = "#include <stdlib.h>\n\n"
        init: list[str] = []
        final = v
        if v.epi == "scale" and v.fmt == "spmm_t":  # scale each stored value once, before its row of B
            acc_lines = [acc_lines[0], acc_lines[1] + " {", "        double av = alpha * (double)values[q];",
                         acc_lines[2], acc_lines[3].replace("(double)values[q]", "av"), "    }"]
            final = dc_replace(v, epi="plain")
        elif v.epi == "scale":  # scale every contribution as it is accumulated
            acc_lines = [x.replace("+= (double)values", "+= alpha * (double)values") for x in acc_lines]
            final = dc_replace(v, epi="plain")
        elif v.epi == "bias":  # start the accumulator at the bias
            init = [f"for (int o = 0; o < {count}; ++o) acc[o] = bias[{bi}];"]
            final = dc_replace(v, epi="plain")
        body = ([f"double* acc = (double*)calloc((size_t)({n}), sizeof(double));", *init, *acc_lines,
                 f"for (int o = 0; o < {count}; ++o) {_store(final, 'o', bi, 'acc[o]')}", "free(acc);"])
    text = "\n".join("    " + x for x in body)
    return f"""{head}{_relu(v)}/* Serial reference ({v.fmt}, epilogue {v.epi}). */
void reference({p.sig}) {{
{text}
}}
"""


# -- kernels -------------------------------------------------------------------------------------------
def _csr_impls(v: _Var, p: _P) -> list[Impl]:
    dt, relu = v.dt, _relu(v)
    scalar = f"""{relu}
// CSR-scalar: one thread per row. Lanes start at unrelated offsets of col_idx/values (no coalescing)
// and a warp runs as long as its longest row, which power-law rows make very uneven.
__global__ void spmv_scalar({p.sig}) {{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    {dt} acc = 0;
    for (int q = row_ptr[r]; q < row_ptr[r + 1]; ++q) acc += values[q] * x[col_idx[q]];
    {_store(v, "r", "r")}
}}

extern "C" void solve({p.sig}) {{
    if (rows <= 0) return;
    spmv_scalar<<<(rows + 127) / 128, 128>>>({p.args});
}}
"""
    vector = f"""{relu}
// CSR-vector: one warp per row; lanes stride over the row's entries (coalesced) and a shuffle reduction
// combines them. Rows shorter than 32 leave lanes idle.
#define WARPS 4

__global__ void spmv_vector({p.sig}) {{
    int r = blockIdx.x * WARPS + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (r >= rows) return;   // warp-uniform
    {dt} acc = 0;
    for (int q = row_ptr[r] + lane; q < row_ptr[r + 1]; q += 32)
        acc += __ldg(&values[q]) * __ldg(&x[__ldg(&col_idx[q])]);
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, off);
    if (lane == 0) {{
        {_store(v, "r", "r")}
    }}
}}

extern "C" void solve({p.sig}) {{
    if (rows <= 0) return;
    spmv_vector<<<(rows + WARPS - 1) / WARPS, WARPS * 32>>>({p.args});
}}
"""
    sub = f"""{relu}
// Sub-warp CSR: G lanes per row with G (2..32) chosen on the host from the average row length nnz / rows,
// so short rows do not waste a whole warp and long rows still read coalesced. The segmented shuffle
// reduction uses width G, so groups never mix.
template <int G>
__global__ void spmv_subwarp({p.sig}) {{
    int g = (blockIdx.x * blockDim.x + threadIdx.x) / G;
    int sub = threadIdx.x & (G - 1);
    bool live = g < rows;            // every lane joins the shuffles
    int r = live ? g : rows - 1;
    {dt} acc = 0;
    if (live)
        for (int q = row_ptr[r] + sub; q < row_ptr[r + 1]; q += G)
            acc += __ldg(&values[q]) * __ldg(&x[__ldg(&col_idx[q])]);
#pragma unroll
    for (int off = G / 2; off > 0; off >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, off, G);
    if (live && sub == 0) {{
        {_store(v, "r", "r")}
    }}
}}

template <int G>
static void launch({p.sig}) {{
    long long threads = (long long)rows * G;
    spmv_subwarp<G><<<(unsigned)((threads + 255) / 256), 256>>>({p.args});
}}

extern "C" void solve({p.sig}) {{
    if (rows <= 0) return;
    int avg = nnz / rows;
    if (avg <= 2) launch<2>({p.args});
    else if (avg <= 4) launch<4>({p.args});
    else if (avg <= 8) launch<8>({p.args});
    else if (avg <= 16) launch<16>({p.args});
    else launch<32>({p.args});
}}
"""
    return [Impl("scalar_row", "naive", scalar, 1, "one thread per row"),
            Impl("vector_warp", "warp_shuffle", vector, 2, "one warp per row, shuffle reduction"),
            Impl("adaptive_subwarp", "coalesced", sub, 3, "2..32 lanes per row from the average row length")]


def _accum_solve(v: _Var, p: _P, launches: str, n: str) -> str:
    """Host code for kernels that scatter into a zeroed accumulator, then apply the epilogue."""
    return f"""extern "C" void solve({p.sig}) {{
    if ({n} <= 0) return;
    {v.dt}* acc = nullptr;
    cudaMalloc(&acc, sizeof({v.dt}) * (size_t)({n}));
    cudaMemset(acc, 0, sizeof({v.dt}) * (size_t)({n}));
{launches}    epilogue<<<({n} + 255) / 256, 256>>>(acc, {p.args});
    cudaFree(acc);
}}
"""


def _epilogue_kernel(v: _Var, p: _P, n: str, bi: str = "o") -> str:
    return f"""// The epilogue once every contribution has been accumulated.
__global__ void epilogue(const {v.dt}* acc, {p.sig}) {{
    int o = blockIdx.x * blockDim.x + threadIdx.x;
    if (o >= {n}) return;
    {_store(v, "o", bi, "acc[o]")}
}}
"""


def _coo_impls(v: _Var, p: _P) -> list[Impl]:
    dt, relu = v.dt, _relu(v)
    epi = _epilogue_kernel(v, p, "rows")
    host_1 = _accum_solve(
        v, p, f"    if (nnz > 0) coo_atomic<<<(nnz + 255) / 256, 256>>>(acc, {p.args});\n", "rows")
    atomic = f"""{relu}
// One thread per stored entry: atomicAdd of values[q] * x[col] into a zeroed accumulator, then the
// epilogue. Perfect load balance whatever the row lengths; contention on long rows.
__global__ void coo_atomic({dt}* acc, {p.sig}) {{
    int q = blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= nnz) return;
    atomicAdd(&acc[row_idx[q]], values[q] * x[col_idx[q]]);
}}

{epi}
{host_1}"""
    naive = f"""{relu}
// One thread per row: binary-search the first entry of row r in the row-sorted row_idx, then walk the
// row serially. Uncoalesced and imbalanced, but no atomics.
__global__ void coo_row_search({p.sig}) {{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    int lo = 0, hi = nnz;            // first q with row_idx[q] >= r
    while (lo < hi) {{
        int mid = (lo + hi) >> 1;
        if (row_idx[mid] < r) lo = mid + 1; else hi = mid;
    }}
    {dt} acc = 0;
    for (int q = lo; q < nnz && row_idx[q] == r; ++q) acc += values[q] * x[col_idx[q]];
    {_store(v, "r", "r")}
}}

extern "C" void solve({p.sig}) {{
    if (rows <= 0) return;
    coo_row_search<<<(rows + 127) / 128, 128>>>({p.args});
}}
"""
    host_2 = _accum_solve(
        v, p, f"    if (nnz > 0) coo_segmented<<<(nnz + 255) / 256, 256>>>(acc, {p.args});\n", "rows")
    seg = f"""{relu}
// Segmented warp reduction over the row-sorted entries: each warp takes 32 consecutive entries, an
// inclusive segmented scan with shuffles sums runs of equal rows, and only the last lane of each run
// issues an atomicAdd (a row can span warps). Far fewer atomics than one per entry, fully coalesced.
__global__ void coo_segmented({dt}* acc, {p.sig}) {{
    int q = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31;
    bool live = q < nnz;
    int r = live ? row_idx[q] : -1;
    {dt} val = live ? values[q] * x[col_idx[q]] : ({dt})0;
#pragma unroll
    for (int off = 1; off < 32; off <<= 1) {{
        {dt} o = __shfl_up_sync(0xffffffffu, val, off);
        int ro = __shfl_up_sync(0xffffffffu, r, off);
        if (lane >= off && ro == r) val += o;
    }}
    int rn = __shfl_down_sync(0xffffffffu, r, 1);
    bool last = lane == 31 || rn != r;
    if (live && last) atomicAdd(&acc[r], val);
}}

{epi}
{host_2}"""
    return [Impl("row_search", "naive", naive, 1, "thread per row, binary search into sorted COO"),
            Impl("entry_atomic", "atomic", atomic, 2, "thread per entry, atomicAdd"),
            Impl("segmented_warp", "warp_shuffle", seg, 3, "segmented shuffle scan, one atomic per row run")]


def _ell_impls(v: _Var, p: _P) -> list[Impl]:
    dt, relu = v.dt, _relu(v)
    at = "(long long)r * width + w" if v.fmt == "ell_row" else "(long long)w * rows + r"
    thread = f"""{relu}
// One thread per row over the padded ELL slots (padding has col = -1). {"Row-major ELL: lanes read slots "
    "`width` apart, so loads do not coalesce." if v.fmt == "ell_row" else "Column-major ELL: slot w of "
    "neighbouring rows is contiguous, so every load coalesces - the point of the format."}
__global__ void ell_thread({p.sig}) {{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    {dt} acc = 0;
    for (int w = 0; w < width; ++w) {{
        int c = ell_col[{at}];
        if (c >= 0) acc += ell_val[{at}] * x[c];
    }}
    {_store(v, "r", "r")}
}}

extern "C" void solve({p.sig}) {{
    if (rows <= 0) return;
    ell_thread<<<(rows + 127) / 128, 128>>>({p.args});
}}
"""
    warp = f"""{relu}
// One warp per row, lanes over the row's slots and a shuffle reduction. {"Contiguous slots: coalesced, "
    "but lanes beyond `width` idle." if v.fmt == "ell_row" else "In column-major ELL the slots of a row are "
    "`rows` apart, so each lane touches its own cache line."}
#define WARPS 4

__global__ void ell_warp({p.sig}) {{
    int r = blockIdx.x * WARPS + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (r >= rows) return;   // warp-uniform
    {dt} acc = 0;
    for (int w = lane; w < width; w += 32) {{
        int c = ell_col[{at}];
        if (c >= 0) acc += ell_val[{at}] * x[c];
    }}
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, off);
    if (lane == 0) {{
        {_store(v, "r", "r")}
    }}
}}

extern "C" void solve({p.sig}) {{
    if (rows <= 0) return;
    ell_warp<<<(rows + WARPS - 1) / WARPS, WARPS * 32>>>({p.args});
}}
"""
    if v.fmt == "ell_row":
        slab = f"""{relu}
// The 64 rows of a block occupy one contiguous slab of 64 * width slots in row-major ELL: the block
// copies it to shared memory with coalesced loads, then each thread reduces its own row from shared.
#define RB 64

__global__ void ell_slab({p.sig}) {{
    extern __shared__ unsigned char smem[];
    {dt}* sval = ({dt}*)smem;
    int* scol = (int*)(sval + RB * width);
    int r0 = blockIdx.x * RB;
    int nr = min(RB, rows - r0);
    for (int t = threadIdx.x; t < nr * width; t += RB) {{
        scol[t] = ell_col[(long long)r0 * width + t];
        sval[t] = ell_val[(long long)r0 * width + t];
    }}
    __syncthreads();
    int r = r0 + threadIdx.x;
    if (threadIdx.x >= nr) return;
    {dt} acc = 0;
    for (int w = 0; w < width; ++w) {{
        int c = scol[threadIdx.x * width + w];
        if (c >= 0) acc += sval[threadIdx.x * width + w] * x[c];
    }}
    {_store(v, "r", "r")}
}}

extern "C" void solve({p.sig}) {{
    if (rows <= 0) return;
    size_t shared = (size_t)RB * width * (sizeof({dt}) + sizeof(int));
    ell_slab<<<(rows + RB - 1) / RB, RB, shared>>>({p.args});
}}
"""
        return [Impl("thread_per_row", "naive", thread, 1, "thread per row, strided slot reads"),
                Impl("warp_per_row", "warp_shuffle", warp, 2, "warp per row, shuffle reduction"),
                Impl("shared_slab", "shared_tiled", slab, 3, "contiguous 64-row slab staged in shared memory")]
    ilp = f"""{relu}
// One thread per row (coalesced in column-major ELL) with the slot loop unrolled by 4 into independent
// accumulators and read-only-cache loads, so several loads are in flight per thread.
__global__ void ell_ilp({p.sig}) {{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    {dt} a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    int w = 0;
    for (; w + 3 < width; w += 4) {{
        int c0 = __ldg(&ell_col[(long long)w * rows + r]), c1 = __ldg(&ell_col[(long long)(w + 1) * rows + r]);
        int c2 = __ldg(&ell_col[(long long)(w + 2) * rows + r]), c3 = __ldg(&ell_col[(long long)(w + 3) * rows + r]);
        if (c0 >= 0) a0 += __ldg(&ell_val[(long long)w * rows + r]) * __ldg(&x[c0]);
        if (c1 >= 0) a1 += __ldg(&ell_val[(long long)(w + 1) * rows + r]) * __ldg(&x[c1]);
        if (c2 >= 0) a2 += __ldg(&ell_val[(long long)(w + 2) * rows + r]) * __ldg(&x[c2]);
        if (c3 >= 0) a3 += __ldg(&ell_val[(long long)(w + 3) * rows + r]) * __ldg(&x[c3]);
    }}
    for (; w < width; ++w) {{
        int c = ell_col[(long long)w * rows + r];
        if (c >= 0) a0 += ell_val[(long long)w * rows + r] * x[c];
    }}
    {dt} acc = (a0 + a1) + (a2 + a3);
    {_store(v, "r", "r")}
}}

extern "C" void solve({p.sig}) {{
    if (rows <= 0) return;
    ell_ilp<<<(rows + 127) / 128, 128>>>({p.args});
}}
"""
    return [Impl("warp_per_row", "warp_shuffle", warp, 1, "warp per row; strided in column-major ELL"),
            Impl("thread_per_row", "naive", thread, 2, "thread per row; coalesced in column-major ELL"),
            Impl("thread_ilp", "register_tiled", ilp, 3, "thread per row, 4 independent accumulators")]


def _csr_t_impls(v: _Var, p: _P) -> list[Impl]:
    dt, relu = v.dt, _relu(v)
    epi = _epilogue_kernel(v, p, "cols")
    host_4 = _accum_solve(
        v, p, f"    if (rows > 0) spmvt_row<<<(rows + 127) / 128, 128>>>(acc, {p.args});\n", "cols")
    row_atomic = f"""{relu}
// y = A^T x without building A^T: one thread per row r scatters values[q] * x[r] into acc[col] with
// atomics. Lanes walk different rows (uncoalesced) and long rows serialise their thread.
__global__ void spmvt_row({dt}* acc, {p.sig}) {{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    {dt} xr = x[r];
    for (int q = row_ptr[r]; q < row_ptr[r + 1]; ++q) atomicAdd(&acc[col_idx[q]], values[q] * xr);
}}

{epi}
{host_4}"""
    host_5 = _accum_solve(
        v, p, f"    if (nnz > 0) spmvt_entry<<<(nnz + 255) / 256, 256>>>(acc, {p.args});\n", "cols")
    nnz_atomic = f"""{relu}
// One thread per stored entry: binary-search its row in row_ptr (the last r with row_ptr[r] <= q) and
// scatter with an atomic. Balanced whatever the row lengths.
__global__ void spmvt_entry({dt}* acc, {p.sig}) {{
    int q = blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= nnz) return;
    int lo = 0, hi = rows - 1;
    while (lo < hi) {{
        int mid = (lo + hi + 1) >> 1;
        if (row_ptr[mid] <= q) lo = mid; else hi = mid - 1;
    }}
    atomicAdd(&acc[col_idx[q]], values[q] * x[lo]);
}}

{epi}
{host_5}"""
    host_6 = _accum_solve(
        v, p, f"    if (rows > 0) spmvt_warp<<<(rows + WARPS - 1) / WARPS, WARPS * 32>>>(acc, {p.args});\n", "cols")
    warp = f"""{relu}
// One warp per row: lanes read the row's entries with coalesced loads and scatter to distinct columns
// (columns within a row are distinct, so a warp's atomics never collide with each other).
#define WARPS 4

__global__ void spmvt_warp({dt}* acc, {p.sig}) {{
    int r = blockIdx.x * WARPS + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (r >= rows) return;
    {dt} xr = __ldg(&x[r]);
    for (int q = row_ptr[r] + lane; q < row_ptr[r + 1]; q += 32)
        atomicAdd(&acc[__ldg(&col_idx[q])], __ldg(&values[q]) * xr);
}}

{epi}
{host_6}"""
    return [Impl("row_scatter", "naive", row_atomic, 1, "thread per row, atomic scatter"),
            Impl("entry_scatter", "atomic", nnz_atomic, 2, "thread per entry with row binary search"),
            Impl("warp_scatter", "coalesced", warp, 3, "warp per row, coalesced reads, atomic scatter")]


def _spmm_impls(v: _Var, p: _P) -> list[Impl]:
    dt, relu = v.dt, _relu(v)
    rowmaj = v.fmt == "spmm_row"
    def b_at(c: str, j: str) -> str:
        return f"B[(long long)({c}) * k + ({j})]" if rowmaj else f"B[({c}) + (long long)({j}) * cols]"

    o_at = "(long long)r * k + j" if rowmaj else "r + (long long)j * rows"
    fast, slow, flen, slen = ("j", "r", "k", "rows") if rowmaj else ("r", "j", "rows", "k")
    naive = f"""{relu}
// One thread per output element (threadIdx.x along C's contiguous index): each walks row r of A and
// gathers B[col][j] from global memory; A's row is re-read by every one of the k threads of the row.
__global__ void spmm_naive({p.sig}) {{
    int {fast} = blockIdx.x * blockDim.x + threadIdx.x;
    int {slow} = blockIdx.y;
    if ({fast} >= {flen}) return;
    {dt} acc = 0;
    for (int q = row_ptr[r]; q < row_ptr[r + 1]; ++q) acc += values[q] * {b_at("col_idx[q]", "j")};
    long long o = {o_at};
    {_store(v, "o", "j")}
}}

extern "C" void solve({p.sig}) {{
    if (rows <= 0 || k <= 0) return;
    dim3 grid(({flen} + 63) / 64, {slen});
    spmm_naive<<<grid, 64>>>({p.args});
}}
"""
    warp = f"""{relu}
// One warp per output element (r, j): lanes stride over row r's entries (coalesced col_idx/values
// reads) and a shuffle reduction sums them; good for long rows, wasteful for short ones.
#define WARPS 4

__global__ void spmm_warp({p.sig}) {{
    long long w = (long long)blockIdx.x * WARPS + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (w >= (long long)rows * k) return;   // warp-uniform
    int r = (int)(w / k), j = (int)(w % k);
    {dt} acc = 0;
    for (int q = row_ptr[r] + lane; q < row_ptr[r + 1]; q += 32)
        acc += __ldg(&values[q]) * __ldg(&{b_at("__ldg(&col_idx[q])", "j")});
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, off);
    if (lane == 0) {{
        long long o = {o_at};
        {_store(v, "o", "j")}
    }}
}}

extern "C" void solve({p.sig}) {{
    long long outs = (long long)rows * k;
    if (outs <= 0) return;
    spmm_warp<<<(unsigned)((outs + WARPS - 1) / WARPS), WARPS * 32>>>({p.args});
}}
"""
    tiled = f"""{relu}
// One block per (row, 32 output columns): the row's (col, value) pairs are staged in shared memory in
// chunks of 32 with one coalesced load, then every thread accumulates its own column j from shared
// memory, so A's row is read from global memory once per block instead of once per thread.
#define CH 32

__global__ void spmm_tiled({p.sig}) {{
    __shared__ int scol[CH];
    __shared__ {dt} sval[CH];
    int r = blockIdx.y;
    int j = blockIdx.x * CH + threadIdx.x;
    int begin = row_ptr[r], end = row_ptr[r + 1];
    {dt} acc = 0;
    for (int q0 = begin; q0 < end; q0 += CH) {{
        int q = q0 + threadIdx.x;
        if (q < end) {{ scol[threadIdx.x] = col_idx[q]; sval[threadIdx.x] = values[q]; }}
        __syncthreads();
        int n = min(CH, end - q0);
        if (j < k)
            for (int t = 0; t < n; ++t) acc += sval[t] * {b_at("scol[t]", "j")};
        __syncthreads();
    }}
    if (j < k) {{
        long long o = {o_at};
        {_store(v, "o", "j")}
    }}
}}

extern "C" void solve({p.sig}) {{
    if (rows <= 0 || k <= 0) return;
    dim3 grid((k + CH - 1) / CH, rows);
    spmm_tiled<<<grid, CH>>>({p.args});
}}
"""
    return [Impl("thread_per_output", "naive", naive, 1, "thread per output element, A row re-read k times"),
            Impl("warp_per_output", "warp_shuffle", warp, 2, "warp per output element, shuffle reduction"),
            Impl("row_tiles", "shared_tiled", tiled, 3, "A row staged in shared memory, threads over columns")]


def _sym_impls(v: _Var, p: _P) -> list[Impl]:
    dt, relu = v.dt, _relu(v)
    epi = _epilogue_kernel(v, p, "rows")
    h1 = _accum_solve(v, p, f"    spmv_sym_row<<<(rows + 127) / 128, 128>>>(acc, {p.args});\n", "rows")
    h2 = _accum_solve(v, p, f"    if (nnz > 0) spmv_sym_entry<<<(nnz + 255) / 256, 256>>>(acc, {p.args});\n", "rows")
    h3 = _accum_solve(v, p, f"    spmv_sym_warp<<<(rows + 3) / 4, 128>>>(acc, {p.args});\n", "rows")
    row = f"""{relu}
// Symmetric A stored as its upper triangle: one thread per stored row r gathers row r (its own sum)
// and scatters the mirrored entries (c, r) into acc[c] with atomics. Uncoalesced, imbalanced.
__global__ void spmv_sym_row({dt}* acc, {p.sig}) {{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    {dt} xr = x[r], t = 0;
    for (int q = row_ptr[r]; q < row_ptr[r + 1]; ++q) {{
        int c = col_idx[q];
        t += values[q] * x[c];
        if (c != r) atomicAdd(&acc[c], values[q] * xr);
    }}
    atomicAdd(&acc[r], t);
}}

{epi}
{h1}"""
    entry = f"""{relu}
// One thread per stored entry (row found by binary search in row_ptr): two atomics, one for (r, c) and
// one for the mirrored (c, r) unless on the diagonal. Balanced whatever the row lengths.
__global__ void spmv_sym_entry({dt}* acc, {p.sig}) {{
    int q = blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= nnz) return;
    int lo = 0, hi = rows - 1;
    while (lo < hi) {{
        int mid = (lo + hi + 1) >> 1;
        if (row_ptr[mid] <= q) lo = mid; else hi = mid - 1;
    }}
    int c = col_idx[q];
    atomicAdd(&acc[lo], values[q] * x[c]);
    if (c != lo) atomicAdd(&acc[c], values[q] * x[lo]);
}}

{epi}
{h2}"""
    warp = f"""{relu}
// One warp per stored row: coalesced reads of the row, the row's own sum by shuffle reduction (one
// atomic), the mirrored entries scattered by the lanes (distinct columns, so no intra-warp conflicts).
__global__ void spmv_sym_warp({dt}* acc, {p.sig}) {{
    int r = blockIdx.x * 4 + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (r >= rows) return;   // warp-uniform
    {dt} xr = __ldg(&x[r]), t = 0;
    for (int q = row_ptr[r] + lane; q < row_ptr[r + 1]; q += 32) {{
        int c = __ldg(&col_idx[q]);
        {dt} a = __ldg(&values[q]);
        t += a * __ldg(&x[c]);
        if (c != r) atomicAdd(&acc[c], a * xr);
    }}
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) t += __shfl_xor_sync(0xffffffffu, t, off);
    if (lane == 0) atomicAdd(&acc[r], t);
}}

{epi}
{h3}"""
    return [Impl("row_scatter", "naive", row, 1, "thread per stored row, atomic mirror scatter"),
            Impl("entry_scatter", "atomic", entry, 2, "thread per entry, two atomics"),
            Impl("warp_row", "warp_shuffle", warp, 3, "warp per stored row, shuffle sum + lane scatter")]


def _dia_impls(v: _Var, p: _P) -> list[Impl]:
    dt, relu = v.dt, _relu(v)
    warp = f"""{relu}
// One warp per row, lanes over the diagonals: data[d * rows + r] of one row is `rows` apart per
// diagonal, so the lanes of a warp read unrelated cache lines; few diagonals leave most lanes idle.
__global__ void dia_warp({p.sig}) {{
    int r = blockIdx.x * 4 + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (r >= rows) return;   // warp-uniform
    {dt} acc = 0;
    for (int d = lane; d < ndiag; d += 32) {{
        int c = r + offsets[d];
        if (c >= 0 && c < cols) acc += data[(long long)d * rows + r] * x[c];
    }}
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, off);
    if (lane == 0) {{
        {_store(v, "r", "r")}
    }}
}}

extern "C" void solve({p.sig}) {{
    if (rows <= 0) return;
    dia_warp<<<(rows + 3) / 4, 128>>>({p.args});
}}
"""
    thread = f"""{relu}
// One thread per row walking the diagonals: for a fixed diagonal, neighbouring rows are neighbouring
// elements of data and of x, so every load coalesces (DIA's purpose); offsets are re-read per thread.
__global__ void dia_thread({p.sig}) {{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    {dt} acc = 0;
    for (int d = 0; d < ndiag; ++d) {{
        int c = r + offsets[d];
        if (c >= 0 && c < cols) acc += data[(long long)d * rows + r] * x[c];
    }}
    {_store(v, "r", "r")}
}}

extern "C" void solve({p.sig}) {{
    if (rows <= 0) return;
    dia_thread<<<(rows + 127) / 128, 128>>>({p.args});
}}
"""
    shared = f"""{relu}
// Thread per row with the diagonal offsets staged once per block in shared memory (in chunks of 64),
// so the inner loop reads only data and x from global memory, both coalesced.
#define CHUNK 64

__global__ void dia_shared({p.sig}) {{
    __shared__ int soff[CHUNK];
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    {dt} acc = 0;
    for (int d0 = 0; d0 < ndiag; d0 += CHUNK) {{
        int nd = min(CHUNK, ndiag - d0);
        if (threadIdx.x < nd) soff[threadIdx.x] = offsets[d0 + threadIdx.x];
        __syncthreads();
        if (r < rows)
            for (int d = 0; d < nd; ++d) {{
                int c = r + soff[d];
                if (c >= 0 && c < cols) acc += __ldg(&data[(long long)(d0 + d) * rows + r]) * __ldg(&x[c]);
            }}
        __syncthreads();
    }}
    if (r < rows) {{
        {_store(v, "r", "r")}
    }}
}}

extern "C" void solve({p.sig}) {{
    if (rows <= 0) return;
    dia_shared<<<(rows + 127) / 128, 128>>>({p.args});
}}
"""
    return [Impl("warp_per_row", "warp_shuffle", warp, 1, "warp per row over diagonals (strided)"),
            Impl("thread_per_row", "naive", thread, 2, "thread per row; coalesced diagonal reads"),
            Impl("shared_offsets", "shared_tiled", shared, 3, "offsets staged in shared memory")]


def _bsr_impls(v: _Var, p: _P) -> list[Impl]:
    dt, relu = v.dt, _relu(v)
    brow = f"""{relu}
// One thread per block row: both output rows of the 2 x 2 blocks accumulate in registers; lanes walk
// different block rows, so loads do not coalesce.
__global__ void bsr_block_row({p.sig}) {{
    int br = blockIdx.x * blockDim.x + threadIdx.x;
    if (br >= brows) return;
    {dt} t0 = 0, t1 = 0;
    for (int q = brow_ptr[br]; q < brow_ptr[br + 1]; ++q) {{
        const {dt}* b = bvals + 4 * (long long)q;
        {dt} x0 = x[2 * bcol_idx[q]], x1 = x[2 * bcol_idx[q] + 1];
        t0 += b[0] * x0 + b[1] * x1;
        t1 += b[2] * x0 + b[3] * x1;
    }}
    {dt} acc = t0;
    {_store(v, "2 * br", "2 * br")}
    acc = t1;
    {_store(v, "2 * br + 1", "2 * br + 1")}
}}

extern "C" void solve({p.sig}) {{
    if (brows <= 0) return;
    bsr_block_row<<<(brows + 127) / 128, 128>>>({p.args});
}}
"""
    row = f"""{relu}
// One thread per output row (two per block row): twice the threads of the block-row kernel, each
// reading one row of every 2 x 2 block (vector loads of the pair of values).
__global__ void bsr_row({p.sig}) {{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= 2 * brows) return;
    int br = r >> 1, i = r & 1;
    {dt} acc = 0;
    for (int q = brow_ptr[br]; q < brow_ptr[br + 1]; ++q) {{
        int c = 2 * bcol_idx[q];
        acc += bvals[4 * (long long)q + 2 * i] * x[c] + bvals[4 * (long long)q + 2 * i + 1] * x[c + 1];
    }}
    {_store(v, "r", "r")}
}}

extern "C" void solve({p.sig}) {{
    if (brows <= 0) return;
    bsr_row<<<(2 * brows + 127) / 128, 128>>>({p.args});
}}
"""
    warp = f"""{relu}
// One warp per block row: lanes stride over the row's blocks (coalesced 16- or 32-byte block reads),
// each keeps both row sums, and two shuffle reductions combine them.
__global__ void bsr_warp({p.sig}) {{
    int br = blockIdx.x * 4 + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (br >= brows) return;   // warp-uniform
    {dt} t0 = 0, t1 = 0;
    for (int q = brow_ptr[br] + lane; q < brow_ptr[br + 1]; q += 32) {{
        const {dt}* b = bvals + 4 * (long long)q;
        int c = 2 * __ldg(&bcol_idx[q]);
        {dt} x0 = __ldg(&x[c]), x1 = __ldg(&x[c + 1]);
        t0 += b[0] * x0 + b[1] * x1;
        t1 += b[2] * x0 + b[3] * x1;
    }}
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {{
        t0 += __shfl_xor_sync(0xffffffffu, t0, off);
        t1 += __shfl_xor_sync(0xffffffffu, t1, off);
    }}
    if (lane == 0) {{
        {dt} acc = t0;
        {_store(v, "2 * br", "2 * br")}
        acc = t1;
        {_store(v, "2 * br + 1", "2 * br + 1")}
    }}
}}

extern "C" void solve({p.sig}) {{
    if (brows <= 0) return;
    bsr_warp<<<(brows + 3) / 4, 128>>>({p.args});
}}
"""
    return [Impl("block_row", "naive", brow, 1, "thread per block row"),
            Impl("row", "coalesced", row, 2, "thread per output row"),
            Impl("warp_block_row", "warp_shuffle", warp, 3, "warp per block row, shuffle reductions")]


def _spmm_t_impls(v: _Var, p: _P) -> list[Impl]:
    dt, relu = v.dt, _relu(v)
    epi = _epilogue_kernel(v, p, "cols * k", "o % k")
    h1 = _accum_solve(v, p, f"    spmmt_row<<<dim3((k + 31) / 32, rows), 32>>>(acc, {p.args});\n", "cols * k")
    h2 = _accum_solve(v, p, f"    if (nnz > 0) spmmt_entry<<<dim3((nnz + 7) / 8), dim3(32, 8)>>>(acc, {p.args});\n",
                      "cols * k")
    h3 = _accum_solve(v, p, f"    spmmt_tiled<<<dim3((k + 31) / 32, rows), 32>>>(acc, {p.args});\n", "cols * k")
    row = f"""{relu}
// C = A^T B without transposing A: block (j tile, row r) scatters values[q] * B[r][j] into C[col][j]
// with atomics, reading row r's entries from global memory for every column tile.
__global__ void spmmt_row({dt}* acc, {p.sig}) {{
    int r = blockIdx.y, j = blockIdx.x * 32 + threadIdx.x;
    if (j >= k) return;
    {dt} b = B[(long long)r * k + j];
    for (int q = row_ptr[r]; q < row_ptr[r + 1]; ++q) atomicAdd(&acc[(long long)col_idx[q] * k + j], values[q] * b);
}}

{epi}
{h1}"""
    entry = f"""{relu}
// One thread row per stored entry (8 entries per block, row found by binary search), threads over j:
// balanced whatever the row lengths; every product is an atomic.
__global__ void spmmt_entry({dt}* acc, {p.sig}) {{
    int q = blockIdx.x * 8 + threadIdx.y;
    if (q >= nnz) return;
    int lo = 0, hi = rows - 1;
    while (lo < hi) {{
        int mid = (lo + hi + 1) >> 1;
        if (row_ptr[mid] <= q) lo = mid; else hi = mid - 1;
    }}
    int c = col_idx[q];
    {dt} a = values[q];
    for (int j = threadIdx.x; j < k; j += 32) atomicAdd(&acc[(long long)c * k + j], a * B[(long long)lo * k + j]);
}}

{epi}
{h2}"""
    tiled = f"""{relu}
// Block (j tile, row r): the row's (col, value) pairs are staged in shared memory 32 at a time with one
// coalesced load, B[r][j] stays in a register, and the threads scatter along contiguous j.
__global__ void spmmt_tiled({dt}* acc, {p.sig}) {{
    __shared__ int scol[32];
    __shared__ {dt} sval[32];
    int r = blockIdx.y, j = blockIdx.x * 32 + threadIdx.x;
    {dt} b = j < k ? B[(long long)r * k + j] : ({dt})0;
    int begin = row_ptr[r], end = row_ptr[r + 1];
    for (int q0 = begin; q0 < end; q0 += 32) {{
        if (q0 + threadIdx.x < end) {{
            scol[threadIdx.x] = col_idx[q0 + threadIdx.x];
            sval[threadIdx.x] = values[q0 + threadIdx.x];
        }}
        __syncthreads();
        int n = min(32, end - q0);
        if (j < k)
            for (int t = 0; t < n; ++t) atomicAdd(&acc[(long long)scol[t] * k + j], sval[t] * b);
        __syncthreads();
    }}
}}

{epi}
{h3}"""
    return [Impl("row_scatter", "naive", row, 1, "block per (row, column tile), atomics from global"),
            Impl("entry_scatter", "atomic", entry, 2, "thread row per entry with binary search"),
            Impl("row_tiles", "shared_tiled", tiled, 3, "row entries staged in shared memory")]


def _sddmm_impls(v: _Var, p: _P) -> list[Impl]:
    dt, relu = v.dt, _relu(v)
    row = f"""{relu}
// One thread per row: for each stored (r, c) a serial dot product of X[r] and Y[c]; lanes walk
// different rows (no coalescing) and rows of very different lengths.
__global__ void sddmm_row({p.sig}) {{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    for (int q = row_ptr[r]; q < row_ptr[r + 1]; ++q) {{
        {dt} acc = 0;
        for (int j = 0; j < k; ++j) acc += X[(long long)r * k + j] * Y[(long long)col_idx[q] * k + j];
        acc *= values[q];
        {_store(v, "q", "r")}
    }}
}}

extern "C" void solve({p.sig}) {{
    if (rows <= 0) return;
    sddmm_row<<<(rows + 127) / 128, 128>>>({p.args});
}}
"""
    entry = f"""{relu}
// One thread per stored entry (row by binary search in row_ptr): balanced, and neighbouring threads
// write neighbouring outputs; the dot products still read X and Y row-wise per thread.
__global__ void sddmm_entry({p.sig}) {{
    int q = blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= nnz) return;
    int lo = 0, hi = rows - 1;
    while (lo < hi) {{
        int mid = (lo + hi + 1) >> 1;
        if (row_ptr[mid] <= q) lo = mid; else hi = mid - 1;
    }}
    int r = lo;
    {dt} acc = 0;
    for (int j = 0; j < k; ++j) acc += X[(long long)r * k + j] * Y[(long long)col_idx[q] * k + j];
    acc *= values[q];
    {_store(v, "q", "r")}
}}

extern "C" void solve({p.sig}) {{
    if (nnz <= 0) return;
    sddmm_entry<<<(nnz + 127) / 128, 128>>>({p.args});
}}
"""
    warp = f"""{relu}
// One warp per stored entry: the lanes split the k-long dot product (coalesced reads of X[r] and
// Y[c]) and a shuffle reduction finishes it.
__global__ void sddmm_warp({p.sig}) {{
    int q = blockIdx.x * 4 + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (q >= nnz) return;   // warp-uniform
    int lo = 0, hi = rows - 1;
    while (lo < hi) {{
        int mid = (lo + hi + 1) >> 1;
        if (row_ptr[mid] <= q) lo = mid; else hi = mid - 1;
    }}
    int r = lo, c = col_idx[q];
    {dt} acc = 0;
    for (int j = lane; j < k; j += 32) acc += __ldg(&X[(long long)r * k + j]) * __ldg(&Y[(long long)c * k + j]);
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, off);
    if (lane == 0) {{
        acc *= values[q];
        {_store(v, "q", "r")}
    }}
}}

extern "C" void solve({p.sig}) {{
    if (nnz <= 0) return;
    sddmm_warp<<<(nnz + 3) / 4, 128>>>({p.args});
}}
"""
    return [Impl("thread_per_row", "naive", row, 1, "thread per row, serial dots"),
            Impl("thread_per_entry", "coalesced", entry, 2, "thread per entry with binary search"),
            Impl("warp_per_entry", "warp_shuffle", warp, 3, "warp per entry, shuffle-reduced dot")]


# -- task assembly -------------------------------------------------------------------------------------
_CSR = ("A is in CSR: row_ptr (rows + 1 ints, row_ptr[0] = 0, row_ptr[rows] = nnz, non-decreasing); the entries "
        "of row r are q in [row_ptr[r], row_ptr[r + 1]) with column col_idx[q] (distinct, ascending within a row) "
        "and value values[q].")
_FMT_WORDS = {
    "csr": _CSR, "csr_t": _CSR, "spmm_row": _CSR, "spmm_col": _CSR, "spmm_t": _CSR, "sddmm": _CSR,
    "csc": "A is in CSC: col_ptr (cols + 1 ints, col_ptr[0] = 0, col_ptr[cols] = nnz, non-decreasing); the "
           "entries of column c are q in [col_ptr[c], col_ptr[c + 1]) with row row_idx[q] (distinct, ascending "
           "within a column) and value values[q].",
    "coo": "A is in COO sorted by (row, column): entry q in [0, nnz) is at row row_idx[q], column col_idx[q], value "
           "values[q]; positions are distinct.",
    "ell_row": "A is in ELLPACK with `width` slots per row, stored row-major: slot w of row r is at [r * width + w]; "
               "ell_col there is the column, or -1 for padding (skip it; its ell_val is 0), ell_val the value.",
    "ell_col": "A is in ELLPACK with `width` slots per row, stored column-major: slot w of row r is at [w * rows + r]; "
               "ell_col there is the column, or -1 for padding (skip it; its ell_val is 0), ell_val the value.",
    "sym": "A is symmetric (rows == cols) and only its upper triangle (c >= r, diagonal included) is stored, in "
           "CSR: " + _CSR[len("A is in CSR: "):] + " Each stored (r, c, a) with c != r also stands for (c, r, a).",
    "dia": "A is in DIA format: ndiag diagonals with offsets[d] (distinct, sorted); element (r, r + offsets[d]) "
           "is data[d * rows + r] when 0 <= r + offsets[d] < cols (other slots are ignored).",
    "bsr": "A is in BSR with 2 x 2 blocks: it has 2 * brows rows and 2 * bcols columns; block row br holds blocks "
           "q in [brow_ptr[br], brow_ptr[br + 1]) at block column bcol_idx[q] (distinct, ascending); block q's "
           "values are bvals[4q + 2i + j] for element (2 br + i, 2 bcol_idx[q] + j), i, j in {0, 1}.",
}
_PAT_WORDS = {"random": "uniformly random positions", "banded": "positions near the (scaled) diagonal",
              "powerlaw": "very uneven rows: a few rows hold many entries, some rows are empty"}


def _describe(v: _Var) -> tuple[str, str]:
    import textwrap

    f = v.fmt
    if f in ("spmm_row", "spmm_col"):
        lay = ("B is cols x k row-major (B[c * k + j]) and C is rows x k row-major (C[r * k + j])"
               if f == "spmm_row"
               else "B is cols x k column-major (B[c + j * cols]) and C is rows x k column-major (C[r + j * rows])")
        what = f"Sparse x dense product C = A B with A sparse (rows x cols, nnz entries). {lay}."
        base = "(A B)[r][j] = sum over entries (r, c, a) of row r of a * B[c][j]"
        bi = "j (k elements)"
    elif f == "spmm_t":
        what = ("Transposed sparse x dense product C = A^T B, A sparse rows x cols with nnz entries, B rows x k "
                "row-major (B[r * k + j]), C cols x k row-major (C[c * k + j]).")
        base = "(A^T B)[c][j] = sum over entries (r, c, a) with column c of a * B[r][j]"
        bi = "j (k elements)"
    elif f == "sddmm":
        what = ("Sampled dense-dense product (SDDMM): for every stored entry q = (r, c, a) of the sparse A, "
                "out[q] = a * dot(X[r], Y[c]) with X rows x k and Y cols x k, both row-major (X[r * k + j]).")
        base = "out has nnz elements, in the order of A's entries"
        bi = "r (rows elements), the entry's row"
    elif f == "csr_t":
        what = "Transposed sparse matrix-vector product y = A^T x, A sparse rows x cols with nnz entries."
        base = "(A^T x)[c] = sum over entries (r, c, a) with column c of a * x[r]; x has rows elements, y has cols"
        bi = "c (cols elements)"
    elif f == "bsr":
        what = "Sparse matrix-vector product y = A x with A in 2 x 2 block-sparse (BSR) format."
        base = "(A x)[r] = sum over stored elements (r, c, a) of a * x[c]; x has 2 * bcols elements, y has 2 * brows"
        bi = "r (2 * brows elements)"
    else:
        what = "Sparse matrix-vector product y = A x, A sparse rows x cols."
        base = "(A x)[r] = sum over entries (r, c, a) of row r of a * x[c]; x has cols elements, y has rows"
        bi = "r (rows elements)"
    out = v.out
    epi = {"plain": f"{out} = the product (overwritten).",
           "scale": f"{out} = alpha * product.",
           "alpha_beta": f"{out} = alpha * product + beta * {out} ({out} is read and overwritten).",
           "bias": f"{out} = product + bias; bias is indexed by {bi}.",
           "bias_relu": f"{out} = max(product + bias, 0) element-wise; bias is indexed by {bi}."}[v.epi]
    text = [what, _FMT_WORDS[f], f"{base}. Epilogue: {epi}",
            f"Test matrices: {_PAT_WORDS[v.pattern]}. Rows (or columns) without entries give a product of 0. "
            f"Every output element must be written. Accumulate in {v.dt} or better; any summation order is "
            f"accepted within the tolerance ({'rtol 1e-4' if v.dt == 'float' else 'rtol 1e-10'})."]
    title = f"{f.upper().replace('_', ' ')} sparse product, epilogue {v.epi} ({v.dt})"
    return title, "\n".join(textwrap.fill(t, 110) for t in text) + "\n"


_SWAP_WORDS = {"row": "column", "rows": "columns", "column": "row", "columns": "rows"}


def _csc_comments(source: str) -> str:
    """The csr_t kernels' comments, with rows and columns exchanged as the renaming did to the code."""
    lines = []
    for line in source.split("\n"):
        if line.lstrip().startswith("//"):
            line = re.sub(r"\b(rows?|columns?)\b", lambda m: _SWAP_WORDS[m.group(1)], line)
            line = line.replace("y = A^T x", "y = A x with A in CSC")
        lines.append(line)
    return "\n".join(lines)


def _csc_impls(v: _Var, p: _P) -> list[Impl]:
    return [dc_replace(i, source=_csc_comments(_to_csc(i.source)), description=_csc_comments("// " + i.description)[3:])
            for i in _csr_t_impls(v.as_csr_t, _params(v.as_csr_t))]


_IMPLS = {"csr": "_csr_impls", "csc": "_csc_impls", "coo": "_coo_impls", "ell_row": "_ell_impls",
          "ell_col": "_ell_impls",
          "csr_t": "_csr_t_impls", "sym": "_sym_impls", "dia": "_dia_impls", "bsr": "_bsr_impls",
          "spmm_row": "_spmm_impls", "spmm_col": "_spmm_impls", "spmm_t": "_spmm_t_impls",
          "sddmm": "_sddmm_impls"}


def _shapes(v: _Var) -> tuple[dict[str, int], ...]:
    f = v.fmt
    if f in ("spmm_row", "spmm_col", "spmm_t", "sddmm"):
        return ({"rows": 40, "cols": 50, "nnz": 300, "k": 5}, {"rows": 200, "cols": 180, "nnz": 2500, "k": 24})
    if v.ell:
        return ({"rows": 50, "cols": 60, "nnz": 400, "width": 12}, {"rows": 300, "cols": 280, "nnz": 4000, "width": 24})
    if f == "dia":
        return ({"rows": 50, "cols": 60, "ndiag": 5}, {"rows": 300, "cols": 280, "ndiag": 9})
    if f == "bsr":
        return ({"brows": 25, "bcols": 30, "nnzb": 120}, {"brows": 150, "bcols": 140, "nnzb": 1500})
    if f == "sym":
        return ({"rows": 50, "cols": 50, "nnz": 300}, {"rows": 300, "cols": 300, "nnz": 3000})
    return ({"rows": 50, "cols": 60, "nnz": 400}, {"rows": 300, "cols": 280, "nnz": 4000})


def _timing_shape(v: _Var) -> dict[str, int]:
    """[[timing]] sizes: SpMV over 1M x 1M with 4M non-zeros (ELL: 128K x 1M rows of width 48 — a warp per
    row needs rows wider than 32), DIA 2M rows x 9 diagonals,
    BSR 512K x 512K blocks with 1M 2 x 2 blocks; SpMM/SDDMM 50000 x 50000 (gridDim.y = rows stays under
    65536) with 1M/2M non-zeros and k = 64. inputs.py draws these without a dense rows x cols grid; they
    are drawn again for every evaluation, so non-zeros stay at a few million (10M took 3-9 s to draw)."""
    f = v.fmt
    if f in ("spmm_row", "spmm_col", "spmm_t"):
        return {"rows": 50000, "cols": 50000, "nnz": 1 << 20, "k": 64}
    if f == "sddmm":
        return {"rows": 50000, "cols": 50000, "nnz": 1 << 21, "k": 64}
    if v.ell:
        return {"rows": 1 << 17, "cols": 1 << 20, "nnz": 1 << 22, "width": 48}
    if f == "dia":
        return {"rows": 1 << 21, "cols": 1 << 21, "ndiag": 9}
    if f == "bsr":
        return {"brows": 1 << 19, "bcols": 1 << 19, "nnzb": 1 << 20}
    return {"rows": 1 << 20, "cols": 1 << 20, "nnz": 1 << 22}


def _task(v: _Var, seed: int) -> GeneratedTask:
    p = _params(v)
    impls = globals()[_IMPLS[v.fmt]](v, p)
    base = seed * 7919 + _stable(v.tid) % 100000 + 1  # the task seed (> 0): config seeds derive from it
    configs = []
    for k, shape in enumerate(_shapes(v)):
        cfg: dict[str, Any] = {"name": ("small", "large")[k], "seed": base + k, **shape}
        if v.epi in ("scale", "alpha_beta"):
            cfg["alpha"] = (1.5, 0.75)[k]
        if v.epi == "alpha_beta":
            cfg["beta"] = (-0.5, 2.0)[k]
        configs.append(cfg)
    # the [[timing]] size (H100 scale, estimated only); alpha/beta as the large config
    timing = {"name": "timing", "seed": base + 100, **_timing_shape(v),
              **{k: val for k, val in configs[-1].items() if k in ("alpha", "beta")}}
    es = _SIZE[v.dt]
    ytr = 2 if v.epi == "alpha_beta" else 1
    f = v.fmt
    if f in ("spmm_row", "spmm_col", "spmm_t"):
        blen = "rows * k" if f == "spmm_t" else "cols * k"
        flops, nbytes = "2 * nnz * k", f"{es + 4} * nnz + 4 * (rows + 1) + {es} * ({blen} + {ytr} * {v.ylen})"
    elif f == "sddmm":
        flops = "2 * nnz * k + nnz"
        nbytes = f"{es + 4} * nnz + 4 * (rows + 1) + {es} * ((rows + cols) * k + {ytr} * nnz)"
    elif f == "dia":
        flops, nbytes = "2 * ndiag * rows", f"4 * ndiag + {es} * (ndiag * rows + cols + {ytr} * rows)"
    elif f == "bsr":
        flops, nbytes = "8 * nnzb", f"{4 * es + 4} * nnzb + 4 * (brows + 1) + {es} * (2 * bcols + {ytr} * 2 * brows)"
    else:
        stored = "rows * width" if v.ell else "nnz"
        flops = "2 * rows * width" if v.ell else ("4 * nnz" if f == "sym" else "2 * nnz")
        nbytes = f"{es + 4} * {stored} + {es} * ({v.xlen} + {ytr} * {v.ylen})"
        if f in ("csr", "csr_t", "sym"):
            nbytes += " + 4 * (rows + 1)"
        elif f == "csc":
            nbytes += " + 4 * (cols + 1)"
        elif f == "coo":
            nbytes += " + 4 * nnz"
    title, desc = _describe(v)
    return GeneratedTask(
        id=v.tid, kind="c2cuda", family="c_sparse", category="matmul" if v.spmm else "gather_scatter",
        title=title, description=desc, reference=_reference(v, p), impls=impls, configs=configs,
        metrics={"flops": flops, "bytes": nbytes}, params=p.params, tolerance=dict(_TOL[v.dt]),
        tags=["memory-bound", "irregular", "sparse"], extra_files={"inputs.py": _inputs(v)},
        variant={"format": v.fmt, "pattern": v.pattern, "epilogue": v.epi, "dtype": v.dt}, seed=base,
        timing=[timing])


@family("c_sparse", kind="c2cuda", category="gather_scatter")
def generate_sparse(seed: int) -> Iterator[GeneratedTask]:
    """SpMV (CSR, COO, row-/column-major ELL, DIA, 2x2 BSR, symmetric upper-CSR, CSR-transposed),
    CSR x dense SpMM (row-/column-major, transposed) and SDDMM, five epilogues, float/double; the
    random/banded/power-law sparsity patterns rotate over the tasks (they are input data)."""
    if not isinstance(seed, int):
        raise FamilyError(f"c_sparse: seed must be an int, not {type(seed).__name__}")
    k = 0
    for dt in ("float", "double"):
        for fmt in _FORMATS:
            for epi in _EPIS:
                pattern = _FIXED_PATTERN.get(fmt, _PATTERNS[(k + seed) % len(_PATTERNS)])
                k += 1
                yield _task(_Var(fmt, pattern, epi, dt), seed)
