// 2.5D blocking: a 32x8 block owns an x/y tile and marches through ZCHUNK consecutive z planes. The
// z-1 / z / z+1 values of its own column live in registers and rotate as the block advances, so each
// input value is loaded from global memory once per plane (plus the thin halos) instead of up to
// seven times; the current plane is also written to shared memory (with halo) for the in-plane
// neighbours. Chunking z keeps enough blocks in flight for small x/y extents.
#define BX 32
#define BY 8
#define ZCHUNK 16

__global__ void stencil7_zstream(const float* __restrict__ in, float* __restrict__ out, int nx, int ny, int nz,
                                 float c0, float c1) {
    __shared__ float tile[BY + 2][BX + 2];
    int x = blockIdx.x * BX + threadIdx.x;
    int y = blockIdx.y * BY + threadIdx.y;
    int z_begin = blockIdx.z * ZCHUNK;
    int z_end = min(z_begin + ZCHUNK, nz);
    int tx = threadIdx.x + 1, ty = threadIdx.y + 1;
    size_t plane = (size_t)nx * ny;
    bool inside = x < nx && y < ny;
    size_t col = (size_t)y * nx + x;
    bool x_boundary = x == 0 || x == nx - 1 || y == 0 || y == ny - 1;

    float below = (inside && z_begin > 0) ? __ldg(&in[(z_begin - 1) * plane + col]) : 0.0f;
    float centre = inside ? __ldg(&in[z_begin * plane + col]) : 0.0f;
    for (int z = z_begin; z < z_end; ++z) {
        size_t i = z * plane + col;
        float above = (inside && z + 1 < nz) ? __ldg(&in[i + plane]) : 0.0f;
        __syncthreads();   // everyone finished reading the previous plane's tile
        if (inside) {
            tile[ty][tx] = centre;
            if (threadIdx.x == 0 && x > 0) tile[ty][0] = __ldg(&in[i - 1]);
            if (threadIdx.x == BX - 1 && x + 1 < nx) tile[ty][BX + 1] = __ldg(&in[i + 1]);
            if (threadIdx.y == 0 && y > 0) tile[0][tx] = __ldg(&in[i - nx]);
            if (threadIdx.y == BY - 1 && y + 1 < ny) tile[BY + 1][tx] = __ldg(&in[i + nx]);
        }
        __syncthreads();
        if (inside) {
            if (x_boundary || z == 0 || z == nz - 1) {
                out[i] = centre;
            } else {
                float s = (tile[ty][tx - 1] + tile[ty][tx + 1]) + (tile[ty - 1][tx] + tile[ty + 1][tx])
                        + (below + above);
                out[i] = fmaf(c0, centre, c1 * s);
            }
        }
        below = centre;
        centre = above;
    }
}

extern "C" void solve(const float* in, float* out, int nx, int ny, int nz, float c0, float c1) {
    dim3 block(BX, BY);
    dim3 grid((nx + BX - 1) / BX, (ny + BY - 1) / BY, (nz + ZCHUNK - 1) / ZCHUNK);
    stencil7_zstream<<<grid, block>>>(in, out, nx, ny, nz, c0, c1);
}
