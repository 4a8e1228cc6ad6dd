// Warp-aggregated atomics: __match_any_sync groups the lanes of a warp that target the same bin; the
// group's values are summed with a shuffle tree inside the group (lanes gather from their group peers),
// and only the group's lowest lane issues the global atomicAdd. With hot bins this cuts atomics up to
// 32x. Every lane stays in the loop until the warp is done so the full-mask intrinsics are legal.
__global__ void scatter_add_warp_agg(const float* __restrict__ src, const int* __restrict__ idx,
                                     float* __restrict__ out, int n) {
    const int lane = threadIdx.x & 31;
    const int warpBase = (blockIdx.x * blockDim.x + threadIdx.x) - lane;
    const int warpStride = gridDim.x * blockDim.x;
    for (int base = warpBase; base < n; base += warpStride) {   // base is warp-uniform
        int i = base + lane;
        bool active = i < n;
        int key = active ? __ldg(&idx[i]) : -1;
        float v = active ? __ldg(&src[i]) : 0.0f;
        unsigned peers = __match_any_sync(0xffffffffu, key);
        int leader = __ffs(peers) - 1;
        // Tree reduction over the group's ranks: at step d, the lane of rank r (r a multiple of 2d) adds
        // the partial sum held by the group's rank r + d lane, which it locates by skipping d set bits of
        // the peer mask above itself. After log2(32) steps the leader (rank 0) holds the group total.
        int rank = __popc(peers & ((1u << lane) - 1u));
        int count = __popc(peers);
        unsigned above = (lane == 31) ? 0u : (peers & (0xffffffffu << (lane + 1)));
        float sum = v;
        for (int d = 1; d < 32; d <<= 1) {
            unsigned m = above;
            int src_lane = lane;
            for (int s = 0; s < d && m; ++s) {
                src_lane = __ffs(m) - 1;
                m &= m - 1;
            }
            bool take = (rank + d < count) && ((rank & (2 * d - 1)) == 0);
            float other = __shfl_sync(0xffffffffu, sum, src_lane);   // every lane shuffles: full mask
            if (take) sum += other;
        }
        if (active && lane == leader) atomicAdd(&out[key], sum);
    }
}

extern "C" void solve(const float* src, const int* idx, float* out, int n, int n_out) {
    cudaMemset(out, 0, (size_t)n_out * sizeof(float));
    int blocks = (n + 255) / 256;
    if (blocks > 1024) blocks = 1024;
    if (blocks < 1) blocks = 1;
    scatter_add_warp_agg<<<blocks, 256>>>(src, idx, out, n);
}
