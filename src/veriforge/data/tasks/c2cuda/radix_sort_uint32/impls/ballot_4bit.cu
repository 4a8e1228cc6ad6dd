// LSD radix sort with 4-bit digits (8 passes). Each pass, for tiles of 256 keys (one per thread):
//  1. count: each warp learns, with 16 __ballot_sync calls, which lanes hold each digit; per-warp digit
//     counts go to shared memory and the block's 16 counts to a digit-major table
//     table[digit * numBlocks + block];
//  2. scan: one block turns the table into exclusive offsets (digit-major order makes the offset of
//     (digit, block) = keys with a smaller digit anywhere + same digit in earlier blocks: stability);
//  3. scatter: the ballots are recomputed, and each key's rank inside its tile (earlier warps' counts +
//     lanes below it in its own warp with the same digit) is added to its (digit, block) offset.
#define THREADS 256
#define WARPS (THREADS / 32)
#define RADIX 16
#define SCAN_THREADS 1024

__device__ __forceinline__ int tile_rank(unsigned key, bool valid, int shift, unsigned (*cnt)[RADIX],
                                         int* digit_out) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int d = (int)((key >> shift) & (RADIX - 1));
    unsigned mine = 0;
#pragma unroll
    for (int b = 0; b < RADIX; ++b) {
        unsigned m = __ballot_sync(0xffffffffu, valid && d == b);
        if (lane == b) cnt[warp][b] = __popc(m);
        if (d == b) mine = m;
    }
    __syncthreads();
    int rank = __popc(mine & ((1u << lane) - 1u));
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
    if (threadIdx.x < RADIX) {
        unsigned total = 0;
        for (int w = 0; w < WARPS; ++w) total += cnt[w][threadIdx.x];
        table[threadIdx.x * gridDim.x + blockIdx.x] = total;
    }
}

// Exclusive scan of `len` counts by one block: each thread scans a contiguous chunk serially, the chunk
// totals are scanned in shared memory (Hillis-Steele), then each chunk is rewritten with its offset.
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
    // 8 passes: in -> tmp -> out -> tmp -> ... -> out (keys_in is never written).
    const unsigned* src = keys_in;
    for (int pass = 0; pass < 8; ++pass) {
        unsigned* dst = (pass & 1) ? keys_out : tmp;
        int shift = pass * 4;
        count_digits<<<blocks, THREADS>>>(src, table, n, shift);
        scan_table<<<1, SCAN_THREADS>>>(table, blocks * RADIX);
        scatter_digits<<<blocks, THREADS>>>(src, dst, table, n, shift);
        src = dst;
    }
    cudaFree(tmp);
    cudaFree(table);
}
