#include <cuda_runtime.h>

__global__ void conv3x3_naive(const float* img, const float* filt, float* out, int h, int w) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r >= h || c >= w) return;
    float s = 0.0f;
    for (int dr = -1; dr <= 1; ++dr) {
        for (int dc = -1; dc <= 1; ++dc) {
            int rr = r + dr, cc = c + dc;
            if (rr >= 0 && rr < h && cc >= 0 && cc < w) {
                s += filt[(dr + 1) * 3 + (dc + 1)] * img[rr * w + cc];
            }
        }
    }
    out[r * w + c] = s;
}

extern "C" void solve(const float* img, const float* filt, float* out, int h, int w) {
    dim3 block(16, 16);
    dim3 grid((w + 15) / 16, (h + 15) / 16);
    conv3x3_naive<<<grid, block>>>(img, filt, out, h, w);
}
