// Bitonic sort with 1024-element shared-memory tiles (512 threads, one compare-exchange each per
// step). Segments of up to 1024 elements are sorted completely by ONE launch; longer segments run the
// steps with j >= 1024 as global launches and finish every merge inside the tiles.
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

__device__ void tile_steps(int* sk, long long base, long long total, int L, int k,
                           int jstart) {
    for (int j = jstart; j > 0; j >>= 1) {
        int q = threadIdx.x;
        int lo = 2 * j * (q / j) + (q % j), hi = lo + j;
        if (base + hi < total) {
            int ka = sk[lo], kb = sk[hi];
            int va = 0, vb = 0;
            bool forward = (((base + lo) & (L - 1)) & k) == 0;
            bool swap = forward ? BEFORE(kb, vb, ka, va) : BEFORE(ka, va, kb, vb);
            if (swap) { sk[lo] = kb; sk[hi] = ka; }
        }
        __syncthreads();
    }
}

__global__ void sort_tile(int* wk, int* wv, long long total, int L, int ncols, int kmax,
                          int kfixed) {
    __shared__ int sk[TILE];
    long long base = (long long)blockIdx.x * TILE;
    for (int t = threadIdx.x; t < TILE; t += blockDim.x) {
        long long gi = base + t;
        if (gi < total) { sk[t] = wk[OFF(gi)]; }
    }
    __syncthreads();
    if (kfixed == 0) {
        for (int k = 2; k <= kmax; k <<= 1) tile_steps(sk, base, total, L, k, k >> 1);
    } else {
        tile_steps(sk, base, total, L, kfixed, TILE / 2);
    }
    for (int t = threadIdx.x; t < TILE; t += blockDim.x) {
        long long gi = base + t;
        if (gi < total) { wk[OFF(gi)] = sk[t]; }
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
    sort_tile<<<tiles, TILE / 2>>>(wk, wv, total, L, ncols, kmax, 0);
    for (int k = 2 * TILE; k <= L; k <<= 1) {
        for (int j = k >> 1; j >= TILE; j >>= 1)
            step_global<<<(unsigned)((total + 255) / 256), 256>>>(wk, wv, total, L, ncols, j, k);
        sort_tile<<<tiles, TILE / 2>>>(wk, wv, total, L, ncols, kmax, k);
    }
}
