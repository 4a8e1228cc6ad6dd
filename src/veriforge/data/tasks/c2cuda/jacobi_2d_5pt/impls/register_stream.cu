#include <cuda_runtime.h>

#define THREADS 128
#define ROWS 16

// A thread owns one column of a ROWS-tall strip and walks down it: the vertical neighbours rotate
// through registers (up <- centre <- down), so each point of `in` is loaded about once vertically;
// the horizontal neighbours are adjacent lanes' centres and hit L1.
__global__ void jacobi_stream(const float* __restrict__ in, float* __restrict__ out, int ny, int nx) {
    int c = blockIdx.x * THREADS + threadIdx.x;
    if (c >= nx) return;
    int r0 = blockIdx.y * ROWS;
    int r1 = min(r0 + ROWS, ny);
    bool edge_col = (c == 0 || c == nx - 1);
    float up = r0 > 0 ? __ldg(in + (r0 - 1) * nx + c) : 0.0f;
    float centre = __ldg(in + r0 * nx + c);
    for (int r = r0; r < r1; ++r) {
        float down = r + 1 < ny ? __ldg(in + (r + 1) * nx + c) : 0.0f;
        float v;
        if (edge_col || r == 0 || r == ny - 1) {
            v = centre;
        } else {
            float left = __ldg(in + r * nx + c - 1);
            float right = __ldg(in + r * nx + c + 1);
            v = 0.25f * ((up + down) + (left + right));
        }
        out[r * nx + c] = v;
        up = centre;
        centre = down;
    }
}

extern "C" void solve(const float* in, float* out, int ny, int nx) {
    dim3 grid((nx + THREADS - 1) / THREADS, (ny + ROWS - 1) / ROWS);
    jacobi_stream<<<grid, THREADS>>>(in, out, ny, nx);
}
