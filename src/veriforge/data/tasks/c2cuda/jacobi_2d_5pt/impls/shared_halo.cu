#include <cuda_runtime.h>

#define BX 32
#define BY 8

__global__ void jacobi_shared(const float* __restrict__ in, float* __restrict__ out, int ny, int nx) {
    __shared__ float tile[BY + 2][BX + 2 + 1];   // +1 column of padding
    int c0 = blockIdx.x * BX - 1;                // global column of tile[.][0]
    int r0 = blockIdx.y * BY - 1;                // global row of tile[0][.]
    // Cooperative load of the (BY+2) x (BX+2) tile including the halo.
    for (int k = threadIdx.y * BX + threadIdx.x; k < (BY + 2) * (BX + 2); k += BX * BY) {
        int tr = k / (BX + 2), tc = k % (BX + 2);
        int gr = r0 + tr, gc = c0 + tc;
        tile[tr][tc] = (gr >= 0 && gr < ny && gc >= 0 && gc < nx) ? in[gr * nx + gc] : 0.0f;
    }
    __syncthreads();
    int c = blockIdx.x * BX + threadIdx.x;
    int r = blockIdx.y * BY + threadIdx.y;
    if (r >= ny || c >= nx) return;
    int tr = threadIdx.y + 1, tc = threadIdx.x + 1;
    float v;
    if (r == 0 || r == ny - 1 || c == 0 || c == nx - 1) {
        v = tile[tr][tc];
    } else {
        v = 0.25f * (tile[tr - 1][tc] + tile[tr + 1][tc] + tile[tr][tc - 1] + tile[tr][tc + 1]);
    }
    out[r * nx + c] = v;
}

extern "C" void solve(const float* in, float* out, int ny, int nx) {
    dim3 block(BX, BY);
    dim3 grid((nx + BX - 1) / BX, (ny + BY - 1) / BY);
    jacobi_shared<<<grid, block>>>(in, out, ny, nx);
}
