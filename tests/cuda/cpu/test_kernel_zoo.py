"""A zoo of realistic CUDA kernels launched one by one through ``cpu.compile(...).launch(...)``.

Each kernel is written the way it appears in samples, benchmarks and ML inference code (grid-stride
loops, templates on block size, float4 loads, padded shared tiles, warp shuffles, cuda_fp16...), fed
random numpy data and compared with a numpy reference. Output buffers are poisoned (NaN or a sentinel)
before each launch so a kernel that writes nothing, or only part of its output, cannot pass.

Modules are compiled once per theme (module-scope fixtures, through ``compile_cu`` from this folder's
conftest, which compiles under a session-wide VERIFORGE_HOME and closes the modules afterwards).
"""

from __future__ import annotations

import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

# --------------------------------------------------------------------------------------------------
# Sources, grouped by theme (one compiled module each).
# --------------------------------------------------------------------------------------------------

ELEMENTWISE_SRC = r"""
#include <cuda_runtime.h>

__global__ void saxpy_grid_stride(int n, float a, const float* __restrict__ x, float* __restrict__ y) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        y[i] = a * x[i] + y[i];
}

__global__ void daxpy(size_t n, double a, const double* x, double* y) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += a * x[i];
}

template <typename T>
__global__ void axpy_t(long long n, T a, const T* x, T* y) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)blockDim.x * gridDim.x)
        y[i] = a * x[i] + y[i];
}

// 128-bit vectorised scale-copy with a scalar tail, as bandwidth benchmarks write it.
__global__ void scale_copy_vec4(const float* __restrict__ in, float* __restrict__ out, float s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int n4 = n / 4;
    if (i < n4) {
        float4 v = reinterpret_cast<const float4*>(in)[i];
        v.x *= s; v.y *= s; v.z *= s; v.w *= s;
        reinterpret_cast<float4*>(out)[i] = v;
    }
    if (i == 0)
        for (int j = 4 * n4; j < n; ++j) out[j] = in[j] * s;
}

__global__ void math_funcs(const float* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    out[0 * n + i] = expf(v);
    out[1 * n + i] = __expf(v);
    out[2 * n + i] = sinf(v) * cosf(v);
    out[3 * n + i] = rsqrtf(v * v + 1.0f);
    out[4 * n + i] = fmaf(v, 2.0f, 1.0f);
    out[5 * n + i] = tanhf(v);
    out[6 * n + i] = logf(fabsf(v) + 1.0f);
    out[7 * n + i] = powf(fabsf(v), 1.5f);
    out[8 * n + i] = erff(v);
    out[9 * n + i] = fminf(fmaxf(v, -0.5f), 0.5f);
}

// Every scalar parameter type people pass by value; each is echoed into out[] as double / long long.
__global__ void scalar_types(int i32, unsigned u32, float f32, double f64, size_t sz, long long i64,
                             bool flag, unsigned long long u64, short s16, char c8,
                             double* out, long long* iout) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    out[0] = i32; out[1] = u32; out[2] = f32; out[3] = f64; out[4] = (double)sz;
    out[5] = (double)i64; out[6] = flag ? 1.0 : 0.0; out[7] = (double)u64; out[8] = s16; out[9] = c8;
    iout[0] = i32; iout[1] = u32; iout[2] = (long long)sz; iout[3] = i64;
    iout[4] = (long long)(u64 >> 1); iout[5] = flag; iout[6] = s16; iout[7] = c8;
}

__global__ void scaled_by_define(const int* in, int* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] * SCALE + OFFSET;
}

__global__ void blur2d(const float* in, float* out, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    float s = 0.f; int c = 0;
    for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx) {
            int xx = x + dx, yy = y + dy;
            if (xx >= 0 && xx < w && yy >= 0 && yy < h) { s += __ldg(in + yy * w + xx); ++c; }
        }
    out[y * w + x] = s / c;
}

__global__ void geometry3d(int* out) {
    int bx = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    int gid = bx * (blockDim.x * blockDim.y * blockDim.z) + t;
    out[gid] = (blockIdx.z << 24) | (blockIdx.y << 16) | (blockIdx.x << 8) |
               (threadIdx.z << 6) | (threadIdx.y << 3) | threadIdx.x;
}

namespace ops {
__global__ void negate(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = -x[i];
}
}  // namespace ops

extern "C" __global__ void c_square(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * x[i];
}

__global__ void int_intrinsics(const unsigned* x, unsigned* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned v = x[i];
    out[4 * i + 0] = __popc(v);
    out[4 * i + 1] = __clz(v);
    out[4 * i + 2] = __brev(v);
    out[4 * i + 3] = __ffs(v);
}
"""

REDUCE_SRC = r"""
#include <cuda_runtime.h>

// Reduction templated on the block size: grid-stride accumulation, unrolled tree, warp shuffles.
template <unsigned int blockSize>
__global__ void reduce(const float* __restrict__ in, float* __restrict__ out, unsigned int n) {
    __shared__ float sdata[blockSize];
    unsigned int tid = threadIdx.x;
    float sum = 0.f;
    for (unsigned int i = blockIdx.x * blockSize * 2 + tid; i < n; i += blockSize * 2 * gridDim.x) {
        sum += in[i];
        if (i + blockSize < n) sum += in[i + blockSize];
    }
    sdata[tid] = sum;
    __syncthreads();
    if (blockSize >= 512) { if (tid < 256) sdata[tid] = sum = sum + sdata[tid + 256]; __syncthreads(); }
    if (blockSize >= 256) { if (tid < 128) sdata[tid] = sum = sum + sdata[tid + 128]; __syncthreads(); }
    if (blockSize >= 128) { if (tid < 64) sdata[tid] = sum = sum + sdata[tid + 64]; __syncthreads(); }
    if (tid < 32) {
        if (blockSize >= 64) sum += sdata[tid + 32];
        for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffff, sum, offset);
    }
    if (tid == 0) out[blockIdx.x] = sum;
}

__inline__ __device__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o);
    return v;
}

__global__ void shuffle_atomic_sum(const float* in, float* out, int n) {
    __shared__ float warp_sums[32];
    float v = 0.f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) v += in[i];
    v = warp_sum(v);
    if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = v;
    __syncthreads();
    if (threadIdx.x < 32) {
        v = threadIdx.x < (blockDim.x >> 5) ? warp_sums[threadIdx.x] : 0.f;
        v = warp_sum(v);
        if (threadIdx.x == 0) atomicAdd(out, v);
    }
}

__global__ void histogram256(const unsigned char* data, unsigned int* hist, int n) {
    __shared__ unsigned int local[256];
    for (int b = threadIdx.x; b < 256; b += blockDim.x) local[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        atomicAdd(&local[data[i]], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < 256; b += blockDim.x) atomicAdd(&hist[b], local[b]);
}

__device__ float atomicMaxFloat(float* addr, float value) {
    int* ai = (int*)addr;
    int old = *ai, assumed;
    do {
        assumed = old;
        if (__int_as_float(assumed) >= value) break;
        old = atomicCAS(ai, assumed, __float_as_int(value));
    } while (assumed != old);
    return __int_as_float(old);
}

__global__ void max_cas(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicMaxFloat(out, in[i]);
}

__global__ void double_atomic_stats(const double* x, double* sum, long long* count_pos, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAdd(sum, x[i]);
        if (x[i] > 0) atomicAdd((unsigned long long*)count_pos, 1ull);
    }
}

// Inclusive block scan: warp shuffles, then a scan of the warp totals.
__global__ void block_scan(const int* in, int* out, int n) {
    __shared__ int warp_tot[32];
    int gid = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    int v = gid < n ? in[gid] : 0;
    for (int d = 1; d < 32; d <<= 1) {
        int up = __shfl_up_sync(0xffffffff, v, d);
        if (lane >= d) v += up;
    }
    if (lane == 31) warp_tot[w] = v;
    __syncthreads();
    if (w == 0) {
        int t = lane < (blockDim.x >> 5) ? warp_tot[lane] : 0;
        for (int d = 1; d < 32; d <<= 1) {
            int up = __shfl_up_sync(0xffffffff, t, d);
            if (lane >= d) t += up;
        }
        warp_tot[lane] = t;
    }
    __syncthreads();
    if (w > 0) v += warp_tot[w - 1];
    if (gid < n) out[gid] = v;
}

__global__ void ballot_compact(const int* in, int* out, int* count, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31;
    bool keep = i < n && (in[i] & 1);
    unsigned mask = __ballot_sync(0xffffffff, keep);
    int base = 0;
    if (lane == 0) base = atomicAdd(count, __popc(mask));
    base = __shfl_sync(0xffffffff, base, 0);
    if (keep) out[base + __popc(mask & ((1u << lane) - 1))] = in[i];
}
"""

SHARED_SRC = r"""
#include <cuda_runtime.h>
#define TILE 16

__global__ void matmul_tiled(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.f;
    for (int t = 0; t < (K + TILE - 1) / TILE; ++t) {
        int ac = t * TILE + threadIdx.x, br = t * TILE + threadIdx.y;
        As[threadIdx.y][threadIdx.x] = (row < M && ac < K) ? A[row * K + ac] : 0.f;
        Bs[threadIdx.y][threadIdx.x] = (br < K && col < N) ? B[br * N + col] : 0.f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc;
}

#define TDIM 32
#define BROWS 8
__global__ void transpose_padded(float* odata, const float* idata, int width, int height) {
    __shared__ float tile[TDIM][TDIM + 1];
    int x = blockIdx.x * TDIM + threadIdx.x, y = blockIdx.y * TDIM + threadIdx.y;
    for (int j = 0; j < TDIM; j += BROWS)
        if (x < width && y + j < height) tile[threadIdx.y + j][threadIdx.x] = idata[(y + j) * width + x];
    __syncthreads();
    x = blockIdx.y * TDIM + threadIdx.x;
    y = blockIdx.x * TDIM + threadIdx.y;
    for (int j = 0; j < TDIM; j += BROWS)
        if (x < height && y + j < width) odata[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}

// One warp per row; numerically stable softmax.
__global__ void softmax_rows(const float* in, float* out, int rows, int cols) {
    int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (row >= rows) return;
    const float* x = in + (size_t)row * cols;
    float m = -INFINITY;
    for (int c = lane; c < cols; c += 32) m = fmaxf(m, x[c]);
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffff, m, o));
    float s = 0.f;
    for (int c = lane; c < cols; c += 32) s += expf(x[c] - m);
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffff, s, o);
    for (int c = lane; c < cols; c += 32) out[(size_t)row * cols + c] = expf(x[c] - m) / s;
}

// Block per row, dynamic shared memory for the reduction scratch (size given at launch).
__global__ void layernorm_rows(const float* in, const float* gamma, const float* beta, float* out, int cols,
                               float eps) {
    extern __shared__ float scratch[];
    const float* x = in + (size_t)blockIdx.x * cols;
    float s = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) s += x[c];
    scratch[threadIdx.x] = s;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) scratch[threadIdx.x] += scratch[threadIdx.x + k];
        __syncthreads();
    }
    float mean = scratch[0] / cols;
    __syncthreads();
    float v = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) v += (x[c] - mean) * (x[c] - mean);
    scratch[threadIdx.x] = v;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) scratch[threadIdx.x] += scratch[threadIdx.x + k];
        __syncthreads();
    }
    float rstd = rsqrtf(scratch[0] / cols + eps);
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        out[(size_t)blockIdx.x * cols + c] = (x[c] - mean) * rstd * gamma[c] + beta[c];
}

__global__ void bitonic_sort_block(int* data) {
    extern __shared__ int s[];
    unsigned t = threadIdx.x, n = blockDim.x;
    int* d = data + blockIdx.x * n;
    s[t] = d[t];
    __syncthreads();
    for (unsigned k = 2; k <= n; k <<= 1)
        for (unsigned j = k >> 1; j > 0; j >>= 1) {
            unsigned p = t ^ j;
            if (p > t) {
                bool up = (t & k) == 0;
                if ((s[t] > s[p]) == up) { int tmp = s[t]; s[t] = s[p]; s[p] = tmp; }
            }
            __syncthreads();
        }
    d[t] = s[t];
}

// Deliberately racy: the barrier between the shared-memory write and the mirrored read is missing.
__global__ void reverse_missing_sync(int* d) {
    __shared__ int s[256];
    int* base = d + blockIdx.x * blockDim.x;
    s[threadIdx.x] = base[threadIdx.x];
    base[threadIdx.x] = s[blockDim.x - 1 - threadIdx.x];
}

#define RADIUS 3
__global__ void stencil1d(const float* in, float* out, const float* w, int n) {
    __shared__ float tile[256 + 2 * RADIUS];
    int g = blockIdx.x * blockDim.x + threadIdx.x;
    int l = threadIdx.x + RADIUS;
    tile[l] = g < n ? in[g] : 0.f;
    if (threadIdx.x < RADIUS) {
        int left = g - RADIUS, right = g + blockDim.x;
        tile[l - RADIUS] = left >= 0 && left < n ? in[left] : 0.f;
        tile[l + blockDim.x] = right < n ? in[right] : 0.f;
    }
    __syncthreads();
    if (g < n) {
        float r = 0.f;
        for (int k = -RADIUS; k <= RADIUS; ++k) r += w[k + RADIUS] * tile[l + k];
        out[g] = r;
    }
}
"""

PRECISION_SRC = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>

__global__ void half2_axpy(int n2, float a, const __half2* x, __half2* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    __half2 a2 = __float2half2_rn(a);
    if (i < n2) y[i] = __hfma2(a2, x[i], y[i]);
}

__global__ void half_to_float_relu(const __half* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        __half v = x[i];
        out[i] = __hgt(v, __float2half(0.f)) ? __half2float(v) : 0.f;
    }
}

__global__ void bf16_scale(const __nv_bfloat16* x, __nv_bfloat16* y, float s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __float2bfloat16(__bfloat162float(x[i]) * s);
}
"""


# --------------------------------------------------------------------------------------------------
# Helpers and fixtures
# --------------------------------------------------------------------------------------------------


def _blocks(n: int, threads: int) -> int:
    return (n + threads - 1) // threads


def _nan(shape, dtype=np.float32) -> np.ndarray:
    return np.full(shape, np.nan, dtype=dtype)


DEFINES = {"SCALE": 3, "OFFSET": -7}
SOURCES = {"elementwise": ELEMENTWISE_SRC, "reductions": REDUCE_SRC, "shared": SHARED_SRC,
           "precision": PRECISION_SRC}


@pytest.fixture(scope="module")
def cpu():
    # Imported here, not at module level, so the nvcc validity test runs without the runtime.
    mod = pytest.importorskip("veriforge.cuda.cpu")
    if not hasattr(mod, "compile"):
        pytest.skip("veriforge.cuda.cpu is not built yet")
    return mod


@pytest.fixture(scope="module")
def elementwise(cpu, compile_cu):
    return compile_cu(ELEMENTWISE_SRC, defines=DEFINES)


@pytest.fixture(scope="module")
def reductions(cpu, compile_cu):
    return compile_cu(REDUCE_SRC)


@pytest.fixture(scope="module")
def shared(cpu, compile_cu):
    return compile_cu(SHARED_SRC)


@pytest.fixture(scope="module")
def precision(cpu, compile_cu):
    return compile_cu(PRECISION_SRC)


def _nvcc(item: tuple[str, str], tmp) -> tuple[str, int, str]:
    name, src = item
    path = tmp / f"{name}.cu"
    path.write_text(src)
    flags = [f"-D{k}={v}" for k, v in DEFINES.items()]
    proc = subprocess.run(["nvcc", "-arch=sm_90", *flags, "-c", "-o", "/dev/null", str(path)],
                          capture_output=True, text=True, timeout=300)
    return name, proc.returncode, proc.stdout + proc.stderr


@pytest.mark.nvcc
@pytest.mark.slow
def test_zoo_sources_compile_with_nvcc(tmp_path):
    """The zoo is valid CUDA for the real compiler, so a CPU-runtime failure is the runtime's."""
    assert shutil.which("nvcc") is not None
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda it: _nvcc(it, tmp_path), SOURCES.items()))
    failures = [f"{name}:\n{log}" for name, rc, log in results if rc != 0]
    assert not failures, "\n\n".join(failures)


# --------------------------------------------------------------------------------------------------
# Elementwise
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 1000, 70_001])
def test_saxpy_grid_stride(elementwise, n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)
    expected = np.float32(2.5) * x + y
    elementwise.launch("saxpy_grid_stride", 8, 128, [n, 2.5, x, y])  # far fewer threads than n
    np.testing.assert_allclose(y, expected, rtol=1e-6, atol=1e-6)


def test_daxpy_size_t_and_double(elementwise):
    rng = np.random.default_rng(1)
    n = 5000
    x, y = rng.standard_normal(n), rng.standard_normal(n)
    expected = y + (-1.25) * x
    elementwise.launch("daxpy", _blocks(n, 256), 256, [np.uint64(n), -1.25, x, y])
    np.testing.assert_allclose(y, expected, rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("name,dtype", [("axpy_t<float>", np.float32), ("axpy_t<double>", np.float64),
                                        ("axpy_t<int>", np.int32)])
def test_template_instantiations(elementwise, name, dtype):
    rng = np.random.default_rng(2)
    n = 3000
    x = rng.integers(-100, 100, n).astype(dtype)
    y = rng.integers(-100, 100, n).astype(dtype)
    expected = 3 * x + y
    elementwise.launch(name, 4, 64, [n, 3, x, y])
    np.testing.assert_array_equal(y, expected)


@pytest.mark.parametrize("n", [4096, 4099])
def test_float4_vectorised_copy(elementwise, n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n, dtype=np.float32)
    out = _nan(n)
    elementwise.launch("scale_copy_vec4", _blocks(n // 4, 128), 128, [x, out, 0.5, n])
    np.testing.assert_array_equal(out, x * np.float32(0.5))


def test_math_library(elementwise):
    rng = np.random.default_rng(3)
    n = 1000
    x = rng.uniform(-3, 3, n).astype(np.float32)
    out = _nan(10 * n)
    elementwise.launch("math_funcs", _blocks(n, 256), 256, [x, out, n])
    got = out.reshape(10, n).astype(np.float64)
    xd = x.astype(np.float64)
    from math import erf

    ref = [np.exp(xd), np.exp(xd), np.sin(xd) * np.cos(xd), 1 / np.sqrt(xd * xd + 1), xd * 2 + 1, np.tanh(xd),
           np.log(np.abs(xd) + 1), np.abs(xd) ** 1.5, np.array([erf(v) for v in xd]), np.clip(xd, -0.5, 0.5)]
    for k, r in enumerate(ref):
        np.testing.assert_allclose(got[k], r, rtol=2e-5, atol=2e-6, err_msg=f"function #{k}")


def test_scalar_argument_types(elementwise):
    out = _nan(10, np.float64)
    iout = np.full(8, -999, np.int64)
    u32 = 3_000_000_000  # > INT_MAX: must arrive as unsigned
    sz = 5_000_000_000  # > 2^32: must arrive as 64-bit size_t
    i64 = -(2**40) - 3
    u64 = 2**63 + 10
    elementwise.launch("scalar_types", 1, 32,
                       [-17, u32, 1.5, 2.0**-30, sz, i64, True, u64, -1234, 65, out, iout])
    np.testing.assert_array_equal(out, [-17, u32, 1.5, 2.0**-30, float(sz), float(i64), 1.0, float(u64),
                                        -1234, 65])
    np.testing.assert_array_equal(iout, [-17, u32, sz, i64, u64 >> 1, 1, -1234, 65])
    # numpy scalars work as well and are converted to the parameter's type
    elementwise.launch("scalar_types", 1, 1,
                       [np.int64(5), np.uint32(7), np.float64(0.25), np.float32(0.5), np.int32(9),
                        np.int16(-2), np.bool_(False), np.uint64(11), np.int8(-3), np.int64(66), out, iout])
    np.testing.assert_array_equal(out, [5, 7, 0.25, 0.5, 9, -2, 0, 11, -3, 66])


def test_defines_are_visible_to_kernels(elementwise):
    x = np.arange(-50, 50, dtype=np.int32)
    out = np.full_like(x, 12345)
    elementwise.launch("scaled_by_define", 1, 128, [x, out, x.size])
    np.testing.assert_array_equal(out, x * 3 - 7)


def test_2d_grid_blur(elementwise):
    rng = np.random.default_rng(4)
    h, w = 37, 53
    img = rng.random((h, w), dtype=np.float32)
    out = _nan((h, w))
    elementwise.launch("blur2d", (_blocks(w, 16), _blocks(h, 8)), (16, 8), [img, out, w, h])
    padded = np.pad(img.astype(np.float64), 1)
    ones = np.pad(np.ones_like(img, dtype=np.float64), 1)
    s = sum(padded[1 + dy:1 + dy + h, 1 + dx:1 + dx + w] for dy in (-1, 0, 1) for dx in (-1, 0, 1))
    c = sum(ones[1 + dy:1 + dy + h, 1 + dx:1 + dx + w] for dy in (-1, 0, 1) for dx in (-1, 0, 1))
    np.testing.assert_allclose(out, s / c, rtol=1e-5)


def test_3d_grid_and_block(elementwise):
    grid, block = (3, 2, 4), (4, 3, 2)
    total = int(np.prod(grid) * np.prod(block))
    out = np.full(total, -1, np.int32)
    elementwise.launch("geometry3d", grid, block, [out])
    expected = []
    for bz in range(grid[2]):
        for by in range(grid[1]):
            for bx in range(grid[0]):
                for tz in range(block[2]):
                    for ty in range(block[1]):
                        for tx in range(block[0]):
                            expected.append((bz << 24) | (by << 16) | (bx << 8) | (tz << 6) | (ty << 3) | tx)
    np.testing.assert_array_equal(out, expected)


def test_namespaced_and_extern_c_kernels(elementwise):
    x = np.linspace(-3, 3, 301, dtype=np.float32)
    y = x.copy()
    elementwise.launch("ops::negate", _blocks(x.size, 128), 128, [y, y.size])
    np.testing.assert_array_equal(y, -x)
    elementwise.launch("c_square", _blocks(x.size, 128), 128, [y, y.size])
    np.testing.assert_array_equal(y, x * x)


def test_integer_intrinsics(elementwise):
    rng = np.random.default_rng(5)
    x = rng.integers(0, 2**32, 777, dtype=np.uint64).astype(np.uint32)
    x[:4] = [0, 1, 0x80000000, 0xFFFFFFFF]
    out = np.full(4 * x.size, 0xDEADBEEF, np.uint32)
    elementwise.launch("int_intrinsics", _blocks(x.size, 128), 128, [x, out, x.size])
    got = out.reshape(-1, 4)
    bits = ((x[:, None] >> np.arange(32, dtype=np.uint32)) & 1).astype(np.uint32)
    popc = bits.sum(axis=1)
    clz = np.array([32 - int(v).bit_length() for v in x])
    brev = (bits[:, ::-1] << np.arange(32, dtype=np.uint32)).sum(axis=1).astype(np.uint32)
    ffs = np.array([(int(v) & -int(v)).bit_length() for v in x])
    np.testing.assert_array_equal(got[:, 0], popc)
    np.testing.assert_array_equal(got[:, 1], clz)
    np.testing.assert_array_equal(got[:, 2], brev)
    np.testing.assert_array_equal(got[:, 3], ffs)


# --------------------------------------------------------------------------------------------------
# Reductions, atomics, scans, warp votes
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("block", [64, 128, 256, 512])
def test_templated_reduce(reductions, block):
    rng = np.random.default_rng(block)
    n = 100_003
    x = rng.standard_normal(n, dtype=np.float32)
    blocks = 24
    partial = _nan(blocks)
    reductions.launch(f"reduce<{block}>", blocks, block, [x, partial, n])
    assert np.isfinite(partial).all()
    np.testing.assert_allclose(partial.astype(np.float64).sum(), x.astype(np.float64).sum(), rtol=1e-4, atol=1e-2)


def test_shuffle_reduce_with_atomic(reductions):
    rng = np.random.default_rng(6)
    n = 200_000
    x = rng.random(n, dtype=np.float32)
    out = np.zeros(1, np.float32)
    reductions.launch("shuffle_atomic_sum", 40, 256, [x, out, n])
    np.testing.assert_allclose(out[0], x.astype(np.float64).sum(), rtol=1e-5)


def test_shared_atomic_histogram(reductions):
    rng = np.random.default_rng(7)
    n = 150_000
    data = np.concatenate([rng.integers(0, 256, n - 5000), np.full(5000, 42)]).astype(np.uint8)
    hist = np.zeros(256, np.uint32)
    reductions.launch("histogram256", 30, 192, [data, hist, n])
    np.testing.assert_array_equal(hist, np.bincount(data, minlength=256))


def test_atomic_cas_float_max(reductions):
    rng = np.random.default_rng(8)
    x = rng.uniform(-1000, 1000, 30_000).astype(np.float32)
    out = np.array([-np.inf], np.float32)
    reductions.launch("max_cas", _blocks(x.size, 256), 256, [x, out, x.size])
    assert out[0] == x.max()


def test_double_and_64bit_atomics(reductions):
    rng = np.random.default_rng(9)
    x = rng.standard_normal(20_000)
    total = np.zeros(1, np.float64)
    count = np.zeros(1, np.int64)
    reductions.launch("double_atomic_stats", _blocks(x.size, 128), 128, [x, total, count, x.size])
    np.testing.assert_allclose(total[0], x.sum(), rtol=1e-9, atol=1e-9)
    assert count[0] == (x > 0).sum()


@pytest.mark.parametrize("threads", [64, 256, 1024])
def test_block_scan(reductions, threads):
    rng = np.random.default_rng(threads)
    n = 5 * threads - 7
    x = rng.integers(-50, 100, n).astype(np.int32)
    out = np.full(n, -1, np.int32)
    reductions.launch("block_scan", _blocks(n, threads), threads, [x, out, n])
    expected = np.concatenate([np.cumsum(x[i:i + threads]) for i in range(0, n, threads)])
    np.testing.assert_array_equal(out, expected)


def test_ballot_compaction(reductions):
    rng = np.random.default_rng(10)
    x = rng.integers(0, 10_000, 9_000).astype(np.int32)
    out = np.full(x.size, -1, np.int32)
    count = np.zeros(1, np.int32)
    reductions.launch("ballot_compact", _blocks(x.size, 128), 128, [x, out, count, x.size])
    odd = x[x % 2 == 1]
    assert count[0] == odd.size
    np.testing.assert_array_equal(np.sort(out[: odd.size]), np.sort(odd))
    assert (out[odd.size:] == -1).all()


# --------------------------------------------------------------------------------------------------
# Shared-memory tiles
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("m,n,k", [(64, 64, 64), (37, 45, 29)])
def test_tiled_matmul(shared, m, n, k):
    rng = np.random.default_rng(m * n * k)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    c = _nan((m, n))
    shared.launch("matmul_tiled", (_blocks(n, 16), _blocks(m, 16)), (16, 16), [a, b, c, m, n, k])
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("h,w", [(64, 96), (45, 70)])
def test_transpose_padded(shared, h, w):
    rng = np.random.default_rng(h + w)
    a = rng.standard_normal((h, w), dtype=np.float32)
    out = _nan((w, h))
    shared.launch("transpose_padded", (_blocks(w, 32), _blocks(h, 32)), (32, 8), [out, a, w, h])
    np.testing.assert_array_equal(out, a.T)


def test_softmax_warp_per_row(shared):
    rng = np.random.default_rng(11)
    rows, cols = 75, 130
    x = (4 * rng.standard_normal((rows, cols))).astype(np.float32)
    out = _nan((rows, cols))
    shared.launch("softmax_rows", _blocks(rows, 4), 128, [x, out, rows, cols])
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


def test_layernorm_dynamic_shared(shared):
    rng = np.random.default_rng(12)
    rows, cols = 40, 300
    x = rng.standard_normal((rows, cols)).astype(np.float32) * 3 + 1
    gamma = rng.random(cols, dtype=np.float32) + 0.5
    beta = rng.standard_normal(cols).astype(np.float32)
    out = _nan((rows, cols))
    threads = 128
    shared.launch("layernorm_rows", rows, threads, [x, gamma, beta, out, cols, 1e-5], shared_mem=threads * 4)
    xd = x.astype(np.float64)
    ref = (xd - xd.mean(1, keepdims=True)) / np.sqrt(xd.var(1, keepdims=True) + 1e-5) * gamma + beta
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)


def test_bitonic_sort_dynamic_shared(shared):
    rng = np.random.default_rng(13)
    blocks, n = 6, 512
    x = rng.integers(-10_000, 10_000, blocks * n).astype(np.int32)
    expected = np.sort(x.reshape(blocks, n), axis=1).ravel()
    shared.launch("bitonic_sort_block", blocks, n, [x], shared_mem=n * 4)
    np.testing.assert_array_equal(x, expected)


def test_stencil_with_halo(shared):
    rng = np.random.default_rng(14)
    n = 10_000
    x = rng.standard_normal(n).astype(np.float32)
    w = rng.standard_normal(7).astype(np.float32)
    out = _nan(n)
    shared.launch("stencil1d", _blocks(n, 256), 256, [x, out, w, n])
    ref = np.convolve(np.pad(x.astype(np.float64), 3), w[::-1].astype(np.float64), mode="valid")
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------------------------------
# Reduced precision (cuda_fp16.h / cuda_bf16.h)
# --------------------------------------------------------------------------------------------------


def test_half2_fma(precision):
    rng = np.random.default_rng(15)
    n = 4096
    x = rng.uniform(-1, 1, n).astype(np.float16)
    y = rng.uniform(-1, 1, n).astype(np.float16)
    expected = (np.float32(0.75) * x.astype(np.float32) + y.astype(np.float32)).astype(np.float16)
    precision.launch("half2_axpy", _blocks(n // 2, 128), 128, [n // 2, 0.75, x, y])
    np.testing.assert_allclose(y.astype(np.float32), expected.astype(np.float32), rtol=2e-3, atol=1e-3)


def test_half_relu_to_float(precision):
    rng = np.random.default_rng(16)
    x = rng.uniform(-4, 4, 3000).astype(np.float16)
    out = _nan(x.size)
    precision.launch("half_to_float_relu", _blocks(x.size, 256), 256, [x, out, x.size])
    np.testing.assert_array_equal(out, np.maximum(x.astype(np.float32), 0))


def _to_bf16_bits(a: np.ndarray) -> np.ndarray:
    """Round-to-nearest-even float32 -> bfloat16, as raw uint16 bits (numpy has no bfloat16)."""
    u = a.astype(np.float32).view(np.uint32)
    rounding = ((u >> 16) & 1) + np.uint32(0x7FFF)
    return ((u + rounding) >> 16).astype(np.uint16)


def _from_bf16_bits(b: np.ndarray) -> np.ndarray:
    return (b.astype(np.uint32) << 16).view(np.float32)


def test_bfloat16_scale(precision):
    rng = np.random.default_rng(17)
    n = 2000
    xb = _to_bf16_bits(rng.uniform(-10, 10, n))
    yb = np.zeros(n, np.uint16)
    precision.launch("bf16_scale", _blocks(n, 128), 128, [xb, yb, 1.5, n])
    expected = _to_bf16_bits(_from_bf16_bits(xb) * np.float32(1.5))
    np.testing.assert_array_equal(yb, expected)


# --------------------------------------------------------------------------------------------------
# Race probe on realistic kernels: no false alarms on correct code, an alarm on a missing barrier
# --------------------------------------------------------------------------------------------------


def _race_cases():
    rng = np.random.default_rng(18)
    m, n, k = 33, 40, 50
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    x = rng.standard_normal(5000).astype(np.float32)
    w = rng.standard_normal(7).astype(np.float32)
    t = rng.standard_normal((45, 70), dtype=np.float32)
    rows = (rng.standard_normal((8, 200)) * 2).astype(np.float32)
    ints = rng.integers(-100, 100, 1000).astype(np.int32)
    data = rng.integers(0, 256, 20_000).astype(np.uint8)
    return {
        "matmul_tiled": ("shared", (3, 3), (16, 16), [a, b, np.zeros((m, n), np.float32), m, n, k], 0),
        "transpose_padded": ("shared", (3, 2), (32, 8), [np.zeros((70, 45), np.float32), t, 70, 45], 0),
        "stencil1d": ("shared", 20, 256, [x, np.zeros_like(x), w, x.size], 0),
        "layernorm_rows": ("shared", 8, 64, [rows, np.ones(200, np.float32), np.zeros(200, np.float32),
                                             np.zeros_like(rows), 200, 1e-5], 64 * 4),
        "bitonic_sort_block": ("shared", 2, 256, [rng.integers(0, 1000, 512).astype(np.int32)], 256 * 4),
        "block_scan": ("reductions", 4, 256, [ints, np.zeros_like(ints), ints.size], 0),
        "histogram256": ("reductions", 8, 128, [data, np.zeros(256, np.uint32), data.size], 0),
        "reduce<128>": ("reductions", 6, 128, [x, np.zeros(6, np.float32), x.size], 0),
    }


@pytest.mark.parametrize("kernel", list(_race_cases()))
def test_race_probe_accepts_correct_kernels(request, kernel):
    module_name, grid, block, args, smem = _race_cases()[kernel]
    mod = request.getfixturevalue(module_name)
    if not hasattr(mod, "race_check"):
        pytest.skip("this runtime has no race_check")
    report = mod.race_check(kernel, grid, block, args, shared_mem=smem, rtol=1e-5, atol=1e-5)
    assert report.ok, str(report)


def test_race_probe_flags_missing_barrier(shared):
    if not hasattr(shared, "race_check"):
        pytest.skip("this runtime has no race_check")
    d = np.arange(4 * 256, dtype=np.int32)
    report = shared.race_check("reverse_missing_sync", 4, 256, [d])
    assert not report.ok
    np.testing.assert_array_equal(d, np.arange(4 * 256))  # the caller's array is left alone
