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

__device__ __forceinline__ float st_value(const float* in, int nx, int x) {
    x = x < 0 ? 0 : (x >= nx ? nx - 1 : x);
    return in[x];
}

__device__ __forceinline__ float st_point(const float* in, int nx, int x) {
    float s = 0.0f;
    s += st_value(in, nx, x - 1);
    s += st_value(in, nx, x);
    s += st_value(in, nx, x + 1);
    s = s * (1.0f / 3.0f);
    return s;
}

#define TILE_ELEMS 258

// The block's 256 outputs plus a halo of 1 are
// staged in shared memory (boundary rule applied while loading), then every neighbour read hits the tile.
__global__ void st_tiled(const float* __restrict__ in, float* __restrict__ out, int n) {
    __shared__ float tile[TILE_ELEMS];
    const int nx = n;
    int ox = blockIdx.x * 256;
    int tid = threadIdx.x;
    for (int k = tid; k < TILE_ELEMS; k += 256) {
        int lx = k % 258;
        tile[k] = st_value(in, nx, ox + lx - 1);
    }
    __syncthreads();
    int x = ox + threadIdx.x;
    if (!(x < nx)) return;
    int tx = threadIdx.x + 1;
    float s = 0.0f;
    s += tile[tx - 1];
    s += tile[tx];
    s += tile[tx + 1];
    s = s * (1.0f / 3.0f);
    if (x >= 1 && x < nx - 1) out[x] = s;
    else out[x] = in[x];
}

extern "C" void solve(const float* in, float* out, int n) {
    const int nx = n;
    dim3 grid((nx + 255) / 256);
    dim3 block(256);
    st_tiled<<<grid, block>>>(in, out, n);
}
