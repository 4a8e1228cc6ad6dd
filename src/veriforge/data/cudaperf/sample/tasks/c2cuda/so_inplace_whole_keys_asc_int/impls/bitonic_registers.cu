// Register-resident bitonic sort: each of 1024 threads holds one element. Partners closer than 32
// lanes arrive with __shfl_xor_sync (no memory traffic), 32..512 apart through shared memory, and for
// segments longer than 1024 the steps with j >= 1024 run as global launches between tile passes.
#define TILE 1024
#define BEFORE(ka, va, kb, vb) ((ka) < (kb))
#define OFF(i) (i)

// One compare-exchange of the bitonic network over global memory: element i and its partner i ^ j
// (same segment, since j < L); the lower index of each pair acts. (e & k) == 0 sorts the pair forward.
__global__ void step_global(int* wk, int* wv, long long total, int L, int ncols, int j, int k) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long p = i ^ j;
    if (i >= total || p <= i || p >= total) return;
    long long oa = OFF(i), ob = OFF(p);
    int ka = wk[oa], kb = wk[ob];
    int va = 0, vb = 0;
    bool forward = ((i & (L - 1)) & k) == 0;
    bool swap = forward ? BEFORE(kb, vb, ka, va) : BEFORE(ka, va, kb, vb);
    if (swap) { wk[oa] = kb; wk[ob] = ka; }
}

__global__ void sort_regs(int* wk, int* wv, long long total, int L, int ncols, int kmax,
                          int kfixed) {
    __shared__ int sk[TILE];
    long long i = (long long)blockIdx.x * TILE + threadIdx.x;
    bool live = i < total;          // dead threads still take part in every shuffle and barrier
    int e = (int)(i & (L - 1));
    int key = live ? wk[OFF(i)] : (int)0;
    int val = 0;
    int k0 = kfixed == 0 ? 2 : kfixed, k1 = kfixed == 0 ? kmax : kfixed;
    for (int k = k0; k <= k1; k <<= 1) {
        for (int j = (kfixed == 0 ? k : TILE) >> 1; j > 0; j >>= 1) {
            int ok;
            int ov = 0;
            if (j >= 32) {
                sk[threadIdx.x] = key;
                __syncthreads();
                ok = sk[threadIdx.x ^ j];
                __syncthreads();
            } else {
                ok = __shfl_xor_sync(0xffffffffu, key, j);
            }
            bool first = ((e & k) == 0) == ((e & j) == 0);   // this slot keeps the earlier of the pair
            bool take = first ? BEFORE(ok, ov, key, val) : BEFORE(key, val, ok, ov);
            if (take) { key = ok; val = ov; }
        }
    }
    if (live) {
        wk[OFF(i)] = key;
        (void)val;
    }
}

extern "C" void solve(int* keys, int n) {
    int S = 1, L = n;
    if (S <= 0 || L < 1) return;
    long long total = (long long)S * L;
    int ncols = 0;
    int* wk = keys;
    int* wv = nullptr;
    (void)wv;
    unsigned tiles = (unsigned)((total + TILE - 1) / TILE);
    int kmax = L < TILE ? L : TILE;
    sort_regs<<<tiles, TILE>>>(wk, wv, total, L, ncols, kmax, 0);
    for (int k = 2 * TILE; k <= L; k <<= 1) {
        for (int j = k >> 1; j >= TILE; j >>= 1)
            step_global<<<(unsigned)((total + 255) / 256), 256>>>(wk, wv, total, L, ncols, j, k);
        sort_regs<<<tiles, TILE>>>(wk, wv, total, L, ncols, kmax, k);
    }
}
