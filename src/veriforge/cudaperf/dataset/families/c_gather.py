"""C→CUDA gather/scatter family: gathers, index_select, take-along-rows, coordinate gathers, permutation
scatters, scatter-add/max/min with atomics, histograms, masked counts and masked selects.

Structural axes: value type, index type (int / long long: 16-byte vector index loads carry 4 or 2
indices), index handling (plain, clamp, python-style wrap of negatives, fill with 0, drop negatives),
whether an output starts from zero/identity or accumulates into its previous contents, 1-D vs
per-row layouts, and for histograms the binning rule (bytes, ints, ints with out-of-range values,
float/double ranges) and counts vs weight sums.

Per-element work (every gather and scatter) shares one template with three schedules — one thread per
element, a grid-stride loop over read-only index loads, and 16-byte vector index loads with a scalar
tail and an unaligned fallback; per-row work shares a row/column template (thread per row, thread per
element, block per row with the index staged in shared memory). Scatter-add/max/min add a block-private
shared-memory copy of the output when it fits (48 KB shared per block), falling back to global atomics.
"""

from __future__ import annotations

from collections.abc import Iterator

from veriforge.cudaperf.dataset.families._ckit import DTYPES, P, args, impl, make_task, param, signature
from veriforge.cudaperf.dataset.families._ckit import tolerance as tol_for
from veriforge.cudaperf.dataset.family import GeneratedTask, Impl, family

FAMILY = "c_gather"
_ITYPES = ("int", "long long")
_PRIVATE_BYTES = 32768  # block-private copies up to 32 KB of shared memory
_N = (1 << 24) + 3  # 1-D [[timing]] length (H100 scale: 16M elements)

_MAP = {  # index handling: C body of ga_map(j, m) (-1 = no element), index generator, words
    "plain": ("return j;", "randint(0, {m})", "every index is in [0, {m})"),
    "clamp": ("return j < 0 ? 0 : (j >= m ? m - 1 : j);", "randint(0 - {m} // 4, {m} + {m} // 4)",
              "indices may be out of range ([-{m}/4, {m}+{m}/4)); they are clamped to [0, {m}-1]"),
    "wrap": ("return j < 0 ? j + m : j;", "randint(0 - {m}, {m})",
             "indices are in [-{m}, {m}); a negative index j means j + {m} (python-style)"),
    "fill": ("return (j < 0 || j >= m) ? -1 : j;", "randint(0 - {m} // 4, {m} + {m} // 4)",
             "indices may be out of range ([-{m}/4, {m}+{m}/4)); an out-of-range index yields 0"),
    "drop": ("return j < 0 ? -1 : j;", "randint(0 - {m} // 3, {m})",
             "indices are in [-{m}/3, {m}); elements with a negative index are dropped (contribute nothing)"),
}


def _vinit(vt: str) -> str:
    """Source values: floats in [-10, 10), bytes over their full range, ints signed (unsigned: non-negative)."""
    if DTYPES[vt].floating:
        return "uniform(-10, 10)"
    return {"unsigned char": "randint(0, 256)", "unsigned int": "randint(0, 1000)"}.get(vt, "randint(-1000, 1000)")


def _map_fn(mode: str, qual: str) -> str:
    return f"{qual}long long ga_map(long long j, long long m) {{\n    (void)m;\n    {_MAP[mode][0]}\n}}\n"


def _vec_of(itype: str) -> tuple[str, int]:
    return ("int4", 4) if itype == "int" else ("longlong2", 2)


# -- shared schedules ------------------------------------------------------------------------------
def elem_impls(params: list[P], total: str, stmt: str, idx: list[str], itype: str, head: str,
               alt3: Impl | None = None, prologue: str = "") -> list[Impl]:
    """Three schedules of ``stmt`` (a C statement over ``{i}`` and one ``{jK}`` per index array in ``idx``)
    for i in [0, total): thread per element, grid-stride with read-only index loads, vector index loads.
    ``alt3`` replaces the vector schedule (e.g. privatised scatters); ``prologue`` runs in solve first."""
    sig, sig_r, names = signature(params), signature(params, restrict=True), args(params)

    def body(i: str, js: list[str]) -> str:
        i = i if i.isidentifier() else f"({i})"
        return stmt.format(i=i, **{f"j{k}": j for k, j in enumerate(js)})

    naive = head + f"""
__global__ void ga_naive({sig_r}) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < {total}) {{
        {body("i", [f"{a}[i]" for a in idx])}
    }}
}}

extern "C" void solve({sig}) {{
{prologue}    int total = {total};
    ga_naive<<<(total + 255) / 256, 256>>>({names});
}}
"""
    stride = head + f"""
// Grid-stride loop; indices come through the read-only cache and two elements are in flight per step.
__global__ void ga_stride({sig_r}) {{
    int stride = gridDim.x * blockDim.x;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + stride < {total}; i += 2 * stride) {{
        {itype} {", ".join(f"a{k} = __ldg(&{a}[i]), b{k} = __ldg(&{a}[i + stride])" for k, a in enumerate(idx))};
        {body("i", [f"a{k}" for k in range(len(idx))])}
        {body("i + stride", [f"b{k}" for k in range(len(idx))])}
    }}
    if (i < {total}) {{
        {body("i", [f"__ldg(&{a}[i])" for a in idx])}
    }}
}}

extern "C" void solve({sig}) {{
{prologue}    ga_stride<<<ck_grid({total}, 256, 8), 256>>>({names});
}}
"""
    impls = [impl("naive", "naive", 1, naive, "one thread per element"),
             impl("grid_stride", "grid_stride", 2, stride,
                  "grid-stride loop, two elements per iteration, __ldg index loads")]
    if alt3 is not None:
        return [*impls, alt3]
    vec, width = _vec_of(itype)
    comps = "xyzw"[:width]
    loads = "\n".join(f"        {vec} q{k} = reinterpret_cast<const {vec}*>({a})[v];" for k, a in enumerate(idx))
    uses = "\n".join("        " + body(f"v * {width} + {c}", [f"q{k}.{comp}" for k in range(len(idx))])
                     for c, comp in enumerate(comps))
    aligned = " && ".join(f"ck_aligned({a}, 16)" for a in idx)
    vector = head + f"""
// {width} indices per 16-byte {vec} load; the remainder (total % {width}) element by element.
__global__ void ga_vec({sig_r}) {{
    int nv = {total} / {width};
    int tid = blockIdx.x * blockDim.x + threadIdx.x;
    int stride = gridDim.x * blockDim.x;
    for (int v = tid; v < nv; v += stride) {{
{loads}
{uses}
    }}
    for (int i = nv * {width} + tid; i < {total}; i += stride) {{
        {body("i", [f"{a}[i]" for a in idx])}
    }}
}}

__global__ void ga_scalar({sig_r}) {{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < {total}; i += gridDim.x * blockDim.x) {{
        {body("i", [f"{a}[i]" for a in idx])}
    }}
}}

extern "C" void solve({sig}) {{
{prologue}    if ({aligned}) {{
        ga_vec<<<ck_grid(({total} + {width - 1}) / {width}, 256, 8), 256>>>({names});
    }} else {{
        ga_scalar<<<ck_grid({total}, 256, 8), 256>>>({names});
    }}
}}
"""
    return [*impls, impl("vector_index", "vectorized", 3, vector,
                         f"{vec} loads of {width} indices per thread, scalar tail, fallback for unaligned indices")]


def row_impls(params: list[P], rows: str, cols: str, stmt: str, idx: str, itype: str, on: str,
              head: str, prologue: str = "") -> list[Impl]:
    """Three schedules of ``stmt`` over ({r}, {c}) in rows x cols, where ``{j}`` = idx[r] (``on="row"``)
    or idx[c] (``on="col"``)."""
    sig, sig_r, names = signature(params), signature(params, restrict=True), args(params)
    per_elem = head + f"""
// One thread per (row, column) element: coalesced along the row, the index re-read by every thread.
__global__ void ga_elem({sig_r}) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= {rows} * {cols}) return;
    int r = i / {cols}, c = i % {cols};
    {itype} j = {idx}[{"r" if on == "row" else "c"}];
    {stmt.format(r="r", c="c", j="j")}
}}

extern "C" void solve({sig}) {{
{prologue}    int total = {rows} * {cols};
    ga_elem<<<(total + 255) / 256, 256>>>({names});
}}
"""
    if on == "row":
        first = head + f"""
// One thread per row copies the whole row: one index load, but neighbouring threads are a row apart.
__global__ void ga_thread_row({sig_r}) {{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= {rows}) return;
    {itype} j = {idx}[r];
    for (int c = 0; c < {cols}; ++c) {{
        {stmt.format(r="r", c="c", j="j")}
    }}
}}

extern "C" void solve({sig}) {{
{prologue}    ga_thread_row<<<({rows} + 127) / 128, 128>>>({names});
}}
"""
        third = head + f"""
// One block per row: the row's index is staged once in shared memory, threads sweep the columns.
__global__ void ga_block_row({sig_r}) {{
    __shared__ {itype} j_s;
    int r = blockIdx.x;
    if (threadIdx.x == 0) j_s = {idx}[r];
    __syncthreads();
    {itype} j = j_s;
    for (int c = threadIdx.x; c < {cols}; c += blockDim.x) {{
        {stmt.format(r="r", c="c", j="j")}
    }}
}}

extern "C" void solve({sig}) {{
{prologue}    ga_block_row<<<{rows}, 128>>>({names});
}}
"""
        return [impl("thread_per_row", "naive", 1, first, "one thread per row (uncoalesced across threads)"),
                impl("thread_per_element", "coalesced", 2, per_elem, "one thread per element, coalesced"),
                impl("block_per_row", "shared_tiled", 3, third,
                     "one block per row, index staged once in shared memory, coalesced column sweep")]
    first = head + f"""
// One thread per output column walks all rows (one index load per thread).
__global__ void ga_thread_col({sig_r}) {{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= {cols}) return;
    {itype} j = {idx}[c];
    for (int r = 0; r < {rows}; ++r) {{
        {stmt.format(r="r", c="c", j="j")}
    }}
}}

extern "C" void solve({sig}) {{
{prologue}    ga_thread_col<<<({cols} + 127) / 128, 128>>>({names});
}}
"""
    third = head + f"""
#define TX 32
#define TY 8

// 32 columns x 8 rows per block step: the 32 column indices are staged in shared memory once per block.
__global__ void ga_tile({sig_r}) {{
    __shared__ {itype} j_s[TX];
    int c = blockIdx.x * TX + threadIdx.x;
    if (threadIdx.y == 0 && c < {cols}) j_s[threadIdx.x] = {idx}[c];
    __syncthreads();
    if (c >= {cols}) return;
    {itype} j = j_s[threadIdx.x];
    for (int r = blockIdx.y * TY + threadIdx.y; r < {rows}; r += gridDim.y * TY) {{
        {stmt.format(r="r", c="c", j="j")}
    }}
}}

extern "C" void solve({sig}) {{
{prologue}    dim3 block(TX, TY);
    int gy = ({rows} + TY - 1) / TY;
    if (gy > 64) gy = 64;
    dim3 grid(({cols} + TX - 1) / TX, gy);
    ga_tile<<<grid, block>>>({names});
}}
"""
    return [impl("thread_per_column", "naive", 1, first, "one thread per output column loops over the rows"),
            impl("thread_per_element", "coalesced", 2, per_elem, "one thread per element, index re-read each time"),
            impl("tiled_32x8", "shared_tiled", 3, third, "32x8 tiles with the column indices staged in shared memory")]


def _task(task_id: str, category: str, title: str, description: str, reference: str, impls: list[Impl],
          params: list[P], configs: list[dict], metrics: dict[str, str], tolerance: dict, variant: dict,
          seed: int, tags: list[str], extra: dict[str, str] | None = None, *,
          timing: dict[str, int]) -> GeneratedTask:
    """``timing``: the sizes of the ``[[timing]]`` configuration (H100 scale, estimated only); every other
    variable (bin counts, ranges, collision-bound sizes that select a code path) is the large config's."""
    timed = {k: v for k, v in {**configs[-1], **timing}.items() if k != "name"}
    task = make_task(family=FAMILY, family_seed=seed, task_id=task_id, category=category, title=title,
                     description=description, reference=reference, impls=impls, params=params, configs=configs,
                     metrics=metrics, tolerance=tolerance, variant=variant, tags=tags, timing=[timed])
    task.extra_files.update(extra or {})
    return task


def _load(mode: str, src: str, pos: str, j: str, zero: str) -> str:
    """Value of ``src`` at row offset ``pos`` + mapped index ``j`` (0 when the mode says no element)."""
    if mode in ("plain", "clamp", "wrap"):
        return f"{src}[{pos}ga_map({j}, m)]"
    return f"(ga_map({j}, m) >= 0 ? {src}[{pos}ga_map({j}, m)] : {zero})"


# -- gathers -----------------------------------------------------------------------------------------
def _gather_1d(vt: str, it: str, mode: str, seed: int) -> GeneratedTask:
    v = DTYPES[vt]
    init = _vinit(vt)
    params = [param("src", vt, "in", "m", init), param("idx", it, "in", "n", _MAP[mode][1].format(m="m")),
              param("out", vt, "out", "n"), param("n", "int", "scalar"), param("m", "int", "scalar")]
    value = _load(mode, "src", "", "{j0}", v.lit(0))
    stmt = f"out[{{i}}] = {value};"
    ref = _map_fn(mode, "static inline ") + f"""
void reference({signature(params)}) {{
    for (int i = 0; i < n; ++i) {{
        {stmt.format(i="i", j0="idx[i]")}
    }}
}}
"""
    impls = elem_impls(params, "n", stmt, ["idx"], it, _map_fn(mode, "__device__ __forceinline__ "))
    desc = (f"Gather: out[i] = src[idx[i]] for every i in [0, n). src holds m {vt} values, idx n {it} indices, "
            f"out n {vt} values (uninitialised on entry). Index handling: {_MAP[mode][2].format(m='m')}. "
            f"n and m are arbitrary (n not a multiple of any vector width); the index array may be read with "
            f"vector loads only where aligned. Outputs are compared exactly.")
    return _task(f"ga_gather_{DTYPES[vt].tag}_{DTYPES[it].tag}_{mode}", "gather_scatter",
                 f"Gather {vt} by {it} indices ({mode})", desc, ref, impls, params,
                 [{"name": "small", "n": 1001, "m": 777}, {"name": "large", "n": 65539, "m": 40009}],
                 {"flops": "0", "bytes": f"{v.size + DTYPES[it].size + v.size} * n"}, {},
                 {"op": "gather", "vtype": vt, "itype": it, "mode": mode}, seed, ["gather", "irregular"],
                 timing={"n": _N, "m": (1 << 22) + 9})


def _index_select(vt: str, it: str, mode: str, dim: int, seed: int) -> GeneratedTask:
    v = DTYPES[vt]
    init = _vinit(vt)
    if dim == 0:
        params = [param("src", vt, "in", "m * cols", init), param("idx", it, "in", "k", _MAP[mode][1].format(m="m")),
                  param("out", vt, "out", "k * cols"), param("k", "int", "scalar"), param("m", "int", "scalar"),
                  param("cols", "int", "scalar")]
        value = ("src[cols * ga_map({j}, m) + {c}]" if mode in ("plain", "clamp", "wrap") else
                 f"(ga_map({{j}}, m) >= 0 ? src[cols * ga_map({{j}}, m) + {{c}}] : {v.lit(0)})")
        stmt = f"out[{{r}} * cols + {{c}}] = {value};"
        rows, cols, on = "k", "cols", "row"
        words = ("out (k x cols, row-major) gets rows of src (m x cols, row-major): out[r][c] = src[idx[r]][c] for "
                 "r in [0, k), c in [0, cols)")
        configs = [{"name": "small", "k": 37, "m": 50, "cols": 61}, {"name": "large", "k": 300, "m": 400, "cols": 203}]
        timing = {"k": 16384, "m": 8192, "cols": 1024}  # many rows: a block (or thread) per row
    else:
        params = [param("src", vt, "in", "rows * m", init), param("idx", it, "in", "k", _MAP[mode][1].format(m="m")),
                  param("out", vt, "out", "rows * k"), param("rows", "int", "scalar"), param("m", "int", "scalar"),
                  param("k", "int", "scalar")]
        value = ("src[{r} * m + ga_map({j}, m)]" if mode in ("plain", "clamp", "wrap") else
                 f"(ga_map({{j}}, m) >= 0 ? src[{{r}} * m + ga_map({{j}}, m)] : {v.lit(0)})")
        stmt = f"out[{{r}} * k + {{c}}] = {value};"
        rows, cols, on = "rows", "k", "col"
        words = ("out (rows x k, row-major) gets columns of src (rows x m, row-major): out[r][c] = src[r][idx[c]] "
                 "for r in [0, rows), c in [0, k)")
        configs = [{"name": "small", "rows": 37, "m": 50, "k": 61}, {"name": "large", "rows": 203, "m": 400, "k": 300}]
        timing = {"rows": 4096, "m": 8192, "k": 4096}
    jref = "idx[r]" if on == "row" else "idx[c]"
    loops = (f"    for (int r = 0; r < {rows}; ++r) {{\n        for (int c = 0; c < {cols}; ++c) {{\n"
             f"            {stmt.format(r='r', c='c', j=jref)}\n        }}\n    }}\n")
    ref = _map_fn(mode, "static inline ") + f"\nvoid reference({signature(params)}) {{\n{loops}}}\n"
    impls = row_impls(params, rows, cols, stmt, "idx", it, on, _map_fn(mode, "__device__ __forceinline__ "))
    desc = (f"index_select along dim {dim}: {words}. Element type {vt}, index type {it}; idx has k entries. "
            f"Index handling: {_MAP[mode][2].format(m='m')}. out is uninitialised on entry; every element must be "
            f"written. Sizes are arbitrary. Outputs are compared exactly.")
    return _task(f"ga_isel{dim}_{DTYPES[vt].tag}_{DTYPES[it].tag}_{mode}", "gather_scatter",
                 f"index_select dim {dim}, {vt} by {it} ({mode})", desc, ref, impls, params, configs,
                 {"flops": "0", "bytes": f"{2 * v.size} * {rows} * {cols}"}, {},
                 {"op": "index_select", "dim": dim, "vtype": vt, "itype": it, "mode": mode}, seed,
                 ["gather", "index_select"], timing=timing)


def _take_along(vt: str, it: str, mode: str, seed: int) -> GeneratedTask:
    v = DTYPES[vt]
    init = _vinit(vt)
    params = [param("src", vt, "in", "rows * m", init), param("idx", it, "in", "rows * k", _MAP[mode][1].format(m="m")),
              param("out", vt, "out", "rows * k"), param("rows", "int", "scalar"), param("m", "int", "scalar"),
              param("k", "int", "scalar")]
    stmt = f"out[{{i}}] = {_load(mode, 'src', '({i} / k) * m + ', '{j0}', v.lit(0))};"
    ref = _map_fn(mode, "static inline ") + f"""
void reference({signature(params)}) {{
    for (int i = 0; i < rows * k; ++i) {{
        {stmt.format(i="i", j0="idx[i]")}
    }}
}}
"""
    impls = elem_impls(params, "rows * k", stmt, ["idx"], it, _map_fn(mode, "__device__ __forceinline__ "))
    desc = (f"Per-row gather (take_along_axis on the last axis): src is rows x m, idx and out are rows x k, all "
            f"row-major; out[r][t] = src[r][idx[r][t]]. Element type {vt}, index type {it}. Index handling: "
            f"{_MAP[mode][2].format(m='m')}. out is uninitialised on entry. Sizes are arbitrary (rows * k is not "
            f"a multiple of any vector width). Outputs are compared exactly.")
    return _task(f"ga_take_{DTYPES[vt].tag}_{DTYPES[it].tag}_{mode}", "gather_scatter",
                 f"take_along_axis rows, {vt} by {it} ({mode})", desc, ref, impls, params,
                 [{"name": "small", "rows": 37, "m": 53, "k": 29}, {"name": "large", "rows": 257, "m": 300, "k": 255}],
                 {"flops": "0", "bytes": f"{2 * v.size + DTYPES[it].size} * rows * k"}, {},
                 {"op": "take_along", "vtype": vt, "itype": it, "mode": mode}, seed, ["gather"],
                 timing={"rows": 16384, "m": 1024, "k": 1024})


def _gather_2d(vt: str, it: str, mode: str, seed: int) -> GeneratedTask:
    v = DTYPES[vt]
    init = _vinit(vt)
    params = [param("src", vt, "in", "h * w", init), param("ri", it, "in", "n", _MAP[mode][1].format(m="h")),
              param("ci", it, "in", "n", _MAP[mode][1].format(m="w")), param("out", vt, "out", "n"),
              param("n", "int", "scalar"), param("h", "int", "scalar"), param("w", "int", "scalar")]
    head_fn = _map_fn(mode, "")
    stmt = "out[{i}] = src[ga_map({j0}, h) * w + ga_map({j1}, w)];"
    ref = "static inline " + head_fn + f"""
void reference({signature(params)}) {{
    for (int i = 0; i < n; ++i) {{
        {stmt.format(i="i", j0="ri[i]", j1="ci[i]")}
    }}
}}
"""
    impls = elem_impls(params, "n", stmt, ["ri", "ci"], it, "__device__ __forceinline__ " + head_fn)
    words = {"plain": "every index is in range", "clamp": "out-of-range indices are clamped: rows to [0, h-1], "
             "columns to [0, w-1]", "wrap": "negative indices wrap python-style: a row index r < 0 means r + h, "
             "a column index c < 0 means c + w"}[mode]
    desc = (f"Coordinate gather from a row-major h x w {vt} matrix: out[i] = src[ri[i] * w + ci[i]] for i in "
            f"[0, n); ri and ci are {it} arrays of n row and column indices ({words}). out is uninitialised on entry. "
            "n is arbitrary. Outputs are compared exactly.")
    return _task(f"ga_coord_{DTYPES[vt].tag}_{DTYPES[it].tag}_{mode}", "gather_scatter",
                 f"2-D coordinate gather, {vt} by {it} ({mode})", desc, ref, impls, params,
                 [{"name": "small", "n": 1001, "h": 31, "w": 47}, {"name": "large", "n": 65539, "h": 250, "w": 263}],
                 {"flops": "0", "bytes": f"{2 * v.size + 2 * DTYPES[it].size} * n"}, {},
                 {"op": "coord_gather", "vtype": vt, "itype": it, "mode": mode}, seed, ["gather"],
                 timing={"n": _N, "h": 4096, "w": 4096})


# -- scatters ----------------------------------------------------------------------------------------
def _scatter_perm(vt: str, it: str, rows: bool, seed: int) -> GeneratedTask:
    inverse = vt == "inverse"
    v = DTYPES["int" if inverse else vt]
    init = _vinit(v.c)
    if rows:
        params = [param("src", v.c, "in", "n * cols", init), param("perm", it, "in", "n", "permutation(n)"),
                  param("out", v.c, "out", "n * cols"), param("n", "int", "scalar"), param("cols", "int", "scalar")]
        stmt = "out[{j} * cols + {c}] = src[{r} * cols + {c}];"
        ref = (f"void reference({signature(params)}) {{\n    for (int r = 0; r < n; ++r) {{\n"
               f"        for (int c = 0; c < cols; ++c) {{\n            {stmt.format(r='r', c='c', j='perm[r]')}\n"
               "        }\n    }\n}\n")
        impls = row_impls(params, "n", "cols", stmt, "perm", it, "row", "")
        desc = (f"Row permutation scatter: src and out are row-major n x cols {v.c} matrices, perm is a permutation "
                f"of 0..n-1 ({it}); out[perm[r]][c] = src[r][c]. Every row of out is written exactly once. "
                f"Outputs are compared exactly.")
        configs = [{"name": "small", "n": 37, "cols": 61}, {"name": "large", "n": 300, "cols": 203}]
        tid = f"ga_scatrows_{v.tag}_{DTYPES[it].tag}"
        total = "n * cols"
    else:
        if inverse:
            params = [param("perm", it, "in", "n", "permutation(n)"), param("out", "int", "out", "n"),
                      param("n", "int", "scalar")]
            stmt = "out[{j0}] = {i};"
            desc = (f"Inverse permutation: perm is a permutation of 0..n-1 ({it}); write out (n ints) with "
                    f"out[perm[i]] = i for every i, i.e. out = perm^-1. Outputs are compared exactly.")
            tid = f"ga_invperm_{DTYPES[it].tag}"
        else:
            params = [param("src", vt, "in", "n", init), param("perm", it, "in", "n", "permutation(n)"),
                      param("out", vt, "out", "n"), param("n", "int", "scalar")]
            stmt = "out[{j0}] = src[{i}];"
            desc = (f"Permutation scatter: perm is a permutation of 0..n-1 ({it}); out[perm[i]] = src[i] for every "
                    f"i ({vt} values), so every element of out is written exactly once. n is arbitrary. Outputs are "
                    f"compared exactly.")
            tid = f"ga_scatter_{v.tag}_{DTYPES[it].tag}"
        ref = (f"void reference({signature(params)}) {{\n    for (int i = 0; i < n; ++i) {{\n"
               f"        {stmt.format(i='i', j0='perm[i]')}\n    }}\n}}\n")
        impls = elem_impls(params, "n", stmt, ["perm"], it, "")
        configs = [{"name": "small", "n": 1001}, {"name": "large", "n": 65539}]
        total = "n"
    title = ("Inverse permutation" if inverse else f"Permutation scatter of {'rows of ' if rows else ''}{v.c}") \
        + f" ({it} indices)"
    return _task(tid, "gather_scatter", title, desc, ref, impls, params, configs,
                 {"flops": "0", "bytes": f"{2 * v.size + DTYPES[it].size} * {total}"}, {},
                 {"op": "inverse_perm" if inverse else "scatter_perm", "vtype": v.c, "itype": it, "rows": rows},
                 seed, ["scatter"], timing={"n": 16384, "cols": 1024} if rows else {"n": _N})


def _cas_loop(vt: str, better: str) -> str:
    """A compare-and-swap loop storing v into *p while v is ``better`` (< or >) than the current value:
    float/double have no native atomicMax/atomicMin, so their bits go through atomicCAS."""
    if vt == "float":
        word, to_bits, from_bits = "int", "__float_as_int(v)", "__int_as_float(old)"
    else:
        word, to_bits, from_bits = ("unsigned long long", "(unsigned long long)__double_as_longlong(v)",
                                    "__longlong_as_double((long long)old)")
    return (f"{word}* a = reinterpret_cast<{word}*>(p);\n    {word} old = *a;\n"
            f"    while (v {better} {from_bits}) {{\n        {word} seen = atomicCAS(a, old, {to_bits});\n"
            "        if (seen == old) break;\n        old = seen;\n    }")


def _atomic_fn(vt: str, op: str) -> str:
    if op == "add":
        body = "atomicAdd(p, v);"
    elif vt in ("int", "unsigned int"):
        body = f"atomic{op.capitalize()}(p, v);"
    else:
        body = _cas_loop(vt, ">" if op == "max" else "<")
    return f"__device__ __forceinline__ void at_update({vt}* p, {vt} v) {{\n    {body}\n}}\n"


def _scatter_reduce(vt: str, it: str, op: str, accumulate: bool, mode: str, rows: bool, seed: int) -> GeneratedTask:
    v = DTYPES[vt]
    init = _vinit(vt)
    identity = {"add": v.lit(0), "max": v.lowest, "min": v.highest}[op]
    size = "m * cols" if rows else "m"
    nsrc = "n * cols" if rows else "n"
    params = [param("src", vt, "in", nsrc, init), param("idx", it, "in", "n", _MAP[mode][1].format(m="m")),
              param("out", vt, "inout" if accumulate else "out", size, init if accumulate else None),
              param("n", "int", "scalar"), param("m", "int", "scalar")]
    if rows:
        params.append(param("cols", "int", "scalar"))
    combine = {"add": "{a} + {b}", "max": "({b} > {a} ? {b} : {a})", "min": "({b} < {a} ? {b} : {a})"}[op]
    guard = "if (ga_map({j}, m) >= 0) " if mode == "drop" else ""
    mapped = "ga_map({j}, m)"
    if rows:
        ref_stmt = (guard + "out[" + mapped + " * cols + c] = "
                    + combine.format(a="out[" + mapped + " * cols + c]", b="src[i * cols + c]") + ";")
        ref_loop = ("    for (int i = 0; i < n; ++i) {\n        for (int c = 0; c < cols; ++c) {\n            "
                    + ref_stmt.format(j="idx[i]") + "\n        }\n    }\n")
    else:
        ref_stmt = guard + "out[" + mapped + "] = " + combine.format(a="out[" + mapped + "]", b="src[i]") + ";"
        ref_loop = "    for (int i = 0; i < n; ++i) {\n        " + ref_stmt.format(j="idx[i]") + "\n    }\n"
    init_ref = "" if accumulate else f"    for (int k = 0; k < {size}; ++k) out[k] = {identity};\n"
    ref = _map_fn(mode, "static inline ") + f"\nvoid reference({signature(params)}) {{\n{init_ref}{ref_loop}}}\n"
    head = _map_fn(mode, "__device__ __forceinline__ ") + _atomic_fn(vt, op) + (f"""
__global__ void ga_fill({vt}* out, int count) {{
    for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < count; k += gridDim.x * blockDim.x) out[k] = {identity};
}}
""" if not accumulate else "")
    prologue = "" if accumulate else f"    ga_fill<<<ck_grid({size}, 256, 4), 256>>>(out, {size});\n"
    sig, sig_r, names = signature(params), signature(params, restrict=True), args(params)
    if rows:
        stmt = (("if (ga_map({j}, m) >= 0) " if mode == "drop" else "")
                + "at_update(&out[ga_map({j}, m) * cols + {c}], src[{r} * cols + {c}]);")
        impls = row_impls(params, "n", "cols", stmt, "idx", it, "row", head, prologue)
        impls = [Impl(name=i.name, strategy=i.strategy, source=i.source, quality=i.quality,
                      description=i.description + ", atomic updates") for i in impls]
    else:
        stmt = (("if (ga_map({j0}, m) >= 0) " if mode == "drop" else "")
                + "at_update(&out[ga_map({j0}, m)], src[{i}]);")
        private = head + f"""
// Block-private copy of the output in shared memory (shared-memory atomics), merged with one global
// atomic per touched slot; outputs too large for 32 KB of shared memory fall back to global atomics.
__global__ void ga_private({sig_r}) {{
    extern __shared__ {vt} priv[];
    for (int k = threadIdx.x; k < m; k += blockDim.x) priv[k] = {identity};
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {{
        long long j = ga_map(__ldg(&idx[i]), m);
        {"if (j >= 0) " if mode == "drop" else ""}at_update(&priv[j], __ldg(&src[i]));
    }}
    __syncthreads();
    for (int k = threadIdx.x; k < m; k += blockDim.x) {{
        {vt} c = priv[k];
        if (c != {identity}) at_update(&out[k], c);
    }}
}}

__global__ void ga_global({sig_r}) {{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {{
        {stmt.format(i="i", j0="idx[i]")}
    }}
}}

extern "C" void solve({sig}) {{
{prologue}    size_t bytes = sizeof({vt}) * (size_t)m;
    if (bytes <= {_PRIVATE_BYTES}) {{
        ga_private<<<ck_grid(n, 256, 2), 256, bytes>>>({names});
    }} else {{
        ga_global<<<ck_grid(n, 256, 8), 256>>>({names});
    }}
}}
"""
        alt = impl("privatized", "shared_tiled", 3, private,
                   "block-private output copy in shared memory (when <= 32 KB), merged with global atomics")
        impls = elem_impls(params, "n", stmt, ["idx"], it, head, alt3=alt, prologue=prologue)
        impls = [Impl(name=i.name, strategy="atomic", source=i.source, quality=1,
                      description="one thread per element, global atomics") if i.name == "naive" else i
                 for i in impls]
    opname = {"add": "scatter-add", "max": "scatter-max", "min": "scatter-min"}[op]
    start = ("out holds values on entry and is updated in place (inout)" if accumulate else
             f"out is uninitialised on entry: every slot starts from {identity} (the identity of {op}) before "
             f"the updates, so slots no index hits end up as {identity}")
    what = ("out[idx[i] * cols + c] = " + combine.format(a="out[idx[i] * cols + c]", b="src[i * cols + c]")
            + " for every source row i and column c (src is n x cols, out is m x cols, row-major)") if rows else \
        ("out[idx[i]] = " + combine.format(a="out[idx[i]]", b="src[i]") + " for every i in [0, n)")
    exact = op != "add" or not v.floating
    tolerance = tol_for(v, "exact" if exact else "accum")
    tol_text = ("Outputs are compared exactly." if exact else
                f"Updates may happen in any order; compared with |got - ref| <= {tolerance['atol']:g} * max|ref| + "
                f"{tolerance['rtol']:g} * |ref|.")
    desc = (f"{opname.capitalize()} of {vt} values by {it} indices: {what}. Many indices collide (m < n), so "
            f"updates must be atomic or otherwise combined. Index handling: {_MAP[mode][2].format(m='m')}. {start}. "
            f"{tol_text}")
    tid = (f"ga_{op}{'rows' if rows else ''}_{v.tag}_{DTYPES[it].tag}_{'acc' if accumulate else 'init'}"
           + ("" if mode == "plain" else f"_{mode}"))
    configs = ([{"name": "small", "n": 37, "m": 11, "cols": 61}, {"name": "large", "n": 300, "m": 40, "cols": 203}]
               if rows else [{"name": "small", "n": 1001, "m": 97}, {"name": "large", "n": 65539, "m": 4099}])
    return _task(tid, "gather_scatter", f"{opname} {vt} by {it}{' rows' if rows else ''}", desc, ref, impls, params,
                 configs, {"flops": nsrc, "bytes": f"{2 * v.size + DTYPES[it].size} * {nsrc}"}, tolerance,
                 {"op": f"scatter_{op}", "vtype": vt, "itype": it, "accumulate": accumulate, "mode": mode,
                  "rows": rows}, seed, ["scatter", "atomics"],
                 # 1-D: m stays the large config's (the privatised copy fits shared memory, as verified)
                 timing={"n": 16384, "m": 1024, "cols": 1024} if rows else {"n": _N})


# -- histograms --------------------------------------------------------------------------------------
_HIST = {  # kind -> (data type, data generator, bin expression of x (-1 = ignored), words)
    "u8": ("unsigned char", "randint(0, 256)", "(int)x", "bin = the byte value (256 bins)"),
    "int": ("int", "randint(0, nbins)", "x", "bin = the value itself (every value is in [0, nbins))"),
    "intoob": ("int", "randint(0 - nbins // 4, nbins + nbins // 4)", "(x >= 0 && x < nbins) ? x : -1",
               "bin = the value itself when it is in [0, nbins); other values are ignored"),
    "float": ("float", "uniform(lo - 1, hi + 1)",
              "(x >= lo && x < hi) ? ck_min((int)((x - lo) * ((float)nbins / (hi - lo))), nbins - 1) : -1",
              "values outside [lo, hi) are ignored; otherwise bin = min((int)((x - lo) * ((float)nbins / "
              "(hi - lo))), nbins - 1), computed in float exactly as written"),
    "double": ("double", "uniform(lo - 1, hi + 1)",
               "(x >= lo && x < hi) ? ck_min((int)((x - lo) * ((double)nbins / (hi - lo))), nbins - 1) : -1",
               "values outside [lo, hi) are ignored; otherwise bin = min((int)((x - lo) * ((double)nbins / "
               "(hi - lo))), nbins - 1), computed in double exactly as written"),
}


def _histogram(kind: str, weighted: bool, batched: bool, seed: int) -> GeneratedTask:
    dt, gen, bin_expr, words = _HIST[kind]
    ht = ("double" if kind == "double" else "float") if weighted else "unsigned int"
    h = DTYPES[ht]
    nb = "256" if kind == "u8" else "nbins"
    count = "rows * cols" if batched else "n"
    params = [param("data", dt, "in", count, gen)]
    if weighted:
        params.append(param("w", ht, "in", count, "uniform(0, 1)"))
    params.append(param("hist", ht, "out", f"rows * {nb}" if batched else nb))
    params += [param("rows", "int", "scalar"), param("cols", "int", "scalar")] if batched else \
        [param("n", "int", "scalar")]
    if kind != "u8":
        params.append(param("nbins", "int", "scalar"))
    if kind in ("float", "double"):
        params += [param("lo", dt, "scalar"), param("hi", dt, "scalar")]
    inc = "w[i]" if weighted else "1u"
    bin_fn = ("static inline int ck_min(int a, int b) { return a < b ? a : b; }\n"
              f"static inline int hist_bin({dt} x{', int nbins' if kind != 'u8' else ''}"
              f"{f', {dt} lo, {dt} hi' if kind in ('float', 'double') else ''}) {{\n    return {bin_expr};\n}}\n")
    bin_args = ", ".join(["{x}"] + (["nbins"] if kind != "u8" else []) + (["lo", "hi"] if kind in ("float", "double")
                                                                             else []))
    call = "hist_bin(" + bin_args + ")"
    sig, sig_r, names = signature(params), signature(params, restrict=True), args(params)
    dhead = bin_fn.replace("static inline", "__device__ __forceinline__")
    nbins_total = f"rows * {nb}" if batched else nb
    zero = f"    cudaMemset(hist, 0, sizeof({ht}) * (size_t)({nbins_total}));\n"
    if batched:
        ref = bin_fn + f"""
void reference({sig}) {{
    for (int k = 0; k < rows * {nb}; ++k) hist[k] = 0;
    for (int r = 0; r < rows; ++r) {{
        for (int c = 0; c < cols; ++c) {{
            int i = r * cols + c;
            int b = {call.format(x="data[i]")};
            if (b >= 0) hist[r * {nb} + b] += {inc};
        }}
    }}
}}
"""
        serial = dhead + f"""
// One thread per row owns that row's histogram: no atomics, but rows are read one element at a time.
__global__ void hist_rows_thread({sig_r}) {{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    for (int k = 0; k < {nb}; ++k) hist[r * {nb} + k] = 0;
    for (int c = 0; c < cols; ++c) {{
        int i = r * cols + c;
        int b = {call.format(x="data[i]")};
        if (b >= 0) hist[r * {nb} + b] += {inc};
    }}
}}

extern "C" void solve({sig}) {{
    hist_rows_thread<<<(rows + 63) / 64, 64>>>({names});
}}
"""
        rows_atomic = f"""
// One thread per element, global atomics into the row's histogram.
__global__ void hist_rows_atomic({sig_r}) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= rows * cols) return;
    int r = i / cols;
    int b = {call.format(x="data[i]")};
    if (b >= 0) atomicAdd(&hist[r * {nb} + b], {inc});
}}
"""
        glob = dhead + rows_atomic + f"""
extern "C" void solve({sig}) {{
{zero}    int total = rows * cols;
    hist_rows_atomic<<<(total + 255) / 256, 256>>>({names});
}}
"""
        block = dhead + f"""
// One block per row with the row's histogram in shared memory (shared atomics), written out once.
__global__ void hist_rows_block({sig_r}) {{
    extern __shared__ {ht} local[];
    int r = blockIdx.x;
    for (int k = threadIdx.x; k < {nb}; k += blockDim.x) local[k] = 0;
    __syncthreads();
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {{
        int i = r * cols + c;
        int b = {call.format(x="data[i]")};
        if (b >= 0) atomicAdd(&local[b], {inc});
    }}
    __syncthreads();
    for (int k = threadIdx.x; k < {nb}; k += blockDim.x) hist[r * {nb} + k] = local[k];
}}
{rows_atomic}
extern "C" void solve({sig}) {{
    size_t bytes = sizeof({ht}) * (size_t){nb};
    if (bytes <= {_PRIVATE_BYTES}) {{
        hist_rows_block<<<rows, 256, bytes>>>({names});
    }} else {{
{zero.replace("    ", "        ", 1)}        hist_rows_atomic<<<(rows * cols + 255) / 256, 256>>>({names});
    }}
}}
"""
        impls = [impl("thread_per_row", "naive", 1, serial, "one thread per row, private histogram in global memory"),
                 impl("global_atomic", "atomic", 2, glob, "one thread per element, global atomics"),
                 impl("block_per_row", "shared_tiled", 3, block,
                      "one block per row, shared-memory histogram, written out without atomics")]
        configs = [{"name": "small", "rows": 37, "cols": 301}, {"name": "large", "rows": 130, "cols": 517}]
    else:
        ref = bin_fn + f"""
void reference({sig}) {{
    for (int k = 0; k < {nb}; ++k) hist[k] = 0;
    for (int i = 0; i < n; ++i) {{
        int b = {call.format(x="data[i]")};
        if (b >= 0) hist[b] += {inc};
    }}
}}
"""
        flat_atomic = f"""
// Global atomics straight into the histogram (grid-stride, so any grid size covers the data).
__global__ void hist_atomic({sig_r}) {{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {{
        int b = {call.format(x="data[i]")};
        if (b >= 0) atomicAdd(&hist[b], {inc});
    }}
}}
"""
        glob = dhead + flat_atomic + f"""
extern "C" void solve({sig}) {{
{zero}    hist_atomic<<<(n + 255) / 256, 256>>>({names});
}}
"""

        def private(per: str, name: str) -> str:
            return dhead + f"""
// Block-private histogram in shared memory, merged into the global one with one atomic per bin.
__global__ void {name}({sig_r}) {{
    extern __shared__ {ht} local[];
    for (int k = threadIdx.x; k < {nb}; k += blockDim.x) local[k] = 0;
    __syncthreads();
    int stride = gridDim.x * blockDim.x;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + stride < n; i += 2 * stride) {{
        int b0 = {call.format(x="data[i]")};
        int b1 = {call.format(x="data[i + stride]")};
        if (b0 >= 0) atomicAdd(&local[b0], {inc});
        if (b1 >= 0) atomicAdd(&local[b1], {inc.replace("[i]", "[i + stride]")});
    }}
    if (i < n) {{
        int b = {call.format(x="data[i]")};
        if (b >= 0) atomicAdd(&local[b], {inc});
    }}
    __syncthreads();
    for (int k = threadIdx.x; k < {nb}; k += blockDim.x) {{
        {ht} c = local[k];
        if (c != 0) atomicAdd(&hist[k], c);
    }}
}}
{flat_atomic}
extern "C" void solve({sig}) {{
{zero}    size_t bytes = sizeof({ht}) * (size_t){nb};
    if (bytes <= {_PRIVATE_BYTES}) {{
        {name}<<<{per}, 256, bytes>>>({names});
    }} else {{
        hist_atomic<<<ck_grid(n, 256, 8), 256>>>({names});
    }}
}}
"""
        impls = [impl("global_atomic", "atomic", 1, glob, "one thread per element, global atomics"),
                 impl("private_per_tile", "shared_tiled", 2, private("(n + 1023) / 1024", "hist_tiles"),
                      "one block per 1024 elements with a shared-memory histogram, merged per block"),
                 impl("private_persistent", "grid_stride", 3, private("ck_grid(n, 512, 2)", "hist_persistent"),
                      "a persistent grid (2 blocks per SM) of shared-memory histograms: far fewer merges")]
        configs = [{"name": "small", "n": 1001}, {"name": "large", "n": 65539}]
    if kind != "u8":
        for cfg, bins in zip(configs, (16, 1000), strict=True):
            cfg["nbins"] = bins
    if kind in ("float", "double"):
        for cfg, (lo, hi) in zip(configs, ((-2.0, 3.0), (-1.5, 2.5)), strict=True):
            cfg["lo"], cfg["hi"] = lo, hi
    tolerance = tol_for(h, "accum" if weighted else "exact")
    layout = ("data is a row-major rows x cols array; every row gets its own histogram: hist is rows x "
              f"{nb} (row r's bins at hist[r * {nb} ...])" if batched else f"data holds n values; hist has {nb} bins")
    what = "the sum of w[i] over the elements in the bin (w: one weight per element)" if weighted else \
        "the number of elements in the bin"
    tol_text = (f"Sums may be accumulated in any order; compared with |got - ref| <= {tolerance['atol']:g} * max|ref| "
                f"+ {tolerance['rtol']:g} * |ref|." if weighted else "Counts are compared exactly.")
    desc = (f"Histogram of {dt} data: {layout}. Each bin gets {what}; {words}. hist ({ht}) is uninitialised on entry "
            f"(clear it yourself). Sizes are arbitrary; the large configuration uses {'' if kind == 'u8' else 'many '}"
            f"bins and data may collide heavily. {tol_text}")
    tid = f"ga_hist_{kind}_{'w' + h.tag if weighted else 'count'}{'_rows' if batched else ''}"
    return _task(tid, "histogram", f"Histogram ({kind}, {'weighted' if weighted else 'counts'}"
                                   f"{', per row' if batched else ''})", desc, ref, impls, params, configs,
                 {"flops": count, "bytes": f"{DTYPES[dt].size + (h.size if weighted else 0)} * {count}"}, tolerance,
                 {"op": "histogram", "kind": kind, "weighted": weighted, "batched": batched}, seed,
                 # 1-D: 8M elements keeps the persistent grid's 2-way grid-stride loop under the analysis's
                 # 64 simulated trips (at 16M its trip count is unknown and so is the time)
                 ["histogram", "atomics"], timing={"rows": 16384, "cols": 1000} if batched else {"n": (1 << 23) + 3})


# -- masked counts and selects -----------------------------------------------------------------------
def _masked(mt: str, vt: str | None, rows: bool, seed: int) -> GeneratedTask:
    m = DTYPES[mt]
    minit = "randint(0, 2)" if mt != "int" else "randint(0, 3)"
    select = vt is not None
    v = DTYPES[vt] if vt else None
    count = "rows * cols" if rows else "n"
    params = [param("mask", mt, "in", count, minit)]
    if select:
        assert v is not None
        params.insert(0, param("x", v.c, "in", count, "uniform(-10, 10)" if v.floating else "randint(-1000, 1000)"))
        params.append(param("out", v.c, "out", count))
    params.append(param("counts", "int", "out", "rows" if rows else "1"))
    params += ([param("rows", "int", "scalar"), param("cols", "int", "scalar")] if rows else
               [param("n", "int", "scalar")])
    sig, sig_r, names = signature(params), signature(params, restrict=True), args(params)
    on = f"mask[{{i}}] != {m.lit(0)}"
    zero = v.lit(0) if v else "0"
    if rows:
        ref_body = ("    for (int r = 0; r < rows; ++r) {\n        int c_out = 0;\n"
                    "        for (int c = 0; c < cols; ++c) {\n            int i = r * cols + c;\n"
                    f"            if ({on.format(i='i')}) {{\n"
                    + ("                out[r * cols + c_out] = x[i];\n" if select else "")
                    + "                ++c_out;\n            }\n        }\n"
                    + (f"        for (int c = c_out; c < cols; ++c) out[r * cols + c] = {zero};\n" if select else "")
                    + "        counts[r] = c_out;\n    }\n")
    else:
        ref_body = ("    int c_out = 0;\n    for (int i = 0; i < n; ++i) {\n"
                    f"        if ({on.format(i='i')}) {{\n" + ("            out[c_out] = x[i];\n" if select else "")
                    + "            ++c_out;\n        }\n    }\n"
                    + (f"    for (int i = c_out; i < n; ++i) out[i] = {zero};\n" if select else "")
                    + "    counts[0] = c_out;\n")
    ref = f"void reference({sig}) {{\n{ref_body}}}\n"
    if rows:
        impls = _masked_rows_impls(on, select, zero, sig, sig_r, names)
    else:
        impls = _masked_full_impls(on, select, zero, sig, sig_r, names)
    if select:
        what = ("compact the elements of x whose mask is nonzero, in their original order, to the front of "
                + ("each row of out (row r of out gets row r's selected elements, the rest of the row is filled "
                   "with 0), and write each row's count to counts[r]" if rows else
                   "out (the remaining n - count elements of out are set to 0), and write the count to counts[0]"))
    else:
        what = ("count the nonzero mask elements of every row into counts[r]" if rows else
                "count the nonzero elements of mask into counts[0]")
    layout = "mask (and x, out) are row-major rows x cols arrays" if rows else "mask (and x, out) hold n elements"
    desc = (f"Masked {'select' if select else 'count'}: {layout}; an element is selected when mask[i] != 0 (mask is "
            f"{mt}). {what[0].upper() + what[1:]}. The order of selected elements must be preserved exactly (a stable "
            f"compaction). All outputs are uninitialised on entry and compared exactly. Sizes are arbitrary.")
    tid = f"ga_mask{'sel' if select else 'count'}_{m.tag}{'_' + v.tag if v else ''}{'_rows' if rows else ''}"
    title = (f"Masked {'select' if select else 'count'} ({mt} mask{f', {vt} values' if vt else ''}"
             f"{', per row' if rows else ''})")
    return _task(tid, "gather_scatter", title, desc, ref, impls, params,
                 [{"name": "small", "rows": 37, "cols": 301}, {"name": "large", "rows": 130, "cols": 517}] if rows else
                 [{"name": "small", "n": 1001}, {"name": "large", "n": 65539}],
                 {"flops": count, "bytes": f"{m.size + (2 * v.size if v else 0)} * {count}"}, {},
                 {"op": "masked_select" if select else "masked_count", "mtype": mt, "vtype": vt, "rows": rows},
                 seed, ["compaction" if select else "reduction"],
                 timing={"rows": 16384, "cols": 1000} if rows else {"n": _N})


_FLAG_SCAN = """
// Inclusive Hillis-Steele count of the set flags of the block's TILE threads through s[]; every thread
// must call it; returns the thread's inclusive count (its 1-based rank if its own flag is set).
__device__ int flag_scan(int* s, int f) {
    s[threadIdx.x] = f;
    __syncthreads();
    for (int off = 1; off < TILE; off <<= 1) {
        int add = threadIdx.x >= off ? s[threadIdx.x - off] : 0;
        __syncthreads();
        s[threadIdx.x] += add;
        __syncthreads();
    }
    return s[threadIdx.x];
}
"""


def _masked_full_impls(on: str, select: bool, zero: str, sig: str, sig_r: str, names: str) -> list[Impl]:
    flag = on.format(i="i")
    if not select:
        naive = f"""
__global__ void mc_atomic({sig_r}) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && {flag}) atomicAdd(&counts[0], 1);
}}

extern "C" void solve({sig}) {{
    cudaMemset(counts, 0, sizeof(int));
    mc_atomic<<<(n + 255) / 256, 256>>>({names});
}}
"""
        tree = f"""
// __syncthreads_count gives the block's count; one atomic per block.
__global__ void mc_block({sig_r}) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int c = __syncthreads_count(i < n && {flag});
    if (threadIdx.x == 0 && c) atomicAdd(&counts[0], c);
}}

extern "C" void solve({sig}) {{
    cudaMemset(counts, 0, sizeof(int));
    mc_block<<<(n + 255) / 256, 256>>>({names});
}}
"""
        warp = f"""
// Grid-stride; each warp counts with __ballot_sync/__popc, one atomic per warp per block pass.
__global__ void mc_warp({sig_r}) {{
    int local = 0;
    int stride = gridDim.x * blockDim.x;
    for (int base = blockIdx.x * blockDim.x; base < n; base += stride) {{
        int i = base + threadIdx.x;
        unsigned int bits = __ballot_sync(0xffffffffu, i < n && {flag});
        local += __popc(bits);
    }}
    if ((threadIdx.x & 31) == 0 && local) atomicAdd(&counts[0], local);
}}

extern "C" void solve({sig}) {{
    cudaMemset(counts, 0, sizeof(int));
    mc_warp<<<ck_grid(n, 256, 4), 256>>>({names});
}}
"""
        return [impl("atomic", "atomic", 1, naive, "one atomic per selected element"),
                impl("block_count", "shared_tiled", 2, tree, "__syncthreads_count per block, one atomic per block"),
                impl("warp_ballot", "warp_shuffle", 3, warp, "grid-stride __ballot_sync/__popc, one atomic per warp")]
    serial = f"""
__global__ void ms_serial({sig_r}) {{
    int c_out = 0;
    for (int i = 0; i < n; ++i) {{
        if ({flag}) out[c_out++] = x[i];
    }}
    for (int i = c_out; i < n; ++i) out[i] = {zero};
    counts[0] = c_out;
}}

extern "C" void solve({sig}) {{
    ms_serial<<<1, 1>>>({names});
}}
"""
    common = f"""
#define TILE 256

__global__ void ms_tile_counts({sig_r}, int* tile_counts) {{
    int i = blockIdx.x * TILE + threadIdx.x;
    int c = __syncthreads_count(i < n && {flag});
    if (threadIdx.x == 0) tile_counts[blockIdx.x] = c;
}}

// Exclusive scan of the tile counts (one thread: there are only n / 256 of them); total to counts[0].
__global__ void ms_offsets(int* tile_counts, int tiles, int* counts) {{
    int run = 0;
    for (int t = 0; t < tiles; ++t) {{
        int c = tile_counts[t];
        tile_counts[t] = run;
        run += c;
    }}
    counts[0] = run;
}}

__global__ void ms_zero_tail({sig_r}) {{
    int total = counts[0];
    for (int i = total + blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) out[i] = {zero};
}}
"""
    host = f"""
extern "C" void solve({sig}) {{
    int tiles = (n + TILE - 1) / TILE;
    int* tile_counts = nullptr;
    cudaMalloc(&tile_counts, sizeof(int) * tiles);
    ms_tile_counts<<<tiles, TILE>>>({names}, tile_counts);
    ms_offsets<<<1, 1>>>(tile_counts, tiles, counts);
    ms_write<<<tiles, TILE>>>({names}, tile_counts);
    ms_zero_tail<<<ck_grid(n, 256, 4), 256>>>({names});
    cudaFree(tile_counts);
}}
"""
    shared = common + _FLAG_SCAN + f"""
// Stable positions inside the tile: Hillis-Steele exclusive scan of the flags in shared memory.
__global__ void ms_write({sig_r}, const int* offsets) {{
    __shared__ int s[TILE];
    int i = blockIdx.x * TILE + threadIdx.x;
    int f = (i < n && {flag}) ? 1 : 0;
    int rank = flag_scan(s, f);
    if (f) out[offsets[blockIdx.x] + rank - 1] = x[i];
}}
""" + host
    warp = common + f"""
// Stable positions from warp ballots: rank inside the warp = popc of the lower lanes' bits.
__global__ void ms_write({sig_r}, const int* offsets) {{
    __shared__ int warp_base[TILE / 32];
    int i = blockIdx.x * TILE + threadIdx.x;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int f = (i < n && {flag}) ? 1 : 0;
    unsigned int bits = __ballot_sync(0xffffffffu, f);
    if (lane == 0) warp_base[warp] = __popc(bits);
    __syncthreads();
    if (threadIdx.x == 0) {{
        int run = 0;
        for (int w = 0; w < TILE / 32; ++w) {{
            int c = warp_base[w];
            warp_base[w] = run;
            run += c;
        }}
    }}
    __syncthreads();
    if (f) out[offsets[blockIdx.x] + warp_base[warp] + __popc(bits & ((1u << lane) - 1u))] = x[i];
}}
""" + host
    return [impl("serial", "naive", 1, serial, "one thread compacts the whole array"),
            impl("tile_scan", "multi_pass", 2, shared,
                 "tile counts, scan of counts, per-tile shared-memory Hillis-Steele positions, zero tail"),
            impl("warp_ballot", "warp_shuffle", 3, warp,
                 "tile counts, scan of counts, positions from __ballot_sync/__popc ranks, zero tail")]


def _masked_rows_impls(on: str, select: bool, zero: str, sig: str, sig_r: str, names: str) -> list[Impl]:
    flag = on.format(i="i")
    write = "out[r * cols + c_out] = x[i];\n" if select else ""
    tail = f"    for (int c = c_out; c < cols; ++c) out[r * cols + c] = {zero};\n" if select else ""
    serial = f"""
__global__ void mr_thread({sig_r}) {{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    int c_out = 0;
    for (int c = 0; c < cols; ++c) {{
        int i = r * cols + c;
        if ({flag}) {{
            {write}            ++c_out;
        }}
    }}
{tail}    counts[r] = c_out;
}}

extern "C" void solve({sig}) {{
    mr_thread<<<(rows + 63) / 64, 64>>>({names});
}}
"""
    block_write = ("            if (f) out[r * cols + run + s[threadIdx.x] - 1] = x[i];\n" if select else "")
    block = "\n#define TILE 256\n" + _FLAG_SCAN + f"""
// One block per row: chunks of TILE flags scanned in shared memory, with a running count.
__global__ void mr_block({sig_r}) {{
    __shared__ int s[TILE];
    int r = blockIdx.x;
    int run = 0;
    for (int base = 0; base < cols; base += TILE) {{
        int c = base + threadIdx.x;
        int i = r * cols + c;
        int f = (c < cols && {flag}) ? 1 : 0;
        flag_scan(s, f);
{block_write}        int chunk = s[TILE - 1];
        __syncthreads();
        run += chunk;
    }}
{f"    for (int c = run + threadIdx.x; c < cols; c += TILE) out[r * cols + c] = {zero};" if select else ""}
    if (threadIdx.x == 0) counts[r] = run;
}}

extern "C" void solve({sig}) {{
    mr_block<<<rows, TILE>>>({names});
}}
"""
    warp_write = ("        if (f) out[r * cols + run + __popc(bits & ((1u << lane) - 1u))] = x[i];\n"
                  if select else "")
    warp = f"""
#define WARPS 4

// One warp per row: 32 flags per __ballot_sync, positions = running count + rank among lower lanes.
__global__ void mr_warp({sig_r}) {{
    int lane = threadIdx.x & 31;
    int r = blockIdx.x * WARPS + (threadIdx.x >> 5);
    if (r >= rows) return;
    int run = 0;
    for (int base = 0; base < cols; base += 32) {{
        int c = base + lane;
        int i = r * cols + c;
        int f = (c < cols && {flag}) ? 1 : 0;
        unsigned int bits = __ballot_sync(0xffffffffu, f);
{warp_write}        run += __popc(bits);
    }}
{f"    for (int c = run + lane; c < cols; c += 32) out[r * cols + c] = {zero};" if select else ""}
    if (lane == 0) counts[r] = run;
}}

extern "C" void solve({sig}) {{
    mr_warp<<<(rows + WARPS - 1) / WARPS, WARPS * 32>>>({names});
}}
"""
    return [impl("thread_per_row", "naive", 1, serial, "one thread per row"),
            impl("block_per_row", "shared_tiled", 2, block, "one block per row, shared-memory scans of 256 flags"),
            impl("warp_per_row", "warp_shuffle", 3, warp, "one warp per row, __ballot_sync/__popc ranks")]


# -- enumeration -------------------------------------------------------------------------------------
def _all(seed: int) -> Iterator[GeneratedTask]:
    for vt in ("float", "double", "int", "unsigned char"):
        for it in _ITYPES:
            for mode in ("plain", "clamp", "wrap", "fill"):
                yield _gather_1d(vt, it, mode, seed)
    for dim in (0, 1):
        for vt in ("float", "double", "int"):
            for it in _ITYPES:
                for mode in ("plain", "clamp", "wrap", "fill"):
                    yield _index_select(vt, it, mode, dim, seed)
    for vt in ("float", "double", "int"):
        for it in _ITYPES:
            for mode in ("plain", "clamp", "wrap", "fill"):
                yield _take_along(vt, it, mode, seed)
            for mode in ("plain", "clamp", "wrap"):
                yield _gather_2d(vt, it, mode, seed)
    for it in _ITYPES:
        for vt in ("float", "double", "int", "unsigned char", "inverse"):
            yield _scatter_perm(vt, it, False, seed)
        for vt in ("float", "double", "int"):
            yield _scatter_perm(vt, it, True, seed)
    for it in _ITYPES:
        for accumulate in (False, True):
            for vt in ("float", "double", "int", "unsigned int"):
                for mode in ("plain", "drop"):
                    yield _scatter_reduce(vt, it, "add", accumulate, mode, False, seed)
                for op in ("max", "min"):
                    yield _scatter_reduce(vt, it, op, accumulate, "plain", False, seed)
            for vt in ("float", "double", "int"):
                yield _scatter_reduce(vt, it, "add", accumulate, "plain", True, seed)
    for kind in _HIST:
        for weighted in (False, True):
            for batched in (False, True):
                yield _histogram(kind, weighted, batched, seed)
    for mt in ("unsigned char", "int", "float"):
        for rows in (False, True):
            yield _masked(mt, None, rows, seed)
            for vt in ("float", "double", "int"):
                yield _masked(mt, vt, rows, seed)


@family(FAMILY, kind="c2cuda", category="gather_scatter")
def generate(seed: int) -> Iterator[GeneratedTask]:
    """Gathers (1-D, index_select, take-along, coordinates), permutation scatters, scatter-add/max/min,
    histograms (bytes, ints, float/double ranges; counts or weights; global or per row) and masked
    counts/selects."""
    yield from _all(seed)
