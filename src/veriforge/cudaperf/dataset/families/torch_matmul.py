"""Matrix products: matmul / bmm with transposed operands, Linear (+bias) (+activation) (+residual)
(PyTorch→CUDA).

The operand layout decides the load expressions (A stored (M, K) or (K, M); B stored (K, N) or
(N, K), the latter being nn.Linear's weight), the epilogue decides what happens to the accumulator
before the single store. Three strategies per task: one thread per output from global memory,
16×16 shared-memory tiles, and 32×32 tiles with a 2×2 register block per thread.
"""

from __future__ import annotations

from collections.abc import Iterator

from veriforge.cudaperf.dataset.family import GeneratedTask

from .torch_common import ImplSpec, TorchSpec, build_task
from .torch_elementwise import ACTS, act_device_fns

__all__ = ["linear_tasks", "matmul_tasks"]


def _ld(ta: bool, tb: bool) -> tuple[str, str]:
    """C expressions A(i, k) and B(k, j) for the operand layouts."""
    a = "A[(long long)(k) * M + (i)]" if ta else "A[(long long)(i) * K + (k)]"
    b = "B[(long long)(j) * K + (k)]" if tb else "B[(long long)(k) * N + (j)]"
    return a, b


def _impls(ta: bool, tb: bool, epi: str, extra_sig: str, extra_args: str, fns: str) -> list[ImplSpec]:
    """``epi`` is the C expression stored for output (i, j) given ``acc``."""
    a, b = _ld(ta, tb)
    sig = f"const float* A, const float* B, float* C, int M, int N, int K, int batch{extra_sig}"
    args = f"A, B, C, M, N, K, batch{extra_args}"
    macros = (f"#define LDA(i, k) {a}\n#define LDB(k, j) {b}\n"
              "#define BATCH_OFFSETS A += (long long)blockIdx.z * M * K; B += (long long)blockIdx.z * K * N; "
              "C += (long long)blockIdx.z * M * N;")
    store = f"C[(long long)i * N + j] = {epi};"
    naive = f'''{fns}{macros}
__global__ void mm_naive({sig}) {{
    BATCH_OFFSETS
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= M || j >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += LDA(i, k) * LDB(k, j);
    {store}
}}

extern "C" void run({sig}) {{
    dim3 block(16, 16);
    dim3 grid((N + 15) / 16, (M + 15) / 16, batch);
    mm_naive<<<grid, block>>>({args});
}}
'''
    tiled = f'''{fns}{macros}
#define TS 16
__global__ void mm_tiled({sig}) {{
    BATCH_OFFSETS
    __shared__ float As[TS][TS + 1];
    __shared__ float Bs[TS][TS + 1];
    int tx = threadIdx.x, ty = threadIdx.y;
    int i = blockIdx.y * TS + ty;
    int j = blockIdx.x * TS + tx;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TS) {{
        int ka = k0 + tx, kb = k0 + ty;
        As[ty][tx] = (i < M && ka < K) ? LDA(i, ka) : 0.0f;
        Bs[ty][tx] = (kb < K && j < N) ? LDB(kb, j) : 0.0f;
        __syncthreads();
        for (int kk = 0; kk < TS; ++kk) acc += As[ty][kk] * Bs[kk][tx];
        __syncthreads();
    }}
    if (i < M && j < N) {{
        {store}
    }}
}}

extern "C" void run({sig}) {{
    dim3 block(TS, TS);
    dim3 grid((N + TS - 1) / TS, (M + TS - 1) / TS, batch);
    mm_tiled<<<grid, block>>>({args});
}}
'''
    reg = f'''{fns}{macros}
#define BT 32
#define BK 16
__global__ void mm_reg2x2({sig}) {{
    BATCH_OFFSETS
    __shared__ float As[BT][BK + 1];
    __shared__ float Bs[BK][BT + 1];
    int tx = threadIdx.x, ty = threadIdx.y;   // 16 x 16 threads, each owns a 2 x 2 block of outputs
    int i0 = blockIdx.y * BT, j0 = blockIdx.x * BT;
    float acc00 = 0.0f, acc01 = 0.0f, acc10 = 0.0f, acc11 = 0.0f;
    for (int k0 = 0; k0 < K; k0 += BK) {{
        for (int r = ty; r < BT; r += 16) {{
            int i = i0 + r, k = k0 + tx;
            As[r][tx] = (i < M && k < K) ? LDA(i, k) : 0.0f;
        }}
        for (int c = tx; c < BT; c += 16) {{
            int j = j0 + c, k = k0 + ty;
            Bs[ty][c] = (k < K && j < N) ? LDB(k, j) : 0.0f;
        }}
        __syncthreads();
        for (int kk = 0; kk < BK; ++kk) {{
            float a0 = As[ty][kk], a1 = As[ty + 16][kk];
            float b0 = Bs[kk][tx], b1 = Bs[kk][tx + 16];
            acc00 += a0 * b0; acc01 += a0 * b1;
            acc10 += a1 * b0; acc11 += a1 * b1;
        }}
        __syncthreads();
    }}
    float accs[4] = {{acc00, acc01, acc10, acc11}};
    for (int q = 0; q < 4; ++q) {{
        int i = i0 + ty + 16 * (q >> 1), j = j0 + tx + 16 * (q & 1);
        float acc = accs[q];
        if (i < M && j < N) {{
            {store}
        }}
    }}
}}

extern "C" void run({sig}) {{
    dim3 block(16, 16);
    dim3 grid((N + BT - 1) / BT, (M + BT - 1) / BT, batch);
    mm_reg2x2<<<grid, block>>>({args});
}}
'''
    return [ImplSpec("naive", "naive", 1, "one thread per output, dot product straight from global memory", naive),
            ImplSpec("shared_tiled", "shared_tiled", 2,
                     "16x16 tiles of both operands staged in shared memory (padded against bank conflicts)", tiled),
            ImplSpec("register_tiled", "register_tiled", 3,
                     "32x32 output tiles, each thread accumulates a 2x2 register block from shared-memory tiles",
                     reg)]


_MM_EPI = {
    "plain": ("{mm}", "acc", "", "", [], []),
    "scale": ("{mm} * self.alpha", "acc * alpha", ", float alpha", ", alpha", ["self.alpha"], ["alpha"]),
    "residual": ("{mm} + R", "acc + Rm[(long long)blockIdx.z * M * N + (long long)i * N + j]",
                 ", const float* Rm", ", Rm", ["R"], []),
    "relu": ("torch.relu({mm})", "fmaxf(acc, 0.0f)", "", "", [], []),
}
_MCFG = [{"name": "small_odd", "M": 13, "K": 19, "N": 11}, {"name": "medium", "M": 32, "K": 40, "N": 24}]


def matmul_tasks(seed: int, family: str) -> Iterator[GeneratedTask]:
    """matmul (2-D) and bmm (3-D) with each operand optionally transposed, × epilogues."""
    for batched in (False, True):
        for ta in (False, True):
            for tb in (False, True):
                for epi in (_MM_EPI if not batched else ("plain", "scale", "residual")):
                    yield _matmul(batched, ta, tb, epi, family, seed)


def _matmul(batched: bool, ta: bool, tb: bool, epi: str, family: str, seed: int) -> GeneratedTask:
    ref_fmt, c_epi, esig, eargs, call_extra, init = _MM_EPI[epi]
    bs = "batch_size, " if batched else ""
    a_shape = f"{bs}K, M" if ta else f"{bs}M, K"
    b_shape = f"{bs}N, K" if tb else f"{bs}K, N"
    tr = ".transpose(-2, -1)"
    mm = f"torch.{'bmm' if batched else 'matmul'}(A{tr if ta else ''}, B{tr if tb else ''})"
    ref = ref_fmt.format(mm=mm).replace("self.alpha", "self.alpha")
    args = ["A", "B", "R"] if epi == "residual" else ["A", "B"]
    inputs = [f"torch.randn({a_shape})", f"torch.randn({b_shape})"] + (
        [f"torch.randn({bs}M, N)"] if epi == "residual" else [])
    o = 1 if batched else 0
    m_expr = f"A.size({o + 1})" if ta else f"A.size({o})"
    k_expr = f"A.size({o})" if ta else f"A.size({o + 1})"
    n_expr = f"B.size({o})" if tb else f"B.size({o + 1})"
    consts = {"M": 256, "K": 256, "N": 256}
    if batched:
        consts = {"batch_size": 8, **consts}
    if init:
        consts["alpha"] = 0.5
    cfgs = [dict(c, **({"batch_size": 2} if batched else {})) for c in _MCFG]
    alloc = (f"C = torch.empty({'A.size(0), ' if batched else ''}{m_expr}, {n_expr}, dtype=A.dtype, "
             "device=A.device)")
    call = ["A", "B", "C", m_expr, n_expr, k_expr, "A.size(0)" if batched else "1", *call_extra]
    mode = ("t" if ta else "n") + ("t" if tb else "n")
    words = {"nn": "A @ B", "tn": "A^T @ B", "nt": "A @ B^T", "tt": "A^T @ B^T"}[mode]
    bmul = "batch_size * " if batched else ""
    res_txt = ", plus the residual R of shape (" + bs + "M, N)" if epi == "residual" else ""
    description = f"""
forward({", ".join(args)}) returns {ref.replace("self.", "")}: {"a batched " if batched else ""}{words} with A stored as
({a_shape}) and B stored as ({b_shape}) (row-major, float32){res_txt}.
The output is a new float32 tensor of shape ({bs}M, N); every element must be written.
"""
    spec = TorchSpec(
        task_id=f"pt_{'bmm' if batched else 'matmul'}_{mode}_{epi}", family=family, category="matmul",
        title=f"{'Batched ' if batched else ''}{words} ({epi} epilogue)", description=description, consts=consts,
        forward_args=args, ref_forward=[f"return {ref}"], inputs=inputs,
        prep=[f"{a} = {a}.contiguous()" for a in args] + [alloc], call_args=call, ret="C",
        impls=_impls(ta, tb, c_epi, esig, eargs, ""), configs=cfgs,
        metrics={"flops": f"2 * {bmul}M * N * K", "bytes": f"4 * {bmul}(M * K + K * N + {len(args) - 1} * M * N)"},
        init_args=[("alpha", "float")] if init else [], init_values=init, tolerance={"rtol": 1e-4, "atol": 1e-4},
        tags=["compute-bound", "gemm"], variant={"op": "bmm" if batched else "matmul", "transpose": mode,
                                                 "epilogue": epi})
    return build_task(spec, seed)


def linear_tasks(seed: int, family: str) -> Iterator[GeneratedTask]:
    """nn.Linear with/without bias × (no activation | 12 activations) × 2-D/3-D input, and Linear +
    activation + residual."""
    for rank in (2, 3):
        for bias in (True, False):
            for act in ("none", *ACTS):
                yield _linear(rank, bias, act, False, family, seed)
        for act in ("none", "relu", "gelu", "silu"):
            yield _linear(rank, True, act, True, family, seed)


def _linear(rank: int, bias: bool, act: str, residual: bool, family: str, seed: int) -> GeneratedTask:
    lead = "batch_size, seq_len" if rank == 3 else "batch_size"
    consts = {"batch_size": 32, **({"seq_len": 16} if rank == 3 else {}), "in_features": 256, "out_features": 128}
    cfgs = [{"name": "small_odd", "batch_size": 3, **({"seq_len": 5} if rank == 3 else {}), "in_features": 19,
             "out_features": 13},
            {"name": "medium", "batch_size": 4 if rank == 3 else 24, **({"seq_len": 8} if rank == 3 else {}),
             "in_features": 40, "out_features": 24}]
    ref = "self.linear(x)"
    epi = "acc + bias[j]" if bias else "acc"
    fns = ""
    if act != "none":
        ref = ACTS[act][0].format(ref)
        epi = f"act_{act}({epi})"
        fns = act_device_fns([act])
    args = ["x", "r"] if residual else ["x"]
    if residual:
        ref = f"{ref} + r"
        epi = f"{epi} + Rm[(long long)i * N + j]"
    esig = (", const float* bias" if bias else "") + (", const float* Rm" if residual else "")
    eargs = (", bias" if bias else "") + (", Rm" if residual else "")
    call_extra = (["self.linear.bias"] if bias else []) + (["r"] if residual else [])
    rows = "x.numel() // x.size(-1)"
    alloc = (f"y = torch.empty({'x.size(0), x.size(1)' if rank == 3 else 'x.size(0)'}, self.out_features, "
             "dtype=x.dtype, device=x.device)")
    call = ["x", "self.linear.weight", "y", rows, "self.out_features", "self.in_features", "1", *call_extra]
    lead_m = " * ".join(lead.split(", "))
    r_txt = ", r of the output's shape" if residual else ""
    b_txt = " and bias" if bias else ""
    description = f"""
Model(in_features, out_features) owns nn.Linear(in_features, out_features, bias={bias}) (default init from
the seeded RNG). forward({", ".join(args)}) returns {ref.replace("self.", "")} for x float32 of shape
({lead}, in_features){r_txt}:
x @ W^T{" + b" if bias else ""} with W the (out_features, in_features) weight{", then " + act if act != "none" else ""}.
ModelNew must create its own nn.Linear the same way (first RNG-consuming step) and pass its weight{b_txt}
to its kernel without calling the module. Output shape ({lead}, out_features).
"""
    title = (f"Linear{' + bias' if bias else ''}{' + ' + act if act != 'none' else ''}"
             f"{' + residual' if residual else ''} on a {rank}-D input")
    spec = TorchSpec(
        task_id=f"pt_linear_{rank}d_{'bias' if bias else 'nobias'}_{act}{'_residual' if residual else ''}",
        family=family, category="matmul",
        title=title, description=description, consts=consts, forward_args=args,
        ref_forward=[f"return {ref}"],
        inputs=[f"torch.randn({lead}, in_features)"] + ([f"torch.randn({lead}, out_features)"] if residual else []),
        prep=[f"{a} = {a}.contiguous()" for a in args] + [alloc], call_args=call, ret="y",
        impls=_impls(False, True, epi, esig, eargs, fns), configs=cfgs,
        metrics={"flops": f"2 * {lead_m} * in_features * out_features",
                 "bytes": f"4 * ({lead_m} * in_features + in_features * out_features + "
                          f"{1 + int(residual)} * {lead_m} * out_features)"},
        init_args=[("in_features", "int"), ("out_features", "int")], init_values=["in_features", "out_features"],
        init_body=[f"self.linear = nn.Linear(in_features, out_features, bias={bias})"],
        tolerance={"rtol": 1e-4, "atol": 1e-4}, tags=["compute-bound", "gemm", "parameters"],
        variant={"op": "linear", "rank": rank, "bias": bias, "act": act, "residual": residual})
    return build_task(spec, seed)
