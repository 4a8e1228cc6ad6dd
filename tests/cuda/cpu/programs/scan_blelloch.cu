// Work-efficient (Blelloch) exclusive scan with bank-conflict-avoiding padding, for arrays larger
// than one block: scan blocks, scan the block sums recursively, add the offsets back (3 kernels).
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#define CUDA_CHECK(ans) { gpuAssert((ans), __FILE__, __LINE__); }
inline void gpuAssert(cudaError_t code, const char *file, int line) {
    if (code != cudaSuccess) {
        fprintf(stderr, "GPUassert: %s %s %d\n", cudaGetErrorString(code), file, line);
        exit(code);
    }
}

#define NUM_BANKS 32
#define LOG_NUM_BANKS 5
#define CONFLICT_FREE_OFFSET(n) ((n) >> LOG_NUM_BANKS)
#define BLOCK_THREADS 128
#define ELEMS_PER_BLOCK (2 * BLOCK_THREADS)

__global__ void prescanBlocks(const unsigned *g_idata, unsigned *g_odata, unsigned *blockSums, int n) {
    __shared__ unsigned temp[ELEMS_PER_BLOCK + ELEMS_PER_BLOCK / NUM_BANKS];
    int thid = threadIdx.x;
    int base = blockIdx.x * ELEMS_PER_BLOCK;
    int ai = thid, bi = thid + BLOCK_THREADS;
    int bankOffsetA = CONFLICT_FREE_OFFSET(ai);
    int bankOffsetB = CONFLICT_FREE_OFFSET(bi);
    temp[ai + bankOffsetA] = base + ai < n ? g_idata[base + ai] : 0u;
    temp[bi + bankOffsetB] = base + bi < n ? g_idata[base + bi] : 0u;
    int offset = 1;
    for (int d = ELEMS_PER_BLOCK >> 1; d > 0; d >>= 1) {  // up-sweep
        __syncthreads();
        if (thid < d) {
            int a = offset * (2 * thid + 1) - 1;
            int b = offset * (2 * thid + 2) - 1;
            a += CONFLICT_FREE_OFFSET(a);
            b += CONFLICT_FREE_OFFSET(b);
            temp[b] += temp[a];
        }
        offset *= 2;
    }
    if (thid == 0) {
        int last = ELEMS_PER_BLOCK - 1 + CONFLICT_FREE_OFFSET(ELEMS_PER_BLOCK - 1);
        if (blockSums) blockSums[blockIdx.x] = temp[last];
        temp[last] = 0;
    }
    for (int d = 1; d < ELEMS_PER_BLOCK; d *= 2) {  // down-sweep
        offset >>= 1;
        __syncthreads();
        if (thid < d) {
            int a = offset * (2 * thid + 1) - 1;
            int b = offset * (2 * thid + 2) - 1;
            a += CONFLICT_FREE_OFFSET(a);
            b += CONFLICT_FREE_OFFSET(b);
            unsigned t = temp[a];
            temp[a] = temp[b];
            temp[b] += t;
        }
    }
    __syncthreads();
    if (base + ai < n) g_odata[base + ai] = temp[ai + bankOffsetA];
    if (base + bi < n) g_odata[base + bi] = temp[bi + bankOffsetB];
}

__global__ void addBlockOffsets(unsigned *data, const unsigned *offsets, int n) {
    unsigned add = offsets[blockIdx.x];
    int i = blockIdx.x * ELEMS_PER_BLOCK + threadIdx.x;
    if (i < n) data[i] += add;
    if (i + BLOCK_THREADS < n) data[i + BLOCK_THREADS] += add;
}

static void scanDevice(const unsigned *d_in, unsigned *d_out, int n) {
    int blocks = (n + ELEMS_PER_BLOCK - 1) / ELEMS_PER_BLOCK;
    if (blocks == 1) {
        prescanBlocks<<<1, BLOCK_THREADS>>>(d_in, d_out, nullptr, n);
        CUDA_CHECK(cudaGetLastError());
        return;
    }
    unsigned *d_sums, *d_sumsScanned;
    CUDA_CHECK(cudaMalloc(&d_sums, blocks * sizeof(unsigned)));
    CUDA_CHECK(cudaMalloc(&d_sumsScanned, blocks * sizeof(unsigned)));
    prescanBlocks<<<blocks, BLOCK_THREADS>>>(d_in, d_out, d_sums, n);
    CUDA_CHECK(cudaGetLastError());
    scanDevice(d_sums, d_sumsScanned, blocks);
    addBlockOffsets<<<blocks, BLOCK_THREADS>>>(d_out, d_sumsScanned, n);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaFree(d_sums));
    CUDA_CHECK(cudaFree(d_sumsScanned));
}

int main() {
    bool ok = true;
    srand(17);
    for (int n : {200, 256, 70001}) {
        std::vector<unsigned> h(n), out(n);
        for (auto &v : h) v = rand() % 1000;
        unsigned *d_in, *d_out;
        CUDA_CHECK(cudaMalloc(&d_in, n * sizeof(unsigned)));
        CUDA_CHECK(cudaMalloc(&d_out, n * sizeof(unsigned)));
        CUDA_CHECK(cudaMemcpy(d_in, h.data(), n * sizeof(unsigned), cudaMemcpyHostToDevice));
        scanDevice(d_in, d_out, n);
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(out.data(), d_out, n * sizeof(unsigned), cudaMemcpyDeviceToHost));
        unsigned acc = 0;
        int bad = 0;
        for (int i = 0; i < n; ++i) {
            if (out[i] != acc) ++bad;
            acc += h[i];
        }
        printf("n=%d mismatches=%d last=%u\n", n, bad, out[n - 1]);
        ok = ok && bad == 0;
        cudaFree(d_in);
        cudaFree(d_out);
    }
    printf("%s\n", ok ? "PASSED" : "FAILED");
    return ok ? 0 : 1;
}
