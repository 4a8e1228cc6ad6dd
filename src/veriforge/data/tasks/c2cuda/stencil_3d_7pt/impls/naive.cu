// 8x8x8 blocks, one thread per grid point, all seven values read straight from global memory. Each
// input value is fetched by up to seven different threads; the caches absorb some of that, but the
// 8-wide x extent also means a warp touches four different rows per load.
#define B 8

__global__ void stencil7_naive(const float* in, float* out, int nx, int ny, int nz, float c0, float c1) {
    int x = blockIdx.x * B + threadIdx.x;
    int y = blockIdx.y * B + threadIdx.y;
    int z = blockIdx.z * B + threadIdx.z;
    if (x >= nx || y >= ny || z >= nz) return;
    int plane = nx * ny;
    int i = z * plane + y * nx + x;
    if (x == 0 || x == nx - 1 || y == 0 || y == ny - 1 || z == 0 || z == nz - 1) {
        out[i] = in[i];
        return;
    }
    float s = in[i - 1] + in[i + 1] + in[i - nx] + in[i + nx] + in[i - plane] + in[i + plane];
    out[i] = c0 * in[i] + c1 * s;
}

extern "C" void solve(const float* in, float* out, int nx, int ny, int nz, float c0, float c1) {
    dim3 block(B, B, B);
    dim3 grid((nx + B - 1) / B, (ny + B - 1) / B, (nz + B - 1) / B);
    stencil7_naive<<<grid, block>>>(in, out, nx, ny, nz, c0, c1);
}
