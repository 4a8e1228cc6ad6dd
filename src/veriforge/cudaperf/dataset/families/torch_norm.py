"""Softmax / log_softmax / softmin over any dim, LayerNorm, RMSNorm, GroupNorm-lite, InstanceNorm and
Lp-normalisation (PyTorch→CUDA).

All of them are *row operations*: statistics over the reduced elements of one output "column"
(the passes of :mod:`.torch_reduce`: max, sum of exp, mean, variance...), then a write pass that
maps every element with those statistics. The row templates here reuse the reduction's layouts
(contiguous rows or elements ``inner`` apart) and strategies (thread / warp / block or column tile
per row), adding the write loop and optional fused inputs (a residual ``y``, learned weights).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from veriforge.cudaperf.dataset.family import GeneratedTask

from .torch_common import ImplSpec, TorchSpec, build_task
from .torch_elementwise import ACTS, act_device_fns
from .torch_reduce import _COMB, _INIT, RPass, _at, _col, _layout
from .torch_reduce import SHAPES as RSHAPES

__all__ = ["norm_tasks", "softmax_tasks"]


def _passes(passes: tuple[RPass, ...], load: str, loop: str, combine: Callable[[str, str], str]) -> str:
    out = []
    for p, rp in enumerate(passes):
        comb = _COMB[rp.kind].format(a=f"a{p}", b="(" + rp.map + ")")
        out.append(f"    float a{p} = {_INIT[rp.kind]};\n"
                   f"    for ({loop}) {{\n        float v = {load};\n        a{p} = {comb};\n    }}\n"
                   f"{combine(rp.kind, f'a{p}')}    float r{p} = {rp.post.format(f'a{p}')};\n")
    return "".join(out)


def row_impls(layout: str, passes: tuple[RPass, ...], load: str, write: str, extra_sig: str, extra_args: str,
              fns: str) -> list[ImplSpec]:
    """Three strategies for a row operation. ``load`` is the C expression of element k of the row
    (over ``col``/``ycol`` and ``{K}``-free names), ``write`` the output value (over v, r0, r1, k, t)."""
    at = _at(layout)
    ld = load.replace("AT", at)
    ocol = _col(layout, "{t}").replace("const float* col = x", "float* ocol = out")
    ycol = _col(layout, "{t}").replace("col = x", "ycol = y") if "ycol" in load or "ycol" in write else ""
    st = at.replace("col", "ocol")
    wr = write.replace("AT", at)
    sig = f"const float* x, float* out, int T, int R, int inner{extra_sig}"
    args = f"x, out, T, R, inner{extra_args}"

    def setup(t: str) -> str:
        lines = [_col(layout, t), ocol.format(t=t)]
        if ycol:
            lines.append(ycol.format(t=t))
        return "\n    ".join(lines)

    def body(loop: str, combine: Callable[[str, str], str]) -> str:
        return (f"{_passes(passes, ld, loop, combine)}"
                f"    for ({loop}) {{\n        float v = {ld};\n        {st} = {wr};\n    }}\n")

    naive = f'''{fns}
__global__ void row_naive({sig}) {{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= T) return;
    {setup("t")}
{body("int k = 0; k < R; ++k", lambda kind, acc: "")}}}

extern "C" void run({sig}) {{
    row_naive<<<(T + 127) / 128, 128>>>({args});
}}
'''

    def shfl(kind: str, acc: str) -> str:
        c = _COMB[kind].format(a=acc, b=f"__shfl_xor_sync(0xffffffffu, {acc}, off)")
        return f"    for (int off = 16; off > 0; off >>= 1) {acc} = {c};\n"

    warp = f'''{fns}
#define WARPS 4
__global__ void row_warp({sig}) {{
    int t = blockIdx.x * WARPS + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (t >= T) return;   // whole warps leave together
    {setup("t")}
{body("int k = lane; k < R; k += 32", shfl)}}}

extern "C" void run({sig}) {{
    row_warp<<<(T + WARPS - 1) / WARPS, WARPS * 32>>>({args});
}}
'''
    if layout == "last":
        def tree(kind: str, acc: str) -> str:
            c = _COMB[kind].format(a="red[tid]", b="red[tid + s]")
            return (f"    red[tid] = {acc};\n    __syncthreads();\n"
                    f"    for (int s = THREADS / 2; s > 0; s >>= 1) {{\n"
                    f"        if (tid < s) red[tid] = {c};\n        __syncthreads();\n    }}\n"
                    f"    {acc} = red[0];\n    __syncthreads();\n")

        block = f'''{fns}
#define THREADS 128
__global__ void row_block({sig}) {{
    __shared__ float red[THREADS];
    int t = blockIdx.x;
    int tid = threadIdx.x;
    {setup("t")}
{body("int k = tid; k < R; k += THREADS", tree)}}}

extern "C" void run({sig}) {{
    row_block<<<T, THREADS>>>({args});
}}
'''
        return [ImplSpec("naive", "naive", 1, "one thread per row: statistics passes and the write pass serially",
                         naive),
                ImplSpec("block_per_row", "shared_tiled", 2,
                         "one 128-thread block per row, coalesced strided loops, shared-memory tree per statistic",
                         block),
                ImplSpec("warp_per_row", "warp_shuffle", 3,
                         "one warp per row, statistics combined with butterfly shuffles, no barriers", warp)]

    def tile(kind: str, acc: str) -> str:
        c = _COMB[kind].format(a="red[ty][tx]", b="red[ty + s][tx]")
        return (f"    red[ty][tx] = {acc};\n    __syncthreads();\n"
                f"    for (int s = 4; s > 0; s >>= 1) {{\n        if (ty < s) red[ty][tx] = {c};\n"
                f"        __syncthreads();\n    }}\n    {acc} = red[0][tx];\n    __syncthreads();\n")

    col_tile = f'''{fns}
__global__ void row_tile({sig}) {{
    __shared__ float red[8][33];
    int tx = threadIdx.x, ty = threadIdx.y;
    int t = blockIdx.x * 32 + tx;
    int live = t < T;
    int tc = live ? t : 0;
    int Rl = live ? R : 0;   // dead columns still take part in the barriers
    {setup("tc")}
{body("int k = ty; k < Rl; k += 8", tile)}}}

extern "C" void run({sig}) {{
    row_tile<<<(T + 31) / 32, dim3(32, 8)>>>({args});
}}
'''
    return [ImplSpec("warp_per_column", "warp_shuffle", 1,
                     "one warp per reduced column; lanes touch elements `inner` apart (uncoalesced)", warp),
            ImplSpec("naive", "naive", 2, "one thread per column, serial passes; neighbouring threads coalesce",
                     naive),
            ImplSpec("column_tile", "shared_tiled", 3,
                     "32 consecutive columns per block, 8 thread rows split the reduced dim, shared-memory combine",
                     col_tile)]


_SOFT = {
    "softmax": ("torch.softmax({x}, dim={d})", "expf(v - r0) / r1"),
    "log_softmax": ("torch.log_softmax({x}, dim={d})", "v - r0 - logf(r1)"),
    "softmin": ("F.softmin({x}, dim={d})", "expf(v - r0) / r1"),
}
_SOFT_PASSES = (RPass("max", "v"), RPass("sum", "expf(v - r0)"))


def softmax_tasks(seed: int, family: str) -> Iterator[GeneratedTask]:
    """softmax / log_softmax / softmin × every dim of 2-D and 3-D inputs × 4 fusions."""
    fusions = ("plain", "scale_in", "add_in", "mul_out", "scale_add")
    for op, (tfmt, write) in _SOFT.items():
        for rank in (2, 3):
            for d in range(rank):
                for fu in fusions:
                    yield _softmax(op, tfmt, write, rank, d, fu, family, seed)


def _softmax(op: str, tfmt: str, write: str, rank: int, d: int, fusion: str, family: str,
             seed: int) -> GeneratedTask:
    dims, defaults, cfgs = RSHAPES[rank]
    layout = _layout(rank, d, d)
    neg = op == "softmin"
    load = "(-AT)" if neg else "AT"
    operand = "x"
    args = ["x"]
    extra_sig = extra_args = ""
    consts = dict(defaults)
    init_args: list[tuple[str, str]] = []
    init_values: list[str] = []
    call_extra: list[str] = []
    if fusion == "scale_in":
        load = f"({load} * s)"
        operand = "x * self.scale"
        consts["scale"] = 0.5
        init_args, init_values = [("scale", "float")], ["scale"]
        extra_sig, extra_args = ", float s", ", s"
        call_extra = ["self.scale"]
    elif fusion == "scale_add":
        load = f"({load} * s + {'-' if neg else ''}ycol[K])"
        operand = "x * self.scale + y"
        args = ["x", "y"]
        consts["scale"] = 0.5
        init_args, init_values = [("scale", "float")], ["scale"]
        extra_sig, extra_args = ", float s", ", s"
        call_extra = ["self.scale"]
    elif fusion == "add_in":
        load = f"({load} + {'-' if neg else ''}ycol[K])"
        operand = "x + y"
        args = ["x", "y"]
    ref = tfmt.format(x=operand, d=d)
    if fusion == "mul_out":
        ref = f"{ref} * y"
        args = ["x", "y"]
        write = f"({write}) * ycol[K]"
    at = _at(layout)
    kexpr = at[at.index("["):]  # "[k]" or "[(long long)k * inner]"
    load = load.replace("ycol[K]", "ycol" + kexpr)
    write = write.replace("ycol[K]", "ycol" + kexpr)
    ysig = ", const float* y" if len(args) == 2 else ""
    impls = row_impls(layout, _SOFT_PASSES, load, write, ysig + extra_sig, (", y" if ysig else "") + extra_args, "")
    total = " * ".join(dims)
    shape = "(" + ", ".join(dims) + ")"
    inner = " * ".join(f"x.size({k})" for k in range(d + 1, rank)) or "1"
    call = ["x", "out", f"x.numel() // x.size({d})", f"x.size({d})", inner] + (["y"] if ysig else []) + call_extra
    description = f"""
forward({", ".join(args)}) returns {ref.replace("self.", "")} for float32 {" and ".join(args)} of shape {shape}
({op} over dim {d}{", fused with the surrounding element-wise ops" if fusion != "plain" else ""}). Subtract the
maximum before exponentiating (inputs have a large offset). The output is a new float32 tensor of x's
shape; every element must be written.
"""
    spec = TorchSpec(
        task_id=f"pt_{op}_{rank}d_dim{d}_{fusion}", family=family, category="softmax",
        title=f"{op} over dim {d} of a {rank}-D tensor ({fusion})", description=description, consts=consts,
        forward_args=args, ref_forward=[f"return {ref}"],
        inputs=["torch.randn(" + ", ".join(dims) + ") * 2.0 + 5.0"] + (
            ["torch.randn(" + ", ".join(dims) + ")"] if len(args) == 2 else []),
        prep=[f"{a} = {a}.contiguous()" for a in args] + ["out = torch.empty_like(x)"],
        call_args=call, ret="out", impls=impls, configs=[dict(c) for c in cfgs],
        metrics={"flops": f"5 * {total}", "bytes": f"{4 * (len(args) + 1)} * {total}"},
        init_args=init_args, init_values=init_values, tolerance={"rtol": 1e-4, "atol": 1e-5},
        tags=["reduction", "normalization", layout],
        variant={"op": op, "rank": rank, "dim": d, "fusion": fusion, "layout": layout},
        timing=[{"name": "timing", **_ROW_TIMING_2D}] if rank == 2 and layout == "last" else [])
    return build_task(spec, seed)


# ---- LayerNorm / RMSNorm / GroupNorm / InstanceNorm / Lp-normalise ---------------------------------------

_MEANVAR = (RPass("sum", "v", "{} / R"), RPass("sum", "(v - r0) * (v - r0)", "rsqrtf({} / R + eps)"))
_RMS = (RPass("sum", "v * v", "rsqrtf({} / R + eps)"),)


def norm_tasks(seed: int, family: str) -> Iterator[GeneratedTask]:
    """LayerNorm (2-D rows, 3-D rows, 3-D over the last two dims), RMSNorm, GroupNorm/InstanceNorm
    (3-D and 4-D), each with/without learned affine parameters and with a residual or activation
    fusion; L2/L1 normalisation over every dim of 2-D and 3-D inputs."""
    fusions = ("plain", "residual", "gelu", "silu")
    for shape in ("2d", "3d", "3d_last2"):
        for affine in (True, False):
            for fu in fusions:
                yield _norm("layernorm", shape, affine, fu, family, seed)
    for shape in ("2d", "3d"):
        for affine in (True, False):
            for fu in fusions:
                yield _norm("rmsnorm", shape, affine, fu, family, seed)
    for kind in ("groupnorm", "instancenorm"):
        for shape in ("3d", "4d"):
            for affine in (True, False):
                for fu in ("plain", "relu"):
                    yield _norm(kind, shape, affine, fu, family, seed)
    for p in (2, 1):
        for rank in (2, 3):
            for d in range(rank):
                yield _lp(p, rank, d, family, seed)


_NSHAPES = {
    "2d": (("batch_size", "hidden"), {"batch_size": 16, "hidden": 1024},
           [{"name": "small_odd", "batch_size": 5, "hidden": 45}, {"name": "medium", "batch_size": 12, "hidden": 128}]),
    "3d": (("batch_size", "seq_len", "hidden"), {"batch_size": 8, "seq_len": 64, "hidden": 512},
           [{"name": "small_odd", "batch_size": 2, "seq_len": 3, "hidden": 37},
            {"name": "medium", "batch_size": 2, "seq_len": 8, "hidden": 64}]),
    "3d_last2": (("batch_size", "seq_len", "hidden"), {"batch_size": 8, "seq_len": 64, "hidden": 512},
                 [{"name": "small_odd", "batch_size": 3, "seq_len": 5, "hidden": 9},
                  {"name": "medium", "batch_size": 4, "seq_len": 8, "hidden": 24}]),
}
_GSHAPES = {
    "3d": (("batch_size", "channels", "length"), {"batch_size": 8, "channels": 32, "length": 256},
           [{"name": "small_odd", "batch_size": 2, "channels": 6, "length": 11},
            {"name": "medium", "batch_size": 3, "channels": 8, "length": 32}]),
    "4d": (("batch_size", "channels", "height", "width"),
           {"batch_size": 8, "channels": 32, "height": 16, "width": 16},
           [{"name": "small_odd", "batch_size": 2, "channels": 6, "height": 3, "width": 5},
            {"name": "medium", "batch_size": 2, "channels": 8, "height": 4, "width": 8}]),
}


#: [[timing]] shapes of the norms (H100 scale, ~16M elements): 65536 rows (or groups) of 256 elements —
#: where one warp per row is the strategy of choice and a block per row still has a full block of work
#: (rows of 1024+ move the cost model's preference to a block per row: a warp's 3 passes over a long row
#: overflow L2 across a wave). Instance norm has groups of 128 (one channel's spatial extent).
_NORM_TIMING = {
    "2d": {"batch_size": 65536, "hidden": 256},
    "3d": {"batch_size": 256, "seq_len": 256, "hidden": 256},
    "3d_last2": {"batch_size": 65536, "seq_len": 4, "hidden": 64},
}
_GROUP_TIMING = {  # groups of 2 channels (group norm): 2 x 128 = 256 elements per group
    "3d": {"batch_size": 2048, "channels": 64, "length": 128},
    "4d": {"batch_size": 2048, "channels": 64, "height": 8, "width": 16},
}
#: Softmax / L_p-normalisation of a 2-D tensor over its last dim: 65536 rows of 256 (3-D: 256^3 already is).
_ROW_TIMING_2D = {"batch_size": 65536, "dim": 256}


def _norm(kind: str, shape: str, affine: bool, fusion: str, family: str, seed: int) -> GeneratedTask:
    group = kind in ("groupnorm", "instancenorm")
    dims, defaults, cfgs = (_GSHAPES if group else _NSHAPES)[shape]
    consts = dict(defaults)
    consts["eps"] = 1e-5
    init_args: list[tuple[str, str]] = [("eps", "float")]
    init_values = ["eps"]
    init_body: list[str] = []
    rank = len(dims)
    total = " * ".join(dims)
    args = ["x", "y"] if fusion == "residual" else ["x"]
    operand = "(x + y)" if fusion == "residual" else "x"
    load = "(AT + ycol[K])" if fusion == "residual" else "AT"
    extra_sig = ", const float* y" if fusion == "residual" else ""
    extra_args = ", y" if fusion == "residual" else ""
    call_tail = ["y"] if fusion == "residual" else []
    if kind in ("layernorm", "rmsnorm"):
        nshape = "x.shape[-1:]" if shape != "3d_last2" else "x.shape[-2:]"
        pshape = "hidden" if shape != "3d_last2" else "seq_len, hidden"
        if affine:
            for n in ("seq_len", "hidden") if shape == "3d_last2" else ("hidden",):
                init_args.append((n, "int"))
                init_values.append(n)
            init_body.append(f"self.weight = nn.Parameter(torch.rand({pshape}) + 0.5)")
            if kind == "layernorm":
                init_body.append(f"self.bias = nn.Parameter(torch.randn({pshape}) * 0.5)")
        if kind == "layernorm":
            wb = ", self.weight, self.bias" if affine else ""
            ref = f"F.layer_norm({operand}, {nshape}{wb}, eps=self.eps)"
            passes, write = _MEANVAR, "(v - r0) * r1"
        else:
            ref = f"{operand} * torch.rsqrt(({operand}).pow(2).mean(dim=-1, keepdim=True) + self.eps)"
            if shape == "3d_last2":
                raise AssertionError("rmsnorm is over the last dim only")
            if affine:
                ref += " * self.weight"
            passes, write = _RMS, "v * r0"
        if affine:
            write = f"({write}) * w[k]" + (" + b[k]" if kind == "layernorm" else "")
        red = "x.size(1) * x.size(2)" if shape == "3d_last2" else f"x.size({rank - 1})"
        layout_words = "the last two dims" if shape == "3d_last2" else "the last dim"
    else:
        groups = "channels // 2" if kind == "groupnorm" else "channels"
        init_args.append(("channels", "int"))
        init_values.append("channels")
        init_body.append(f"self.groups = {groups}")
        if affine:
            init_body += ["self.weight = nn.Parameter(torch.rand(channels) + 0.5)",
                          "self.bias = nn.Parameter(torch.randn(channels) * 0.5)"]
        wb = ", self.weight, self.bias" if affine else ""
        ref = f"F.group_norm({operand}, self.groups{wb}, eps=self.eps)"
        passes, write = _MEANVAR, "(v - r0) * r1"
        # the group's elements are contiguous: (channels / groups) channels of L = spatial elements each
        if affine:
            write = f"({write}) * w[(t % G) * (R / L) + k / L] + b[(t % G) * (R / L) + k / L]"
        spatial = " * ".join(f"x.size({k})" for k in range(2, rank))
        red = f"(x.size(1) // self.groups) * {spatial}"
        layout_words = "each group of channels (and the spatial dims)"
        extra_sig += ", int G, int L"
        extra_args += ", G, L"
        call_tail += ["self.groups", spatial]
    if affine:
        extra_sig = ", const float* w" + (", const float* b" if kind != "rmsnorm" else "") + extra_sig
        extra_args = ", w" + (", b" if kind != "rmsnorm" else "") + extra_args
        call_tail = ["self.weight"] + (["self.bias"] if kind != "rmsnorm" else []) + call_tail
    fns = ""
    if fusion in ("gelu", "silu", "relu"):
        ref = ACTS[fusion][0].format(ref)
        write = f"act_{fusion}({write})"
        fns = act_device_fns([fusion])
    load = load.replace("ycol[K]", "ycol[k]")
    extra_sig += ", float eps"
    extra_args += ", eps"
    call_tail.append("self.eps")
    impls = row_impls("last", passes, load, write, extra_sig, extra_args, fns)
    aff_txt = (" with learned parameters created in __init__ exactly as in the reference (same order), passed to "
               "the kernel" if affine else "")
    description = f"""
forward({", ".join(args)}) returns {ref.replace("self.", "")} for float32 {" and ".join(args)} of shape
({", ".join(dims)}): {kind} over {layout_words}{aff_txt}.
Statistics use the biased variance; inputs have mean 3 and std 2. The output is a new float32 tensor
of x's shape; every element must be written.
"""
    call = ["x", "out", f"x.numel() // ({red})", red, "1", *call_tail]
    tid = f"pt_{kind}_{shape}_{'affine' if affine else 'plain'}_{fusion}"
    spec = TorchSpec(
        task_id=tid, family=family, category="layernorm",
        title=f"{kind} over {layout_words} of a {rank}-D tensor ({'affine' if affine else 'no affine'}, {fusion})",
        description=description, consts=consts, forward_args=args, ref_forward=[f"return {ref}"],
        inputs=[f"torch.randn({', '.join(dims)}) * 2.0 + 3.0"] + (
            [f"torch.randn({', '.join(dims)})"] if len(args) == 2 else []),
        prep=[f"{a} = {a}.contiguous()" for a in args] + ["out = torch.empty_like(x)"], call_args=call,
        ret="out", impls=impls, configs=[dict(c) for c in cfgs],
        metrics={"flops": f"8 * {total}", "bytes": f"{4 * (len(args) + 1)} * {total}"},
        init_args=init_args, init_values=init_values, init_body=init_body,
        tolerance={"rtol": 1e-4, "atol": 1e-4}, tags=["reduction", "normalization"],
        variant={"op": kind, "shape": shape, "affine": affine, "fusion": fusion},
        timing=[{"name": "timing", **(_GROUP_TIMING if group else _NORM_TIMING)[shape]}])
    return build_task(spec, seed)


def _lp(p: int, rank: int, d: int, family: str, seed: int) -> GeneratedTask:
    dims, defaults, cfgs = RSHAPES[rank]
    layout = _layout(rank, d, d)
    mp = "v * v" if p == 2 else "fabsf(v)"
    post = "fmaxf(sqrtf({}), 1e-12f)" if p == 2 else "fmaxf({}, 1e-12f)"
    impls = row_impls(layout, (RPass("sum", mp, post),), "AT", "v / r0", "", "", "")
    ref = f"F.normalize(x, p={p}.0, dim={d})"
    inner = " * ".join(f"x.size({k})" for k in range(d + 1, rank)) or "1"
    total = " * ".join(dims)
    description = f"""
forward(x) returns {ref}: x divided by its L{p} norm along dim {d} (the norm clamped below at 1e-12),
for a float32 x of shape ({", ".join(dims)}). The output is a new float32 tensor of x's shape.
"""
    spec = TorchSpec(
        task_id=f"pt_normalize_l{p}_{rank}d_dim{d}", family=family, category="layernorm",
        title=f"L{p}-normalise a {rank}-D tensor along dim {d}", description=description, consts=dict(defaults),
        forward_args=["x"], ref_forward=[f"return {ref}"], inputs=[f"torch.randn({', '.join(dims)})"],
        prep=["x = x.contiguous()", "out = torch.empty_like(x)"],
        call_args=["x", "out", f"x.numel() // x.size({d})", f"x.size({d})", inner], ret="out", impls=impls,
        configs=[dict(c) for c in cfgs], metrics={"flops": f"3 * {total}", "bytes": f"8 * {total}"},
        tolerance={"rtol": 1e-4, "atol": 1e-5}, tags=["reduction", "normalization", layout],
        variant={"op": f"normalize_l{p}", "rank": rank, "dim": d, "layout": layout},
        timing=[{"name": "timing", **_ROW_TIMING_2D}] if rank == 2 and layout == "last" else [])
    return build_task(spec, seed)
