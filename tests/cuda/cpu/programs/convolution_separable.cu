// Separable 2D convolution (row pass then column pass) with the filter in __constant__ memory set by
// cudaMemcpyToSymbol, shared-memory tiles with apron/halo regions, clamped borders.
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cuda_runtime.h>

#define KERNEL_RADIUS 4
#define KERNEL_LENGTH (2 * KERNEL_RADIUS + 1)
#define ROWS_BLOCKDIM_X 32
#define ROWS_BLOCKDIM_Y 4
#define COLS_BLOCKDIM_X 16
#define COLS_BLOCKDIM_Y 16

#define checkCudaErrors(val)                                                              \
    do {                                                                                  \
        cudaError_t r_ = (val);                                                           \
        if (r_) {                                                                         \
            fprintf(stderr, "CUDA error at %s:%d \"%s\": %s\n", __FILE__, __LINE__, #val,  \
                    cudaGetErrorString(r_));                                              \
            exit(EXIT_FAILURE);                                                           \
        }                                                                                 \
    } while (0)

__constant__ float c_Kernel[KERNEL_LENGTH];

void setConvolutionKernel(const float *h_Kernel) {
    checkCudaErrors(cudaMemcpyToSymbol(c_Kernel, h_Kernel, KERNEL_LENGTH * sizeof(float)));
}

__device__ __forceinline__ int clampi(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

__global__ void convolutionRowsKernel(float *d_Dst, const float *d_Src, int imageW, int imageH) {
    __shared__ float s_Data[ROWS_BLOCKDIM_Y][ROWS_BLOCKDIM_X + 2 * KERNEL_RADIUS];
    const int x = blockIdx.x * ROWS_BLOCKDIM_X + threadIdx.x;
    const int y = min((int)(blockIdx.y * ROWS_BLOCKDIM_Y + threadIdx.y), imageH - 1);
    // centre + left/right aprons, clamped at image borders
    for (int i = threadIdx.x; i < ROWS_BLOCKDIM_X + 2 * KERNEL_RADIUS; i += ROWS_BLOCKDIM_X) {
        int gx = clampi((int)(blockIdx.x * ROWS_BLOCKDIM_X) + i - KERNEL_RADIUS, 0, imageW - 1);
        s_Data[threadIdx.y][i] = d_Src[y * imageW + gx];
    }
    __syncthreads();
    if (x >= imageW || blockIdx.y * ROWS_BLOCKDIM_Y + threadIdx.y >= imageH) return;
    float sum = 0;
#pragma unroll
    for (int j = -KERNEL_RADIUS; j <= KERNEL_RADIUS; j++)
        sum += c_Kernel[KERNEL_RADIUS - j] * s_Data[threadIdx.y][threadIdx.x + KERNEL_RADIUS + j];
    d_Dst[y * imageW + x] = sum;
}

__global__ void convolutionColumnsKernel(float *d_Dst, const float *d_Src, int imageW, int imageH) {
    __shared__ float s_Data[COLS_BLOCKDIM_Y + 2 * KERNEL_RADIUS][COLS_BLOCKDIM_X + 1];
    const int x = min((int)(blockIdx.x * COLS_BLOCKDIM_X + threadIdx.x), imageW - 1);
    const int y = blockIdx.y * COLS_BLOCKDIM_Y + threadIdx.y;
    for (int i = threadIdx.y; i < COLS_BLOCKDIM_Y + 2 * KERNEL_RADIUS; i += COLS_BLOCKDIM_Y) {
        int gy = clampi((int)(blockIdx.y * COLS_BLOCKDIM_Y) + i - KERNEL_RADIUS, 0, imageH - 1);
        s_Data[i][threadIdx.x] = d_Src[gy * imageW + x];
    }
    __syncthreads();
    if (y >= imageH || blockIdx.x * COLS_BLOCKDIM_X + threadIdx.x >= imageW) return;
    float sum = 0;
#pragma unroll
    for (int j = -KERNEL_RADIUS; j <= KERNEL_RADIUS; j++)
        sum += c_Kernel[KERNEL_RADIUS - j] * s_Data[threadIdx.y + KERNEL_RADIUS + j][threadIdx.x];
    d_Dst[y * imageW + x] = sum;
}

static void convolutionRowCPU(float *dst, const float *src, const float *k, int w, int h) {
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            double s = 0;
            for (int j = -KERNEL_RADIUS; j <= KERNEL_RADIUS; j++) {
                int d = x + j;
                d = d < 0 ? 0 : (d > w - 1 ? w - 1 : d);
                s += (double)src[y * w + d] * k[KERNEL_RADIUS - j];
            }
            dst[y * w + x] = (float)s;
        }
}

static void convolutionColumnCPU(float *dst, const float *src, const float *k, int w, int h) {
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            double s = 0;
            for (int j = -KERNEL_RADIUS; j <= KERNEL_RADIUS; j++) {
                int d = y + j;
                d = d < 0 ? 0 : (d > h - 1 ? h - 1 : d);
                s += (double)src[d * w + x] * k[KERNEL_RADIUS - j];
            }
            dst[y * w + x] = (float)s;
        }
}

int main() {
    const int imageW = 150, imageH = 97;
    const size_t bytes = imageW * imageH * sizeof(float);
    float h_Kernel[KERNEL_LENGTH];
    float *h_Input = (float *)malloc(bytes), *h_Buffer = (float *)malloc(bytes);
    float *h_OutputCPU = (float *)malloc(bytes), *h_OutputGPU = (float *)malloc(bytes);
    srand(200);
    for (int i = 0; i < KERNEL_LENGTH; i++) h_Kernel[i] = (float)(rand() % 16);
    for (int i = 0; i < imageW * imageH; i++) h_Input[i] = (float)(rand() % 16);
    float *d_Input, *d_Output, *d_Buffer;
    checkCudaErrors(cudaMalloc((void **)&d_Input, bytes));
    checkCudaErrors(cudaMalloc((void **)&d_Output, bytes));
    checkCudaErrors(cudaMalloc((void **)&d_Buffer, bytes));
    setConvolutionKernel(h_Kernel);
    checkCudaErrors(cudaMemcpy(d_Input, h_Input, bytes, cudaMemcpyHostToDevice));
    dim3 rb(ROWS_BLOCKDIM_X, ROWS_BLOCKDIM_Y);
    dim3 rg((imageW + rb.x - 1) / rb.x, (imageH + rb.y - 1) / rb.y);
    convolutionRowsKernel<<<rg, rb>>>(d_Buffer, d_Input, imageW, imageH);
    checkCudaErrors(cudaGetLastError());
    dim3 cb(COLS_BLOCKDIM_X, COLS_BLOCKDIM_Y);
    dim3 cg((imageW + cb.x - 1) / cb.x, (imageH + cb.y - 1) / cb.y);
    convolutionColumnsKernel<<<cg, cb>>>(d_Output, d_Buffer, imageW, imageH);
    checkCudaErrors(cudaGetLastError());
    checkCudaErrors(cudaDeviceSynchronize());
    checkCudaErrors(cudaMemcpy(h_OutputGPU, d_Output, bytes, cudaMemcpyDeviceToHost));
    convolutionRowCPU(h_Buffer, h_Input, h_Kernel, imageW, imageH);
    convolutionColumnCPU(h_OutputCPU, h_Buffer, h_Kernel, imageW, imageH);
    double sum = 0, delta = 0;
    for (int i = 0; i < imageW * imageH; i++) {
        delta += (h_OutputGPU[i] - h_OutputCPU[i]) * (h_OutputGPU[i] - h_OutputCPU[i]);
        sum += h_OutputCPU[i] * h_OutputCPU[i];
    }
    double L2norm = sqrt(delta / sum);
    printf(" ...Relative L2 norm: %E\n", L2norm);
    cudaFree(d_Buffer); cudaFree(d_Output); cudaFree(d_Input);
    free(h_OutputGPU); free(h_OutputCPU); free(h_Buffer); free(h_Input);
    bool ok = L2norm < 1e-6 && sum > 0;
    printf(ok ? "Test passed: PASSED\n" : "Test failed: FAILED\n");
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
