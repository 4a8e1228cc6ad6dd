#include <cuda_runtime.h>

// Treat the dense matrices as one flat array and move 16 bytes per thread per iteration with float4
// loads/stores (cudaMalloc returns 256-byte aligned pointers, so the float4 view of the base is aligned).
// Fewer, wider memory instructions keep more bytes in flight per thread. The n % 4 leftover elements
// are handled by the first threads of the grid with scalar accesses.
#define THREADS 256

__global__ void matrix_add_vec4(const float* __restrict__ A, const float* __restrict__ B,
                                float* __restrict__ C, size_t n, float alpha, float beta) {
    size_t n4 = n / 4;
    size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    const float4* A4 = reinterpret_cast<const float4*>(A);
    const float4* B4 = reinterpret_cast<const float4*>(B);
    float4* C4 = reinterpret_cast<float4*>(C);
    for (size_t i = tid; i < n4; i += stride) {
        float4 a = __ldg(&A4[i]);
        float4 b = __ldg(&B4[i]);
        float4 c;
        c.x = fmaf(alpha, a.x, beta * b.x);
        c.y = fmaf(alpha, a.y, beta * b.y);
        c.z = fmaf(alpha, a.z, beta * b.z);
        c.w = fmaf(alpha, a.w, beta * b.w);
        C4[i] = c;
    }
    size_t tail = n4 * 4 + tid;
    if (tail < n) C[tail] = fmaf(alpha, A[tail], beta * B[tail]);
}

extern "C" void solve(const float* A, const float* B, float* C, int rows, int cols, float alpha, float beta) {
    size_t n = (size_t)rows * cols;
    int device = 0, sms = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    if (sms <= 0) sms = 1;
    size_t needed = (n / 4 + THREADS - 1) / THREADS;
    size_t cap = (size_t)sms * 4;
    int blocks = (int)(needed < cap ? needed : cap);
    if (blocks < 1) blocks = 1;
    matrix_add_vec4<<<blocks, THREADS>>>(A, B, C, n, alpha, beta);
}
