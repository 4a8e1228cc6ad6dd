// Jacobi-style 5-point stencil iterated several times with 2D shared-memory tiles that load halos,
// ping-pong buffers, fixed boundary values; plus a 3x3 box blur reading through __ldg.
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cuda_runtime.h>

#define BX 16
#define BY 16
#define CUDA_CHECK(c)                                                            \
    do {                                                                         \
        cudaError_t s = (c);                                                     \
        if (s != cudaSuccess) {                                                  \
            fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(s)); \
            exit(1);                                                             \
        }                                                                        \
    } while (0)

__global__ void jacobiStep(const float *__restrict__ in, float *__restrict__ out, int nx, int ny) {
    __shared__ float tile[BY + 2][BX + 2];
    int gx = blockIdx.x * BX + threadIdx.x;
    int gy = blockIdx.y * BY + threadIdx.y;
    int lx = threadIdx.x + 1, ly = threadIdx.y + 1;
    bool inside = gx < nx && gy < ny;
    if (inside) {
        tile[ly][lx] = in[gy * nx + gx];
        if (threadIdx.x == 0 && gx > 0) tile[ly][0] = in[gy * nx + gx - 1];
        if ((threadIdx.x == BX - 1 || gx == nx - 1) && gx < nx - 1) tile[ly][lx + 1] = in[gy * nx + gx + 1];
        if (threadIdx.y == 0 && gy > 0) tile[0][lx] = in[(gy - 1) * nx + gx];
        if ((threadIdx.y == BY - 1 || gy == ny - 1) && gy < ny - 1) tile[ly + 1][lx] = in[(gy + 1) * nx + gx];
    }
    __syncthreads();
    if (!inside) return;
    if (gx == 0 || gy == 0 || gx == nx - 1 || gy == ny - 1) {
        out[gy * nx + gx] = tile[ly][lx];  // Dirichlet boundary
    } else {
        out[gy * nx + gx] = 0.25f * (tile[ly][lx - 1] + tile[ly][lx + 1] + tile[ly - 1][lx] + tile[ly + 1][lx]);
    }
}

__global__ void boxBlur3x3(const float *in, float *out, int nx, int ny) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= nx || y >= ny) return;
    float s = 0.0f;
    int cnt = 0;
    for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx) {
            int xx = x + dx, yy = y + dy;
            if (xx >= 0 && xx < nx && yy >= 0 && yy < ny) {
                s += __ldg(&in[yy * nx + xx]);
                ++cnt;
            }
        }
    out[y * nx + x] = s / cnt;
}

int main() {
    const int nx = 70, ny = 45, iters = 20;
    const size_t bytes = nx * ny * sizeof(float);
    float *h = (float *)malloc(bytes), *ref = (float *)malloc(bytes), *tmp = (float *)malloc(bytes);
    float *res = (float *)malloc(bytes);
    srand(4);
    for (int i = 0; i < nx * ny; ++i) h[i] = (float)rand() / RAND_MAX * 10.0f;
    // host reference
    for (int i = 0; i < nx * ny; ++i) ref[i] = h[i];
    for (int it = 0; it < iters; ++it) {
        for (int y = 0; y < ny; ++y)
            for (int x = 0; x < nx; ++x) {
                if (x == 0 || y == 0 || x == nx - 1 || y == ny - 1)
                    tmp[y * nx + x] = ref[y * nx + x];
                else
                    tmp[y * nx + x] = 0.25f * (ref[y * nx + x - 1] + ref[y * nx + x + 1] + ref[(y - 1) * nx + x] +
                                               ref[(y + 1) * nx + x]);
            }
        float *t = ref; ref = tmp; tmp = t;
    }
    float *d_a, *d_b;
    CUDA_CHECK(cudaMalloc(&d_a, bytes));
    CUDA_CHECK(cudaMalloc(&d_b, bytes));
    CUDA_CHECK(cudaMemcpy(d_a, h, bytes, cudaMemcpyHostToDevice));
    dim3 block(BX, BY), grid((nx + BX - 1) / BX, (ny + BY - 1) / BY);
    for (int it = 0; it < iters; ++it) {
        jacobiStep<<<grid, block>>>(d_a, d_b, nx, ny);
        float *t = d_a; d_a = d_b; d_b = t;
    }
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaMemcpy(res, d_a, bytes, cudaMemcpyDeviceToHost));
    double maxErr = 0;
    for (int i = 0; i < nx * ny; ++i) maxErr = fmax(maxErr, fabs(res[i] - ref[i]));
    printf("jacobi max error %.3e\n", maxErr);
    bool ok = maxErr < 1e-4;
    // blur
    boxBlur3x3<<<dim3((nx + 7) / 8, (ny + 7) / 8), dim3(8, 8)>>>(d_a, d_b, nx, ny);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaMemcpy(h, d_b, bytes, cudaMemcpyDeviceToHost));
    double blurErr = 0;
    for (int y = 0; y < ny; ++y)
        for (int x = 0; x < nx; ++x) {
            double s = 0;
            int c = 0;
            for (int dy = -1; dy <= 1; ++dy)
                for (int dx = -1; dx <= 1; ++dx)
                    if (x + dx >= 0 && x + dx < nx && y + dy >= 0 && y + dy < ny) {
                        s += res[(y + dy) * nx + x + dx];
                        ++c;
                    }
            blurErr = fmax(blurErr, fabs(h[y * nx + x] - s / c));
        }
    printf("blur max error %.3e\n", blurErr);
    ok = ok && blurErr < 1e-4;
    cudaFree(d_a); cudaFree(d_b);
    free(h); free(ref); free(tmp); free(res);
    printf("%s\n", ok ? "PASSED" : "FAILED");
    return ok ? 0 : 1;
}
