"""C→CUDA sorting-network family: per-segment sorts of power-of-two segments (bitonic and odd-even
networks), key-only and key-value, ascending/descending, in place or out of place, argsort and top-k.

Why one model: every task sorts S independent segments of L = 2^m elements that live somewhere in
memory (one whole array, consecutive rows, or the columns of a row-major matrix). Kernels work in an
*index space* i in [0, S*L) (segment i / L, position i % L) and map it to memory with one OFF(i)
macro, so one set of network kernels serves every layout:

* ``naive`` — the bitonic network over global memory, one launch per (k, j) step;
* ``shared_tiled`` — 1024-element tiles sorted in shared memory in one launch (plus global merge steps
  for segments longer than a tile);
* ``warp_shuffle`` — one element per thread in registers: partners closer than 32 come from
  ``__shfl_xor_sync``, farther ones through shared memory.

Short segments (L <= 32) get their own task group with different kernels (insertion sort per thread,
odd-even transposition in shared memory, shuffle-only bitonic), and top-k uses a per-thread selection
as its naive baseline.

Key-value ties are broken by the value (values are distinct), and argsort/top-k ties by the index,
so every task has exactly one correct output and can be compared exactly.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from veriforge.cudaperf.dataset.family import FamilyError, GeneratedTask, Impl, family

from ._params import ParamList as _P

__all__ = ["generate_sort"]

_DT: dict[str, dict[str, Any]] = {
    "int": {"init": ("randint(-20, 20)", "randint(-1000000000, 1000000000)"), "size": 4},
    "unsigned": {"init": ("randint(0, 40)", "randint(0, 4000000000)"), "size": 4},
    "float": {"init": ("uniform(-1, 1)", "normal(0, 100)"), "size": 4},
    "double": {"init": ("uniform(-1, 1)", "normal(0, 100)"), "size": 8},
}

# layout -> (scalars, S expr, L expr, OFF(i) macro, sizes for (small, large))
_LAYOUTS: dict[str, dict[str, Any]] = {
    "whole": {"dims": ("n",), "S": "1", "L": "n", "off": "(i)", "total": "n",
              "configs": ({"n": 64}, {"n": 4096})},
    "rows": {"dims": ("segs", "seg_len"), "S": "segs", "L": "seg_len", "off": "(i)", "total": "segs * seg_len",
             "configs": ({"segs": 5, "seg_len": 16}, {"segs": 3, "seg_len": 2048})},
    "cols": {"dims": ("rows", "cols"), "S": "cols", "L": "rows",
             "off": "((long long)((i) & (L - 1)) * ncols + (i) / L)", "total": "rows * cols",
             "configs": ({"rows": 32, "cols": 7}, {"rows": 2048, "cols": 3})},
}


#: [[timing]] sizes: 8192 segments of 2048 (rows, columns: 16M elements), 512K segments of 32 (short),
#: 32K segments of 512 with k = 17 (top-k). A whole-array sort is one segment by definition: 2^16 keys
#: (136 network steps, each a distinct launch the estimate analyses — at most 256 are, and 2^20 keys took
#: ~8 s to estimate; the global-memory network is launch-bound at any size).
_TIMING: dict[str, dict[str, int]] = {
    "whole": {"n": 1 << 16},
    "rows": {"segs": 8192, "seg_len": 2048},
    "cols": {"rows": 2048, "cols": 8192},
    "short": {"segs": 1 << 19, "seg_len": 32},
    "topk": {"segs": 32768, "seg_len": 512, "k": 17},
}


def _stable(text: str) -> int:
    return zlib.crc32(text.encode()) & 0x7FFFFFFF


@dataclass(frozen=True)
class _Var:
    mode: str  # "inplace" | "copy" | "argsort" | "short" | "topk"
    layout: str
    dt: str
    desc: bool
    kv: bool

    @property
    def tid(self) -> str:
        d = "desc" if self.desc else "asc"
        if self.mode == "argsort":
            return f"so_argsort_{self.layout}_{d}_{self.dt}"
        if self.mode == "topk":
            return f"so_topk_{'largest' if self.desc else 'smallest'}_{'kv' if self.kv else 'keys'}_{self.dt}"
        if self.mode == "short":
            return f"so_short_{'kv' if self.kv else 'keys'}_{d}_{self.dt}"
        return f"so_{self.mode}_{self.layout}_{'kv' if self.kv else 'keys'}_{d}_{self.dt}"

    @property
    def pairs(self) -> bool:
        """Whether the network carries a value next to each key (kv, argsort and top-k indices)."""
        return self.kv or self.mode in ("argsort", "topk")



def _params(v: _Var) -> _P:
    lay = _LAYOUTS["rows" if v.mode in ("short", "topk") else v.layout]
    total = lay["total"]
    p = _P()
    key_init = _DT[v.dt]["init"][1]
    if v.mode in ("inplace", "short"):
        p.ptr("keys", v.dt, "inout", total, key_init)
        if v.kv:
            p.ptr("vals", "int", "inout", total, f"permutation({total})")
    elif v.mode == "copy":
        p.ptr("keys_in", v.dt, "in", total, key_init)
        if v.kv:
            p.ptr("vals_in", "int", "in", total, f"permutation({total})")
        p.ptr("keys_out", v.dt, "out", total)
        if v.kv:
            p.ptr("vals_out", "int", "out", total)
    elif v.mode == "argsort":
        p.ptr("keys", v.dt, "in", total, key_init)
        p.ptr("idx", "int", "out", total)
    else:  # topk
        p.ptr("keys", v.dt, "in", total, key_init)
        p.ptr("out_keys", v.dt, "out", "segs * k")
        if v.kv:
            p.ptr("out_idx", "int", "out", "segs * k")
    for d in lay["dims"]:
        p.scalar(d)
    if v.mode == "topk":
        p.scalar("k")
    return p


def _before(v: _Var) -> str:
    op = ">" if v.desc else "<"
    if v.pairs:
        return f"#define BEFORE(ka, va, kb, vb) ((ka) {op} (kb) || ((ka) == (kb) && (va) < (vb)))\n"
    return f"#define BEFORE(ka, va, kb, vb) ((ka) {op} (kb))\n"


def _geometry(v: _Var) -> tuple[str, str, str]:
    """(C statements defining S and L on the host, the OFF(i) macro, the ncols argument)."""
    lay = _LAYOUTS["rows" if v.mode in ("short", "topk") else v.layout]
    host = f"int S = {lay['S']}, L = {lay['L']};"
    ncols = "cols" if lay is _LAYOUTS["cols"] else "0"
    return host, f"#define OFF(i) {lay['off']}\n", ncols


# -- the serial reference ----------------------------------------------------------------------------
def _ref_sort(v: _Var, kw: Callable[[str], str], vw: Callable[[str], str], n: str, ind: str) -> list[str]:
    """C lines sorting one segment of ``n`` elements whose key/value slots are ``kw(e)`` / ``vw(e)``.

    Ascending tasks use insertion sort, descending ones selection sort, short segments the odd-even
    transposition network: the references are deduplicated on their tokens, and a different serial
    algorithm keeps each variant's reference distinct (any correct sort is a valid reference)."""
    kt, pv = v.dt, v.pairs
    if v.mode == "short":
        before = (f"{kw('e + 1')} {'>' if v.desc else '<'} {kw('e')}"
                  + (f" || ({kw('e + 1')} == {kw('e')} && {vw('e + 1')} < {vw('e')})" if pv else ""))
        swap = [f"{kt} t = {kw('e')}; {kw('e')} = {kw('e + 1')}; {kw('e + 1')} = t;"]
        if pv:
            swap.append(f"int tv = {vw('e')}; {vw('e')} = {vw('e + 1')}; {vw('e + 1')} = tv;")
        return [ind + f"for (int phase = 0; phase < {n}; ++phase)",
                ind + f"    for (int e = phase & 1; e + 1 < {n}; e += 2)",
                ind + f"        if ({before}) {{ " + " ".join(swap) + " }"]
    if not v.desc:  # insertion sort
        later = (f"{kw('b')} > key" + (f" || ({kw('b')} == key && {vw('b')} > val)" if pv else ""))
        lines = [f"for (int a = 1; a < {n}; ++a) {{",
                 f"    {kt} key = {kw('a')};" + (f" int val = {vw('a')};" if pv else ""),
                 "    int b = a - 1;",
                 f"    while (b >= 0 && ({later})) {{",
                 f"        {kw('b + 1')} = {kw('b')};" + (f" {vw('b + 1')} = {vw('b')};" if pv else ""),
                 "        --b;",
                 "    }",
                 f"    {kw('b + 1')} = key;" + (f" {vw('b + 1')} = val;" if pv else ""),
                 "}"]
    else:  # selection sort: the largest remaining key (smallest value among equal keys) goes next
        better = (f"{kw('b')} > {kw('best')}"
                  + (f" || ({kw('b')} == {kw('best')} && {vw('b')} < {vw('best')})" if pv else ""))
        lines = [f"for (int a = 0; a < {n}; ++a) {{",
                 "    int best = a;",
                 f"    for (int b = a + 1; b < {n}; ++b)",
                 f"        if ({better}) best = b;",
                 f"    {kt} t = {kw('a')}; {kw('a')} = {kw('best')}; {kw('best')} = t;",
                 (f"    int tv = {vw('a')}; {vw('a')} = {vw('best')}; {vw('best')} = tv;" if pv else ""),
                 "}"]
    return [ind + x for x in lines if x]


def _reference(v: _Var, p: _P) -> str:
    layout = "rows" if v.mode in ("short", "topk") else v.layout
    off = {"whole": lambda e: e, "rows": lambda e: f"s * seg_len + {e}" if " " not in e else f"s * seg_len + ({e})",
           "cols": lambda e: f"({e}) * cols + s" if " " in e else f"{e} * cols + s"}[layout]
    seg_loop = {"whole": None, "rows": "for (int s = 0; s < segs; ++s) {", "cols": "for (int s = 0; s < cols; ++s) {"}
    n = {"whole": "n", "rows": "seg_len", "cols": "rows"}[layout]
    ind = "        " if seg_loop[layout] else "    "
    pre: list[str] = []
    post: list[str] = []
    head = ["#include <stdlib.h>", ""] if v.mode in ("argsort", "topk") else []
    if v.mode in ("inplace", "short"):
        def kw(e: str) -> str:
            return f"keys[{off(e)}]"

        def vw(e: str) -> str:
            return f"vals[{off(e)}]"
    elif v.mode == "copy":
        def kw(e: str) -> str:
            return f"keys_out[{off(e)}]"

        def vw(e: str) -> str:
            return f"vals_out[{off(e)}]"
        pre = [f"for (int e = 0; e < {n}; ++e) {{ keys_out[{off('e')}] = keys_in[{off('e')}];"
               + (f" vals_out[{off('e')}] = vals_in[{off('e')}];" if v.kv else "") + " }"]
    elif v.mode == "argsort":
        def kw(e: str) -> str:
            return f"w[{e}]"

        def vw(e: str) -> str:
            return f"idx[{off(e)}]"
        pre = [f"for (int e = 0; e < {n}; ++e) {{ w[e] = keys[{off('e')}]; idx[{off('e')}] = e; }}"]
    else:  # topk: sort a scratch copy, keep the first k
        def kw(e: str) -> str:
            return f"w[{e}]"

        def vw(e: str) -> str:
            return f"id[{e}]"
        pre = [f"for (int e = 0; e < {n}; ++e) {{ w[e] = keys[{off('e')}]; id[e] = e; }}"]
        post = ["for (int e = 0; e < k; ++e) { out_keys[s * k + e] = w[e];"
                + (" out_idx[s * k + e] = id[e];" if v.kv else "") + " }"]
    body = [ind + x for x in pre] + _ref_sort(v, kw, vw, n, ind) + [ind + x for x in post]
    alloc, free_ = [], []
    if v.mode in ("argsort", "topk"):
        alloc = [f"    {v.dt}* w = ({v.dt}*)malloc(sizeof({v.dt}) * (size_t){n});"]
        free_ = ["    free(w);"]
        if v.mode == "topk":
            alloc.append(f"    int* id = (int*)malloc(sizeof(int) * (size_t){n});")
            free_.append("    free(id);")
    lines = [*head, f"/* Serial reference ({v.mode}, {layout}, {'descending' if v.desc else 'ascending'}). */",
                    f"void reference({p.sig}) {{", *alloc]
    if seg_loop[layout]:
        lines += ["    " + seg_loop[layout], *body, "    }"]
    else:
        lines += body
    return "\n".join(lines + free_ + ["}", ""])


# -- shared pieces of the network kernels --------------------------------------------------------------
def _work(v: _Var) -> tuple[str, str, str, str]:
    """(host code that sets up the work arrays wk/wv, host code run after sorting, prepare kernel source,
    finish kernel source). In-place tasks sort their own buffers; the others copy into work arrays."""
    kt = v.dt
    if v.mode == "inplace":
        return (f"    {kt}* wk = keys;\n" + ("    int* wv = vals;\n" if v.kv else "    int* wv = nullptr;\n"), "",
                "", "")
    if v.mode == "copy":
        vin = "const int* vals_in, " if v.kv else ""
        prep = f"""__global__ void prepare(const {kt}* keys_in, {vin}{kt}* wk, int* wv,
                        long long total, int L, int ncols) {{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= total) return;
    long long o = OFF(i);
    wk[o] = keys_in[o];
{"    wv[o] = vals_in[o];" if v.kv else ""}
}}
"""
        setup = (f"    {kt}* wk = keys_out;\n" + ("    int* wv = vals_out;\n" if v.kv else "    int* wv = nullptr;\n")
                 + "    prepare<<<(unsigned)((total + 255) / 256), 256>>>(keys_in, "
                 + ("vals_in, " if v.kv else "") + "wk, wv, "
                   "total, L, ncols);\n")
        return setup, "", prep, ""
    # argsort and top-k: a scratch copy of the keys, indices as values
    prep = f"""__global__ void prepare(const {kt}* keys, {kt}* wk, int* wv, long long total, int L, int ncols) {{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= total) return;
    long long o = OFF(i);
    wk[o] = keys[o];
    wv[o] = (int)(i & (L - 1));
}}
"""
    if v.mode == "argsort":
        setup = (f"    {kt}* wk = nullptr;\n    cudaMalloc(&wk, sizeof({kt}) * (size_t)total);\n    int* wv = idx;\n"
                 "    prepare<<<(unsigned)((total + 255) / 256), 256>>>(keys, wk, wv, total, L, ncols);\n")
        return setup, "    cudaFree(wk);\n", prep, ""
    oidx = "int* out_idx, " if v.kv else ""
    fin = f"""__global__ void finish(const {kt}* wk, const int* wv, {kt}* out_keys, {oidx}int segs,
                       int L, int k) {{
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= (long long)segs * k) return;
    long long s = t / k, r = t % k;
    out_keys[t] = wk[s * L + r];
{"    out_idx[t] = wv[s * L + r];" if v.kv else ""}
}}
"""
    setup = (f"    {kt}* wk = nullptr;\n    int* wv = nullptr;\n    cudaMalloc(&wk, sizeof({kt}) * (size_t)total);\n"
             "    cudaMalloc(&wv, sizeof(int) * (size_t)total);\n"
             "    prepare<<<(unsigned)((total + 255) / 256), 256>>>(keys, wk, wv, total, L, ncols);\n")
    after = (f"    finish<<<(unsigned)(((long long)segs * k + 255) / 256), 256>>>(wk, wv, out_keys, "
             f"{'out_idx, ' if v.kv else ''}segs, L, k);\n    cudaFree(wk);\n    cudaFree(wv);\n")
    return setup, after, prep, fin


def _global_step(v: _Var) -> str:
    val_load = "int va = wv[oa], vb = wv[ob];" if v.pairs else "int va = 0, vb = 0;"
    val_swap = " wv[oa] = vb; wv[ob] = va;" if v.pairs else ""
    return f"""// One compare-exchange of the bitonic network over global memory: element i and its partner i ^ j
// (same segment, since j < L); the lower index of each pair acts. (e & k) == 0 sorts the pair forward.
__global__ void step_global({v.dt}* wk, int* wv, long long total, int L, int ncols, int j, int k) {{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long p = i ^ j;
    if (i >= total || p <= i || p >= total) return;
    long long oa = OFF(i), ob = OFF(p);
    {v.dt} ka = wk[oa], kb = wk[ob];
    {val_load}
    bool forward = ((i & (L - 1)) & k) == 0;
    bool swap = forward ? BEFORE(kb, vb, ka, va) : BEFORE(ka, va, kb, vb);
    if (swap) {{ wk[oa] = kb; wk[ob] = ka;{val_swap} }}
}}
"""


def _solve(v: _Var, p: _P, body: str) -> str:
    host, _, ncols = _geometry(v)
    setup, after, _, _ = _work(v)
    unused = "" if v.pairs else "    (void)wv;\n"
    return f"""extern "C" void solve({p.sig}) {{
    {host}
    if (S <= 0 || L < 1) return;
    long long total = (long long)S * L;
    int ncols = {ncols};
{setup}{unused}{body}{after}}}
"""


def _naive(v: _Var, p: _P) -> str:
    _, off, _ = _geometry(v)
    _, _, prep, fin = _work(v)
    body = """    unsigned blocks = (unsigned)((total + 255) / 256);
    for (int k = 2; k <= L; k <<= 1)
        for (int j = k >> 1; j > 0; j >>= 1)
            step_global<<<blocks, 256>>>(wk, wv, total, L, ncols, j, k);
"""
    return f"""// Textbook bitonic sort of every segment at once: one launch per network step (k, j) over global
// memory, log2(L) * (log2(L) + 1) / 2 launches, each thread reading and writing global memory.
{_before(v)}{off}
{prep}{fin}{_global_step(v)}
{_solve(v, p, body)}"""


def _shared(v: _Var, p: _P) -> str:
    _, off, _ = _geometry(v)
    _, _, prep, fin = _work(v)
    sv = "    __shared__ int sv[TILE];\n" if v.pairs else ""
    ldv = " sv[t] = wv[OFF(gi)];" if v.pairs else ""
    stv = " wv[OFF(gi)] = sv[t];" if v.pairs else ""
    vv = ("int va = sv[lo], vb = sv[hi];", " sv[lo] = vb; sv[hi] = va;") if v.pairs else ("int va = 0, vb = 0;", "")
    tile_fn = f"""__device__ void tile_steps({v.dt}* sk, int* sv, long long base, long long total, int L, int k,
                           int jstart) {{
    for (int j = jstart; j > 0; j >>= 1) {{
        int q = threadIdx.x;
        int lo = 2 * j * (q / j) + (q % j), hi = lo + j;
        if (base + hi < total) {{
            {v.dt} ka = sk[lo], kb = sk[hi];
            {vv[0]}
            bool forward = (((base + lo) & (L - 1)) & k) == 0;
            bool swap = forward ? BEFORE(kb, vb, ka, va) : BEFORE(ka, va, kb, vb);
            if (swap) {{ sk[lo] = kb; sk[hi] = ka;{vv[1]} }}
        }}
        __syncthreads();
    }}
}}
"""
    if not v.pairs:
        tile_fn = tile_fn.replace(", int* sv,", ",")
    sv_arg = "sv, " if v.pairs else ""
    kern = f"""__global__ void sort_tile({v.dt}* wk, int* wv, long long total, int L, int ncols, int kmax,
                          int kfixed) {{
    __shared__ {v.dt} sk[TILE];
{sv}    long long base = (long long)blockIdx.x * TILE;
    for (int t = threadIdx.x; t < TILE; t += blockDim.x) {{
        long long gi = base + t;
        if (gi < total) {{ sk[t] = wk[OFF(gi)];{ldv} }}
    }}
    __syncthreads();
    if (kfixed == 0) {{
        for (int k = 2; k <= kmax; k <<= 1) tile_steps(sk, {sv_arg}base, total, L, k, k >> 1);
    }} else {{
        tile_steps(sk, {sv_arg}base, total, L, kfixed, TILE / 2);
    }}
    for (int t = threadIdx.x; t < TILE; t += blockDim.x) {{
        long long gi = base + t;
        if (gi < total) {{ wk[OFF(gi)] = sk[t];{stv} }}
    }}
}}
"""
    body = """    unsigned tiles = (unsigned)((total + TILE - 1) / TILE);
    int kmax = L < TILE ? L : TILE;
    sort_tile<<<tiles, TILE / 2>>>(wk, wv, total, L, ncols, kmax, 0);
    for (int k = 2 * TILE; k <= L; k <<= 1) {
        for (int j = k >> 1; j >= TILE; j >>= 1)
            step_global<<<(unsigned)((total + 255) / 256), 256>>>(wk, wv, total, L, ncols, j, k);
        sort_tile<<<tiles, TILE / 2>>>(wk, wv, total, L, ncols, kmax, k);
    }
"""
    return f"""// Bitonic sort with 1024-element shared-memory tiles (512 threads, one compare-exchange each per
// step). Segments of up to 1024 elements are sorted completely by ONE launch; longer segments run the
// steps with j >= 1024 as global launches and finish every merge inside the tiles.
#define TILE 1024
{_before(v)}{off}
{prep}{fin}{_global_step(v)}
{tile_fn}
{kern}
{_solve(v, p, body)}"""


def _warp(v: _Var, p: _P) -> str:
    _, off, _ = _geometry(v)
    _, _, prep, fin = _work(v)
    pv = v.pairs
    sv = "    __shared__ int sv[TILE];\n" if pv else ""
    exch_v = ("            sv[threadIdx.x] = val;\n", "            ov = sv[threadIdx.x ^ j];\n",
              "            ov = __shfl_xor_sync(0xffffffffu, val, j);\n") if pv else ("", "", "")
    kern = f"""__global__ void sort_regs({v.dt}* wk, int* wv, long long total, int L, int ncols, int kmax,
                          int kfixed) {{
    __shared__ {v.dt} sk[TILE];
{sv}    long long i = (long long)blockIdx.x * TILE + threadIdx.x;
    bool live = i < total;          // dead threads still take part in every shuffle and barrier
    int e = (int)(i & (L - 1));
    {v.dt} key = live ? wk[OFF(i)] : ({v.dt})0;
    int val = {"live ? wv[OFF(i)] : 0" if pv else "0"};
    int k0 = kfixed == 0 ? 2 : kfixed, k1 = kfixed == 0 ? kmax : kfixed;
    for (int k = k0; k <= k1; k <<= 1) {{
        for (int j = (kfixed == 0 ? k : TILE) >> 1; j > 0; j >>= 1) {{
            {v.dt} ok;
            int ov = 0;
            if (j >= 32) {{
                sk[threadIdx.x] = key;
{exch_v[0]}                __syncthreads();
                ok = sk[threadIdx.x ^ j];
{exch_v[1]}                __syncthreads();
            }} else {{
                ok = __shfl_xor_sync(0xffffffffu, key, j);
{exch_v[2]}            }}
            bool first = ((e & k) == 0) == ((e & j) == 0);   // this slot keeps the earlier of the pair
            bool take = first ? BEFORE(ok, ov, key, val) : BEFORE(key, val, ok, ov);
            if (take) {{ key = ok; val = ov; }}
        }}
    }}
    if (live) {{
        wk[OFF(i)] = key;
{"        wv[OFF(i)] = val;" if pv else "        (void)val;"}
    }}
}}
"""
    body = """    unsigned tiles = (unsigned)((total + TILE - 1) / TILE);
    int kmax = L < TILE ? L : TILE;
    sort_regs<<<tiles, TILE>>>(wk, wv, total, L, ncols, kmax, 0);
    for (int k = 2 * TILE; k <= L; k <<= 1) {
        for (int j = k >> 1; j >= TILE; j >>= 1)
            step_global<<<(unsigned)((total + 255) / 256), 256>>>(wk, wv, total, L, ncols, j, k);
        sort_regs<<<tiles, TILE>>>(wk, wv, total, L, ncols, kmax, k);
    }
"""
    return f"""// Register-resident bitonic sort: each of 1024 threads holds one element. Partners closer than 32
// lanes arrive with __shfl_xor_sync (no memory traffic), 32..512 apart through shared memory, and for
// segments longer than 1024 the steps with j >= 1024 run as global launches between tile passes.
#define TILE 1024
{_before(v)}{off}
{prep}{fin}{_global_step(v)}
{kern}
{_solve(v, p, body)}"""


# -- short segments (L <= 32, rows, in place) ----------------------------------------------------------
def _short_impls(v: _Var, p: _P) -> list[Impl]:
    kv = v.kv
    bef = _before(v)
    naive = f"""// One thread per segment: insertion sort straight in global memory. Lanes walk different segments,
// so accesses do not coalesce, and each thread does O(L^2) work serially.
{bef}
__global__ void sort_insertion({p.sig}) {{
    int s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= segs) return;
    {v.dt}* kk = keys + (long long)s * seg_len;
{"    int* vv = vals + (long long)s * seg_len;" if kv else ""}
    for (int a = 1; a < seg_len; ++a) {{
        {v.dt} key = kk[a];
        int val = {"vv[a]" if kv else "0"};
        int b = a - 1;
        while (b >= 0 && BEFORE(key, val, kk[b], {"vv[b]" if kv else "0"})) {{
            kk[b + 1] = kk[b];
{"            vv[b + 1] = vv[b];" if kv else ""}
            --b;
        }}
        kk[b + 1] = key;
{"        vv[b + 1] = val;" if kv else "        (void)val;"}
    }}
}}

extern "C" void solve({p.sig}) {{
    if (segs <= 0 || seg_len < 2) return;
    sort_insertion<<<(segs + 127) / 128, 128>>>({", ".join(x.split()[-1] for x in p.parts)});
}}
"""
    shared = f"""// Odd-even transposition sort in shared memory: 256 threads hold 256 / L whole segments, one element
// each; L alternating phases compare neighbours (even pairs, then odd pairs) with a barrier between.
{bef}
#define BS 256

__global__ void sort_oddeven({p.sig}) {{
    __shared__ {v.dt} sk[BS];
{"    __shared__ int sv[BS];" if kv else ""}
    long long total = (long long)segs * seg_len;
    long long i = (long long)blockIdx.x * BS + threadIdx.x;
    int e = (int)(i % seg_len);
    if (i < total) {{ sk[threadIdx.x] = keys[i];{" sv[threadIdx.x] = vals[i];" if kv else ""} }}
    __syncthreads();
    for (int phase = 0; phase < seg_len; ++phase) {{
        if ((e & 1) == (phase & 1) && e + 1 < seg_len && i + 1 < total) {{
            int a = threadIdx.x, b = threadIdx.x + 1;
            if (BEFORE(sk[b], {"sv[b]" if kv else "0"}, sk[a], {"sv[a]" if kv else "0"})) {{
                {v.dt} t = sk[a]; sk[a] = sk[b]; sk[b] = t;
{"                int tv = sv[a]; sv[a] = sv[b]; sv[b] = tv;" if kv else ""}
            }}
        }}
        __syncthreads();
    }}
    if (i < total) {{ keys[i] = sk[threadIdx.x];{" vals[i] = sv[threadIdx.x];" if kv else ""} }}
}}

extern "C" void solve({p.sig}) {{
    long long total = (long long)segs * seg_len;
    if (total <= 0 || seg_len < 2) return;
    sort_oddeven<<<(unsigned)((total + BS - 1) / BS), BS>>>({", ".join(x.split()[-1] for x in p.parts)});
}}
"""
    warp = f"""// Shuffle-only bitonic network: a segment of L <= 32 elements lives in L consecutive lanes, one
// element per register; every partner is within the warp, so no shared memory and no barrier.
{bef}
#define BS 256

__global__ void sort_shfl({p.sig}) {{
    long long total = (long long)segs * seg_len;
    long long i = (long long)blockIdx.x * BS + threadIdx.x;
    bool live = i < total;           // dead lanes still join the shuffles
    int e = (int)(i % seg_len);
    {v.dt} key = live ? keys[i] : ({v.dt})0;
    int val = {"live ? vals[i] : 0" if kv else "0"};
    for (int k = 2; k <= seg_len; k <<= 1) {{
        for (int j = k >> 1; j > 0; j >>= 1) {{
            {v.dt} ok = __shfl_xor_sync(0xffffffffu, key, j);
            int ov = {"__shfl_xor_sync(0xffffffffu, val, j)" if kv else "0"};
            bool first = ((e & k) == 0) == ((e & j) == 0);
            bool take = first ? BEFORE(ok, ov, key, val) : BEFORE(key, val, ok, ov);
            if (take) {{ key = ok; val = ov; }}
        }}
    }}
    if (live) {{ keys[i] = key;{" vals[i] = val;" if kv else " (void)val;"} }}
}}

extern "C" void solve({p.sig}) {{
    long long total = (long long)segs * seg_len;
    if (total <= 0 || seg_len < 2) return;
    sort_shfl<<<(unsigned)((total + BS - 1) / BS), BS>>>({", ".join(x.split()[-1] for x in p.parts)});
}}
"""
    return [Impl("insertion_per_thread", "naive", naive, 1, "one thread per segment, insertion sort in global memory"),
            Impl("odd_even_shared", "shared_tiled", shared, 2, "odd-even transposition network in shared memory"),
            Impl("bitonic_shuffle", "warp_shuffle", warp, 3, "bitonic network in registers with lane shuffles")]


def _topk_naive(v: _Var, p: _P) -> str:
    return f"""// One thread per segment, k selection passes: pass t scans the whole segment for the best element that
// comes after the previously selected (key, index) in the order. O(k * L) per thread, no extra memory.
{_before(v)}
__global__ void topk_select({p.sig}) {{
    int s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= segs) return;
    const {v.dt}* kk = keys + (long long)s * seg_len;
    {v.dt} pk = ({v.dt})0;
    int pv = -1;
    for (int t = 0; t < k; ++t) {{
        int best = -1;
        for (int e = 0; e < seg_len; ++e) {{
            if (pv >= 0 && !BEFORE(pk, pv, kk[e], e)) continue;   // already selected
            if (best < 0 || BEFORE(kk[e], e, kk[best], best)) best = e;
        }}
        out_keys[(long long)s * k + t] = kk[best];
{"        out_idx[(long long)s * k + t] = best;" if v.kv else ""}
        pk = kk[best];
        pv = best;
    }}
}}

extern "C" void solve({p.sig}) {{
    if (segs <= 0 || k <= 0) return;
    topk_select<<<(segs + 63) / 64, 64>>>({", ".join(x.split()[-1] for x in p.parts)});
}}
"""


# -- task assembly -------------------------------------------------------------------------------------
def _describe(v: _Var) -> tuple[str, str]:
    order = "descending" if v.desc else "ascending"
    lay = v.layout if v.mode not in ("short", "topk") else "rows"
    where = {"whole": "The whole array of n elements is one segment (S = 1, L = n); n is a power of two.",
             "rows": "There are S = segs segments of L = seg_len consecutive elements: segment s occupies "
                     "[s * seg_len, (s + 1) * seg_len). seg_len is a power of two.",
             "cols": "The data is a rows x cols row-major matrix and every COLUMN is a segment: segment c is "
                     "the elements at [r * cols + c] for r in [0, rows) (stride cols), S = cols, L = rows. rows is "
                     "a power of two."}[lay]
    tie = ""
    if v.kv:
        tie = " Ties between equal keys are broken by the value: the smaller value comes first (values are distinct)."
    elif v.mode in ("argsort", "topk"):
        tie = " Ties between equal keys are broken by the index: the smaller index comes first."
    moves = "; `vals` moves with its key" if v.kv else ""
    topk_idx = (" and their positions within the segment (0 .. seg_len - 1) to out_idx at the same places"
                if v.kv else "")
    what = {
        "inplace": f"Sort every segment of `keys` in place, {order} by key{moves}.",
        "copy": f"Write every segment of keys_in, sorted {order} by key, to the same positions of keys_out"
                f"{'; each value of vals_in moves to vals_out with its key' if v.kv else ''}. The inputs are not "
                "modified.",
        "argsort": f"Argsort: for every segment write to idx the positions within the segment (0 .. L - 1) of "
                   f"its keys in {order} key order: idx at the segment's e-th slot = the position of the e-th key "
                   "in sorted order (a stable argsort). keys is not modified.",
        "short": f"Sort every segment of `keys` in place, {order} by key{moves}.",
        "topk": f"Top-k: for every segment s write its k {'largest' if v.desc else 'smallest'} keys in {order} "
                f"order to out_keys[s * k .. s * k + k - 1]"
                f"{topk_idx}. "
                "keys is not modified; 1 <= k <= seg_len.",
    }[v.mode]
    limits = {"short": " seg_len is a power of two between 2 and 32.",
              "topk": " seg_len is a power of two between 2 and 1024."}.get(v.mode, " Segments may be longer "
                                                                                     "than 1024 elements.")
    vals = ""
    if v.kv:
        vals = " Values are int32."
    desc = (f"{what}{tie}\n\n{where}{limits} Keys are {v.dt}{' (no NaNs)' if v.dt in ('float', 'double') else ''} "
            f"and may repeat.{vals} The result is compared exactly. A sorting network (bitonic or odd-even "
            "merge) is the intended algorithm, but any correct method is accepted; temporary device buffers "
            "may be allocated.\n")
    import textwrap

    desc = "\n".join(textwrap.fill(par, 110) if par else "" for par in desc.split("\n"))
    title = {"inplace": "In-place segmented sort", "copy": "Out-of-place segmented sort",
             "argsort": "Segmented argsort",
             "short": "In-place sort of short segments", "topk": "Per-segment top-k"}[v.mode]
    title += f" ({lay}, {'key-value' if v.kv else 'keys'}, {order}, {v.dt})"
    return title, desc + "\n"


def _task(v: _Var, seed: int) -> GeneratedTask:
    p = _params(v)
    if v.mode == "short":
        impls = _short_impls(v, p)
        shapes: tuple[dict[str, int], ...] = ({"segs": 37, "seg_len": 8}, {"segs": 300, "seg_len": 32})
    elif v.mode == "topk":
        impls = [Impl("select_per_thread", "naive", _topk_naive(v, p), 1, "k selection scans per segment thread"),
                 Impl("bitonic_shared", "shared_tiled", _shared(v, p), 2, "shared-memory bitonic sort, keep first k"),
                 Impl("bitonic_registers", "warp_shuffle", _warp(v, p), 3, "register bitonic sort, keep first k")]
        shapes = ({"segs": 5, "seg_len": 64, "k": 5}, {"segs": 40, "seg_len": 512, "k": 17})
    else:
        impls = [Impl("bitonic_global", "naive", _naive(v, p), 1, "one launch per network step, global memory"),
                 Impl("bitonic_shared", "shared_tiled", _shared(v, p), 3,
                      "1024-element shared tiles, global steps only for j >= 1024"),
                 Impl("bitonic_registers", "warp_shuffle", _warp(v, p), 4,
                      "register keys, shuffles for j < 32, shared memory up to 512")]
        shapes = _LAYOUTS[v.layout]["configs"]
    base = seed * 7919 + _stable(v.tid) % 100000 + 1  # the task seed (> 0): config seeds derive from it
    configs = []
    key = p.params[0]["name"]
    for k, shape in enumerate(shapes):
        cfg: dict[str, Any] = {"name": ("small", "large")[k], "seed": base + k, **shape}
        if k == 0:
            cfg["init"] = {key: _DT[v.dt]["init"][0]}  # few distinct keys: many ties
        configs.append(cfg)
    # the [[timing]] size (H100 scale, estimated only): many segments of the verified length
    timed = _TIMING[v.mode] if v.mode in _TIMING else _TIMING[v.layout]
    timing = {"name": "timing", "seed": base + 100, **timed}
    lay = _LAYOUTS["rows" if v.mode in ("short", "topk") else v.layout]
    total = lay["total"]
    ks = _DT[v.dt]["size"]
    elem = ks + (4 if v.pairs else 0)
    L = lay["L"]
    title, desc = _describe(v)
    return GeneratedTask(
        id=v.tid, kind="c2cuda", family="c_sort", category="sort", title=title, description=desc,
        reference=_reference(v, p), impls=impls, configs=configs,
        metrics={"flops": f"{total} * log2({L}) * (log2({L}) + 1) // 4", "bytes": f"{2 * elem} * {total}"},
        params=p.params, tolerance={}, tags=["sort", "network"],
        variant={"mode": v.mode, "layout": v.layout if v.mode not in ("short", "topk") else "rows", "dtype": v.dt,
                 "descending": v.desc, "key_value": v.kv},
        seed=base, timing=[timing])


def _variants() -> Iterator[_Var]:
    for dt in ("int", "unsigned", "float", "double"):
        for mode in ("inplace", "copy"):
            for layout in _LAYOUTS:
                for kv in (False, True):
                    for desc in (False, True):
                        yield _Var(mode, layout, dt, desc, kv)
    for dt in ("int", "unsigned", "float"):
        for desc in (False, True):
            for layout in _LAYOUTS:
                yield _Var("argsort", layout, dt, desc, False)
            for kv in (False, True):
                yield _Var("short", "rows", dt, desc, kv)
                yield _Var("topk", "rows", dt, desc, kv)


@family("c_sort", kind="c2cuda", category="sort")
def generate_sort(seed: int) -> Iterator[GeneratedTask]:
    """Segmented bitonic/odd-even sorts (whole array, rows, columns; in place or copied; keys or
    key-value; ascending or descending), argsort, short-segment sorts and top-k over int/unsigned/float
    (and double for the main sorts)."""
    if not isinstance(seed, int):
        raise FamilyError(f"c_sort: seed must be an int, not {type(seed).__name__}")
    for v in _variants():
        yield _task(v, seed)
