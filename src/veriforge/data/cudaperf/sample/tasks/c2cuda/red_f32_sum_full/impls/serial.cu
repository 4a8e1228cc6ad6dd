#include <cuda_runtime.h>
#include <stdint.h>
#include <limits.h>
#include <math.h>

static int ck_grid(long long work, int threads, int blocks_per_sm) {
    int device = 0, sms = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    if (sms <= 0) sms = 16;
    long long blocks = (work + threads - 1) / threads;
    long long cap = (long long)sms * blocks_per_sm;
    if (blocks > cap) blocks = cap;
    if (blocks < 1) blocks = 1;
    return (int)blocks;
}

static bool ck_aligned(const void* p, int bytes) {
    return (reinterpret_cast<uintptr_t>(p) % (uintptr_t)bytes) == 0;
}

struct Acc { float s; };

__device__ __forceinline__ Acc acc_identity(void) {
    Acc a;
    a.s = 0;
    return a;
}

__device__ __forceinline__ Acc acc_lift(float x, int r) {
    Acc a;
    (void)r;
    a.s = x;
    return a;
}

__device__ __forceinline__ Acc acc_merge(Acc a, Acc b) {
    a.s += b.s;
    return a;
}

__device__ __forceinline__ float acc_final(Acc a, int R) {
    (void)R;
    return (float)a.s;
}


// One thread walks the whole array: correct, and as slow as serial code on a GPU.
__global__ void red_serial(const float* __restrict__ x, float* __restrict__ out, int n) {
    const int R = n;
    const int nout = 1;
    (void)nout;
    Acc a = acc_identity();
    for (int r = 0; r < R; ++r) a = acc_merge(a, acc_lift(x[r], r));
    out[0] = acc_final(a, R);
}

extern "C" void solve(const float* x, float* out, int n) {
    red_serial<<<1, 1>>>(x, out, n);
}
