#include <cuda_runtime.h>

#define T 16

__global__ void conv3x3_shared(const float* __restrict__ img, const float* __restrict__ filt,
                               float* __restrict__ out, int h, int w) {
    __shared__ float tile[T + 2][T + 2];
    __shared__ float f[9];
    int tx = threadIdx.x, ty = threadIdx.y;
    int r0 = blockIdx.y * T - 1, c0 = blockIdx.x * T - 1;
    for (int k = ty * T + tx; k < (T + 2) * (T + 2); k += T * T) {
        int lr = k / (T + 2), lc = k % (T + 2);
        int gr = r0 + lr, gc = c0 + lc;
        tile[lr][lc] = (gr >= 0 && gr < h && gc >= 0 && gc < w) ? img[gr * w + gc] : 0.0f;
    }
    if (ty == 0 && tx < 9) f[tx] = filt[tx];
    __syncthreads();
    int r = blockIdx.y * T + ty, c = blockIdx.x * T + tx;
    if (r >= h || c >= w) return;
    float s = 0.0f;
#pragma unroll
    for (int dr = 0; dr < 3; ++dr) {
#pragma unroll
        for (int dc = 0; dc < 3; ++dc) s += f[dr * 3 + dc] * tile[ty + dr][tx + dc];
    }
    out[r * w + c] = s;
}

extern "C" void solve(const float* img, const float* filt, float* out, int h, int w) {
    dim3 block(T, T);
    dim3 grid((w + T - 1) / T, (h + T - 1) / T);
    conv3x3_shared<<<grid, block>>>(img, filt, out, h, w);
}
