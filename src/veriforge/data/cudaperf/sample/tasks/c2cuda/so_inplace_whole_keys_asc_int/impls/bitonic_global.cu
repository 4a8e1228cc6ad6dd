// Textbook bitonic sort of every segment at once: one launch per network step (k, j) over global
// memory, log2(L) * (log2(L) + 1) / 2 launches, each thread reading and writing global memory.
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

extern "C" void solve(int* keys, int n) {
    int S = 1, L = n;
    if (S <= 0 || L < 1) return;
    long long total = (long long)S * L;
    int ncols = 0;
    int* wk = keys;
    int* wv = nullptr;
    (void)wv;
    unsigned blocks = (unsigned)((total + 255) / 256);
    for (int k = 2; k <= L; k <<= 1)
        for (int j = k >> 1; j > 0; j >>= 1)
            step_global<<<blocks, 256>>>(wk, wv, total, L, ncols, j, k);
}
