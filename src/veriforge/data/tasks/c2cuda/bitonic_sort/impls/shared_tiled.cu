// Bitonic sort with shared-memory tiles of T = 1024 keys (512 threads, one compare-exchange each per
// step). Phase 1 sorts each tile for all k <= T in one launch. For each larger k, the steps with
// j >= T touch keys in different tiles and run as global launches; the remaining j < T steps stay
// inside a tile and are done by a single shared-memory launch. Launches drop from O(log^2 n) to
// O(log^2 (n / T)), and most steps hit shared memory.
#define TILE 1024

__device__ __forceinline__ void cmp_swap(int* s, int lo, int hi, bool ascending) {
    int a = s[lo], b = s[hi];
    if ((a > b) == ascending) { s[lo] = b; s[hi] = a; }
}

// Pair index p (0 .. tile/2 - 1) for stride j maps to the lower element lo = 2j*(p/j) + p%j.
__global__ void sort_tiles(int* keys, int tile) {
    __shared__ int s[TILE];
    int base = blockIdx.x * tile;
    for (int t = threadIdx.x; t < tile; t += blockDim.x) s[t] = keys[base + t];
    __syncthreads();
    for (int k = 2; k <= tile; k <<= 1) {
        for (int j = k >> 1; j > 0; j >>= 1) {
            int p = threadIdx.x;
            int lo = 2 * j * (p / j) + (p % j);
            cmp_swap(s, lo, lo + j, ((base + lo) & k) == 0);
            __syncthreads();
        }
    }
    for (int t = threadIdx.x; t < tile; t += blockDim.x) keys[base + t] = s[t];
}

__global__ void merge_global(int* keys, int n, int j, int k) {
    int p = blockIdx.x * blockDim.x + threadIdx.x;   // pair index, n/2 pairs
    if (p >= n / 2) return;
    int lo = 2 * j * (p / j) + (p % j);
    int hi = lo + j;
    int a = keys[lo], b = keys[hi];
    if ((a > b) == ((lo & k) == 0)) { keys[lo] = b; keys[hi] = a; }
}

__global__ void merge_tile(int* keys, int k) {
    __shared__ int s[TILE];
    int base = blockIdx.x * TILE;
    for (int t = threadIdx.x; t < TILE; t += blockDim.x) s[t] = keys[base + t];
    __syncthreads();
    for (int j = TILE / 2; j > 0; j >>= 1) {
        int p = threadIdx.x;
        int lo = 2 * j * (p / j) + (p % j);
        cmp_swap(s, lo, lo + j, ((base + lo) & k) == 0);
        __syncthreads();
    }
    for (int t = threadIdx.x; t < TILE; t += blockDim.x) keys[base + t] = s[t];
}

extern "C" void solve(int* keys, int n) {
    if (n < 2) return;
    int tile = n < TILE ? n : TILE;
    sort_tiles<<<n / tile, tile / 2>>>(keys, tile);
    for (int k = 2 * TILE; k <= n; k <<= 1) {
        for (int j = k >> 1; j >= TILE; j >>= 1) {
            merge_global<<<(n / 2 + 255) / 256, 256>>>(keys, n, j, k);
        }
        merge_tile<<<n / TILE, TILE / 2>>>(keys, k);
    }
}
