"""Benchmark of the CPU CUDA runtime (veriforge.cuda.cpu): prints figures, asserts nothing.

Each figure is printed next to the same computation written as a plain C++ loop compiled with
``g++ -O2``; the ratio is the runtime's overhead. Kernel times are measured inside the kernel
server (LaunchResult.seconds), best of several runs, so Python and IPC costs are excluded.

    python benchmarks/cpu_runtime.py [--out benchmarks/results/cpu_runtime.txt]
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
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
template <class F> double best(F f, int reps = 5) {
    double b = 1e30;
    for (int r = 0; r < reps; ++r) {
        auto t0 = std::chrono::steady_clock::now();
        f();
        double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (s < b) b = s;
    }
    return b;
}
int main(int argc, char** argv) {
    int n = atoi(argv[1]), blocks = atoi(argv[2]), K = atoi(argv[3]), m = atoi(argv[4]);
    std::vector<float> x(n, 1.0f), y(n, 2.0f);
    volatile float a = 1.5f;
    double t_saxpy = best([&] { for (int i = 0; i < n; ++i) y[i] = a * x[i] + y[i]; });
    std::vector<float> d(blocks * 256, 1.0f), s(256);
    double t_bar = best([&] {
        for (int b = 0; b < blocks; ++b) {
            float* p = &d[b * 256];
            for (int k = 0; k < K; ++k) {
                for (int t = 0; t < 256; ++t) s[t] = p[t];
                for (int t = 0; t < 256; ++t) p[t] += s[(t + 1) & 255];
            }
        }
    });
    std::vector<float> A(m * m, 1.0f), B(m * m, 0.5f), C(m * m);
    double t_mm = best([&] {
        for (int i = 0; i < m; ++i) {
            for (int j = 0; j < m; ++j) C[i * m + j] = 0.0f;
            for (int k = 0; k < m; ++k) {
                float aik = A[i * m + k];
                for (int j = 0; j < m; ++j) C[i * m + j] += aik * B[k * m + j];
            }
        }
    }, 2);
    double t_red = best([&] {
        float acc = 0;
        for (int i = 0; i < n; ++i) acc += x[i];
        volatile float sink = acc;
        (void)sink;
    });
    printf("%.9f %.9f %.9f %.9f\n", t_saxpy, t_bar, t_mm, t_red);
    return 0;
}
"""


def _best(mod, kernel, grid, block, args, reps=5, shared=0) -> float:
    return min(mod.launch(kernel, grid, block, args, shared).seconds for _ in range(reps))


def _baseline(n: int, blocks: int, k: int, m: int) -> list[float]:
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "base.cpp"
        src.write_text(BASELINE)
        exe = Path(tmp) / "base"
        cxx = shutil.which(os.environ.get("CXX", "g++")) or "g++"
        subprocess.run([cxx, "-O2", "-std=c++20", str(src), "-o", str(exe)], check=True)
        out = subprocess.run([str(exe), str(n), str(blocks), str(k), str(m)], capture_output=True, text=True,
                             check=True).stdout
    return [float(v) for v in out.split()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", type=Path, default=None, help="also write the report to this file")
    opts = ap.parse_args()

    t0 = time.perf_counter()
    mod = cpu.compile(KERNELS)
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    cpu.compile(KERNELS)
    cached_s = time.perf_counter() - t0

    n = 1 << 22
    x = np.ones(n, np.float32)
    y = np.full(n, 2.0, np.float32)
    t_saxpy = _best(mod, "saxpy", n // 256, 256, [n, 1.5, x, y])

    blocks, k = 256, 16
    data = np.ones(blocks * 256, np.float32)
    t_bar = _best(mod, f"barriers<{k}>", blocks, 256, [data])
    t_bar0 = _best(mod, "barriers<0>", blocks, 256, [data])
    per_barrier = (t_bar - t_bar0) / (blocks * 256 * 2 * k)

    m = 512
    a = np.random.default_rng(0).standard_normal((m, m)).astype(np.float32)
    b = np.random.default_rng(1).standard_normal((m, m)).astype(np.float32)
    c = np.zeros((m, m), np.float32)
    t_mm = _best(mod, "matmul", (m // 16, m // 16), (16, 16), [a, b, c, m], reps=2)
    mm_err = float(np.max(np.abs(c - a @ b)))

    out = np.zeros(1, np.float32)
    t_red = _best(mod, "warp_reduce", 512, 256, [x, out, n])

    t0 = time.perf_counter()
    for _ in range(100):
        mod.launch("saxpy", 1, 32, [32, 1.0, x[:32], y[:32]])
    launch_overhead = (time.perf_counter() - t0) / 100

    base = _baseline(n, blocks, k, m)
    lines = [
        "veriforge CPU CUDA runtime benchmark",
        f"machine: {platform.machine()}, {os.cpu_count()} cores, {platform.python_implementation()} "
        f"{platform.python_version()}, runtime threads: {os.environ.get('VF_CPU_THREADS', os.cpu_count())}",
        f"load average while measuring: {os.getloadavg()[0]:.1f} (figures scale with contention for the cores)",
        f"compile (runtime prebuilt, module not cached): {compile_s:.2f} s; cached: {cached_s * 1000:.0f} ms",
        f"per-launch overhead (Python -> kernel server -> Python, 32 threads): {launch_overhead * 1e3:.2f} ms",
        "",
        f"{'figure':<46}{'CPU runtime':>14}{'plain C++ -O2':>16}{'ratio':>8}",
        f"{'saxpy, ns per CUDA thread (2^22 threads)':<46}{t_saxpy / n * 1e9:>14.2f}{base[0] / n * 1e9:>16.2f}"
        f"{t_saxpy / base[0]:>8.1f}",
        f"{'__syncthreads, ns per thread per barrier':<46}{per_barrier * 1e9:>14.2f}{'(no-op)':>16}{'':>8}",
        f"{'barrier kernel total, ms (256x256 thr, 32 bar)':<46}{t_bar * 1e3:>14.2f}{base[1] * 1e3:>16.2f}"
        f"{t_bar / base[1]:>8.1f}",
        f"{'tiled fp32 matmul 512^3 (16x16 tiles), s':<46}{t_mm:>14.3f}{base[2]:>16.3f}{t_mm / base[2]:>8.1f}",
        f"{'shuffle+atomic reduction 2^22 floats, ms':<46}{t_red * 1e3:>14.2f}{base[3] * 1e3:>16.2f}"
        f"{t_red / base[3]:>8.1f}",
        "",
        f"matmul max |error| vs numpy: {mm_err:.2e}; reduction result {out[0]:.0f} (expected {5 * n:.0f} after 5 runs)",
        "targets (issue 3): <= ~100 ns/thread without barriers, <= ~80 ns/thread/barrier, matmul 512^3 <= ~1 s",
    ]
    report = "\n".join(lines)
    print(report)
    if opts.out:
        opts.out.parent.mkdir(parents=True, exist_ok=True)
        opts.out.write_text(report + "\n")


if __name__ == "__main__":
    main()
