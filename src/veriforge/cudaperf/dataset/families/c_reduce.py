"""C→CUDA reduction family: 17 reduction operators × 10 layouts × float/double/int.

Every reduction here is a *monoid* — an accumulator struct with an identity, a ``lift`` of one
element, an associative ``merge`` and a ``final`` projection — so one description drives the serial
reference (accumulating float inputs in double), every CUDA strategy, and the scan family (which
imports :data:`MONOIDS`). Arg-reductions carry the index and merge ties to the lowest index, so
any merge order gives the reference's first occurrence; Welford's (count, mean, M2) and the
(max, scaled sum) pair of log-sum-exp make variance and logsumexp mergeable too.

A layout maps (output o, position r along the reduced axis) to an element address. Three
schedules cover them: the whole array (one output: single thread, two-pass shared tree, two-pass
warp shuffle), contiguous segments (rows, last 3-D axis, trailing axes: thread / block / warp per
output), and strided segments (columns, leading axes: block per output, thread per output —
coalesced across threads — and 32×8 tiles merging 8 partial accumulators per output in shared
memory). Quality labels follow what is coalesced on a GPU, not the strategy's name.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from veriforge.cudaperf.dataset.families._ckit import DTYPES, CType, P, args, impl, make_task, param, signature
from veriforge.cudaperf.dataset.families._ckit import tolerance as tol_for
from veriforge.cudaperf.dataset.family import GeneratedTask, family

FAMILY = "c_reduce"


@dataclass(frozen=True)
class Monoid:
    """An associative accumulator. Templates use ``{A}`` (accumulator scalar), ``{T}`` (element),
    ``{absx}`` (|x| in the element type), ``{exp}``/``{log}``/``{sqrt}`` (math functions of A),
    ``{lo}``/``{hi}`` (lowest/highest element value)."""

    name: str
    kinds: str  # "f" float/double, "i" int
    fields: tuple[tuple[str, str], ...]  # (field, "A" | "T" | "int")
    identity: str  # statements initialising a
    lift: str  # statements setting a from x (element) and r (position)
    merge: str  # statements merging b into a (a precedes b)
    final: str  # expression of a (and R, the reduced length)
    out: str  # "T" or "int"
    doc: str  # what the output is, in words
    uses_thr: bool = False
    exact: bool = False  # output independent of the merge order (min, max, counts, ...)


MONOIDS: dict[str, Monoid] = {m.name: m for m in [
    Monoid("sum", "fi", (("s", "A"),), "a.s = 0;", "a.s = x;", "a.s += b.s;", "({T})a.s", "T",
           "the sum of the elements"),
    Monoid("prod", "f", (("p", "A"),), "a.p = 1;", "a.p = x;", "a.p *= b.p;", "({T})a.p", "T",
           "the product of the elements (inputs are close to 1, so the product stays finite)"),
    Monoid("min", "fi", (("m", "T"),), "a.m = {hi};", "a.m = x;", "if (b.m < a.m) a.m = b.m;", "a.m", "T",
           "the minimum element", exact=True),
    Monoid("max", "fi", (("m", "T"),), "a.m = {lo};", "a.m = x;", "if (b.m > a.m) a.m = b.m;", "a.m", "T",
           "the maximum element", exact=True),
    Monoid("mean", "f", (("s", "A"),), "a.s = 0;", "a.s = x;", "a.s += b.s;", "({T})(a.s / ({A})R)", "T",
           "the arithmetic mean (sum divided by the number of elements reduced)"),
    Monoid("l1", "fi", (("s", "A"),), "a.s = 0;", "a.s = {absx};", "a.s += b.s;", "({T})a.s", "T",
           "the L1 norm, the sum of absolute values"),
    Monoid("l2", "f", (("s", "A"),), "a.s = 0;", "a.s = ({A})x * ({A})x;", "a.s += b.s;", "({T}){sqrt}(a.s)", "T",
           "the Euclidean (L2) norm, sqrt of the sum of squares"),
    Monoid("linf", "fi", (("m", "T"),), "a.m = 0;", "a.m = {absx};", "if (b.m > a.m) a.m = b.m;", "a.m", "T",
           "the max-norm, the largest absolute value", exact=True),
    Monoid("sumsq", "fi", (("s", "A"),), "a.s = 0;", "a.s = ({A})x * ({A})x;", "a.s += b.s;", "({T})a.s", "T",
           "the sum of squares"),
    Monoid("var", "f", (("n", "A"), ("mu", "A"), ("m2", "A")), "a.n = 0; a.mu = 0; a.m2 = 0;",
           "a.n = 1; a.mu = x; a.m2 = 0;",
           "if (b.n == 0) return a;\n    if (a.n == 0) return b;\n    {A} n = a.n + b.n;\n"
           "    {A} d = b.mu - a.mu;\n    a.mu = a.mu + d * (b.n / n);\n"
           "    a.m2 = a.m2 + b.m2 + d * d * (a.n * b.n / n);\n    a.n = n;",
           "({T})(a.m2 / a.n)", "T",
           "the population variance (mean squared deviation from the mean, divisor = count); mergeable "
           "with Welford/Chan's parallel update"),
    Monoid("lse", "f", (("m", "A"), ("s", "A")), "a.m = -INFINITY; a.s = 0;", "a.m = x; a.s = 1;",
           "if (b.s == 0) return a;\n    if (a.s == 0) return b;\n    if (b.m > a.m) {{\n"
           "        a.s = a.s * {exp}(a.m - b.m) + b.s;\n        a.m = b.m;\n    }} else {{\n"
           "        a.s = a.s + b.s * {exp}(b.m - a.m);\n    }}",
           "({T})(a.m + {log}(a.s))", "T", "log(sum(exp(x))), computed stably (running max and scaled sum)"),
    Monoid("range", "fi", (("lo", "T"), ("hi", "T")), "a.lo = {hi}; a.hi = {lo};", "a.lo = x; a.hi = x;",
           "if (b.lo < a.lo) a.lo = b.lo;\n    if (b.hi > a.hi) a.hi = b.hi;", "a.hi - a.lo", "T",
           "max - min of the elements", exact=True),
    Monoid("argmax", "fi", (("v", "T"), ("i", "int")), "a.v = {lo}; a.i = INT_MAX;", "a.v = x; a.i = r;",
           "if (b.v > a.v || (b.v == a.v && b.i < a.i)) a = b;", "a.i", "int",
           "the position (0-based, along the reduced axis) of the maximum; ties go to the LOWEST position",
           exact=True),
    Monoid("argmin", "fi", (("v", "T"), ("i", "int")), "a.v = {hi}; a.i = INT_MAX;", "a.v = x; a.i = r;",
           "if (b.v < a.v || (b.v == a.v && b.i < a.i)) a = b;", "a.i", "int",
           "the position (0-based, along the reduced axis) of the minimum; ties go to the LOWEST position",
           exact=True),
    Monoid("countgt", "fi", (("c", "int"),), "a.c = 0;", "a.c = x > thr ? 1 : 0;", "a.c += b.c;", "a.c", "int",
           "the number of elements strictly greater than the scalar thr", uses_thr=True, exact=True),
    Monoid("any", "fi", (("f", "int"),), "a.f = 0;", "a.f = x > thr ? 1 : 0;", "a.f |= b.f;", "a.f", "int",
           "1 if at least one element is strictly greater than the scalar thr, else 0", uses_thr=True, exact=True),
    Monoid("all", "fi", (("f", "int"),), "a.f = 1;", "a.f = x > thr ? 1 : 0;", "a.f &= b.f;", "a.f", "int",
           "1 if every element is strictly greater than the scalar thr, else 0", uses_thr=True, exact=True),
    Monoid("xor", "i", (("v", "int"),), "a.v = 0;", "a.v = x;", "a.v ^= b.v;", "a.v", "int",
           "the bitwise XOR of all elements", exact=True),
]}


def monoid_code(m: Monoid, d: CType, acc: str, qual: str) -> str:
    """C for the accumulator: ``Acc`` struct, ``acc_identity``, ``acc_lift``, ``acc_merge``, ``acc_final``."""
    absx = f"{d.fn('fabs')}(x)" if d.floating else "(x < 0 ? -x : x)"
    am = DTYPES[acc] if acc in DTYPES else d
    fmt = {"A": acc, "T": d.c, "absx": absx, "exp": am.fn("exp"), "log": am.fn("log"), "sqrt": am.fn("sqrt"),
           "lo": d.lowest, "hi": d.highest}
    types = {"A": acc, "T": d.c, "int": "int"}
    fields = "".join(f" {types[t]} {f};" for f, t in m.fields)
    thr = f", {d.c} thr" if m.uses_thr else ""
    out = d.c if m.out == "T" else "int"
    struct = f"struct Acc {{{fields} }};" if "__device__" in qual else f"typedef struct {{{fields} }} Acc;"
    return (f"{struct}\n\n"
            f"{qual}Acc acc_identity(void) {{\n    Acc a;\n    {m.identity.format(**fmt)}\n    return a;\n}}\n\n"
            f"{qual}Acc acc_lift({d.c} x, int r{thr}) {{\n    Acc a;\n    (void)r;\n    {m.lift.format(**fmt)}\n"
            f"    return a;\n}}\n\n"
            f"{qual}Acc acc_merge(Acc a, Acc b) {{\n    {m.merge.format(**fmt)}\n    return a;\n}}\n\n"
            f"{qual}{out} acc_final(Acc a, int R) {{\n    (void)R;\n    return {m.final.format(**fmt)};\n}}\n")


def shfl_code(m: Monoid, d: CType, acc: str) -> str:
    """``acc_shfl_down``: a warp shuffle of every field of Acc."""
    lines = "".join(f"    b.{f} = __shfl_down_sync(0xffffffffu, a.{f}, off);\n" for f, _ in m.fields)
    return f"__device__ __forceinline__ Acc acc_shfl_down(Acc a, int off) {{\n    Acc b;\n{lines}    return b;\n}}\n"


def acc_type(m: Monoid, d: CType, reference: bool) -> str:
    """Accumulator scalar: the reference sums float in double (the exact answer the tolerance is about);
    the CUDA strategies accumulate in the element type, as real kernels do."""
    if not d.floating:
        return "int"
    return "double" if reference else d.c


# -- layouts -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Layout:
    name: str
    dims: tuple[str, ...]
    xsize: str  # element count of x (config expression)
    nout: str  # number of outputs (C and config expression)
    rlen: str  # reduced length R
    addr: str  # element address of (o, r), C, with {o} and {r}
    schedule: str  # full | seg | strided
    text: str  # the layout in words
    configs: tuple[dict[str, int], dict[str, int]]


LAYOUTS = [
    Layout("full", ("n",), "n", "1", "n", "{r}", "full",
           "x is a contiguous array of n elements; reduce all of them to the single output out[0].",
           ({"n": 1001}, {"n": 65539})),
    Layout("rows", ("rows", "cols"), "rows * cols", "rows", "cols", "{o} * cols + {r}", "seg",
           "x is a row-major rows x cols matrix (element (i, j) at x[i * cols + j]); reduce each row: out[i] "
           "for i in [0, rows) reduces x[i, 0..cols-1].",
           ({"rows": 37, "cols": 301}, {"rows": 130, "cols": 517})),
    Layout("rowsld", ("rows", "cols", "ld"), "rows * ld", "rows", "cols", "{o} * ld + {r}", "seg",
           "x is a row-major rows x cols matrix stored with a row pitch of ld >= cols elements (element (i, j) "
           "at x[i * ld + j]; the ld - cols padding elements of each row are NOT part of the matrix and must "
           "be ignored); reduce each row: out[i] reduces x[i, 0..cols-1].",
           ({"rows": 37, "cols": 301, "ld": 320}, {"rows": 130, "cols": 517, "ld": 531})),
    Layout("cols", ("rows", "cols"), "rows * cols", "cols", "rows", "{r} * cols + {o}", "strided",
           "x is a row-major rows x cols matrix (element (i, j) at x[i * cols + j]); reduce each column: "
           "out[j] for j in [0, cols) reduces x[0..rows-1, j].",
           ({"rows": 301, "cols": 37}, {"rows": 515, "cols": 131})),
    Layout("colsld", ("rows", "cols", "ld"), "rows * ld", "cols", "rows", "{r} * ld + {o}", "strided",
           "x is a row-major rows x cols matrix stored with a row pitch of ld >= cols elements (element (i, j) "
           "at x[i * ld + j]; padding elements are not part of the matrix and must be ignored); reduce each "
           "column: out[j] reduces x[0..rows-1, j].",
           ({"rows": 301, "cols": 37, "ld": 45}, {"rows": 515, "cols": 131, "ld": 140})),
    Layout("ax0", ("d0", "d1", "d2"), "d0 * d1 * d2", "d1 * d2", "d0", "{r} * (d1 * d2) + {o}", "strided",
           "x is a contiguous 3-D array of shape (d0, d1, d2) (element (i, j, k) at x[(i * d1 + j) * d2 + k]); "
           "reduce over axis 0: out[j * d2 + k] reduces x[0..d0-1, j, k].",
           ({"d0": 29, "d1": 7, "d2": 11}, {"d0": 47, "d1": 33, "d2": 40})),
    Layout("ax1", ("d0", "d1", "d2"), "d0 * d1 * d2", "d0 * d2", "d1",
           "({o} / d2) * (d1 * d2) + {r} * d2 + ({o} % d2)", "strided",
           "x is a contiguous 3-D array of shape (d0, d1, d2) (element (i, j, k) at x[(i * d1 + j) * d2 + k]); "
           "reduce over axis 1: out[i * d2 + k] reduces x[i, 0..d1-1, k].",
           ({"d0": 7, "d1": 29, "d2": 11}, {"d0": 33, "d1": 47, "d2": 40})),
    Layout("ax2", ("d0", "d1", "d2"), "d0 * d1 * d2", "d0 * d1", "d2", "{o} * d2 + {r}", "seg",
           "x is a contiguous 3-D array of shape (d0, d1, d2) (element (i, j, k) at x[(i * d1 + j) * d2 + k]); "
           "reduce over axis 2 (the contiguous one): out[i * d1 + j] reduces x[i, j, 0..d2-1].",
           ({"d0": 7, "d1": 11, "d2": 29}, {"d0": 33, "d1": 40, "d2": 47})),
    Layout("ax01", ("d0", "d1", "d2"), "d0 * d1 * d2", "d2", "d0 * d1", "{r} * d2 + {o}", "strided",
           "x is a contiguous 3-D array of shape (d0, d1, d2) (element (i, j, k) at x[(i * d1 + j) * d2 + k]); "
           "reduce over axes 0 and 1 together: out[k] reduces the d0 * d1 elements x[:, :, k], in the order "
           "r = i * d1 + j (the position reported by arg-reductions).",
           ({"d0": 9, "d1": 13, "d2": 17}, {"d0": 24, "d1": 31, "d2": 70})),
    Layout("ax12", ("d0", "d1", "d2"), "d0 * d1 * d2", "d0", "d1 * d2", "{o} * (d1 * d2) + {r}", "seg",
           "x is a contiguous 3-D array of shape (d0, d1, d2) (element (i, j, k) at x[(i * d1 + j) * d2 + k]); "
           "reduce over axes 1 and 2 together: out[i] reduces the d1 * d2 elements x[i, :, :], in the order "
           "r = j * d2 + k (the position reported by arg-reductions).",
           ({"d0": 17, "d1": 9, "d2": 13}, {"d0": 70, "d1": 24, "d2": 31})),
]


#: The ``[[timing]]`` size of each layout (H100 scale, ~16M elements, estimated only). Shapes suit the
#: strategies' design: segmented layouts keep thousands of rows (a warp or block per output), strided
#: ones keep tens of thousands of outputs (a thread per output, 32-wide tiles) over a few hundred rows.
TIMING: dict[str, dict[str, int]] = {
    "full": {"n": (1 << 24) + 3},
    "rows": {"rows": 16384, "cols": 1000},
    "rowsld": {"rows": 16384, "cols": 1000, "ld": 1024},
    "cols": {"rows": 512, "cols": 32768},
    "colsld": {"rows": 512, "cols": 32000, "ld": 32768},
    "ax0": {"d0": 256, "d1": 256, "d2": 256},
    "ax1": {"d0": 256, "d1": 256, "d2": 256},
    "ax2": {"d0": 128, "d1": 128, "d2": 1000},
    "ax01": {"d0": 32, "d1": 16, "d2": 32768},
    "ax12": {"d0": 16384, "d1": 32, "d2": 32},
}


def _eval_dims(expr: str, cfg: dict[str, int]) -> int:
    from veriforge.cuda.tasks.expr import evaluate

    return int(evaluate(expr, dict(cfg)))


def input_init(m: Monoid, d: CType) -> str:
    """The input generator that makes ``m`` meaningful (ties for arg-reductions, values near 1 for products)."""
    if m.name in ("argmax", "argmin"):
        return "randint(-50, 50)"  # many duplicates: exercises the lowest-index tie rule
    if m.uses_thr:
        return "uniform(-1, 1)" if d.floating else "randint(-1000000, 1000000)"
    if m.name == "prod":
        return "uniform(0.99, 1.01)"
    if m.name == "xor":
        return "randint(0, 1048576)"
    if not d.floating:
        return "randint(-100, 100)"
    return "uniform(-0.5, 1)" if m.name in ("sum", "mean") else "uniform(-1, 1)"


def _thr(m: Monoid, d: CType, rlen: int) -> float | int:
    """A threshold making the answer interesting: about half the any/all outputs are 1."""
    q = 1 - 0.5 ** (1.0 / rlen)  # per-element probability giving P(any) = 1/2
    if m.name == "countgt":
        return 0.25 if d.floating else 1000
    p = q if m.name == "any" else 1 - q  # P(x > thr)
    if d.floating:  # x ~ uniform(-1, 1): P(x > thr) = (1 - thr) / 2
        return round(1 - 2 * p, 9)
    return int(1000000 - p * 2000000)


# -- kernels -------------------------------------------------------------------------------------
def _kernels(m: Monoid, d: CType, lay: Layout, params: list[P]) -> list:
    acc = acc_type(m, d, False)
    head = monoid_code(m, d, acc, "__device__ __forceinline__ ") + "\n"
    shfl = shfl_code(m, d, acc) + "\n"
    sig, sig_r, names = signature(params), signature(params, restrict=True), args(params)
    thr = ", thr" if m.uses_thr else ""
    at = lay.addr
    lift = "acc_lift(x[" + at + "], {r}" + thr + ")"
    dims = f"    const int R = {lay.rlen};\n    const int nout = {lay.nout};\n    (void)nout;\n"
    if lay.schedule == "full":
        naive = head + f"""
// One thread walks the whole array: correct, and as slow as serial code on a GPU.
__global__ void red_serial({sig_r}) {{
{dims}    Acc a = acc_identity();
    for (int r = 0; r < R; ++r) a = acc_merge(a, {lift.format(o="0", r="r")});
    out[0] = acc_final(a, R);
}}

extern "C" void solve({sig}) {{
    red_serial<<<1, 1>>>({names});
}}
"""
        tree = head + f"""
#define THREADS 256

// Block-wide shared-memory tree over Acc values; thread 0 returns the block's result.
__device__ Acc block_tree(Acc a) {{
    __shared__ Acc sh[THREADS];
    sh[threadIdx.x] = a;
    __syncthreads();
    for (int step = THREADS / 2; step > 0; step >>= 1) {{
        if (threadIdx.x < step) sh[threadIdx.x] = acc_merge(sh[threadIdx.x], sh[threadIdx.x + step]);
        __syncthreads();
    }}
    return sh[0];
}}

// Pass 1: each block folds a grid-stride slice and writes one partial accumulator.
__global__ void red_partials({sig_r}, Acc* partial) {{
{dims}    Acc a = acc_identity();
    for (int r = blockIdx.x * THREADS + threadIdx.x; r < R; r += gridDim.x * THREADS)
        a = acc_merge(a, {lift.format(o="0", r="r")});
    a = block_tree(a);
    if (threadIdx.x == 0) partial[blockIdx.x] = a;
}}

// Pass 2: one block merges the partials (in block order) and writes the result.
__global__ void red_finish(const Acc* partial, int count, {d.c if m.out == "T" else "int"}* out, int R) {{
    Acc a = acc_identity();
    for (int k = threadIdx.x; k < count; k += THREADS) a = acc_merge(a, partial[k]);
    a = block_tree(a);
    if (threadIdx.x == 0) out[0] = acc_final(a, R);
}}

extern "C" void solve({sig}) {{
    int blocks = ck_grid(n, THREADS, 4);
    Acc* partial = nullptr;
    cudaMalloc(&partial, sizeof(Acc) * blocks);
    red_partials<<<blocks, THREADS>>>({names}, partial);
    red_finish<<<1, THREADS>>>(partial, blocks, out, n);
    cudaFree(partial);
}}
"""
        warp = head + shfl + f"""
#define THREADS 256

__device__ Acc warp_fold(Acc a) {{
    for (int off = 16; off > 0; off >>= 1) a = acc_merge(a, acc_shfl_down(a, off));
    return a;
}}

// Warp shuffles, then one value per warp through shared memory, then the first warp.
__device__ Acc block_fold(Acc a) {{
    __shared__ Acc warps[THREADS / 32];
    a = warp_fold(a);
    if ((threadIdx.x & 31) == 0) warps[threadIdx.x >> 5] = a;
    __syncthreads();
    if (threadIdx.x < 32) {{
        a = threadIdx.x < THREADS / 32 ? warps[threadIdx.x] : acc_identity();
        a = warp_fold(a);
    }}
    return a;
}}

__global__ void red_partials({sig_r}, Acc* partial) {{
{dims}    Acc a = acc_identity();
    int stride = gridDim.x * THREADS;
    int r = blockIdx.x * THREADS + threadIdx.x;
    for (; r + stride < R; r += 2 * stride) {{  // two independent loads in flight
        Acc p = {lift.format(o="0", r="r")};
        Acc q = {lift.format(o="0", r="r + stride")};
        a = acc_merge(a, acc_merge(p, q));
    }}
    if (r < R) a = acc_merge(a, {lift.format(o="0", r="r")});
    a = block_fold(a);
    if (threadIdx.x == 0) partial[blockIdx.x] = a;
}}

__global__ void red_finish(const Acc* partial, int count, {d.c if m.out == "T" else "int"}* out, int R) {{
    Acc a = acc_identity();
    for (int k = threadIdx.x; k < count; k += THREADS) a = acc_merge(a, partial[k]);
    a = block_fold(a);
    if (threadIdx.x == 0) out[0] = acc_final(a, R);
}}

extern "C" void solve({sig}) {{
    int blocks = ck_grid(n, THREADS * 2, 4);
    Acc* partial = nullptr;
    cudaMalloc(&partial, sizeof(Acc) * blocks);
    red_partials<<<blocks, THREADS>>>({names}, partial);
    red_finish<<<1, THREADS>>>(partial, blocks, out, n);
    cudaFree(partial);
}}
"""
        return [impl("serial", "naive", 1, naive, "a single thread reduces the whole array"),
                impl("shared_tree", "shared_tiled", 2, tree,
                     "two passes: grid-stride partials folded by a shared-memory tree per block, then one block"),
                impl("warp_shuffle", "warp_shuffle", 3, warp,
                     "two passes: 2-way unrolled grid-stride partials, __shfl_down_sync warp folds, one block "
                     "merges the per-block partials")]

    thread_per_out = head + f"""
// One thread per output walks its whole reduced segment.
__global__ void red_thread({sig_r}) {{
{dims}    int o = blockIdx.x * blockDim.x + threadIdx.x;
    if (o >= nout) return;
    Acc a = acc_identity();
    for (int r = 0; r < R; ++r) a = acc_merge(a, {lift.format(o="o", r="r")});
    out[o] = acc_final(a, R);
}}

extern "C" void solve({sig}) {{
    const int threads = 128;
    int nout = {lay.nout};
    red_thread<<<(nout + threads - 1) / threads, threads>>>({names});
}}
"""
    block_per_out = head + f"""
#define THREADS 256

// One block per output: threads stride along the reduced axis, then a shared-memory tree.
__global__ void red_block({sig_r}) {{
    __shared__ Acc sh[THREADS];
{dims}    int o = blockIdx.x;
    Acc a = acc_identity();
    for (int r = threadIdx.x; r < R; r += THREADS) a = acc_merge(a, {lift.format(o="o", r="r")});
    sh[threadIdx.x] = a;
    __syncthreads();
    for (int step = THREADS / 2; step > 0; step >>= 1) {{
        if (threadIdx.x < step) sh[threadIdx.x] = acc_merge(sh[threadIdx.x], sh[threadIdx.x + step]);
        __syncthreads();
    }}
    if (threadIdx.x == 0) out[o] = acc_final(sh[0], R);
}}

extern "C" void solve({sig}) {{
    int nout = {lay.nout};
    red_block<<<nout, THREADS>>>({names});
}}
"""
    if lay.schedule == "seg":
        warp = head + shfl + f"""
#define WARPS 8

// One warp per output: lanes read consecutive elements (coalesced), then shuffle-fold.
__global__ void red_warp({sig_r}) {{
{dims}    int lane = threadIdx.x & 31;
    int o = blockIdx.x * WARPS + (threadIdx.x >> 5);
    if (o >= nout) return;
    Acc a = acc_identity();
    for (int r = lane; r < R; r += 32) a = acc_merge(a, {lift.format(o="o", r="r")});
    for (int off = 16; off > 0; off >>= 1) a = acc_merge(a, acc_shfl_down(a, off));
    if (lane == 0) out[o] = acc_final(a, R);
}}

extern "C" void solve({sig}) {{
    int nout = {lay.nout};
    red_warp<<<(nout + WARPS - 1) / WARPS, WARPS * 32>>>({names});
}}
"""
        return [impl("thread_per_output", "naive", 1, thread_per_out,
                     "one thread per output walks its segment (neighbouring threads read far-apart addresses)"),
                impl("block_per_output", "shared_tiled", 2, block_per_out,
                     "one 256-thread block per output, strided loads, shared-memory tree"),
                impl("warp_per_output", "warp_shuffle", 3, warp,
                     "one warp per output, coalesced lane-strided loads, __shfl_down_sync fold")]
    tiled = head + f"""
#define TX 32
#define TY 8

// 32 neighbouring outputs per block (coalesced along x); 8 lanes in y split the reduced axis and
// their partial accumulators are merged through shared memory in y order.
__global__ void red_tiled({sig_r}) {{
    __shared__ Acc sh[TY][TX];
{dims}    int o = blockIdx.x * TX + threadIdx.x;
    Acc a = acc_identity();
    if (o < nout) {{
        for (int r = threadIdx.y; r < R; r += TY) a = acc_merge(a, {lift.format(o="o", r="r")});
    }}
    sh[threadIdx.y][threadIdx.x] = a;
    __syncthreads();
    for (int step = TY / 2; step > 0; step >>= 1) {{
        if (threadIdx.y < step) sh[threadIdx.y][threadIdx.x] = acc_merge(sh[threadIdx.y][threadIdx.x],
                                                                         sh[threadIdx.y + step][threadIdx.x]);
        __syncthreads();
    }}
    if (threadIdx.y == 0 && o < nout) out[o] = acc_final(sh[0][threadIdx.x], R);
}}

extern "C" void solve({sig}) {{
    int nout = {lay.nout};
    dim3 block(TX, TY);
    red_tiled<<<(nout + TX - 1) / TX, block>>>({names});
}}
"""
    return [impl("block_per_output", "shared_tiled", 1, block_per_out,
                 "one block per output: threads stride along the reduced axis, so every load touches a different "
                 "memory segment (uncoalesced)"),
            impl("thread_per_output", "naive", 2, thread_per_out,
                 "one thread per output; neighbouring threads read neighbouring addresses (coalesced) but each "
                 "thread walks the whole reduced axis"),
            impl("tiled_32x8", "coalesced", 3, tiled,
                 "32 outputs x 8 reduction lanes per block, coalesced loads, partials merged in shared memory")]


def _reference(m: Monoid, d: CType, lay: Layout, params: list[P]) -> str:
    thr = ", thr" if m.uses_thr else ""
    return monoid_code(m, d, acc_type(m, d, True), "static inline ") + f"""
void reference({signature(params)}) {{
    const int R = {lay.rlen};
    const int nout = {lay.nout};
    for (int o = 0; o < nout; ++o) {{
        Acc a = acc_identity();
        for (int r = 0; r < R; ++r) a = acc_merge(a, acc_lift(x[{lay.addr.format(o="o", r="r")}], r{thr}));
        out[o] = acc_final(a, R);
    }}
}}
"""


def build(m: Monoid, dtype: str, lay: Layout, family_seed: int) -> GeneratedTask:
    d = DTYPES[dtype]
    out_t = d.c if m.out == "T" else "int"
    params = [param("x", d.c, "in", lay.xsize, input_init(m, d)), param("out", out_t, "out", lay.nout)]
    params += [param(dim, "int", "scalar") for dim in lay.dims]
    if m.uses_thr:
        params.append(param("thr", d.c, "scalar"))
    configs = []
    for name, dims in zip(("small", "large"), lay.configs, strict=True):
        cfg = {"name": name, **dims}
        if m.uses_thr:
            cfg["thr"] = _thr(m, d, _eval_dims(lay.rlen, dims))
        configs.append(cfg)
    timing = dict(TIMING[lay.name])
    if m.uses_thr:
        timing["thr"] = _thr(m, d, _eval_dims(lay.rlen, timing))
    tolerance = tol_for(d, "exact" if m.exact else "accum")
    task_id = f"red_{d.tag}_{m.name}_{lay.name}"
    acc_note = ("" if not d.floating or m.exact else
                f" Any merge order is allowed; the result is compared with the reference (which accumulates in "
                f"{'double' if d.c == 'float' else 'double, sequentially'}) using |got - ref| <= "
                f"{tolerance['atol']:g} * max|ref| + {tolerance['rtol']:g} * |ref|.")
    exact_note = " The output is compared exactly." if m.exact or not d.floating else ""
    thr_note = f" thr is a {d.c} scalar parameter." if m.uses_thr else ""
    description = (
        f"Reduction of {d.c} data. {lay.text} Each output is {m.doc}.{thr_note} The output array out has "
        f"{lay.nout} element(s) of type {out_t}, uninitialised on entry (every one must be written).{acc_note}"
        f"{exact_note} All sizes are >= 1 and arbitrary (not multiples of the block size). Temporaries may be "
        f"cudaMalloc'd inside solve.")
    return make_task(
        family=FAMILY, family_seed=family_seed, task_id=task_id, category="reduction",
        title=f"{m.name} reduction, layout {lay.name} ({d.c})", description=description,
        reference=_reference(m, d, lay, params), impls=_kernels(m, d, lay, params), params=params, configs=configs,
        metrics={"flops": lay.xsize, "bytes": f"{d.size} * ({lay.xsize}) + {4 if out_t == 'int' else d.size} * "
                                             f"({lay.nout})"},
        tolerance=tolerance, timing=[timing],
        variant={"op": m.name, "dtype": dtype, "layout": lay.name, "schedule": lay.schedule},
        tags=["reduction", "memory-bound"])


@family(FAMILY, kind="c2cuda", category="reduction")
def generate(seed: int) -> Iterator[GeneratedTask]:
    """Reductions (sum, prod, min/max, mean, norms, variance, logsumexp, arg-min/max, counts, any/all, xor)
    over whole arrays, rows/columns (also pitched) and every axis of 3-D arrays, float/double/int."""
    for dtype in ("float", "double", "int"):
        kind = "i" if dtype == "int" else "f"
        for m in MONOIDS.values():
            if kind not in m.kinds:
                continue
            for lay in LAYOUTS:
                yield build(m, dtype, lay, seed)
