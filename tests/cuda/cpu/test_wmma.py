"""nvcuda::wmma on the CPU runtime (runtime/include/mma.h): fragments of every supported element type and
shape, row/column-major loads, accumulator loads/stores in both layouts, fill_fragment, element access
through x[] / num_elements, mma_sync; results compared with a double-precision reference (the inputs are
chosen so that every product and sum is exact in the accumulator type)."""

from __future__ import annotations

import pytest

from veriforge.cuda import cpu

PROGRAM = r"""
#include <cstdio>
#include <cmath>
#include <mma.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
using namespace nvcuda;

template <int M, int N, int K, class TI, class LA, class LB, class TC>
__global__ void gemm(const TI* a, const TI* b, const TC* c, TC* d, int lda, int ldb, int ldc, wmma::layout_t cl) {
    wmma::fragment<wmma::matrix_a, M, N, K, TI, LA> fa;
    wmma::fragment<wmma::matrix_b, M, N, K, TI, LB> fb;
    wmma::fragment<wmma::accumulator, M, N, K, TC> fc;
    wmma::load_matrix_sync(fa, a, lda);
    wmma::load_matrix_sync(fb, b, ldb);
    wmma::load_matrix_sync(fc, c, ldc, cl);
    for (int i = 0; i < fc.num_elements; ++i) fc.x[i] = fc.x[i] * (TC)2;
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(d, fc, ldc, cl);
}
template <int M, int N, int K>
__global__ void tf32(const float* a, const float* b, float* d) {
    wmma::fragment<wmma::matrix_a, M, N, K, wmma::precision::tf32, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, M, N, K, wmma::precision::tf32, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, M, N, K, float> fc;
    wmma::fill_fragment(fc, 0.0f);
    wmma::load_matrix_sync(fa, a, K);
    wmma::load_matrix_sync(fb, b, K);
    for (int i = 0; i < fa.num_elements; ++i) fa.x[i] = wmma::__float_to_tf32(fa.x[i]);
    for (int i = 0; i < fb.num_elements; ++i) fb.x[i] = wmma::__float_to_tf32(fb.x[i]);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(d, fc, N, wmma::mem_row_major);
}

template <class T> float tof(T v) { return (float)v; }
template <> float tof<__half>(__half v) { return __half2float(v); }
template <> float tof<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }
template <class T> T fromf(float v) { return (T)v; }
template <> __half fromf<__half>(float v) { return __float2half(v); }
template <> __nv_bfloat16 fromf<__nv_bfloat16>(float v) { return __float2bfloat16(v); }

// A row-major MxK (or col-major), B KxN col-major (or row-major), C/D MxN
template <int M, int N, int K, class TI, class LA, class LB, class TC>
double check(const char* name) {
    TI *a, *b; TC *c, *d;
    cudaMallocManaged(&a, M * K * sizeof(TI)); cudaMallocManaged(&b, K * N * sizeof(TI));
    cudaMallocManaged(&c, M * N * sizeof(TC)); cudaMallocManaged(&d, M * N * sizeof(TC));
    bool arow = std::is_same<LA, wmma::row_major>::value, brow = std::is_same<LB, wmma::row_major>::value;
    auto A = [&](int i, int k) -> TI& { return arow ? a[i * K + k] : a[k * M + i]; };
    auto B = [&](int k, int j) -> TI& { return brow ? b[k * N + j] : b[j * K + k]; };
    for (int i = 0; i < M; ++i) for (int k = 0; k < K; ++k) A(i, k) = fromf<TI>((float)((i * 7 + k * 3) % 11) - 5);
    for (int k = 0; k < K; ++k) for (int j = 0; j < N; ++j) B(k, j) = fromf<TI>((float)((k * 5 + j) % 9) - 4);
    for (int i = 0; i < M * N; ++i) c[i] = fromf<TC>((float)(i % 13) - 6);
    gemm<M, N, K, TI, LA, LB, TC><<<1, 32>>>(a, b, c, d, arow ? K : M, brow ? N : K, N, wmma::mem_row_major);
    cudaDeviceSynchronize();
    double err = 0;
    for (int i = 0; i < M; ++i) for (int j = 0; j < N; ++j) {
        double want = 2.0 * tof(c[i * N + j]);
        for (int k = 0; k < K; ++k) want += (double)tof(A(i, k)) * tof(B(k, j));
        err = fmax(err, fabs(want - tof(d[i * N + j])));
    }
    printf("%s maxerr %g\n", name, err);
    return err;
}


// A 64x64x64 half GEMM by 4 warps of 2 blocks (16x16 tiles), C scaled element-wise through x[],
// stored column-major; every lane of every warp takes part.
__global__ void tiled(const __half* a, const __half* b, const float* c, float* d, float alpha, float beta) {
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;   // 0..7 -> tiles (warp / 4 .. , ..)
    for (int t = warp; t < 16; t += 8) {
        int ti = t / 4, tj = t % 4;
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> fb;
        wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc, fc;
        wmma::fill_fragment(acc, 0.0f);
        for (int k = 0; k < 64; k += 16) {
            wmma::load_matrix_sync(fa, a + ti * 16 * 64 + k, 64);
            wmma::load_matrix_sync(fb, b + k * 64 + tj * 16, 64);
            wmma::mma_sync(acc, fa, fb, acc);
        }
        wmma::load_matrix_sync(fc, c + ti * 16 * 64 + tj * 16, 64, wmma::mem_row_major);
        for (int i = 0; i < fc.num_elements; ++i) fc.x[i] = alpha * acc.x[i] + beta * fc.x[i];
        wmma::store_matrix_sync(d + tj * 16 * 64 + ti * 16, fc, 64, wmma::mem_col_major);
    }
}

int main() {
    check<16, 16, 16, __half, wmma::row_major, wmma::col_major, float>("h16x16x16 rc f");
    check<16, 16, 16, __half, wmma::col_major, wmma::row_major, float>("h16x16x16 cr f");
    check<32, 8, 16, __half, wmma::row_major, wmma::row_major, float>("h32x8x16 f");
    check<8, 32, 16, __half, wmma::col_major, wmma::col_major, float>("h8x32x16 f");
    check<16, 16, 16, __half, wmma::row_major, wmma::col_major, __half>("h16x16x16 h");
    check<16, 16, 16, __nv_bfloat16, wmma::row_major, wmma::col_major, float>("bf16 f");
    check<16, 16, 16, signed char, wmma::row_major, wmma::col_major, int>("s8 i");
    check<16, 16, 16, unsigned char, wmma::row_major, wmma::col_major, int>("u8 i");
    check<8, 8, 4, double, wmma::row_major, wmma::col_major, double>("f64");
    float *a, *b, *d;
    cudaMallocManaged(&a, 16 * 8 * 4); cudaMallocManaged(&b, 8 * 16 * 4); cudaMallocManaged(&d, 256 * 4);
    for (int i = 0; i < 128; ++i) { a[i] = 1.0f + 1.0f / 4096; b[i] = 1.0f; }
    tf32<16, 16, 8><<<1, 32>>>(a, b, d);
    cudaDeviceSynchronize();
    printf("tf32 %.9g\n", d[17]);
    __half *ha, *hb; float *fc, *fd;
    cudaMallocManaged(&ha, 64 * 64 * 2); cudaMallocManaged(&hb, 64 * 64 * 2);
    cudaMallocManaged(&fc, 64 * 64 * 4); cudaMallocManaged(&fd, 64 * 64 * 4);
    for (int i = 0; i < 64 * 64; ++i) {
        ha[i] = __float2half(((i * 37) % 17 - 8) * 0.125f);
        hb[i] = __float2half(((i * 11) % 13 - 6) * 0.25f);
        fc[i] = (float)(i % 7);
    }
    tiled<<<2, 128>>>(ha, hb, fc, fd, 2.0f, -1.0f);
    cudaDeviceSynchronize();
    double worst = 0;
    for (int i = 0; i < 64; ++i)
        for (int j = 0; j < 64; ++j) {
            double s = 0;
            for (int k = 0; k < 64; ++k) s += (double)__half2float(ha[i * 64 + k]) * __half2float(hb[k * 64 + j]);
            double want = 2.0 * s - fc[i * 64 + j];
            worst = fmax(worst, fabs(want - fd[j * 64 + i]));
        }
    printf("tiled maxerr %g\n", worst);
    return 0;
}
"""


@pytest.fixture(scope="module")
def lines(cpu_session_home):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VERIFORGE_HOME", cpu_session_home)
        res = cpu.run_program(PROGRAM, filename="wmma.cu", timeout=120)
    assert res.returncode == 0, res.stderr
    return res.stdout.splitlines()


@pytest.mark.parametrize("case", ["h16x16x16 rc f", "h16x16x16 cr f", "h32x8x16 f", "h8x32x16 f", "h16x16x16 h",
                                  "bf16 f", "s8 i", "u8 i", "f64"])
def test_each_shape_and_type_matches_the_reference(lines, case):
    assert f"{case} maxerr 0" in lines


def test_tf32_inputs_are_rounded_to_tf32(lines):
    # 1 + 2^-12 has no tf32 representation: __float_to_tf32 rounds it to 1, so 8 products sum to 8
    assert "tf32 8" in lines


def test_a_tiled_multi_warp_gemm_with_elementwise_epilogue(lines):
    assert "tiled maxerr 0" in lines


def test_sub_byte_types_are_refused_at_compile_time():
    src = """#include <mma.h>
using namespace nvcuda;
__global__ void k() { wmma::fragment<wmma::matrix_a, 8, 8, 32, wmma::experimental::precision::s4, wmma::row_major> f; }
int main() { return 0; }
"""
    with pytest.raises(cpu.CompileError, match="sub-byte"):
        cpu.run_program(src, filename="s4.cu")


def test_two_dimensional_extern_shared_and_alignas_after_shared():
    # the tensor-core samples' `extern __shared__ half shmem[][CHUNK_K * K + SKEW_HALF];` and
    # globalToShmemAsyncCopy's `__shared__ alignas(alignof(float4)) float As[..][..];`
    from veriforge.cuda.cpu.regions import strip_region_code
    from veriforge.cuda.cpu.source import rewrite, scan

    src = ("__global__ void k() {\n  extern __shared__ half shmem[][4 * 16 + 8];\n"
           "  __shared__ alignas(alignof(float4)) float As[4][4];\n}\nextern __shared__ int rows[][3];\n")
    out = rewrite(scan(src))
    assert "half (*shmem)[4 * 16 + 8] = reinterpret_cast<half (*)[4 * 16 + 8]>(::vf::dynamic_shared());" in out
    assert "__shared__ __attribute__((aligned(alignof(float4)))) float As[4][4];" in out
    assert "static ::vf::DynamicShared<int[3]> rows;" in out
    assert strip_region_code(out).count("\n") == src.count("\n")   # lines kept (region code aside)
