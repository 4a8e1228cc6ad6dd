"""Scans (cumsum/cumprod/cummax/cummin, reversed and exclusive), permutes fused with element-wise
ops, and element-wise losses with mean/sum/none reductions (PyTorch→CUDA).

Scans reuse the reduction layouts of :mod:`.torch_reduce` (a "column" of elements ``inner`` apart);
permutes generate their index arithmetic from the permutation (Horner forms over the input sizes),
so every permutation is a structurally different kernel; losses reuse the element-wise launch
templates for ``reduction='none'`` and get serial / atomic / warp-shuffle scalar reductions otherwise.
"""

from __future__ import annotations

from collections.abc import Iterator

from veriforge.cudaperf.dataset.family import GeneratedTask

from .torch_common import ImplSpec, TorchSpec, build_task
from .torch_elementwise import _elementwise_impls
from .torch_reduce import SHAPES as RSHAPES
from .torch_reduce import _at, _col, _layout

__all__ = ["loss_tasks", "permute_tasks", "scan_tasks"]

# ---- scans ------------------------------------------------------------------------------------------------

# name -> (torch expression over x and d, identity, combine(a, b), reverse, exclusive, input generator)
_SCANS = {
    "cumsum": ("torch.cumsum(x, dim={d})", "0.0f", "({a} + {b})", False, False, "torch.randn"),
    "cumprod": ("torch.cumprod(x, dim={d})", "1.0f", "({a} * {b})", False, False, "0.6 + 0.8 * torch.rand"),
    "cummax": ("torch.cummax(x, dim={d}).values", "-3.402823466e38f", "fmaxf({a}, {b})", False, False,
               "torch.randn"),
    "cummin": ("torch.cummin(x, dim={d}).values", "3.402823466e38f", "fminf({a}, {b})", False, False,
               "torch.randn"),
    "rev_cumsum": ("torch.flip(torch.cumsum(torch.flip(x, [{d}]), dim={d}), [{d}])", "0.0f", "({a} + {b})", True,
                   False, "torch.randn"),
    "rev_cummax": ("torch.flip(torch.cummax(torch.flip(x, [{d}]), dim={d}).values, [{d}])", "-3.402823466e38f",
                   "fmaxf({a}, {b})", True, False, "torch.randn"),
    "excl_cumsum": ("torch.cumsum(x, dim={d}) - x", "0.0f", "({a} + {b})", False, True, "torch.randn"),
}


def _scan_impls(layout: str, ident: str, comb: str, rev: bool, excl: bool) -> list[ImplSpec]:
    at = _at(layout)
    idx = at[at.index("["):]
    pos = "(R - 1 - k)" if rev else "k"
    ld = "col" + idx.replace("k", pos) if rev else at
    st = "ocol" + idx.replace("k", pos) if rev else at.replace("col", "ocol")
    out_val = "(acc - v)" if excl else "acc"
    cols = f"{_col(layout, '{t}')}\n    {_col(layout, '{t}').replace('const float* col = x', 'float* ocol = out')}"
    sig = "const float* x, float* out, int T, int R, int inner"
    naive = f'''
__global__ void scan_naive({sig}) {{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= T) return;
    {cols.format(t="t")}
    float acc = {ident};
    for (int k = 0; k < R; ++k) {{
        float v = {ld};
        acc = {comb.format(a="acc", b="v")};
        {st} = {out_val};
    }}
}}

extern "C" void run({sig}) {{
    scan_naive<<<(T + 127) / 128, 128>>>(x, out, T, R, inner);
}}
'''
    warp = f'''
#define WARPS 4
__global__ void scan_warp({sig}) {{
    int t = blockIdx.x * WARPS + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (t >= T) return;
    {cols.format(t="t")}
    float carry = {ident};
    for (int base = 0; base < R; base += 32) {{
        int k = base + lane;
        float v = k < R ? {ld} : {ident};
        float acc = v;
        for (int off = 1; off < 32; off <<= 1) {{   // inclusive Hillis-Steele scan across the warp
            float o = __shfl_up_sync(0xffffffffu, acc, off);
            if (lane >= off) acc = {comb.format(a="o", b="acc")};
        }}
        acc = {comb.format(a="carry", b="acc")};
        if (k < R) {st} = {out_val};
        carry = __shfl_sync(0xffffffffu, acc, 31);
    }}
}}

extern "C" void run({sig}) {{
    scan_warp<<<(T + WARPS - 1) / WARPS, WARPS * 32>>>(x, out, T, R, inner);
}}
'''
    block = f'''
#define THREADS 64
__global__ void scan_block({sig}) {{
    __shared__ float buf[THREADS];
    int t = blockIdx.x, tid = threadIdx.x;
    {cols.format(t="t")}
    float carry = {ident};
    for (int base = 0; base < R; base += THREADS) {{
        int k = base + tid;
        float v = k < R ? {ld} : {ident};
        buf[tid] = v;
        __syncthreads();
        for (int off = 1; off < THREADS; off <<= 1) {{   // Hillis-Steele in shared memory
            float o = tid >= off ? buf[tid - off] : {ident};
            __syncthreads();
            buf[tid] = {comb.format(a="o", b="buf[tid]")};
            __syncthreads();
        }}
        float acc = {comb.format(a="carry", b="buf[tid]")};
        if (k < R) {st} = {out_val};
        carry = {comb.format(a="carry", b="buf[THREADS - 1]")};
        __syncthreads();
    }}
}}

extern "C" void run({sig}) {{
    scan_block<<<T, THREADS>>>(x, out, T, R, inner);
}}
'''
    if layout == "last":
        return [ImplSpec("naive", "naive", 1, "one thread per row scans serially", naive),
                ImplSpec("block_scan", "shared_tiled", 2,
                         "one block per row, 64-element chunks scanned in shared memory, carry between chunks", block),
                ImplSpec("warp_scan", "warp_shuffle", 3,
                         "one warp per row, 32-element chunks scanned with __shfl_up_sync, carry by broadcast", warp)]
    return [ImplSpec("warp_scan", "warp_shuffle", 1,
                     "one warp per column, shuffle scan; lanes touch elements `inner` apart (uncoalesced)", warp),
            ImplSpec("block_scan", "shared_tiled", 2, "one block per column, shared-memory chunk scans", block),
            ImplSpec("naive", "coalesced", 3,
                     "one thread per column scanning serially: neighbouring threads read neighbouring columns "
                     "(coalesced), the best fit for short strided scans", naive)]


def scan_tasks(seed: int, family: str) -> Iterator[GeneratedTask]:
    """Every scan over every dim of 2-D/3-D inputs; cumsum and cummax over every dim of 4-D inputs."""
    for op in _SCANS:
        for rank in (2, 3):
            for d in range(rank):
                yield _scan(op, rank, d, family, seed)
    for op in ("cumsum", "cummax"):
        for d in range(4):
            yield _scan(op, 4, d, family, seed)


def _scan(op: str, rank: int, d: int, family: str, seed: int) -> GeneratedTask:
    tfmt, ident, comb, rev, excl, gen = _SCANS[op]
    dims, defaults, cfgs = RSHAPES[rank]
    layout = _layout(rank, d, d)
    ref = tfmt.format(d=d)
    inner = " * ".join(f"x.size({k})" for k in range(d + 1, rank)) or "1"
    total = " * ".join(dims)
    base = op.replace("rev_", "").replace("excl_", "")
    description = f"""
forward(x) returns {ref} for a float32 x of shape ({", ".join(dims)}): a{" reversed" if rev else "n"}
{"exclusive " if excl else "inclusive "}{base} along dim {d}. The output is a new float32 tensor of x's shape;
every element must be written.
"""
    spec = TorchSpec(
        task_id=f"pt_scan_{op}_{rank}d_dim{d}", family=family, category="scan",
        title=f"{op} along dim {d} of a {rank}-D tensor", description=description, consts=dict(defaults),
        forward_args=["x"], ref_forward=[f"return {ref}"], inputs=[f"{gen}({', '.join(dims)})"],
        prep=["x = x.contiguous()", "out = torch.empty_like(x)"],
        call_args=["x", "out", f"x.numel() // x.size({d})", f"x.size({d})", inner], ret="out",
        impls=_scan_impls(layout, ident, comb, rev, excl), configs=[dict(c) for c in cfgs],
        metrics={"flops": total, "bytes": f"8 * {total}"},
        tolerance={"rtol": 1e-4, "atol": 1e-4} if op != "cumprod" else {"rtol": 1e-3, "atol": 1e-5},
        tags=["scan", layout], variant={"op": op, "rank": rank, "dim": d, "layout": layout})
    return build_task(spec, seed)


# ---- permutes fused with element-wise ops ------------------------------------------------------------------

_PERMS = [(1, 0), (0, 2, 1), (1, 2, 0), (2, 0, 1), (2, 1, 0), (0, 1, 3, 2), (0, 2, 3, 1), (0, 3, 1, 2),
          (3, 2, 1, 0), (1, 3, 0, 2)]
# name -> (torch expression over p (the permuted view) and y, C expression over v and yv)
_POPS = {
    "copy": ("{p}.contiguous()", "v"),
    "relu": ("torch.relu({p})", "fmaxf(v, 0.0f)"),
    "affine": ("{p} * 2.0 + 1.0", "v * 2.0f + 1.0f"),
    "add": ("{p} + y", "v + yv"),
    "gelu": ("F.gelu({p})", "0.5f * v * (1.0f + erff(v * 0.70710678118654752f))"),
    "sigmoid": ("torch.sigmoid({p})", "1.0f / (1.0f + expf(-v))"),
    "square": ("{p} * {p}", "v * v"),
    "tanh": ("torch.tanh({p})", "tanhf(v)"),
}
_PSIZES = {2: [{"name": "small_odd", "d0": 13, "d1": 37}, {"name": "medium", "d0": 40, "d1": 48}],
           3: [{"name": "small_odd", "d0": 3, "d1": 7, "d2": 11}, {"name": "medium", "d0": 4, "d1": 12, "d2": 40}],
           4: [{"name": "small_odd", "d0": 2, "d1": 3, "d2": 5, "d3": 7},
               {"name": "medium", "d0": 2, "d1": 4, "d2": 8, "d3": 34}]}


def _horner(order: list[int]) -> str:
    """Linear offset of coordinates c<d> in a row-major array whose dims are ``order`` (sizes s<d>)."""
    expr = f"c{order[0]}"
    for dd in order[1:]:
        expr = f"({expr}) * s{dd} + c{dd}"
    return expr


def _permute_impls(perm: tuple[int, ...], cexpr: str, binary: bool) -> list[ImplSpec]:
    r = len(perm)
    sizes = ", ".join(f"int s{k}" for k in range(r))
    ydecl = ", const float* y" if binary else ""
    sig = f"const float* x{ydecl}, float* out, {sizes}"
    names = "x" + (", y" if binary else "") + ", out, " + ", ".join(f"s{k}" for k in range(r))
    n = " * ".join(f"s{k}" for k in range(r))
    in_off, out_off = _horner(list(range(r))), _horner(list(perm))
    yload = "float yv = y[o];\n        " if binary else ""

    def decode(var: str, order: list[int]) -> str:
        lines, rest = [], var
        for dd in reversed(order[1:]):
            lines.append(f"int c{dd} = {rest} % s{dd}; {rest} /= s{dd};")
        lines.append(f"int c{order[0]} = {rest};")
        return "\n        ".join(lines)

    scatter = f'''
__global__ void permute_scatter({sig}) {{
    int n = {n};
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {{
        int rem = i;
        {decode("rem", list(range(r)))}
        float v = x[i];
        int o = {out_off};
        {yload}out[o] = {cexpr};
    }}
}}

extern "C" void run({sig}) {{
    int n = {n};
    permute_scatter<<<(n + 255) / 256, 256>>>({names});
}}
'''
    gather = f'''
__global__ void permute_gather({sig}) {{
    int n = {n};
    for (int o = blockIdx.x * blockDim.x + threadIdx.x; o < n; o += gridDim.x * blockDim.x) {{
        int rem = o;
        {decode("rem", list(perm))}
        float v = x[{in_off}];
        {yload}out[o] = {cexpr};
    }}
}}

extern "C" void run({sig}) {{
    int n = {n};
    permute_gather<<<(n + 255) / 256, 256>>>({names});
}}
'''
    a, b = r - 1, perm[-1]  # input's innermost dim, and the input dim that is the output's innermost
    rest = [k for k in range(r) if k not in (a, b)]
    rest_decode = ""
    if rest:
        lines, var = ["int z = blockIdx.z;"], "z"
        for dd in reversed(rest[1:]):
            lines.append(f"int c{dd} = {var} % s{dd}; {var} /= s{dd};")
        lines.append(f"int c{rest[0]} = {var};")
        rest_decode = "\n    ".join(lines)
    nz = " * ".join(f"s{k}" for k in rest) or "1"
    yload_t = "float yv = y[o];\n                " if binary else ""
    tiled = f'''
__global__ void permute_tiled({sig}) {{
    __shared__ float tile[32][33];   // +1 column: the transposed reads hit 32 different banks
    {rest_decode}
    int a0 = blockIdx.x * 32, b0 = blockIdx.y * 32;
    int tx = threadIdx.x, ty = threadIdx.y;
    for (int yy = ty; yy < 32; yy += 8) {{   // read: consecutive threads along the input's innermost dim
        int c{a} = a0 + tx, c{b} = b0 + yy;
        if (c{a} < s{a} && c{b} < s{b}) tile[yy][tx] = x[{in_off}];
    }}
    __syncthreads();
    for (int yy = ty; yy < 32; yy += 8) {{   // write: consecutive threads along the output's innermost dim
        int c{b} = b0 + tx, c{a} = a0 + yy;
        if (c{a} < s{a} && c{b} < s{b}) {{
            float v = tile[tx][yy];
            int o = {out_off};
            {yload_t}out[o] = {cexpr};
        }}
    }}
}}

extern "C" void run({sig}) {{
    dim3 grid((s{a} + 31) / 32, (s{b} + 31) / 32, {nz});
    permute_tiled<<<grid, dim3(32, 8)>>>({names});
}}
'''
    return [ImplSpec("scatter", "naive", 1, "one thread per input element: coalesced reads, scattered writes",
                     scatter),
            ImplSpec("gather", "coalesced", 2, "one thread per output element: coalesced writes, gathered reads",
                     gather),
            ImplSpec("tiled", "shared_tiled", 3,
                     "32x32 tiles through padded shared memory: both the reads and the writes are coalesced", tiled)]


def permute_tasks(seed: int, family: str) -> Iterator[GeneratedTask]:
    """Every permutation that moves the innermost dim (2-D, 3-D, 4-D) × 8 fused element-wise ops."""
    for perm in _PERMS:
        for op in _POPS:
            yield _permute(perm, op, family, seed)


def _permute(perm: tuple[int, ...], op: str, family: str, seed: int) -> GeneratedTask:
    r = len(perm)
    tfmt, cexpr = _POPS[op]
    binary = op == "add"
    dims = [f"d{k}" for k in range(r)]
    pview = f"x.permute({', '.join(map(str, perm))})"
    ref = tfmt.format(p=pview)
    args = ["x", "y"] if binary else ["x"]
    out_dims = ", ".join(dims[p] for p in perm)
    inputs = [f"torch.randn({', '.join(dims)})"] + ([f"torch.randn({out_dims})"] if binary else [])
    alloc = f"out = torch.empty({', '.join(f'x.size({p})' for p in perm)}, dtype=x.dtype, device=x.device)"
    total = " * ".join(dims)
    y_txt = " with y of the permuted shape (" + out_dims + ")" if binary else ""
    description = f"""
forward({", ".join(args)}) returns {ref}{y_txt} for a float32 x
of shape ({", ".join(dims)}). The output is a new contiguous float32 tensor of shape ({out_dims}); every
element must be written.
"""
    spec = TorchSpec(
        task_id=f"pt_permute_{''.join(map(str, perm))}_{op}", family=family, category="transpose",
        title=f"permute{perm} of a {r}-D tensor fused with {op}", description=description,
        consts={d: 64 for d in dims}, forward_args=args, ref_forward=[f"return {ref}"], inputs=inputs,
        prep=[f"{a} = {a}.contiguous()" for a in args] + [alloc],
        call_args=[*args, "out", *(f"x.size({k})" for k in range(r))], ret="out",
        impls=_permute_impls(perm, cexpr, binary), configs=[dict(c) for c in _PSIZES[r]],
        metrics={"flops": total, "bytes": f"{4 * (len(args) + 1)} * {total}"},
        tolerance={"rtol": 1e-5, "atol": 1e-6}, tags=["memory-bound", "transpose"],
        variant={"op": op, "perm": list(perm), "rank": r})
    return build_task(spec, seed)


# ---- element-wise losses ------------------------------------------------------------------------------------

# name -> (torch functional call with {red}, C expression over xv (prediction) and yv (target), target gen)
_LOSSES = {
    "mse": ("F.mse_loss(x, y, reduction='{red}')", "(xv - yv) * (xv - yv)", "torch.randn"),
    "l1": ("F.l1_loss(x, y, reduction='{red}')", "fabsf(xv - yv)", "torch.randn"),
    "smooth_l1": ("F.smooth_l1_loss(x, y, reduction='{red}', beta=1.0)",
                  "(fabsf(xv - yv) < 1.0f ? 0.5f * (xv - yv) * (xv - yv) : fabsf(xv - yv) - 0.5f)", "torch.randn"),
    "huber": ("F.huber_loss(x, y, reduction='{red}', delta=0.5)",
              "(fabsf(xv - yv) <= 0.5f ? 0.5f * (xv - yv) * (xv - yv) : 0.5f * (fabsf(xv - yv) - 0.25f))",
              "torch.randn"),
    "bce_logits": ("F.binary_cross_entropy_with_logits(x, y, reduction='{red}')",
                   "(fmaxf(xv, 0.0f) - xv * yv + log1pf(expf(-fabsf(xv))))", "torch.rand"),
    "soft_margin": ("F.soft_margin_loss(x, y, reduction='{red}')", "log1pf(expf(-yv * xv))",
                    "torch.randn"),
}


def _scalar_impls(cexpr: str, mean: bool) -> list[ImplSpec]:
    sig = "const float* x, const float* y, float* out, int n"
    scale = "1.0f / n" if mean else "1.0f"
    fn = f"__device__ __forceinline__ float term(float xv, float yv) {{ return {cexpr}; }}\n"
    naive = f'''{fn}
__global__ void loss_serial({sig}) {{
    float acc = 0.0f;
    for (int i = 0; i < n; ++i) acc += term(x[i], y[i]);
    out[0] = acc * ({scale});
}}

extern "C" void run({sig}) {{
    loss_serial<<<1, 1>>>(x, y, out, n);
}}
'''
    atomic = f'''{fn}
__global__ void zero_out(float* out) {{ out[0] = 0.0f; }}

__global__ void loss_atomic({sig}) {{
    float acc = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) acc += term(x[i], y[i]);
    atomicAdd(out, acc * ({scale}));   // one atomic per thread
}}

extern "C" void run({sig}) {{
    zero_out<<<1, 1>>>(out);
    int blocks = (n + 255) / 256;
    if (blocks > 32) blocks = 32;
    loss_atomic<<<blocks, 256>>>(x, y, out, n);
}}
'''
    warp = f'''{fn}
__global__ void zero_out(float* out) {{ out[0] = 0.0f; }}

__global__ void loss_warp({sig}) {{
    float acc = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) acc += term(x[i], y[i]);
    for (int off = 16; off > 0; off >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, off);
    if ((threadIdx.x & 31) == 0) atomicAdd(out, acc * ({scale}));   // one atomic per warp
}}

extern "C" void run({sig}) {{
    zero_out<<<1, 1>>>(out);
    int blocks = (n + 255) / 256;
    if (blocks > 32) blocks = 32;
    loss_warp<<<blocks, 256>>>(x, y, out, n);
}}
'''
    return [ImplSpec("serial", "naive", 1, "a single thread sums every term", naive),
            ImplSpec("atomic", "atomic", 2, "grid-stride partial sums, one atomicAdd per thread", atomic),
            ImplSpec("warp_atomic", "warp_shuffle", 3,
                     "grid-stride partial sums reduced per warp with shuffles, one atomicAdd per warp", warp)]


def loss_tasks(seed: int, family: str) -> Iterator[GeneratedTask]:
    """MSE, L1, smooth-L1, Huber, BCE-with-logits and soft-margin losses × mean/sum/none reductions."""
    for name in _LOSSES:
        for red in ("mean", "sum", "none"):
            yield _loss(name, red, family, seed)


def _loss(name: str, red: str, family: str, seed: int) -> GeneratedTask:
    tfmt, cexpr, tgen = _LOSSES[name]
    ref = tfmt.format(red=red)
    if name == "soft_margin":
        target = "2.0 * torch.randint(0, 2, (batch_size, dim)).float() - 1.0"
    else:
        target = f"{tgen}(batch_size, dim)"
    if red == "none":
        impls = _elementwise_impls(True, [], [], f"    return {cexpr};", "")
        alloc = "out = torch.empty_like(x)"
        out_words = "a float32 tensor of x's shape (the per-element loss)"
        tol = {"rtol": 1e-4, "atol": 1e-5}
    else:
        impls = _scalar_impls(cexpr, red == "mean")
        alloc = "out = torch.empty((), dtype=x.dtype, device=x.device)"
        out_words = f"a 0-dim float32 tensor (the {red} of the per-element losses)"
        tol = {"rtol": 1e-4, "atol": 1e-4}
    t_txt = {"soft_margin": "; targets are -1 or +1", "bce_logits": "; targets in [0, 1]"}.get(name, "")
    description = f"""
forward(x, y) returns {ref} for prediction x and target y, float32 of shape (batch_size, dim){t_txt}.
The result is {out_words}.
"""
    spec = TorchSpec(
        task_id=f"pt_loss_{name}_{red}", family=family, category="reduction" if red != "none" else "elementwise",
        title=f"{name} loss (reduction={red})", description=description, consts={"batch_size": 32, "dim": 4096},
        forward_args=["x", "y"], ref_forward=[f"return {ref}"], inputs=["torch.randn(batch_size, dim)", target],
        prep=["x = x.contiguous()", "y = y.contiguous()", alloc], call_args=["x", "y", "out", "x.numel()"],
        ret="out", impls=impls,
        configs=[{"name": "small_odd", "batch_size": 3, "dim": 45}, {"name": "medium", "batch_size": 8, "dim": 128}],
        metrics={"flops": "4 * batch_size * dim", "bytes": "8 * batch_size * dim"}, tolerance=tol,
        tags=["loss"], variant={"op": name, "reduction": red})
    return build_task(spec, seed)
