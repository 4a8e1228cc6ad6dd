"""Benchmark of the CPU CUDA runtime (veriforge.cuda.cpu): prints figures, asserts nothing.

Each kernel is timed next to the same work written as a plain serial C++ loop compiled with
``g++ -O2`` in the same run; the ratio is the runtime's overhead, printed with the goal of issue 15
(barrier-free kernels <= 2x, kernels with barriers <= 5x, warp-shuffle reductions <= 5x) and
whether it is met. Kernel times are measured inside the kernel server (LaunchResult.seconds),
best of several runs, so Python and IPC costs are excluded. The runtime runs blocks on all cores
(VF_CPU_THREADS); the plain loop on one. Figures depend on how busy the cores are: the load
average is printed before and after. Where Triton's interpreter (TRITON_INTERPRET=1) or numba's
CUDA simulator (NUMBA_ENABLE_CUDASIM=1) is importable (by this interpreter, or by the one named in
VF_BENCH_PEER_PYTHON, e.g. a throwaway venv), saxpy and a block sum run there too (on fewer
elements: they are orders of magnitude slower) and the time per element is compared.

    python benchmarks/cpu_runtime.py [--out benchmarks/results/cpu_runtime.txt] [--quick]
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from veriforge.cuda import cpu

KERNELS = r"""
__global__ void saxpy(int n, float a, const float* x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
__global__ void stencil(const float* in, float* out, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < 1 || y < 1 || x >= w - 1 || y >= h - 1) return;
    int i = y * w + x;
    out[i] = 0.2f * (in[i] + in[i - 1] + in[i + 1] + in[i - w] + in[i + w]);
}
template <int K>
__global__ void barriers(float* data) {
    __shared__ float s[256];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    float v = data[i];
    for (int k = 0; k < K; ++k) {
        s[t] = v;
        __syncthreads();
        v += s[(t + 1) & 255];
        __syncthreads();
    }
    data[i] = v;
}
#define TILE 16
__global__ void matmul(const float* A, const float* B, float* C, int n) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < n / TILE; ++t) {
        As[threadIdx.y][threadIdx.x] = A[row * n + t * TILE + threadIdx.x];
        Bs[threadIdx.y][threadIdx.x] = B[(t * TILE + threadIdx.y) * n + col];
        __syncthreads();
        for (int k = 0; k < TILE; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    C[row * n + col] = acc;
}
__global__ void tree_reduce(const float* x, float* partial, int n) {
    __shared__ float s[256];
    unsigned t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    s[t] = i < (unsigned)n ? x[i] : 0.0f;
    __syncthreads();
    for (unsigned k = blockDim.x / 2; k > 0; k >>= 1) {
        if (t < k) s[t] += s[t + k];
        __syncthreads();
    }
    if (t == 0) partial[blockIdx.x] = s[0];
}
__global__ void block_scan(const float* x, float* y, int n) {
    __shared__ float s[2][256];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t, p = 0;
    s[0][t] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int d = 1; d < 256; d <<= 1) {
        s[1 - p][t] = t >= d ? s[p][t] + s[p][t - d] : s[p][t];
        p = 1 - p;
        __syncthreads();
    }
    if (i < n) y[i] = s[p][t];
}
__global__ void warp_reduce(const float* x, float* out, int n) {
    float v = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) v += x[i];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
    if ((threadIdx.x & 31) == 0) atomicAdd(out, v);
}
"""

BASELINE = r"""
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
template <class F> double best(F f, int reps) {
    double b = 1e30;
    for (int r = 0; r < reps; ++r) {
        auto t0 = std::chrono::steady_clock::now();
        f();
        double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (s < b) b = s;
    }
    return b;
}
template <class T> void sink(const T& v) { asm volatile("" : : "g"(&v) : "memory"); }
int main(int argc, char** argv) {
    int n = atoi(argv[1]), side = atoi(argv[2]), m = atoi(argv[3]), nred = atoi(argv[4]), bblocks = atoi(argv[5]);
    int K = atoi(argv[6]), reps = atoi(argv[7]);
    std::vector<float> x(n, 1.0f), y(n, 2.0f);
    volatile float av = 1.5f;
    float a = av;
    double t_saxpy = best([&] { for (int i = 0; i < n; ++i) y[i] = a * x[i] + y[i]; sink(y[0]); }, reps);
    std::vector<float> in(side * side, 1.0f), out(side * side);
    double t_stencil = best([&] {
        for (int r = 1; r < side - 1; ++r)
            for (int c = 1; c < side - 1; ++c) {
                int i = r * side + c;
                out[i] = 0.2f * (in[i] + in[i - 1] + in[i + 1] + in[i - side] + in[i + side]);
            }
        sink(out[0]);
    }, reps);
    std::vector<float> d(bblocks * 256, 1.0f), s(256);
    double t_bar = best([&] {
        for (int b = 0; b < bblocks; ++b) {
            float* p = &d[b * 256];
            for (int k = 0; k < K; ++k) {
                for (int t = 0; t < 256; ++t) s[t] = p[t];
                for (int t = 0; t < 256; ++t) p[t] += s[(t + 1) & 255];
            }
        }
        sink(d[0]);
    }, reps);
    std::vector<float> A(m * m, 1.0f), B(m * m, 0.5f), C(m * m);
    double t_mm = best([&] {
        for (int i = 0; i < m; ++i) {
            for (int j = 0; j < m; ++j) C[i * m + j] = 0.0f;
            for (int k = 0; k < m; ++k) {
                float aik = A[i * m + k];
                for (int j = 0; j < m; ++j) C[i * m + j] += aik * B[k * m + j];
            }
        }
        sink(C[0]);
    }, 2);
    std::vector<float> partial(nred / 256);
    double t_tree = best([&] {
        for (int b = 0; b < nred / 256; ++b) {
            float acc = 0;
            for (int t = 0; t < 256; ++t) acc += x[b * 256 + t];
            partial[b] = acc;
        }
        sink(partial[0]);
    }, reps);
    double t_scan = best([&] {
        for (int b = 0; b < nred / 256; ++b) {
            float acc = 0;
            for (int t = 0; t < 256; ++t) y[b * 256 + t] = acc += x[b * 256 + t];
        }
        sink(y[0]);
    }, reps);
    double t_red = best([&] {
        float acc = 0;
        for (int i = 0; i < n; ++i) acc += x[i];
        sink(acc);
    }, reps);
    printf("%.9f %.9f %.9f %.9f %.9f %.9f %.9f\n", t_saxpy, t_stencil, t_bar, t_mm, t_tree, t_scan, t_red);
    return 0;
}
"""

GOALS = {"barrier-free": 2.0, "barriers": 5.0, "warp shuffles": 5.0}


def _best(mod, kernel, grid, block, args, reps=5, shared=0) -> float:
    return min(mod.launch(kernel, grid, block, args, shared).seconds for _ in range(reps))


def _baseline(*sizes: int) -> list[float]:
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "base.cpp"
        src.write_text(BASELINE)
        exe = Path(tmp) / "base"
        cxx = shutil.which(os.environ.get("CXX", "g++")) or "g++"
        subprocess.run([cxx, "-O2", "-std=c++20", str(src), "-o", str(exe)], check=True)
        out = subprocess.run([str(exe), *map(str, sizes)], capture_output=True, text=True, check=True).stdout
    return [float(v) for v in out.split()]


# ---- peers: the same kernels on Triton's interpreter and numba's CUDA simulator ----------------
# Each runs in a child process (the environment variable must be set before the import) and
# prints seconds per element for saxpy and the shared-memory tree reduction.

NUMBA_PEER = r"""
import os, sys, time
os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
import numpy as np
from numba import cuda, float32
@cuda.jit
def saxpy(n, a, x, y):
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if i < n:
        y[i] = a * x[i] + y[i]
@cuda.jit
def tree_reduce(x, partial, n):
    s = cuda.shared.array(256, float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x + t
    s[t] = x[i] if i < n else 0.0
    cuda.syncthreads()
    k = cuda.blockDim.x // 2
    while k > 0:
        if t < k:
            s[t] += s[t + k]
        cuda.syncthreads()
        k //= 2
    if t == 0:
        partial[cuda.blockIdx.x] = s[0]
n = int(sys.argv[1])
x = np.ones(n, np.float32); y = np.full(n, 2.0, np.float32); p = np.zeros(n // 256, np.float32)
t0 = time.perf_counter(); saxpy[n // 256, 256](n, np.float32(1.5), x, y); t1 = time.perf_counter()
tree_reduce[n // 256, 256](x, p, n); t2 = time.perf_counter()
assert p.sum() == n, p.sum()
print((t1 - t0) / n, (t2 - t1) / n)
"""

TRITON_PEER = r"""
import os, sys, time
os.environ["TRITON_INTERPRET"] = "1"
import torch, triton, triton.language as tl
@triton.jit
def saxpy(x, y, a, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    tl.store(y + i, a * tl.load(x + i, mask=m) + tl.load(y + i, mask=m), mask=m)
@triton.jit
def block_sum(x, partial, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(partial + tl.program_id(0), tl.sum(tl.load(x + i, mask=i < n, other=0.0), axis=0))
n = int(sys.argv[1])
x = torch.ones(n); y = torch.full((n,), 2.0); p = torch.zeros(n // 256)
t0 = time.perf_counter(); saxpy[(n // 256,)](x, y, 1.5, n, BLOCK=256); t1 = time.perf_counter()
block_sum[(n // 256,)](x, p, n, BLOCK=256); t2 = time.perf_counter()
assert float(p.sum()) == n
print((t1 - t0) / n, (t2 - t1) / n)
"""


def _peer(module: str, code: str, n: int) -> tuple[float, float] | str:
    # VF_BENCH_PEER_PYTHON: an interpreter that has the peer installed (e.g. a throwaway venv)
    python = os.environ.get("VF_BENCH_PEER_PYTHON", sys.executable)
    probe = subprocess.run([python, "-c", f"import {module}"], capture_output=True)
    if probe.returncode != 0:
        return "not installed"
    run = subprocess.run([python, "-c", code, str(n)], capture_output=True, text=True, timeout=1800)
    if run.returncode != 0:
        tail = (run.stderr.strip().splitlines() or ["?"])[-1]
        return f"failed: {tail[:100]}"
    a, b = (float(v) for v in run.stdout.split())
    return a, b


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", type=Path, default=None, help="also write the report to this file")
    ap.add_argument("--quick", action="store_true", help="smaller sizes (a smoke test)")
    ap.add_argument("--no-peers", action="store_true", help="skip Triton / numba")
    opts = ap.parse_args()

    load_before = os.getloadavg()
    q = opts.quick
    n = 1 << (18 if q else 22)
    side = 512 if q else 2048
    m = 128 if q else 512
    nred = 1 << (16 if q else 20)
    bblocks, k = (64, 16) if q else (256, 16)
    reps = 3 if q else 5
    sizes = (n, side, m, nred, bblocks, k, reps)
    # The plain loops run before and after the kernels; the faster of the two runs counts (less
    # sensitive to a burst of load from other processes).
    base_first = _baseline(*sizes)

    t0 = time.perf_counter()
    mod = cpu.compile(KERNELS)
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    cpu.compile(KERNELS)
    cached_s = time.perf_counter() - t0

    rng = np.random.default_rng(0)

    x = np.ones(n, np.float32)
    y = np.full(n, 2.0, np.float32)
    t_saxpy = _best(mod, "saxpy", n // 256, 256, [n, 1.5, x, y], reps)

    grid_in = rng.standard_normal((side, side)).astype(np.float32)
    grid_out = np.zeros_like(grid_in)
    t_stencil = _best(mod, "stencil", (side // 16, side // 16), (16, 16), [grid_in, grid_out, side, side], reps)
    ref = 0.2 * (grid_in[1:-1, 1:-1] + grid_in[1:-1, :-2] + grid_in[1:-1, 2:] + grid_in[:-2, 1:-1] + grid_in[2:, 1:-1])
    stencil_err = float(np.max(np.abs(grid_out[1:-1, 1:-1] - ref)))

    data = np.ones(bblocks * 256, np.float32)
    t_bar = _best(mod, f"barriers<{k}>", bblocks, 256, [data], reps)
    t_bar0 = _best(mod, "barriers<0>", bblocks, 256, [data], reps)
    per_barrier = (t_bar - t_bar0) / (bblocks * 256 * 2 * k)

    a = rng.standard_normal((m, m)).astype(np.float32)
    b = rng.standard_normal((m, m)).astype(np.float32)
    c = np.zeros((m, m), np.float32)
    t_mm = _best(mod, "matmul", (m // 16, m // 16), (16, 16), [a, b, c, m], reps=2)
    mm_err = float(np.max(np.abs(c - a @ b)))

    xr = rng.standard_normal(nred).astype(np.float32)
    partial = np.zeros(nred // 256, np.float32)
    t_tree = _best(mod, "tree_reduce", nred // 256, 256, [xr, partial, nred], reps)
    tree_err = float(np.max(np.abs(partial - xr.reshape(-1, 256).sum(axis=1))))
    scanned = np.zeros(nred, np.float32)
    t_scan = _best(mod, "block_scan", nred // 256, 256, [xr, scanned, nred], reps)
    scan_err = float(np.max(np.abs(scanned - np.cumsum(xr.reshape(-1, 256), axis=1).reshape(-1))))

    out = np.zeros(1, np.float32)
    t_red = _best(mod, "warp_reduce", 512, 256, [x, out, n], reps)

    t0 = time.perf_counter()
    for _ in range(100):
        mod.launch("saxpy", 1, 32, [32, 1.0, x[:32], y[:32]])
    launch_overhead = (time.perf_counter() - t0) / 100

    base = [min(a, b) for a, b in zip(base_first, _baseline(*sizes), strict=True)]
    load_after = os.getloadavg()

    rows = [  # (figure, kind, runtime seconds, baseline seconds, scale, unit)
        (f"saxpy 2^{n.bit_length() - 1}, ns per element", "barrier-free", t_saxpy, base[0], 1e9 / n, "ns"),
        (f"5-point stencil {side}^2 (16x16 blocks), ns/pt", "barrier-free", t_stencil, base[1], 1e9 / (side * side),
         "ns"),
        (f"tiled fp32 matmul {m}^3 (16x16 tiles), ms", "barriers", t_mm, base[3], 1e3, "ms"),
        (f"smem tree reduction 2^{nred.bit_length() - 1} (256/block), ms", "barriers", t_tree, base[4], 1e3, "ms"),
        (f"block scan 2^{nred.bit_length() - 1} (256/block, 16 bar), ms", "barriers", t_scan, base[5], 1e3, "ms"),
        (f"warp-shuffle+atomic reduction 2^{n.bit_length() - 1}, ms", "warp shuffles", t_red, base[6], 1e3, "ms"),
        (f"barrier microbench {bblocks}x256 thr, {2 * k} bar, ms", "barriers", t_bar, base[2], 1e3, "ms"),
    ]
    threads = os.environ.get("VF_CPU_THREADS", str(os.cpu_count()))
    lines = [
        "veriforge CPU CUDA runtime benchmark (issue 15: near-native speed)",
        f"machine: {platform.machine()}, {os.cpu_count()} cores, {platform.python_implementation()} "
        f"{platform.python_version()}; runtime worker threads: {threads} (blocks in parallel); plain loop: 1 thread",
        f"load average (1/5/15 min) before: {load_before[0]:.1f}/{load_before[1]:.1f}/{load_before[2]:.1f}, "
        f"after: {load_after[0]:.1f}/{load_after[1]:.1f}/{load_after[2]:.1f} "
        "(figures scale with contention for the cores)",
        f"compile (runtime prebuilt, module not cached): {compile_s:.2f} s; cached: {cached_s * 1000:.0f} ms",
        f"per-launch overhead (Python -> kernel server -> Python, 32 threads): {launch_overhead * 1e3:.2f} ms",
        "",
        f"{'kernel':<52}{'runtime':>10}{'plain -O2':>11}{'ratio':>8}{'goal':>7}  met",
    ]
    for name, kind, rt, bl, scale, _unit in rows:
        goal = GOALS[kind]
        met = "yes" if rt / bl <= goal else "no"
        if name.startswith("barrier microbench"):
            goal_s, met = "-", "(microbenchmark, no goal)"
        else:
            goal_s = f"<={goal:g}"
        lines.append(f"{name:<52}{rt * scale:>10.3f}{bl * scale:>11.3f}{rt / bl:>8.1f}{goal_s:>7}  {met}")
    lines += [
        f"{'__syncthreads, ns per thread per barrier':<52}{per_barrier * 1e9:>10.2f}",
        "",
        f"checks: stencil max|err| {stencil_err:.1e}, matmul max|err| {mm_err:.1e}, tree reduction max|err| "
        f"{tree_err:.1e}, scan max|err| {scan_err:.1e}, warp reduction {out[0]:.0f} (expected {reps * n:.0f})",
    ]
    if not opts.no_peers:
        peer_n = 1 << 12
        ours = (t_saxpy / n, t_tree / nred)
        lines += ["", f"peers (saxpy and a 256-thread block sum, {peer_n} elements, one launch each), "
                      "time per element and how many times slower than this runtime:"]
        for label, module, code in (("Triton interpreter (TRITON_INTERPRET=1)", "triton", TRITON_PEER),
                                    ("numba CUDA simulator (NUMBA_ENABLE_CUDASIM=1)", "numba", NUMBA_PEER)):
            res = _peer(module, code, peer_n)
            if isinstance(res, str):
                lines.append(f"  {label}: {res}")
            else:
                lines.append(f"  {label}: saxpy {res[0] * 1e6:.1f} us/elt ({res[0] / ours[0]:,.0f}x), "
                             f"block sum {res[1] * 1e6:.1f} us/elt ({res[1] / ours[1]:,.0f}x)")
    report = "\n".join(lines)
    print(report)
    if opts.out:
        opts.out.parent.mkdir(parents=True, exist_ok=True)
        opts.out.write_text(report + "\n")


if __name__ == "__main__":
    main()
