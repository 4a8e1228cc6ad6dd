// 2D pitched allocations: cudaMallocPitch, cudaMemcpy2D in both directions, a kernel that walks rows
// through the pitch with char* arithmetic, and cudaMemset2D for a border.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CUDA_CHECK(x)                                                                 \
    do {                                                                              \
        cudaError_t e = (x);                                                          \
        if (e != cudaSuccess) {                                                       \
            fprintf(stderr, "CUDA error %s at line %d\n", cudaGetErrorString(e), __LINE__); \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

__global__ void rowTimesCol(float *devPtr, size_t pitch, int width, int height) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < height && c < width) {
        float *row = (float *)((char *)devPtr + r * pitch);
        row[c] = row[c] * 2.0f + (float)(r * width + c);
    }
}

int main() {
    const int width = 77, height = 33;
    float *h = (float *)malloc(width * height * sizeof(float)), *out = (float *)malloc(width * height * sizeof(float));
    srand(12);
    for (int i = 0; i < width * height; ++i) h[i] = (float)(rand() % 1000);
    float *d;
    size_t pitch;
    CUDA_CHECK(cudaMallocPitch((void **)&d, &pitch, width * sizeof(float), height));
    printf("pitch = %zu bytes for rows of %zu bytes\n", pitch, width * sizeof(float));
    bool ok = pitch >= width * sizeof(float);
    CUDA_CHECK(cudaMemcpy2D(d, pitch, h, width * sizeof(float), width * sizeof(float), height, cudaMemcpyHostToDevice));
    dim3 block(16, 16), grid((width + 15) / 16, (height + 15) / 16);
    rowTimesCol<<<grid, block>>>(d, pitch, width, height);
    CUDA_CHECK(cudaGetLastError());
    // zero the first two rows with cudaMemset2D
    CUDA_CHECK(cudaMemset2D(d, pitch, 0, width * sizeof(float), 2));
    CUDA_CHECK(cudaMemcpy2D(out, width * sizeof(float), d, pitch, width * sizeof(float), height, cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int r = 0; r < height; ++r)
        for (int c = 0; c < width; ++c) {
            float e = r < 2 ? 0.f : h[r * width + c] * 2.0f + (float)(r * width + c);
            bad += out[r * width + c] != e;
        }
    printf("pitched mismatches: %d\n", bad);
    ok = ok && bad == 0;
    cudaFree(d);
    free(h);
    free(out);
    printf("%s\n", ok ? "PASSED" : "FAILED");
    return ok ? 0 : 1;
}
