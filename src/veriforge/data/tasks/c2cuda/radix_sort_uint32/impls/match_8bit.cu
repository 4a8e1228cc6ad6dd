// LSD radix sort with 8-bit digits: half the passes of a 4-bit sort (4 instead of 8), so half the global
// traffic. Inside a 256-key tile, __match_any_sync returns, for every lane, the mask of lanes in its warp
// holding the same digit in one instruction (a 256-way ballot loop would be far too slow), giving both
// the warp's per-digit counts (the group leader records them) and each key's rank among equal digits.
// Passes: per-block histograms into a digit-major table, one-block exclusive scan, stable scatter.
#define THREADS 256
#define WARPS (THREADS / 32)
#define RADIX 256
#define SCAN_THREADS 1024

__device__ __forceinline__ int tile_rank(unsigned key, bool valid, int shift, unsigned (*cnt)[RADIX], int* digit_out) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int e = threadIdx.x; e < WARPS * RADIX; e += THREADS) (&cnt[0][0])[e] = 0u;
    __syncthreads();
    int d = (int)((key >> shift) & (RADIX - 1));
    unsigned peers = __match_any_sync(0xffffffffu, valid ? d : RADIX);   // invalid lanes form their own group
    if (valid && lane == __ffs(peers) - 1) cnt[warp][d] = __popc(peers);
    __syncthreads();
    int rank = __popc(peers & ((1u << lane) - 1u));
    for (int w = 0; w < warp; ++w) rank += cnt[w][d];
    *digit_out = d;
    return rank;
}

__global__ void count_digits(const unsigned* __restrict__ src, unsigned* __restrict__ table, int n, int shift) {
    __shared__ unsigned cnt[WARPS][RADIX];
    int i = blockIdx.x * THREADS + threadIdx.x;
    bool valid = i < n;
    int d;
    tile_rank(valid ? src[i] : 0u, valid, shift, cnt, &d);
    unsigned total = 0;   // THREADS == RADIX: thread t owns digit t
    for (int w = 0; w < WARPS; ++w) total += cnt[w][threadIdx.x];
    table[threadIdx.x * gridDim.x + blockIdx.x] = total;
}

// One-block exclusive scan: serial per-thread chunks, Hillis-Steele over the chunk totals, rewrite.
__global__ void scan_table(unsigned* table, int len) {
    __shared__ unsigned sums[SCAN_THREADS];
    int t = threadIdx.x;
    int per = (len + SCAN_THREADS - 1) / SCAN_THREADS;
    int begin = min(t * per, len), end = min(begin + per, len);
    unsigned s = 0;
    for (int i = begin; i < end; ++i) s += table[i];
    sums[t] = s;
    __syncthreads();
    for (int off = 1; off < SCAN_THREADS; off <<= 1) {
        unsigned v = t >= off ? sums[t - off] : 0u;
        __syncthreads();
        sums[t] += v;
        __syncthreads();
    }
    unsigned run = t > 0 ? sums[t - 1] : 0u;
    for (int i = begin; i < end; ++i) {
        unsigned v = table[i];
        table[i] = run;
        run += v;
    }
}

__global__ void scatter_digits(const unsigned* __restrict__ src, unsigned* __restrict__ dst,
                               const unsigned* __restrict__ table, int n, int shift) {
    __shared__ unsigned cnt[WARPS][RADIX];
    int i = blockIdx.x * THREADS + threadIdx.x;
    bool valid = i < n;
    unsigned key = valid ? src[i] : 0u;
    int d;
    int rank = tile_rank(key, valid, shift, cnt, &d);
    if (valid) dst[table[d * gridDim.x + blockIdx.x] + rank] = key;
}

extern "C" void solve(const unsigned int* keys_in, unsigned int* keys_out, int n) {
    int blocks = (n + THREADS - 1) / THREADS;
    unsigned* tmp;
    unsigned* table;
    cudaMalloc((void**)&tmp, (size_t)n * sizeof(unsigned));
    cudaMalloc((void**)&table, (size_t)blocks * RADIX * sizeof(unsigned));
    // 4 passes: in -> tmp -> out -> tmp -> out (keys_in is never written).
    const unsigned* src = keys_in;
    for (int pass = 0; pass < 4; ++pass) {
        unsigned* dst = (pass & 1) ? keys_out : tmp;
        int shift = pass * 8;
        count_digits<<<blocks, THREADS>>>(src, table, n, shift);
        scan_table<<<1, SCAN_THREADS>>>(table, blocks * RADIX);
        scatter_digits<<<blocks, THREADS>>>(src, dst, table, n, shift);
        src = dst;
    }
    cudaFree(tmp);
    cudaFree(table);
}
