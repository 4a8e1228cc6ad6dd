// One block per 32x8 tile of one z plane. The tile plus a one-point x/y halo is staged in shared memory,
// so the four in-plane neighbours come from shared memory and each in-plane value is read from global
// memory about once; the two out-of-plane neighbours are still separate global loads. threadIdx.x runs
// along x, so every warp load is a contiguous 128-byte row segment.
#define BX 32
#define BY 8

__global__ void stencil7_shared(const float* __restrict__ in, float* __restrict__ out, int nx, int ny, int nz,
                                float c0, float c1) {
    __shared__ float tile[BY + 2][BX + 2];
    int x = blockIdx.x * BX + threadIdx.x;
    int y = blockIdx.y * BY + threadIdx.y;
    int z = blockIdx.z;
    int tx = threadIdx.x + 1, ty = threadIdx.y + 1;
    size_t plane = (size_t)nx * ny;
    bool inside = x < nx && y < ny;
    size_t i = z * plane + (size_t)y * nx + x;

    // No early return: every thread must reach the barrier. Out-of-grid slots are never read.
    if (inside) {
        tile[ty][tx] = in[i];
        if (threadIdx.x == 0 && x > 0) tile[ty][0] = in[i - 1];
        if (threadIdx.x == BX - 1 && x + 1 < nx) tile[ty][BX + 1] = in[i + 1];
        if (threadIdx.y == 0 && y > 0) tile[0][tx] = in[i - nx];
        if (threadIdx.y == BY - 1 && y + 1 < ny) tile[BY + 1][tx] = in[i + nx];
    }
    __syncthreads();
    if (!inside) return;
    float centre = tile[ty][tx];
    if (x == 0 || x == nx - 1 || y == 0 || y == ny - 1 || z == 0 || z == nz - 1) {
        out[i] = centre;
        return;
    }
    float s = tile[ty][tx - 1] + tile[ty][tx + 1] + tile[ty - 1][tx] + tile[ty + 1][tx]
            + in[i - plane] + in[i + plane];
    out[i] = fmaf(c0, centre, c1 * s);
}

extern "C" void solve(const float* in, float* out, int nx, int ny, int nz, float c0, float c1) {
    dim3 block(BX, BY);
    dim3 grid((nx + BX - 1) / BX, (ny + BY - 1) / BY, nz);
    stencil7_shared<<<grid, block>>>(in, out, nx, ny, nz, c0, c1);
}
