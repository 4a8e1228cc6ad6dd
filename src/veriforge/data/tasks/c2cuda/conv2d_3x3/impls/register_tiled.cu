#include <cuda_runtime.h>

#define BX 32
#define BY 8
#define RPT 4                  // output rows per thread
#define TH (BY * RPT)          // output tile height (32)

__constant__ float c_f[9];

// A 32x8 block computes a 32x32 output tile. Each thread keeps a 6x3 input window in registers and
// produces 4 vertically adjacent outputs, so each loaded value is reused by up to 3 outputs.
__global__ void conv3x3_register(const float* __restrict__ img, float* __restrict__ out, int h, int w) {
    __shared__ float tile[TH + 2][BX + 2 + 1];
    int tx = threadIdx.x, ty = threadIdx.y;
    int r0 = blockIdx.y * TH - 1, c0 = blockIdx.x * BX - 1;
    for (int k = ty * BX + tx; k < (TH + 2) * (BX + 2); k += BX * BY) {
        int lr = k / (BX + 2), lc = k % (BX + 2);
        int gr = r0 + lr, gc = c0 + lc;
        tile[lr][lc] = (gr >= 0 && gr < h && gc >= 0 && gc < w) ? __ldg(img + gr * w + gc) : 0.0f;
    }
    __syncthreads();
    float win[RPT + 2][3];
#pragma unroll
    for (int i = 0; i < RPT + 2; ++i) {
#pragma unroll
        for (int j = 0; j < 3; ++j) win[i][j] = tile[ty * RPT + i][tx + j];
    }
    int c = blockIdx.x * BX + tx;
#pragma unroll
    for (int o = 0; o < RPT; ++o) {
        float s = 0.0f;
#pragma unroll
        for (int dr = 0; dr < 3; ++dr) {
#pragma unroll
            for (int dc = 0; dc < 3; ++dc) s = fmaf(c_f[dr * 3 + dc], win[o + dr][dc], s);
        }
        int r = blockIdx.y * TH + ty * RPT + o;
        if (r < h && c < w) out[r * w + c] = s;
    }
}

extern "C" void solve(const float* img, const float* filt, float* out, int h, int w) {
    cudaMemcpyToSymbol(c_f, filt, 9 * sizeof(float), 0, cudaMemcpyDeviceToDevice);
    dim3 block(BX, BY);
    dim3 grid((w + BX - 1) / BX, (h + TH - 1) / TH);
    conv3x3_register<<<grid, block>>>(img, out, h, w);
}
