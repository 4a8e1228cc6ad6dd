// Register-resident bitonic sort: each thread holds ONE key in a register. Steps with stride j < 32 pair
// lanes of the same warp, so the partner's key arrives with __shfl_xor_sync and no memory traffic;
// 32 <= j < 1024 goes through shared memory (one write, barrier, one read); j >= 1024 uses global
// launches between tile kernels. Each thread keeps min or max of (own, partner) depending on whether
// it is the lower element and on the direction of the current k-sequence.
#define TILE 1024

__device__ __forceinline__ int keep(int mine, int other, int i, int j, int k) {
    bool ascending = (i & k) == 0;
    bool lower = (i & j) == 0;
    return (lower == ascending) ? min(mine, other) : max(mine, other);
}

// Runs steps j = jStart .. 1 of merge size k on a register key; the block covers keys [base, base+TILE).
__device__ int tile_steps(int v, int* s, int i, int k, int jStart) {
    for (int j = jStart; j > 0; j >>= 1) {
        int other;
        if (j >= 32) {
            s[threadIdx.x] = v;
            __syncthreads();
            other = s[threadIdx.x ^ j];
            __syncthreads();
        } else {
            other = __shfl_xor_sync(0xffffffffu, v, j);
        }
        v = keep(v, other, i, j, k);
    }
    return v;
}

__global__ void sort_tiles(int* keys) {
    __shared__ int s[TILE];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = keys[i];
    for (int k = 2; k <= (int)blockDim.x; k <<= 1) v = tile_steps(v, s, i, k, k >> 1);
    keys[i] = v;
}

__global__ void merge_tile(int* keys, int k) {
    __shared__ int s[TILE];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = tile_steps(keys[i], s, i, k, TILE >> 1);
    keys[i] = v;
}

__global__ void merge_global(int* keys, int n, int j, int k) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int partner = i ^ j;
    if (partner > i) {
        int a = keys[i], b = keys[partner];
        if ((a > b) == ((i & k) == 0)) { keys[i] = b; keys[partner] = a; }
    }
}

// Tiny inputs (fewer than 32 keys) cannot fill a warp for full-mask shuffles: sort them with one
// thread (at most 31 keys, insertion sort).
__global__ void sort_tiny(int* keys, int n) {
    for (int a = 1; a < n; ++a) {
        int v = keys[a];
        int b = a - 1;
        while (b >= 0 && keys[b] > v) { keys[b + 1] = keys[b]; --b; }
        keys[b + 1] = v;
    }
}

extern "C" void solve(int* keys, int n) {
    if (n < 2) return;
    if (n < 32) { sort_tiny<<<1, 1>>>(keys, n); return; }
    int tile = n < TILE ? n : TILE;
    sort_tiles<<<n / tile, tile>>>(keys);
    for (int k = 2 * TILE; k <= n; k <<= 1) {
        for (int j = k >> 1; j >= TILE; j >>= 1) {
            merge_global<<<(n + 255) / 256, 256>>>(keys, n, j, k);
        }
        merge_tile<<<n / TILE, TILE>>>(keys, k);
    }
}
