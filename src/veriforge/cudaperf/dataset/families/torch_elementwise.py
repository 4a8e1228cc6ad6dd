"""Element-wise activations and their fusions (PyTorch→CUDA).

Structural axes: the activation (12), the fusion around it (scale/shift prologue or epilogue, a
second input, a broadcast parameter along the last / middle / channel dimension, which changes the
index arithmetic), and compositions of two activations. Every task gets the same three launch
strategies (one thread per element, grid-stride loop, float4 accesses with a scalar tail) around a
per-element ``elem`` function, so the kernels differ exactly where the tasks differ.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from veriforge.cudaperf.dataset.family import GeneratedTask

from .torch_common import ImplSpec, TorchSpec, build_task

__all__ = ["ACTS", "ACT_FLOPS", "act_device_fns", "compose_tasks", "fusion_tasks"]

# name -> (torch expression with {} for the operand, CUDA body of `float act_<name>(float v)`)
ACTS: dict[str, tuple[str, str]] = {
    "relu": ("torch.relu({})", "return v > 0.0f ? v : 0.0f;"),
    "leaky_relu": ("F.leaky_relu({}, 0.1)", "return v > 0.0f ? v : 0.1f * v;"),
    "gelu": ("F.gelu({})", "return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));"),
    "silu": ("F.silu({})", "return v / (1.0f + expf(-v));"),
    "tanh": ("torch.tanh({})", "return tanhf(v);"),
    "sigmoid": ("torch.sigmoid({})", "return 1.0f / (1.0f + expf(-v));"),
    "hardswish": ("F.hardswish({})", "return v * fminf(fmaxf(v + 3.0f, 0.0f), 6.0f) / 6.0f;"),
    "hardsigmoid": ("F.hardsigmoid({})", "return fminf(fmaxf(v + 3.0f, 0.0f), 6.0f) / 6.0f;"),
    "softplus": ("F.softplus({})", "return v > 20.0f ? v : log1pf(expf(v));"),
    "elu": ("F.elu({})", "return v > 0.0f ? v : expm1f(v);"),
    "mish": ("F.mish({})", "float sp = v > 20.0f ? v : log1pf(expf(v));\n    return v * tanhf(sp);"),
    "clamp": ("torch.clamp({}, -0.5, 0.5)", "return fminf(fmaxf(v, -0.5f), 0.5f);"),
}
ACT_FLOPS = {"relu": 1, "leaky_relu": 2, "gelu": 8, "silu": 4, "tanh": 6, "sigmoid": 4, "hardswish": 5,
             "hardsigmoid": 4, "softplus": 5, "elu": 4, "mish": 10, "clamp": 2}


def act_device_fns(names: list[str]) -> str:
    """``__device__ float act_<name>(float)`` for each distinct name (shared with other families)."""
    out = []
    for name in dict.fromkeys(names):
        out.append(f"__device__ __forceinline__ float act_{name}(float v) {{\n    {ACTS[name][1]}\n}}")
    return "\n".join(out) + "\n"


SHAPES = {
    "2d": (("batch_size", "dim"), [{"name": "small_odd", "batch_size": 3, "dim": 45},
                                   {"name": "medium", "batch_size": 8, "dim": 128}]),
    "3d": (("batch_size", "channels", "length"), [{"name": "small_odd", "batch_size": 2, "channels": 5, "length": 9},
                                                  {"name": "medium", "batch_size": 4, "channels": 8, "length": 32}]),
    "4d": (("batch_size", "channels", "height", "width"),
           [{"name": "small_odd", "batch_size": 2, "channels": 3, "height": 5, "width": 7},
            {"name": "medium", "batch_size": 2, "channels": 8, "height": 8, "width": 16}]),
}
SHAPE_DEFAULTS = {"2d": {"batch_size": 16, "dim": 4096}, "3d": {"batch_size": 16, "channels": 64, "length": 512},
                  "4d": {"batch_size": 16, "channels": 32, "height": 64, "width": 64}}


@dataclass(frozen=True)
class Pattern:
    """A fusion around the activation A.

    ``ref(A)`` is the torch expression (A formats a torch operand), ``cuda(a)`` the C expression over
    ``xv``/``yv``/``s``/``b``/``p0[c]``/``p1[c]`` (a formats a C operand); ``pre`` computes ``c`` from the
    linear index ``i``; ``dims`` are extra int launcher arguments ``(c_name, python expr)``.
    """

    name: str
    shape: str
    ref: Callable[[Callable[[str], str]], str]
    cuda: Callable[[Callable[[str], str]], str]
    binary: bool = False
    scalars: bool = False
    params: tuple[str, ...] = ()  # parameter attribute names (p0, p1 in C)
    param_shape: str = ""
    pre: str = ""
    dims: tuple[tuple[str, str], ...] = ()
    flops: int = 0
    words: str = ""
    extra: dict[str, str] = field(default_factory=dict)


PATTERNS: list[Pattern] = [
    Pattern("plain", "2d", lambda A: A("x"), lambda a: a("xv"), words="A(x)"),
    Pattern("scale", "2d", lambda A: f"{A('x')} * self.scale", lambda a: f"{a('xv')} * s", scalars=True, flops=1,
            words="A(x) * scale"),
    Pattern("affine_in", "2d", lambda A: A("x * self.scale + self.shift"), lambda a: a("xv * s + b"),
            scalars=True, flops=2, words="A(x * scale + shift)"),
    Pattern("affine_out", "2d", lambda A: f"{A('x')} * self.scale + self.shift", lambda a: f"{a('xv')} * s + b",
            scalars=True, flops=2, words="A(x) * scale + shift"),
    Pattern("times_x", "2d", lambda A: f"x * {A('x')}", lambda a: f"xv * {a('xv')}", flops=1, words="x * A(x)"),
    Pattern("residual_self", "2d", lambda A: f"{A('x')} + x", lambda a: f"{a('xv')} + xv", flops=1,
            words="A(x) + x"),
    Pattern("square", "2d", lambda A: f"{A('x')} * {A('x')}", lambda a: f"{a('xv')} * {a('xv')}", flops=1,
            words="A(x) squared"),
    Pattern("odd", "2d", lambda A: f"{A('x')} - {A('-x')}", lambda a: f"{a('xv')} - {a('-xv')}", flops=1,
            words="A(x) - A(-x)"),
    Pattern("res_add", "2d", lambda A: f"{A('x')} + y", lambda a: f"{a('xv')} + yv", binary=True, flops=1,
            words="A(x) + y"),
    Pattern("pre_add", "2d", lambda A: A("x + y"), lambda a: a("xv + yv"), binary=True, flops=1, words="A(x + y)"),
    Pattern("gate", "2d", lambda A: f"{A('x')} * y", lambda a: f"{a('xv')} * yv", binary=True, flops=1,
            words="A(x) * y"),
    Pattern("pre_mul", "2d", lambda A: A("x * y"), lambda a: a("xv * yv"), binary=True, flops=1, words="A(x * y)"),
    Pattern("pre_sub", "2d", lambda A: A("x - y"), lambda a: a("xv - yv"), binary=True, flops=1, words="A(x - y)"),
    Pattern("both", "2d", lambda A: f"{A('x')} + {A('y')}", lambda a: f"{a('xv')} + {a('yv')}", binary=True,
            flops=1, words="A(x) + A(y)"),
    Pattern("blend", "2d", lambda A: f"{A('x')} * self.scale + y * (1.0 - self.scale)",
            lambda a: f"{a('xv')} * s + yv * (1.0f - s)", binary=True, scalars=True, flops=4,
            words="A(x) * scale + y * (1 - scale)"),
    Pattern("sub_self", "2d", lambda A: f"x - {A('x')}", lambda a: f"xv - {a('xv')}", flops=1, words="x - A(x)"),
    Pattern("clamp_out", "2d", lambda A: f"torch.clamp({A('x')}, -1.0, 1.0)",
            lambda a: f"fminf(fmaxf({a('xv')}, -1.0f), 1.0f)", flops=2, words="A(x) clamped to [-1, 1]"),
    Pattern("scaled_residual", "2d", lambda A: f"{A('x')} * self.scale + x", lambda a: f"{a('xv')} * s + xv",
            scalars=True, flops=2, words="A(x) * scale + x"),
    Pattern("sq_in", "2d", lambda A: A("x * x"), lambda a: a("xv * xv"), flops=1, words="A(x * x)"),
    Pattern("mul_add", "2d", lambda A: f"{A('x')} * y + x", lambda a: f"{a('xv')} * yv + xv", binary=True,
            flops=2, words="A(x) * y + x"),
    Pattern("diff", "2d", lambda A: f"{A('x')} - {A('y')}", lambda a: f"{a('xv')} - {a('yv')}", binary=True,
            flops=1, words="A(x) - A(y)"),
    Pattern("ratio", "2d", lambda A: f"{A('x')} / (1.0 + y * y)", lambda a: f"{a('xv')} / (1.0f + yv * yv)",
            binary=True, flops=3, words="A(x) / (1 + y^2)"),
    Pattern("bias_last", "2d", lambda A: A("x + self.bias"), lambda a: a("xv + p0[c]"), params=("bias",),
            param_shape="dim", pre="int c = i % D;", dims=(("D", "x.size(1)"),), flops=1,
            words="A(x + bias) with a learned bias of shape (dim,) broadcast over rows"),
    Pattern("affine_last", "2d", lambda A: A("x * self.weight + self.bias"), lambda a: a("xv * p0[c] + p1[c]"),
            params=("weight", "bias"), param_shape="dim", pre="int c = i % D;", dims=(("D", "x.size(1)"),),
            flops=2, words="A(x * weight + bias) with learned weight and bias of shape (dim,)"),
    Pattern("bias_mid", "3d", lambda A: A("x + self.bias"), lambda a: a("xv + p0[c]"), params=("bias",),
            param_shape="channels, 1", pre="int c = (i / L) % C;",
            dims=(("C", "x.size(1)"), ("L", "x.size(2)")), flops=1,
            words="A(x + bias) with a learned bias of shape (channels, 1) broadcast over batch and length"),
    Pattern("bias_chan", "4d", lambda A: A("x + self.bias"), lambda a: a("xv + p0[c]"), params=("bias",),
            param_shape="channels, 1, 1", pre="int c = (i / HW) % C;",
            dims=(("C", "x.size(1)"), ("HW", "x.size(2) * x.size(3)")), flops=1,
            words="A(x + bias) with a learned per-channel bias of shape (channels, 1, 1) (NCHW)"),
    Pattern("affine_chan", "4d", lambda A: A("x * self.weight + self.bias"), lambda a: a("xv * p0[c] + p1[c]"),
            params=("weight", "bias"), param_shape="channels, 1, 1", pre="int c = (i / HW) % C;",
            dims=(("C", "x.size(1)"), ("HW", "x.size(2) * x.size(3)")), flops=2,
            words="A(x * weight + bias) with learned per-channel weight and bias of shape (channels, 1, 1)"),
]


def _elementwise_impls(binary: bool, eparams: list[str], eargs: list[str], body: str, fns: str) -> list[ImplSpec]:
    """Three launch strategies around ``elem(i, xv[, yv], ...)``; ``body`` is elem's statements."""
    ydecl = ", const float* y" if binary else ""
    yname = ", y" if binary else ""
    yparam = ", float yv" if binary else ""
    ep = "".join(f", {p}" for p in eparams)
    ea = "".join(f", {a}" for a in eargs)
    sig = f"const float* x{ydecl}{ep}, float* out, int n"
    names = f"x{yname}{ea}, out, n"
    elem = f"{fns}\n__device__ __forceinline__ float elem(int i, float xv{yparam}{ep}) {{\n{body}\n}}\n"
    yload = ", y[i]" if binary else ""
    naive = f'''{elem}
__global__ void ew_naive({sig}) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = elem(i, x[i]{yload}{ea});
}}

extern "C" void run({sig}) {{
    ew_naive<<<(n + 255) / 256, 256>>>({names});
}}
'''
    grid = f'''{elem}
__global__ void ew_grid_stride({sig}) {{
    int stride = gridDim.x * blockDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) out[i] = elem(i, x[i]{yload}{ea});
}}

extern "C" void run({sig}) {{
    int blocks = (n + 255) / 256;
    if (blocks > 1024) blocks = 1024;   // about one full wave on an H100 (132 SMs x 8 blocks): threads loop
    ew_grid_stride<<<blocks, 256>>>({names});
}}
'''
    comps = "xyzw"
    yv4 = "    float4 yq = reinterpret_cast<const float4*>(y)[q];\n" if binary else ""
    calls = "\n".join(f"        r.{c} = elem(4 * q + {k}, xq.{c}{', yq.' + c if binary else ''}{ea});"
                      for k, c in enumerate(comps))
    vec = f'''{elem}
__global__ void ew_vec4({sig}) {{
    int n4 = n / 4;
    int stride = gridDim.x * blockDim.x;
    for (int q = blockIdx.x * blockDim.x + threadIdx.x; q < n4; q += stride) {{
        float4 xq = reinterpret_cast<const float4*>(x)[q];
    {yv4}    float4 r;
{calls}
        reinterpret_cast<float4*>(out)[q] = r;
    }}
    // scalar tail: the last n % 4 elements
    for (int i = n4 * 4 + blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) out[i] = elem(i, x[i]{yload}{ea});
}}

extern "C" void run({sig}) {{
    int blocks = (n / 4 + 255) / 256;
    if (blocks < 1) blocks = 1;
    if (blocks > 1024) blocks = 1024;
    ew_vec4<<<blocks, 256>>>({names});
}}
'''
    return [
        ImplSpec("naive", "naive", 1, "one thread per element, 256-thread blocks", naive),
        ImplSpec("grid_stride", "grid_stride", 2, "a capped grid whose threads stride over the tensor", grid),
        ImplSpec("vectorized", "vectorized", 3,
                 "16-byte float4 loads/stores (torch allocations are 16-byte aligned), scalar tail for n % 4", vec),
    ]


def _task(task_id: str, family: str, pat: Pattern, ref_expr: str, cuda_expr: str, fns: str, act_flops: int,
          words: str, variant: dict, seed: int) -> GeneratedTask:
    dims, cfgs = SHAPES[pat.shape]
    n_expr = " * ".join(dims)
    inputs_t = ["x", "y"] if pat.binary else ["x"]
    consts: dict = dict(SHAPE_DEFAULTS[pat.shape])
    init_args: list[tuple[str, str]] = []
    init_values: list[str] = []
    init_body: list[str] = []
    eparams: list[str] = []
    eargs: list[str] = []
    if pat.scalars:
        consts.update(scale=0.75, shift=-0.25)
        init_args += [("scale", "float"), ("shift", "float")]
        init_values += ["scale", "shift"]
        eparams += ["float s", "float b"]
        eargs += ["s", "b"]
    for k, pname in enumerate(pat.params):
        size_name = pat.param_shape.split(",")[0].strip()
        if (size_name, "int") not in init_args:
            init_args.append((size_name, "int"))
            init_values.append(size_name)
        gen = "torch.rand" if pname == "weight" else "torch.randn"
        off = " + 0.5" if pname == "weight" else " * 0.5"
        shape_args = ", ".join(s.strip() if s.strip() != size_name else size_name for s in pat.param_shape.split(","))
        init_body.append(f"self.{pname} = nn.Parameter({gen}({shape_args}){off})")
        eparams.append(f"const float* p{k}")
        eargs.append(f"p{k}")
    for cname, _ in pat.dims:
        eparams.append(f"int {cname}")
        eargs.append(cname)
    body = (f"    {pat.pre}\n" if pat.pre else "") + f"    return {cuda_expr};"
    impls = _elementwise_impls(pat.binary, eparams, eargs, body, fns)
    prep = [f"{t} = {t}.contiguous()" for t in inputs_t] + ["out = torch.empty_like(x)"]
    shape_txt = "(" + ", ".join(dims) + ")"
    ins_txt = "x" if not pat.binary else "x and y (same shape)"
    params_txt = (" Parameters are created in __init__ exactly as in the reference (same order) and must be "
                  "passed to the kernel." if pat.params else "")
    description = f"""
forward({", ".join(inputs_t)}) returns {ref_expr.replace("self.", "")} element-wise, with {ins_txt} float32 of
shape {shape_txt}; in words: {words}. The result is a new float32 tensor of x's shape; every element
must be written.{params_txt}
"""
    spec = TorchSpec(
        task_id=task_id, family=family, category="elementwise", title=f"Element-wise {words}",
        description=description, consts=consts, forward_args=inputs_t, ref_forward=[f"return {ref_expr}"],
        inputs=[f"torch.randn({', '.join(dims)}) * 2.0" for _ in inputs_t], prep=prep, call_args=[],
        ret="out", impls=impls,
        configs=[dict(c) for c in cfgs],
        metrics={"flops": f"{act_flops + pat.flops} * {n_expr}", "bytes": f"{4 * (len(inputs_t) + 1)} * {n_expr}"},
        init_args=init_args, init_values=init_values, init_body=init_body,
        tolerance={"rtol": 1e-4, "atol": 1e-5}, tags=["memory-bound", "activation"], variant=variant)
    _fix_launcher_order(spec, eparams, pat)
    return build_task(spec, seed)


def _fix_launcher_order(spec: TorchSpec, eparams: list[str], pat: Pattern) -> None:
    """The launcher is ``run(x[, y], <eparams in order>, out, n)``: rebuild the Python call to match."""
    inputs_t = spec.forward_args
    scal = {"s": "self.scale", "b": "self.shift"}
    dims = dict(pat.dims)
    call = list(inputs_t)
    for p in eparams:
        nm = p.split()[-1]
        if nm in scal:
            call.append(scal[nm])
        elif nm in dims:
            call.append(dims[nm])
        else:
            call.append(f"self.{pat.params[int(nm[1:])]}")
    spec.call_args = [*call, "out", "x.numel()"]


def fusion_tasks(seed: int, family: str) -> Iterator[GeneratedTask]:
    """Every activation × every fusion pattern."""
    for pat in PATTERNS:
        for act, (tfmt, _) in ACTS.items():
            yield _task(f"pt_ew_{act}_{pat.name}", family, pat, pat.ref(lambda v, f=tfmt: f.format(v)),
                        pat.cuda(lambda v, a=act: f"act_{a}({v})"), act_device_fns([act]), ACT_FLOPS[act],
                        pat.words.replace("A(", f"{act}("),
                        {"op": act, "fusion": pat.name, "shape": pat.shape, "inputs": 2 if pat.binary else 1}, seed)


def compose_tasks(seed: int, family: str) -> Iterator[GeneratedTask]:
    """outer(inner(x)) for every ordered pair of distinct activations."""
    plain = PATTERNS[0]
    for outer, (ofmt, _) in ACTS.items():
        for inner, (ifmt, _) in ACTS.items():
            if outer == inner:
                continue
            yield _task(f"pt_ew_{outer}_of_{inner}", family, plain, ofmt.format(ifmt.format("x")),
                        f"act_{outer}(act_{inner}(xv))", act_device_fns([inner, outer]),
                        ACT_FLOPS[outer] + ACT_FLOPS[inner], f"{outer}({inner}(x))",
                        {"op": f"{outer}_of_{inner}", "fusion": "compose", "shape": "2d", "inputs": 1}, seed)
