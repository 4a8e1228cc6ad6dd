"""C→CUDA scan family: inclusive/exclusive prefix scans over the reduction monoids.

The operators are the associative accumulators of :mod:`c_reduce` (sum, product, min, max, sum of
squares, |x| sum, |x| max, log-sum-exp; xor and count-if for int), scanned forward or backward over
a whole array, each row, each column, or the segments of a head-flag array (a segmented scan is
an ordinary scan of the (flag, value) monoid, so the same multi-block machinery handles it; its
combine is not commutative, and every kernel here merges strictly left-to-right).

Whole-array strategies: one thread (serial), three-pass Hillis–Steele (tile scans to a temporary,
scan of tile totals, fix-up), and reduce-then-scan with warp shuffles (tile totals, scan of totals,
rescan with offsets — no temporary of size n). Rows: thread / block / warp per row with a running
carry. Columns: block per column (strided), thread per column (coalesced), and 32×8 tiles that
split each column into 8 chunks scanned in parallel and stitched through shared memory.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from veriforge.cudaperf.dataset.families._ckit import DTYPES, CType, P, args, impl, make_task, param, signature
from veriforge.cudaperf.dataset.families._ckit import tolerance as tol_for
from veriforge.cudaperf.dataset.families.c_reduce import MONOIDS, Monoid, acc_type, input_init, monoid_code
from veriforge.cudaperf.dataset.family import GeneratedTask, family

FAMILY = "c_scan"

OPS = {"f": ("sum", "max", "min", "prod", "sumsq", "l1", "linf", "lse"),
       "i": ("sum", "max", "min", "xor", "l1", "linf", "sumsq", "countgt")}

_FLAGS_PY = '''"""Segment head flags: about one segment start every 40 elements; position 0 always starts one."""
import numpy as np


def make_inputs(config, rng):
    n = int(config["n"])
    flags = (rng.random(n) < 1.0 / 40).astype(np.int32)
    flags[0] = 1
    return {"flags": flags}
'''


@dataclass(frozen=True)
class Layout:
    name: str
    schedule: str  # full | rows | cols
    reverse: bool
    seg: bool  # segmented by head flags (full schedule only)

    @property
    def tag(self) -> str:
        return self.name + ("_rev" if self.reverse else "")


LAYOUTS = [Layout("full", "full", False, False), Layout("full", "full", True, False),
           Layout("rows", "rows", False, False), Layout("rows", "rows", True, False),
           Layout("cols", "cols", False, False), Layout("cols", "cols", True, False),
           Layout("segflags", "full", False, True)]


def _elem_code(m: Monoid, d: CType, lay: Layout, acc: str, cuda: bool) -> str:
    """``E`` (the scanned element: the monoid's Acc, or (flag, Acc) when segmented) and its functions."""
    qual = "__device__ __forceinline__ " if cuda else "static inline "
    out = d.c if m.out == "T" else "int"
    thr_f, thr_a = (f", {d.c} thr", ", thr") if m.uses_thr else ("", "")
    code = monoid_code(m, d, acc, qual) + "\n"
    if lay.seg:
        code += ("struct E { int f; Acc a; };\n" if cuda else "typedef struct { int f; Acc a; } E;\n") + f"""
{qual}E e_identity(void) {{
    E e;
    e.f = 0;
    e.a = acc_identity();
    return e;
}}

{qual}E e_lift({d.c} x, int flag, int r{thr_f}) {{
    E e;
    e.f = flag != 0;
    e.a = acc_lift(x, r{thr_a});
    return e;
}}

// (f1, a1) then (f2, a2): a segment head in the right operand discards everything before it.
{qual}E e_merge(E p, E q) {{
    E e;
    e.f = p.f | q.f;
    e.a = q.f ? q.a : acc_merge(p.a, q.a);
    return e;
}}

{qual}{out} e_out(E e) {{
    return acc_final(e.a, 0);
}}

{qual}{out} e_excl(E prev, E cur) {{
    return cur.f ? acc_final(acc_identity(), 0) : acc_final(prev.a, 0);
}}
"""
        paths = ["f"] + [f"a.{f}" for f, _ in m.fields]
    else:
        code += ("using E = Acc;\n" if cuda else "typedef Acc E;\n") + f"""
{qual}E e_identity(void) {{
    return acc_identity();
}}

{qual}E e_lift({d.c} x, int r{thr_f}) {{
    return acc_lift(x, r{thr_a});
}}

{qual}E e_merge(E p, E q) {{
    return acc_merge(p, q);
}}

{qual}{out} e_out(E e) {{
    return acc_final(e, 0);
}}

{qual}{out} e_excl(E prev, E cur) {{
    (void)cur;
    return acc_final(prev, 0);
}}
"""
        paths = [f for f, _ in m.fields]
    if cuda:
        code += """
// Hillis-Steele inclusive scan of one value per thread through sh[0..tile); every thread must call it.
// On return sh[t] holds the inclusive prefix of thread t (sh[tile - 1] the chunk total).
__device__ E hs_inclusive(E* sh, E mine, int tile) {
    int t = threadIdx.x;
    sh[t] = mine;
    __syncthreads();
    for (int off = 1; off < tile; off <<= 1) {
        E prev = t >= off ? sh[t - off] : e_identity();
        __syncthreads();
        if (t >= off) sh[t] = e_merge(prev, sh[t]);
        __syncthreads();
    }
    return sh[t];
}
"""
        for kind, extra in (("up", "unsigned int delta"), ("down", "unsigned int delta"), ("idx", "int src")):
            var = extra.split()[-1]
            fn = {"up": "__shfl_up_sync", "down": "__shfl_down_sync", "idx": "__shfl_sync"}[kind]
            lines = "".join(f"    r.{p} = {fn}(0xffffffffu, e.{p}, {var});\n" for p in paths)
            code += (f"\n__device__ __forceinline__ E e_shfl_{kind}(E e, {extra}) {{\n    E r;\n{lines}"
                     "    return r;\n}\n")
    return code


def _loader(m: Monoid, lay: Layout) -> tuple[str, str]:
    """(load template, physical-index template) with ``{i}`` = logical position (and ``{row}``/``{col}``)."""
    thr = ", thr" if m.uses_thr else ""
    if lay.schedule == "full":
        phys = "(n - 1 - ({i}))" if lay.reverse else "({i})"
        flag = f"flags[{phys}], " if lay.seg else ""
        return f"e_lift(x[{phys}], {flag}{{i}}{thr})", phys
    if lay.schedule == "rows":
        phys = "({row} * cols + (cols - 1 - ({i})))" if lay.reverse else "({row} * cols + ({i}))"
    else:
        phys = "((rows - 1 - ({i})) * cols + {col})" if lay.reverse else "(({i}) * cols + {col})"
    return f"e_lift(x[{phys}], {{i}}{thr})", phys


def _emit(excl: bool, run: str, val: str, dst: str, indent: str) -> str:
    """Write element ``val`` given the running prefix ``run`` (everything before it), then advance ``run``."""
    if excl:
        return f"{indent}{dst} = e_excl({run}, {val});\n{indent}{run} = e_merge({run}, {val});\n"
    return f"{indent}{run} = e_merge({run}, {val});\n{indent}{dst} = e_out({run});\n"


def _reference(m: Monoid, d: CType, lay: Layout, excl: bool, params: list[P]) -> str:
    load, phys = _loader(m, lay)
    code = _elem_code(m, d, lay, acc_type(m, d, True), False)
    if lay.schedule == "full":
        loop = ("    E run = e_identity();\n    for (int i = 0; i < n; ++i) {\n"
                f"        E v = {load.format(i='i')};\n"
                + _emit(excl, "run", "v", f"out[{phys.format(i='i')}]", "        ") + "    }\n")
    elif lay.schedule == "rows":
        loop = ("    for (int row = 0; row < rows; ++row) {\n        E run = e_identity();\n"
                "        for (int j = 0; j < cols; ++j) {\n"
                f"            E v = {load.format(i='j', row='row')};\n"
                + _emit(excl, "run", "v", f"out[{phys.format(i='j', row='row')}]", "            ")
                + "        }\n    }\n")
    else:
        loop = ("    for (int col = 0; col < cols; ++col) {\n        E run = e_identity();\n"
                "        for (int r = 0; r < rows; ++r) {\n"
                f"            E v = {load.format(i='r', col='col')};\n"
                + _emit(excl, "run", "v", f"out[{phys.format(i='r', col='col')}]", "            ")
                + "        }\n    }\n")
    return code + f"\nvoid reference({signature(params)}) {{\n{loop}}}\n"


def _full_impls(m: Monoid, d: CType, lay: Layout, excl: bool, params: list[P]) -> list:
    head = _elem_code(m, d, lay, acc_type(m, d, False), True)
    sig, sig_r, names = signature(params), signature(params, restrict=True), args(params)
    load, phys = _loader(m, lay)
    serial = head + f"""
// One thread scans the whole array in order.
__global__ void scan_serial({sig_r}) {{
    E run = e_identity();
    for (int i = 0; i < n; ++i) {{
        E v = {load.format(i="i")};
{_emit(excl, "run", "v", f"out[{phys.format(i='i')}]", "        ")}    }}
}}

extern "C" void solve({sig}) {{
    scan_serial<<<1, 1>>>({names});
}}
"""
    totals_scan = """
// Exclusive scan of the tile totals by one block, in chunks of TILE with a running carry.
__global__ void scan_totals(const E* totals, E* offsets, int count) {
    __shared__ E sh[TILE];
    E carry = e_identity();
    for (int base = 0; base < count; base += TILE) {
        int k = base + threadIdx.x;
        hs_inclusive(sh, k < count ? totals[k] : e_identity(), TILE);
        if (k < count) offsets[k] = threadIdx.x > 0 ? e_merge(carry, sh[threadIdx.x - 1]) : carry;
        E chunk = sh[TILE - 1];
        __syncthreads();
        carry = e_merge(carry, chunk);
    }
}
"""
    hs = head + "\n#define TILE 256\n" + totals_scan + f"""
// Pass 1: Hillis-Steele inclusive scan of each tile in shared memory; tile totals on the side.
__global__ void scan_tiles({sig_r}, E* tmp, E* totals) {{
    __shared__ E sh[TILE];
    int i = blockIdx.x * TILE + threadIdx.x;
    E incl = hs_inclusive(sh, i < n ? {load.format(i="i")} : e_identity(), TILE);
    if (i < n) tmp[i] = incl;
    if (threadIdx.x == TILE - 1) totals[blockIdx.x] = sh[TILE - 1];
}}

// Pass 3: prepend each tile's offset.
__global__ void scan_fixup({sig_r}, const E* tmp, const E* offsets) {{
    int i = blockIdx.x * TILE + threadIdx.x;
    if (i >= n) return;
    E off = offsets[blockIdx.x];
{f'''    E prev = threadIdx.x == 0 ? off : e_merge(off, tmp[i - 1]);
    out[{phys.format(i="i")}] = e_excl(prev, {load.format(i="i")});''' if excl else
 f'''    out[{phys.format(i="i")}] = e_out(e_merge(off, tmp[i]));'''}
}}

extern "C" void solve({sig}) {{
    int tiles = (n + TILE - 1) / TILE;
    E* tmp = nullptr;
    E* totals = nullptr;
    E* offsets = nullptr;
    cudaMalloc(&tmp, sizeof(E) * n);
    cudaMalloc(&totals, sizeof(E) * tiles);
    cudaMalloc(&offsets, sizeof(E) * tiles);
    scan_tiles<<<tiles, TILE>>>({names}, tmp, totals);
    scan_totals<<<1, TILE>>>(totals, offsets, tiles);
    scan_fixup<<<tiles, TILE>>>({names}, tmp, offsets);
    cudaFree(tmp);
    cudaFree(totals);
    cudaFree(offsets);
}}
"""
    warp = head + "\n#define TILE 256\n#define WARPS (TILE / 32)\n" + totals_scan + f"""
// Pass 1: ordered fold of each tile (warp shuffles, then the warp totals in order).
__global__ void tile_totals({sig_r}, E* totals) {{
    __shared__ E ws[WARPS];
    int i = blockIdx.x * TILE + threadIdx.x;
    E v = i < n ? {load.format(i="i")} : e_identity();
    for (int off = 1; off < 32; off <<= 1) {{
        E other = e_shfl_down(v, off);
        if ((threadIdx.x & 31) + off < 32) v = e_merge(v, other);
    }}
    if ((threadIdx.x & 31) == 0) ws[threadIdx.x >> 5] = v;
    __syncthreads();
    if (threadIdx.x == 0) {{
        E t = ws[0];
        for (int w = 1; w < WARPS; ++w) t = e_merge(t, ws[w]);
        totals[blockIdx.x] = t;
    }}
}}

// Pass 3: rescan each tile with warp shuffles (inclusive Kogge-Stone per warp) and the tile offset.
__global__ void scan_apply({sig_r}, const E* offsets) {{
    __shared__ E ws[WARPS];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int i = blockIdx.x * TILE + threadIdx.x;
    E v = i < n ? {load.format(i="i")} : e_identity();
    E mine = v;
    for (int off = 1; off < 32; off <<= 1) {{
        E up = e_shfl_up(v, off);
        if (lane >= off) v = e_merge(up, v);
    }}
    E before = e_shfl_up(v, 1);
    if (lane == 31) ws[warp] = v;
    __syncthreads();
    E prefix = offsets[blockIdx.x];
    for (int w = 0; w < warp; ++w) prefix = e_merge(prefix, ws[w]);
    if (i < n) {{
{f'''        E prev = lane == 0 ? prefix : e_merge(prefix, before);
        out[{phys.format(i="i")}] = e_excl(prev, mine);''' if excl else
 f'''        (void)before;
        (void)mine;
        out[{phys.format(i="i")}] = e_out(e_merge(prefix, v));'''}
    }}
}}

extern "C" void solve({sig}) {{
    int tiles = (n + TILE - 1) / TILE;
    E* totals = nullptr;
    E* offsets = nullptr;
    cudaMalloc(&totals, sizeof(E) * tiles);
    cudaMalloc(&offsets, sizeof(E) * tiles);
    tile_totals<<<tiles, TILE>>>({names}, totals);
    scan_totals<<<1, TILE>>>(totals, offsets, tiles);
    scan_apply<<<tiles, TILE>>>({names}, offsets);
    cudaFree(totals);
    cudaFree(offsets);
}}
"""
    return [impl("serial", "naive", 1, serial, "a single thread scans the whole array"),
            impl("hillis_steele", "multi_pass", 2, hs,
                 "three passes: shared-memory Hillis-Steele tile scans to a temporary, scan of tile totals, fix-up"),
            impl("reduce_then_scan", "warp_shuffle", 3, warp,
                 "reduce-then-scan: ordered tile totals, scan of totals, rescan of each tile with warp shuffles "
                 "(no n-sized temporary)")]


def _chunked_block(name: str, sig_r: str, seg: str, pos: str, length: str, tile: int,
                   ld: Callable[[str], str], ph: Callable[[str], str], excl: bool, comment: str) -> str:
    """A kernel scanning one segment (row or column) per block in chunks of ``tile`` with a running carry;
    ``ld``/``ph`` give the load and the physical index of position ``pos`` in the block's segment."""
    write = (f"""            E prev = threadIdx.x > 0 ? e_merge(carry, sh[threadIdx.x - 1]) : carry;
            out[{ph(pos)}] = e_excl(prev, mine);""" if excl else
             f"""            out[{ph(pos)}] = e_out(e_merge(carry, incl));""")
    return f"""
#define TILE {tile}

// {comment}
__global__ void {name}({sig_r}) {{
    __shared__ E sh[TILE];
    int {seg} = blockIdx.x;
    E carry = e_identity();
    for (int base = 0; base < {length}; base += TILE) {{
        int {pos} = base + threadIdx.x;
        E mine = {pos} < {length} ? {ld(pos)} : e_identity();
        E incl = hs_inclusive(sh, mine, TILE);
        if ({pos} < {length}) {{
{write}
        }}
        E chunk = sh[TILE - 1];
        __syncthreads();
        carry = e_merge(carry, chunk);
    }}
}}
"""


def _rows_impls(m: Monoid, d: CType, lay: Layout, excl: bool, params: list[P]) -> list:
    head = _elem_code(m, d, lay, acc_type(m, d, False), True)
    sig, sig_r, names = signature(params), signature(params, restrict=True), args(params)
    load, phys = _loader(m, lay)
    ld = lambda i: load.format(i=i, row="row")  # noqa: E731
    ph = lambda i: phys.format(i=i, row="row")  # noqa: E731
    thread = head + f"""
// One thread per row scans it sequentially.
__global__ void scan_row_thread({sig_r}) {{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    E run = e_identity();
    for (int j = 0; j < cols; ++j) {{
        E v = {ld("j")};
{_emit(excl, "run", "v", f"out[{ph('j')}]", "        ")}    }}
}}

extern "C" void solve({sig}) {{
    scan_row_thread<<<(rows + 63) / 64, 64>>>({names});
}}
"""
    block = head + _chunked_block("scan_row_block", sig_r, "row", "j", "cols", 256, ld, ph, excl,
                                  "One block per row: chunks of TILE elements scanned in shared memory (Hillis-Steele)"
                                  " with a carry.") + f"""
extern "C" void solve({sig}) {{
    scan_row_block<<<rows, TILE>>>({names});
}}
"""
    warp = head + f"""
#define WARPS 4

// One warp per row: 32-element chunks scanned with __shfl_up_sync, carry broadcast from lane 31.
__global__ void scan_row_warp({sig_r}) {{
    int lane = threadIdx.x & 31;
    int row = blockIdx.x * WARPS + (threadIdx.x >> 5);
    if (row >= rows) return;
    E carry = e_identity();
    for (int base = 0; base < cols; base += 32) {{
        int j = base + lane;
        E mine = j < cols ? {ld("j")} : e_identity();
        E v = mine;
        for (int off = 1; off < 32; off <<= 1) {{
            E up = e_shfl_up(v, off);
            if (lane >= off) v = e_merge(up, v);
        }}
        E before = e_shfl_up(v, 1);
        if (j < cols) {{
{f'''            E prev = lane == 0 ? carry : e_merge(carry, before);
            out[{ph("j")}] = e_excl(prev, mine);''' if excl else
 f'''            (void)before;
            out[{ph("j")}] = e_out(e_merge(carry, v));'''}
        }}
        carry = e_merge(carry, e_shfl_idx(v, 31));
    }}
}}

extern "C" void solve({sig}) {{
    scan_row_warp<<<(rows + WARPS - 1) / WARPS, WARPS * 32>>>({names});
}}
"""
    return [impl("thread_per_row", "naive", 1, thread, "one thread per row, sequential (uncoalesced across threads)"),
            impl("block_per_row", "shared_tiled", 2, block,
                 "one block per row, 256-element Hillis-Steele chunks in shared memory with a running carry"),
            impl("warp_per_row", "warp_shuffle", 3, warp,
                 "one warp per row, 32-element __shfl_up_sync scans with the carry broadcast from lane 31")]


def _cols_impls(m: Monoid, d: CType, lay: Layout, excl: bool, params: list[P]) -> list:
    head = _elem_code(m, d, lay, acc_type(m, d, False), True)
    sig, sig_r, names = signature(params), signature(params, restrict=True), args(params)
    load, phys = _loader(m, lay)
    ld = lambda i: load.format(i=i, col="col")  # noqa: E731
    ph = lambda i: phys.format(i=i, col="col")  # noqa: E731
    block = head + _chunked_block("scan_col_block", sig_r, "col", "r", "rows", 128, ld, ph, excl,
                                  "One block per column: chunks of TILE rows scanned in shared memory (strided, "
                                  "uncoalesced loads).") + f"""
extern "C" void solve({sig}) {{
    scan_col_block<<<cols, TILE>>>({names});
}}
"""
    thread = head + f"""
// One thread per column walks down it; neighbouring threads touch neighbouring addresses.
__global__ void scan_col_thread({sig_r}) {{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (col >= cols) return;
    E run = e_identity();
    for (int r = 0; r < rows; ++r) {{
        E v = {ld("r")};
{_emit(excl, "run", "v", f"out[{ph('r')}]", "        ")}    }}
}}

extern "C" void solve({sig}) {{
    scan_col_thread<<<(cols + 127) / 128, 128>>>({names});
}}
"""
    tiled = head + f"""
#define TX 32
#define TY 8

// 32 columns x 8 row chunks per block: each (chunk, column) is folded, the 8 chunk totals of a column
// are combined in order through shared memory, then each chunk is rescanned from its offset.
__global__ void scan_col_tiled({sig_r}) {{
    __shared__ E tot[TY][TX];
    int col = blockIdx.x * TX + threadIdx.x;
    int chunk = (rows + TY - 1) / TY;
    int r0 = threadIdx.y * chunk;
    int r1 = r0 + chunk < rows ? r0 + chunk : rows;
    E t = e_identity();
    if (col < cols) {{
        for (int r = r0; r < r1; ++r) t = e_merge(t, {ld("r")});
    }}
    tot[threadIdx.y][threadIdx.x] = t;
    __syncthreads();
    if (col >= cols) return;
    E run = e_identity();
    for (int y = 0; y < (int)threadIdx.y; ++y) run = e_merge(run, tot[y][threadIdx.x]);
    for (int r = r0; r < r1; ++r) {{
        E v = {ld("r")};
{_emit(excl, "run", "v", f"out[{ph('r')}]", "        ")}    }}
}}

extern "C" void solve({sig}) {{
    dim3 block(TX, TY);
    scan_col_tiled<<<(cols + TX - 1) / TX, block>>>({names});
}}
"""
    return [impl("block_per_column", "shared_tiled", 1, block,
                 "one block per column, Hillis-Steele chunks; loads are strided by the row length (uncoalesced)"),
            impl("thread_per_column", "naive", 2, thread,
                 "one thread per column, sequential; coalesced across threads but little parallelism"),
            impl("tiled_32x8", "coalesced", 3, tiled,
                 "32 columns x 8 row chunks per block: chunk folds, ordered offsets in shared memory, rescan")]


_LAYOUT_TEXT = {
    "full": "x is a contiguous array of n elements; out[i] gets the scan at position i.",
    "rows": "x is a row-major rows x cols matrix (element (i, j) at x[i * cols + j]); every row is scanned "
            "independently along j, results in the same layout in out.",
    "cols": "x is a row-major rows x cols matrix (element (i, j) at x[i * cols + j]); every column is scanned "
            "independently along i (down the column), results in the same layout in out.",
    "segflags": "x is a contiguous array of n elements and flags an int array of n head flags: a new segment "
                "starts at every position i with flags[i] != 0 (position 0 always starts one); the scan restarts "
                "at every segment start, so no value crosses a segment boundary.",
}


def build(m: Monoid, dtype: str, lay: Layout, excl: bool, family_seed: int) -> GeneratedTask:
    d = DTYPES[dtype]
    out_t = d.c if m.out == "T" else "int"
    size = "n" if lay.schedule == "full" else "rows * cols"
    params = [param("x", d.c, "in", size, input_init(m, d))]
    if lay.seg:
        params.append(param("flags", "int", "in", "n", "custom"))
    params.append(param("out", out_t, "out", size))
    params += [param("n", "int", "scalar")] if lay.schedule == "full" else \
        [param("rows", "int", "scalar"), param("cols", "int", "scalar")]
    if m.uses_thr:
        params.append(param("thr", d.c, "scalar"))
    dims = ({"n": 1001}, {"n": 65539}) if lay.schedule == "full" else \
        ({"rows": 37, "cols": 301}, {"rows": 130, "cols": 517}) if lay.schedule == "rows" else \
        ({"rows": 301, "cols": 37}, {"rows": 517, "cols": 130})
    configs = [{"name": name, **dim, **({"thr": 0} if m.uses_thr else {})}
               for name, dim in zip(("small", "large"), dims, strict=True)]
    # the [[timing]] size (H100 scale, ~16M elements, estimated only): 4096 long rows (a warp or block
    # per row has work; a thread per row is latency-bound), tens of thousands of columns for the
    # per-column strategies
    timing = {"full": {"n": (1 << 24) + 3}, "rows": {"rows": 4096, "cols": 4096},
              "cols": {"rows": 512, "cols": 32768}}[lay.schedule]
    timing = {**timing, **({"thr": 0} if m.uses_thr else {})}
    impls = {"full": _full_impls, "rows": _rows_impls, "cols": _cols_impls}[lay.schedule](m, d, lay, excl, params)
    tolerance = tol_for(d, "exact" if m.exact else "accum")
    kind = "exclusive" if excl else "inclusive"
    direction = ("backward: position i combines the elements at positions i..end (right to left)" if lay.reverse
                 else "forward: position i combines the elements from the start up to i")
    what = (f"An {kind} scan, {direction}"
            + (", EXCLUDING the element at i itself (the first position of each scan gets the identity's value)"
               if excl else ", including the element at i") + ".")
    op_text = f"The operator accumulates {m.doc}" + (f" (thr is a {d.c} scalar)" if m.uses_thr else "")
    out_text = (" out at a position is the accumulated value over the elements scanned so far; an empty prefix "
                "(exclusive scans) gives the empty accumulation: 0 for sums, counts, |x| max and xor, 1 for "
                "products, +inf (INT_MAX for int) for min, -inf (INT_MIN for int) for max, -inf for log-sum-exp.")
    tol_text = ("Outputs are compared exactly." if m.exact or not d.floating else
                f"Any association order is allowed; outputs are compared with the reference (accumulated in "
                f"double) by |got - ref| <= {tolerance['atol']:g} * max|ref| + {tolerance['rtol']:g} * |ref|.")
    layout_key = "segflags" if lay.seg else lay.schedule
    description = (f"{_LAYOUT_TEXT[layout_key]} Elements are {d.c}; out is {out_t}, uninitialised on entry, and "
                   f"every element must be written. {what} {op_text}.{out_text} {tol_text} Sizes are arbitrary "
                   f"(not multiples of the block size); temporaries may be cudaMalloc'd inside solve; blocks must "
                   f"not spin-wait on each other (pass block totals between kernel launches).")
    task_id = f"scan_{d.tag}_{m.name}_{'ex' if excl else 'in'}_{lay.tag}"
    return make_task(
        family=FAMILY, family_seed=family_seed, task_id=task_id, category="scan",
        title=f"{kind.capitalize()} {m.name} scan, {lay.tag} ({d.c})", description=description,
        reference=_reference(m, d, lay, excl, params), impls=impls, params=params, configs=configs,
        metrics={"flops": size, "bytes": f"{d.size + (4 if out_t == 'int' else d.size) + (4 if lay.seg else 0)} "
                                         f"* ({size})"},
        tolerance=tolerance, timing=[timing],
        variant={"op": m.name, "dtype": dtype, "layout": layout_key, "reverse": lay.reverse, "exclusive": excl},
        tags=["scan", "prefix"] + (["segmented"] if lay.seg else []))


def _build_with_files(m: Monoid, dtype: str, lay: Layout, excl: bool, seed: int) -> GeneratedTask:
    task = build(m, dtype, lay, excl, seed)
    if lay.seg:
        task.extra_files["inputs.py"] = _FLAGS_PY
    return task


@family(FAMILY, kind="c2cuda", category="scan")
def generate(seed: int) -> Iterator[GeneratedTask]:
    """Inclusive/exclusive scans (sum, min, max, product, squares, |x|, log-sum-exp, xor, count-if) forward
    and backward over arrays, rows and columns, plus head-flag segmented scans; int/float/double."""
    for dtype in ("int", "float", "double"):
        for name in OPS["i" if dtype == "int" else "f"]:
            for lay in LAYOUTS:
                for excl in (False, True):
                    yield _build_with_files(MONOIDS[name], dtype, lay, excl, seed)
