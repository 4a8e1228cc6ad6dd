// Reduction with cooperative groups: thread_block, tiled_partition<32> and its shfl_down, a
// statically sized thread_block_tile<16>, and cg::reduce from <cooperative_groups/reduce.h>.
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cuda_runtime.h>

namespace cg = cooperative_groups;

#define checkCuda(x)                                                                   \
    do {                                                                               \
        cudaError_t rc = (x);                                                          \
        if (rc != cudaSuccess) {                                                       \
            printf("CUDA failure %s at %s:%d\n", cudaGetErrorString(rc), __FILE__, __LINE__); \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

__device__ int reduce_sum_tile(cg::thread_group g, int *temp, int val) {
    int lane = g.thread_rank();
    for (int i = g.size() / 2; i > 0; i /= 2) {
        temp[lane] = val;
        g.sync();
        if (lane < i) val += temp[lane + i];
        g.sync();
    }
    return val;  // only thread 0 holds the full sum
}

// Block-wide reduction through shared memory using the generic thread_group interface.
__global__ void sumKernelGroup(const int *in, int *sum, int n) {
    extern __shared__ int temp[];
    cg::thread_block block = cg::this_thread_block();
    int my = 0;
    for (int i = block.group_index().x * block.size() + block.thread_rank(); i < n;
         i += block.size() * gridDim.x)
        my += in[i];
    int blockSum = reduce_sum_tile(block, temp, my);
    if (block.thread_rank() == 0) atomicAdd(sum, blockSum);
}

template <int TILE>
__device__ float tileSum(cg::thread_block_tile<TILE> tile, float v) {
    for (int off = tile.size() / 2; off > 0; off /= 2) v += tile.shfl_down(v, off);
    return v;
}

// Warp tiles with shuffles; one partial per tile written to shared memory, then block.sync().
__global__ void sumKernelTiles(const float *in, float *out, int n) {
    __shared__ float partial[32];
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    cg::thread_block_tile<16> half = cg::tiled_partition<16>(block);
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    float v = idx < n ? in[idx] : 0.0f;
    float h = tileSum<16>(half, v);  // sums of 16-lane halves
    float w = tileSum<32>(warp, v);
    // Consistency: the two half-warp sums add up to the warp sum.
    float otherHalf = warp.shfl(h, (warp.thread_rank() + 16) % 32);
    if (warp.thread_rank() == 0) {
        float both = h + otherHalf;
        partial[warp.meta_group_rank()] = (fabsf(both - w) <= 1e-3f * fabsf(w) + 1e-3f) ? w : nanf("");
    }
    block.sync();
    if (warp.meta_group_rank() == 0) {
        float p = warp.thread_rank() < warp.meta_group_size() ? partial[warp.thread_rank()] : 0.0f;
        p = cg::reduce(warp, p, cg::plus<float>());
        if (warp.thread_rank() == 0) out[blockIdx.x] = p;
    }
}

// cg::reduce with greater<> for the maximum of each 32-element tile.
__global__ void maxPerTile(const unsigned *in, unsigned *out, int n) {
    auto tile = cg::tiled_partition<32>(cg::this_thread_block());
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned v = idx < n ? in[idx] : 0u;
    unsigned m = cg::reduce(tile, v, cg::greater<unsigned>());
    if (tile.thread_rank() == 0) out[idx / 32] = m;
}

int main() {
    const int n = 1 << 15;
    int *hi = new int[n];
    float *hf = new float[n];
    unsigned *hu = new unsigned[n];
    srand(1234);
    long long refI = 0;
    for (int i = 0; i < n; ++i) {
        hi[i] = rand() % 1000 - 500;
        refI += hi[i];
        hf[i] = (float)rand() / RAND_MAX;
        hu[i] = (unsigned)rand();
    }
    int *di, *dsum;
    float *df, *dout;
    unsigned *du, *dmax;
    const int threads = 256, blocks = n / threads;
    checkCuda(cudaMalloc(&di, n * sizeof(int)));
    checkCuda(cudaMalloc(&dsum, sizeof(int)));
    checkCuda(cudaMalloc(&df, n * sizeof(float)));
    checkCuda(cudaMalloc(&dout, blocks * sizeof(float)));
    checkCuda(cudaMalloc(&du, n * sizeof(unsigned)));
    checkCuda(cudaMalloc(&dmax, n / 32 * sizeof(unsigned)));
    checkCuda(cudaMemcpy(di, hi, n * sizeof(int), cudaMemcpyHostToDevice));
    checkCuda(cudaMemcpy(df, hf, n * sizeof(float), cudaMemcpyHostToDevice));
    checkCuda(cudaMemcpy(du, hu, n * sizeof(unsigned), cudaMemcpyHostToDevice));
    checkCuda(cudaMemset(dsum, 0, sizeof(int)));

    sumKernelGroup<<<24, threads, threads * sizeof(int)>>>(di, dsum, n);
    checkCuda(cudaGetLastError());
    sumKernelTiles<<<blocks, threads>>>(df, dout, n);
    checkCuda(cudaGetLastError());
    maxPerTile<<<blocks, threads>>>(du, dmax, n);
    checkCuda(cudaGetLastError());
    checkCuda(cudaDeviceSynchronize());

    int gsum;
    float *hout = new float[blocks];
    unsigned *hmax = new unsigned[n / 32];
    checkCuda(cudaMemcpy(&gsum, dsum, sizeof(int), cudaMemcpyDeviceToHost));
    checkCuda(cudaMemcpy(hout, dout, blocks * sizeof(float), cudaMemcpyDeviceToHost));
    checkCuda(cudaMemcpy(hmax, dmax, n / 32 * sizeof(unsigned), cudaMemcpyDeviceToHost));
    bool ok = gsum == refI;
    printf("int sum: gpu %d cpu %lld\n", gsum, refI);
    int bad = 0;
    for (int b = 0; b < blocks; ++b) {
        double s = 0;
        for (int i = 0; i < threads; ++i) s += hf[b * threads + i];
        if (!(fabs(hout[b] - s) < 1e-3)) ++bad;
    }
    for (int t = 0; t < n / 32; ++t) {
        unsigned m = 0;
        for (int i = 0; i < 32; ++i) m = hu[t * 32 + i] > m ? hu[t * 32 + i] : m;
        if (hmax[t] != m) ++bad;
    }
    printf("tile mismatches: %d\n", bad);
    ok = ok && bad == 0;
    cudaFree(di); cudaFree(dsum); cudaFree(df); cudaFree(dout); cudaFree(du); cudaFree(dmax);
    delete[] hi; delete[] hf; delete[] hu; delete[] hout; delete[] hmax;
    printf("%s\n", ok ? "PASSED" : "FAILED");
    return ok ? 0 : 1;
}
