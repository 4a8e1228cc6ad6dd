// Mandelbrot escape-time image with integer iteration counts, 2D grid of 16x16 blocks, compared with
// the host: boundary pixels may legitimately differ by floating-point contraction, so a tiny fraction
// of mismatches is tolerated while the image checksum must be close.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define MAX_ITER 256
#define CUDA_CHECK(x)                                                                  \
    do {                                                                               \
        cudaError_t e = (x);                                                           \
        if (e != cudaSuccess) {                                                        \
            fprintf(stderr, "CUDA error: %s, line %d\n", cudaGetErrorString(e), __LINE__); \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

__device__ __host__ inline int mandelIter(float cr, float ci) {
    float zr = 0.f, zi = 0.f;
    int it = 0;
    while (it < MAX_ITER && zr * zr + zi * zi <= 4.0f) {
        float t = zr * zr - zi * zi + cr;
        zi = 2.0f * zr * zi + ci;
        zr = t;
        ++it;
    }
    return it;
}

__global__ void mandelbrotKernel(int *img, int w, int h, float x0, float y0, float dx, float dy) {
    int px = blockIdx.x * blockDim.x + threadIdx.x;
    int py = blockIdx.y * blockDim.y + threadIdx.y;
    if (px >= w || py >= h) return;
    img[py * w + px] = mandelIter(x0 + px * dx, y0 + py * dy);
}

int main() {
    const int w = 320, h = 240;
    const float x0 = -2.0f, y0 = -1.2f, dx = 3.0f / w, dy = 2.4f / h;
    int *img = (int *)malloc(w * h * sizeof(int));
    int *d_img;
    CUDA_CHECK(cudaMalloc(&d_img, w * h * sizeof(int)));
    dim3 block(16, 16);
    dim3 grid((w + block.x - 1) / block.x, (h + block.y - 1) / block.y);
    mandelbrotKernel<<<grid, block>>>(d_img, w, h, x0, y0, dx, dy);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaMemcpy(img, d_img, w * h * sizeof(int), cudaMemcpyDeviceToHost));
    long long sumGpu = 0, sumCpu = 0;
    int mismatches = 0, inside = 0;
    for (int py = 0; py < h; ++py)
        for (int px = 0; px < w; ++px) {
            int ref = mandelIter(x0 + px * dx, y0 + py * dy);
            int got = img[py * w + px];
            sumGpu += got;
            sumCpu += ref;
            if (ref != got) ++mismatches;
            if (ref == MAX_ITER) ++inside;
        }
    printf("checksum gpu %lld cpu %lld, mismatching pixels %d of %d, inside %d\n", sumGpu, sumCpu, mismatches, w * h,
           inside);
    bool ok = mismatches <= w * h / 200 && llabs(sumGpu - sumCpu) <= sumCpu / 100 && inside > 1000;
    // a coarse ASCII rendering, as such samples like to print
    for (int py = 0; py < h; py += 24) {
        for (int px = 0; px < w; px += 5) putchar(img[py * w + px] == MAX_ITER ? '#' : (img[py * w + px] > 8 ? '+' : '.'));
        putchar('\n');
    }
    cudaFree(d_img);
    free(img);
    printf("%s\n", ok ? "PASSED" : "FAILED");
    return ok ? 0 : 1;
}
