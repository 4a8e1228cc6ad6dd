"""Reductions over one dimension (or two adjacent ones) of 2-D/3-D/4-D tensors (PyTorch→CUDA).

A reduction of dim ``d`` sees the input as (outer, R, inner): output element ``t`` (``t = o * inner +
i``) reduces ``x[(o * R + k) * inner + i]`` over k. Where the reduced dim is the last one the reduced
elements are contiguous (a row) and the best kernels give a warp or a block to each output; otherwise
they are ``inner`` apart and the best kernel keeps 32 consecutive outputs in 32 lanes (coalesced)
while 8 thread rows split R. The generated index arithmetic is specialised per layout, and each op is
described by its passes (a two-pass op such as var or logsumexp reads the row twice), so the same
templates emit every (op, layout, strategy).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from veriforge.cudaperf.dataset.family import GeneratedTask

from .torch_common import ImplSpec, TorchSpec, build_task
from .torch_elementwise import ACT_FLOPS, ACTS, act_device_fns

__all__ = ["OPS", "act_reduce_tasks", "reduce_tasks"]

_COMB = {"sum": "({a} + {b})", "max": "fmaxf({a}, {b})", "min": "fminf({a}, {b})"}
_INIT = {"sum": "0.0f", "max": "-3.402823466e38f", "min": "3.402823466e38f"}


@dataclass(frozen=True)
class RPass:
    kind: str  # sum | max | min
    map: str  # C expression of the element `v` (may use r0, the finished first pass)
    post: str = "{}"  # C expression turning the reduced value into r<k>


@dataclass(frozen=True)
class ROp:
    name: str
    torch: str  # torch call with {x}, {dim}, {kd}
    passes: tuple[RPass, ...]
    final: str  # C expression over r0, r1, R
    flops: int
    arg: str = ""  # "max" | "min" for argmax/argmin (int64 output)
    words: str = ""


OPS: list[ROp] = [
    ROp("sum", "torch.sum({x}, dim={dim}{kd})", (RPass("sum", "v"),), "r0", 1, words="sum"),
    ROp("mean", "torch.mean({x}, dim={dim}{kd})", (RPass("sum", "v"),), "r0 / R", 1, words="mean"),
    ROp("max", "torch.max({x}, dim={dim}{kd}).values", (RPass("max", "v"),), "r0", 1, words="maximum"),
    ROp("min", "torch.min({x}, dim={dim}{kd}).values", (RPass("min", "v"),), "r0", 1, words="minimum"),
    ROp("argmax", "torch.argmax({x}, dim={dim}{kd})", (), "", 1, arg="max",
        words="index of the maximum (int64; the smallest index on ties)"),
    ROp("argmin", "torch.argmin({x}, dim={dim}{kd})", (), "", 1, arg="min",
        words="index of the minimum (int64; the smallest index on ties)"),
    ROp("norm2", "torch.norm({x}, p=2, dim={dim}{kd})", (RPass("sum", "v * v"),), "sqrtf(r0)", 2,
        words="Euclidean norm sqrt(sum x^2)"),
    ROp("norm1", "torch.norm({x}, p=1, dim={dim}{kd})", (RPass("sum", "fabsf(v)"),), "r0", 2,
        words="L1 norm sum |x|"),
    ROp("logsumexp", "torch.logsumexp({x}, dim={dim}{kd})", (RPass("max", "v"), RPass("sum", "expf(v - r0)")),
        "r0 + logf(r1)", 4, words="log(sum(exp(x))), computed stably around the maximum"),
    ROp("var", "torch.var({x}, dim={dim}{kd})", (RPass("sum", "v", "{} / R"), RPass("sum", "(v - r0) * (v - r0)")),
        "r1 / (R - 1)", 4, words="unbiased variance (divides by R - 1)"),
    ROp("var_biased", "torch.var({x}, dim={dim}, correction=0{kd})",
        (RPass("sum", "v", "{} / R"), RPass("sum", "(v - r0) * (v - r0)")), "r1 / R", 4,
        words="population variance (divides by R)"),
    ROp("std", "torch.std({x}, dim={dim}{kd})", (RPass("sum", "v", "{} / R"), RPass("sum", "(v - r0) * (v - r0)")),
        "sqrtf(r1 / (R - 1))", 5, words="unbiased standard deviation"),
    ROp("std_biased", "torch.std({x}, dim={dim}, correction=0{kd})",
        (RPass("sum", "v", "{} / R"), RPass("sum", "(v - r0) * (v - r0)")), "sqrtf(r1 / R)", 5,
        words="population standard deviation"),
]
_OPS = {o.name: o for o in OPS}
# torch.amax/amin over a tuple of dims (same passes as max/min)
_MULTI = {"amax": ROp("amax", "torch.amax({x}, dim={dim}{kd})", (RPass("max", "v"),), "r0", 1, words="maximum"),
          "amin": ROp("amin", "torch.amin({x}, dim={dim}{kd})", (RPass("min", "v"),), "r0", 1, words="minimum"),
          "sum": _OPS["sum"], "mean": _OPS["mean"]}

SHAPES = {
    2: (("batch_size", "dim"), {"batch_size": 16, "dim": 4096},
        [{"name": "small_odd", "batch_size": 5, "dim": 37}, {"name": "medium", "batch_size": 12, "dim": 96}]),
    3: (("batch_size", "dim1", "dim2"), {"batch_size": 16, "dim1": 256, "dim2": 256},
        [{"name": "small_odd", "batch_size": 2, "dim1": 7, "dim2": 9},
         {"name": "medium", "batch_size": 4, "dim1": 16, "dim2": 24}]),
    4: (("batch_size", "channels", "height", "width"), {"batch_size": 8, "channels": 32, "height": 32, "width": 32},
        [{"name": "small_odd", "batch_size": 2, "channels": 3, "height": 5, "width": 7},
         {"name": "medium", "batch_size": 2, "channels": 4, "height": 6, "width": 8}]),
}


def _layout(rank: int, lo: int, hi: int) -> str:
    """'last' (contiguous rows), 'first' (outer == 1) or 'middle' for reduced dims lo..hi."""
    if hi == rank - 1:
        return "last"
    return "first" if lo == 0 else "middle"


def _col(layout: str, t: str) -> str:
    """Where output ``t``'s reduced elements start (its 'column'); they are ``inner`` apart (1 for 'last')."""
    if layout == "last":
        return f"const float* col = x + (long long){t} * R;"
    if layout == "first":
        return f"const float* col = x + {t};"
    return f"const float* col = x + (long long)({t} / inner) * R * inner + {t} % inner;"


def _at(layout: str) -> str:
    return "col[k]" if layout == "last" else "col[(long long)k * inner]"


def _value_passes(op: ROp, at: str, pre: str, lane_loop: str, combine_block: Callable[[str, str, int], str]) -> str:
    """Per-pass code: local accumulation over ``lane_loop`` then ``combine_block(kind, acc)`` -> reduced."""
    out = []
    for p, rp in enumerate(op.passes):
        comb = _COMB[rp.kind].format(a=f"a{p}", b="(" + rp.map + ")")
        out.append(f"    float a{p} = {_INIT[rp.kind]};\n"
                   f"    for ({lane_loop}) {{\n        float v = {pre.format(at)};\n        a{p} = {comb};\n    }}\n"
                   f"{combine_block(rp.kind, f'a{p}', p)}"
                   f"    float r{p} = {rp.post.format(f'a{p}')};\n")
    return "".join(out)


def _value_impls(op: ROp, layout: str, otype: str, pre: str, fns: str) -> list[ImplSpec]:
    at = _at(layout)
    sig = f"const float* x, {otype}* out, int T, int R, int inner"
    naive = f'''{fns}
__global__ void reduce_naive({sig}) {{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= T) return;
    {_col(layout, "t")}
{_value_passes(op, at, pre, "int k = 0; k < R; ++k", lambda kind, acc, p: "")}    out[t] = {op.final};
}}

extern "C" void run({sig}) {{
    reduce_naive<<<(T + 127) / 128, 128>>>(x, out, T, R, inner);
}}
'''

    def shfl(kind: str, acc: str, p: int) -> str:
        c = _COMB[kind].format(a=acc, b=f"__shfl_xor_sync(0xffffffffu, {acc}, off)")
        return f"    for (int off = 16; off > 0; off >>= 1) {acc} = {c};\n"

    warp = f'''{fns}
#define WARPS 4
__global__ void reduce_warp({sig}) {{
    int t = blockIdx.x * WARPS + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (t >= T) return;   // whole warps leave together
    {_col(layout, "t")}
{_value_passes(op, at, pre, "int k = lane; k < R; k += 32", shfl)}    if (lane == 0) out[t] = {op.final};
}}

extern "C" void run({sig}) {{
    reduce_warp<<<(T + WARPS - 1) / WARPS, WARPS * 32>>>(x, out, T, R, inner);
}}
'''
    if layout == "last":
        def tree(kind: str, acc: str, p: int) -> str:
            c = _COMB[kind].format(a="red[tid]", b="red[tid + s]")
            return (f"    red[tid] = {acc};\n    __syncthreads();\n"
                    f"    for (int s = THREADS / 2; s > 0; s >>= 1) {{\n"
                    f"        if (tid < s) red[tid] = {c};\n        __syncthreads();\n    }}\n"
                    f"    {acc} = red[0];\n    __syncthreads();   // red is reused by the next pass\n")

        third = f'''{fns}
#define THREADS 128
__global__ void reduce_block({sig}) {{
    __shared__ float red[THREADS];
    int t = blockIdx.x;
    int tid = threadIdx.x;
    {_col(layout, "t")}
{_value_passes(op, at, pre, "int k = tid; k < R; k += THREADS", tree)}    if (tid == 0) out[t] = {op.final};
}}

extern "C" void run({sig}) {{
    reduce_block<<<T, THREADS>>>(x, out, T, R, inner);
}}
'''
        return [ImplSpec("naive", "naive", 1, "one thread per output reduces its row serially", naive),
                ImplSpec("block_per_row", "shared_tiled", 2,
                         "one 128-thread block per row, strided coalesced loads, shared-memory tree per pass", third),
                ImplSpec("warp_per_row", "warp_shuffle", 3,
                         "one warp per row, lanes stride the row, butterfly __shfl_xor_sync per pass", warp)]

    def tile(kind: str, acc: str, p: int) -> str:
        c = _COMB[kind].format(a="red[ty][tx]", b="red[ty + s][tx]")
        return (f"    red[ty][tx] = {acc};\n    __syncthreads();\n"
                f"    for (int s = 4; s > 0; s >>= 1) {{\n        if (ty < s) red[ty][tx] = {c};\n"
                f"        __syncthreads();\n    }}\n    {acc} = red[0][tx];\n    __syncthreads();\n")

    third = f'''{fns}
__global__ void reduce_tile({sig}) {{
    __shared__ float red[8][33];
    int tx = threadIdx.x, ty = threadIdx.y;
    int t = blockIdx.x * 32 + tx;
    int live = t < T;
    int tc = live ? t : 0;
    {_col(layout, "tc")}
    int Rl = live ? R : 0;   // dead columns still join the barriers
{_value_passes(op, at, pre, "int k = ty; k < Rl; k += 8", tile)}    if (ty == 0 && live) out[t] = {op.final};
}}

extern "C" void run({sig}) {{
    reduce_tile<<<(T + 31) / 32, dim3(32, 8)>>>(x, out, T, R, inner);
}}
'''
    return [ImplSpec("warp_per_output", "warp_shuffle", 1,
                     "one warp per output; lanes read elements `inner` apart (uncoalesced), shuffle combine", warp),
            ImplSpec("naive", "naive", 2,
                     "one thread per output, serial loop; neighbouring threads read neighbouring columns", naive),
            ImplSpec("column_tile", "shared_tiled", 3,
                     "32 consecutive outputs per block (coalesced), 8 thread rows split R, shared-memory combine",
                     third)]


def _arg_impls(op: ROp, layout: str) -> list[ImplSpec]:
    at = _at(layout)
    better = ">" if op.arg == "max" else "<"
    init = "-3.402823466e38f" if op.arg == "max" else "3.402823466e38f"
    sig = "const float* x, long long* out, int T, int R, int inner"
    naive = f'''
__global__ void arg_naive({sig}) {{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= T) return;
    {_col(layout, "t")}
    float best = col[0];
    int arg = 0;
    for (int k = 1; k < R; ++k) {{
        float v = {at};
        if (v {better} best) {{ best = v; arg = k; }}   // strict: the first index wins ties
    }}
    out[t] = arg;
}}

extern "C" void run({sig}) {{
    arg_naive<<<(T + 127) / 128, 128>>>(x, out, T, R, inner);
}}
'''
    merge = f"if (ob {better} best || (ob == best && oa < arg)) {{ best = ob; arg = oa; }}"
    warp = f'''
#define WARPS 4
__global__ void arg_warp({sig}) {{
    int t = blockIdx.x * WARPS + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (t >= T) return;
    {_col(layout, "t")}
    float best = {init};
    int arg = 0x7fffffff;
    for (int k = lane; k < R; k += 32) {{
        float v = {at};
        if (v {better} best) {{ best = v; arg = k; }}
    }}
    for (int off = 16; off > 0; off >>= 1) {{
        float ob = __shfl_xor_sync(0xffffffffu, best, off);
        int oa = __shfl_xor_sync(0xffffffffu, arg, off);
        {merge}
    }}
    if (lane == 0) out[t] = arg;
}}

extern "C" void run({sig}) {{
    arg_warp<<<(T + WARPS - 1) / WARPS, WARPS * 32>>>(x, out, T, R, inner);
}}
'''
    if layout == "last":
        third = f'''
#define THREADS 128
__global__ void arg_block({sig}) {{
    __shared__ float bv[THREADS];
    __shared__ int bi[THREADS];
    int t = blockIdx.x, tid = threadIdx.x;
    {_col(layout, "t")}
    float best = {init};
    int arg = 0x7fffffff;
    for (int k = tid; k < R; k += THREADS) {{
        float v = {at};
        if (v {better} best) {{ best = v; arg = k; }}
    }}
    bv[tid] = best;
    bi[tid] = arg;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {{
        if (tid < s) {{
            float ob = bv[tid + s];
            int oa = bi[tid + s];
            {merge}
            bv[tid] = best;
            bi[tid] = arg;
        }}
        __syncthreads();
    }}
    if (tid == 0) out[t] = bi[0];
}}

extern "C" void run({sig}) {{
    arg_block<<<T, THREADS>>>(x, out, T, R, inner);
}}
'''
        return [ImplSpec("naive", "naive", 1, "one thread per output, serial scan keeping the first extremum", naive),
                ImplSpec("block_per_row", "shared_tiled", 2,
                         "one block per row, (value, index) pairs merged in shared memory, lowest index wins ties",
                         third),
                ImplSpec("warp_per_row", "warp_shuffle", 3,
                         "one warp per row, (value, index) pairs merged with shuffles, lowest index wins ties", warp)]
    third = f'''
__global__ void arg_tile({sig}) {{
    __shared__ float bv[8][33];
    __shared__ int bi[8][33];
    int tx = threadIdx.x, ty = threadIdx.y;
    int t = blockIdx.x * 32 + tx;
    int live = t < T;
    int tc = live ? t : 0;
    {_col(layout, "tc")}
    float best = {init};
    int arg = 0x7fffffff;
    if (live) {{
        for (int k = ty; k < R; k += 8) {{
            float v = {at};
            if (v {better} best) {{ best = v; arg = k; }}
        }}
    }}
    bv[ty][tx] = best;
    bi[ty][tx] = arg;
    __syncthreads();
    for (int s = 4; s > 0; s >>= 1) {{
        if (ty < s) {{
            float ob = bv[ty + s][tx];
            int oa = bi[ty + s][tx];
            {merge}
            bv[ty][tx] = best;
            bi[ty][tx] = arg;
        }}
        __syncthreads();
    }}
    if (ty == 0 && live) out[t] = bi[0][tx];
}}

extern "C" void run({sig}) {{
    arg_tile<<<(T + 31) / 32, dim3(32, 8)>>>(x, out, T, R, inner);
}}
'''
    return [ImplSpec("warp_per_output", "warp_shuffle", 1,
                     "one warp per output; lanes read elements `inner` apart (uncoalesced), shuffle merge", warp),
            ImplSpec("naive", "naive", 2, "one thread per output, serial scan; neighbouring threads coalesce", naive),
            ImplSpec("column_tile", "shared_tiled", 3,
                     "32 consecutive outputs per block, 8 thread rows split R, (value, index) merge in shared memory",
                     third)]


def _size(dims: tuple[str, ...], idx: range) -> str:
    return " * ".join(f"x.size({k})" for k in idx) or "1"


def _build(task_id: str, family: str, op: ROp, rank: int, lo: int, hi: int, keepdim: bool, seed: int,
           act: str = "") -> GeneratedTask:
    dims, defaults, cfgs = SHAPES[rank]
    layout = _layout(rank, lo, hi)
    dim_txt = str(lo) if lo == hi else f"({lo}, {hi})"
    kd = ", keepdim=True" if keepdim else ""
    operand = ACTS[act][0].format("x") if act else "x"
    ref = op.torch.format(x=operand, dim=dim_txt, kd=kd)
    out_sizes = []
    for k in range(rank):
        if lo <= k <= hi:
            if keepdim:
                out_sizes.append("1")
        else:
            out_sizes.append(f"x.size({k})")
    otype = "long long" if op.arg else "float"
    dtype = "torch.int64" if op.arg else "x.dtype"
    if not out_sizes:
        alloc = f"out = torch.empty((), dtype={dtype}, device=x.device)"
    elif len(out_sizes) == 1:
        alloc = f"out = torch.empty({out_sizes[0]}, dtype={dtype}, device=x.device)"
    else:
        alloc = f"out = torch.empty({', '.join(out_sizes)}, dtype={dtype}, device=x.device)"
    red = _size(dims, range(lo, hi + 1))
    inner = _size(dims, range(hi + 1, rank))
    total = " * ".join(dims)
    pre = f"act_{act}({{}})" if act else "{}"
    fns = act_device_fns([act]) if act else ""
    impls = _arg_impls(op, layout) if op.arg else _value_impls(op, layout, otype, pre, fns)
    flops = op.flops + (ACT_FLOPS[act] if act else 0)
    out_names = " * ".join(d for k, d in enumerate(dims) if not lo <= k <= hi) or "1"
    obytes = 8 if op.arg else 4
    shape_txt = "(" + ", ".join(dims) + ")"
    out_shape = ", ".join(("1" if keepdim else "") if lo <= k <= hi else d for k, d in enumerate(dims))
    out_shape = ", ".join(p for p in out_shape.split(", ") if p)
    what = f"{act}(x)" if act else "x"
    description = f"""
forward(x) returns {ref} for a float32 tensor x of shape {shape_txt}: the {op.words} of {what} over
dim {dim_txt}{" (keepdim=True: the reduced dims stay as size 1)" if keepdim else ""}. The output is a new
{"int64" if op.arg else "float32"} tensor of shape ({out_shape}); every element must be written.
"""
    tol = {} if op.arg else {"rtol": 1e-4, "atol": 1e-4}
    cat = "reduction"
    spec = TorchSpec(
        task_id=task_id, family=family, category=cat,
        title=f"{op.name} of {what} over dim {dim_txt} of a {rank}-D tensor{' (keepdim)' if keepdim else ''}",
        description=description, consts=dict(defaults), forward_args=["x"], ref_forward=[f"return {ref}"],
        inputs=[f"torch.randn({', '.join(dims)})"], prep=["x = x.contiguous()", alloc],
        call_args=["x", "out", "out.numel()", red, inner], ret="out", impls=impls,
        configs=[dict(c) for c in cfgs],
        metrics={"flops": f"{flops * max(1, len(op.passes))} * {total}",
                 "bytes": f"4 * {total} + {obytes} * {out_names}"},
        tolerance=tol, tags=["reduction", layout], variant={
            "op": op.name, "rank": rank, "dims": [lo, hi] if lo != hi else [lo], "keepdim": keepdim,
            "layout": layout, **({"prologue": act} if act else {})})
    return build_task(spec, seed)


def reduce_tasks(seed: int, family: str) -> Iterator[GeneratedTask]:
    """Every op over every dim of 2-D and 3-D inputs (± keepdim), every dim of 4-D inputs, and
    amax/amin/sum/mean over two adjacent dims of 3-D inputs (± keepdim)."""
    for op in OPS:
        for rank in (2, 3):
            for d in range(rank):
                for kd in (False, True):
                    yield _build(f"pt_red_{op.name}_{rank}d_dim{d}{'_keep' if kd else ''}", family, op, rank, d, d,
                                 kd, seed)
        for d in range(4):
            yield _build(f"pt_red_{op.name}_4d_dim{d}", family, op, 4, d, d, False, seed)
    for name, op in _MULTI.items():
        for lo in (0, 1):
            for kd in (False, True):
                yield _build(f"pt_red_{name}_3d_dims{lo}{lo + 1}{'_keep' if kd else ''}", family, op, 3, lo,
                             lo + 1, kd, seed)


def act_reduce_tasks(seed: int, family: str) -> Iterator[GeneratedTask]:
    """A reduction fused with an activation prologue: op(act(x)) over the last dim of 2-D inputs and
    the middle dim of 3-D inputs."""
    for act in ACTS:
        for opname in ("sum", "mean", "max", "min", "norm2"):
            op = _OPS[opname]
            yield _build(f"pt_red_{opname}_of_{act}_2d_dim1", family, op, 2, 1, 1, False, seed, act)
            yield _build(f"pt_red_{opname}_of_{act}_3d_dim1", family, op, 3, 1, 1, False, seed, act)
