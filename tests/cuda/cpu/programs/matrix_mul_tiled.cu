// Tiled matrix multiplication templated on the block size (matrixMul sample style), run for 16 and 32.
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>
#include <cuda_runtime.h>

#define CUDA_CHECK(call)                                                                   \
    do {                                                                                   \
        cudaError_t err_ = (call);                                                         \
        if (err_ != cudaSuccess) {                                                         \
            fprintf(stderr, "CUDA error %s at %s:%d\n", cudaGetErrorString(err_), __FILE__, \
                    __LINE__);                                                             \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

// C(hA x wB) = A(hA x wA) * B(wA x wB); all dimensions are multiples of BLOCK_SIZE.
template <int BLOCK_SIZE>
__global__ void MatrixMulCUDA(float *C, const float *A, const float *B, int wA, int wB) {
    int bx = blockIdx.x, by = blockIdx.y;
    int tx = threadIdx.x, ty = threadIdx.y;
    int aBegin = wA * BLOCK_SIZE * by;
    int aEnd = aBegin + wA - 1;
    int aStep = BLOCK_SIZE;
    int bBegin = BLOCK_SIZE * bx;
    int bStep = BLOCK_SIZE * wB;
    float Csub = 0;
    for (int a = aBegin, b = bBegin; a <= aEnd; a += aStep, b += bStep) {
        __shared__ float As[BLOCK_SIZE][BLOCK_SIZE];
        __shared__ float Bs[BLOCK_SIZE][BLOCK_SIZE];
        As[ty][tx] = A[a + wA * ty + tx];
        Bs[ty][tx] = B[b + wB * ty + tx];
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BLOCK_SIZE; ++k) {
            Csub += As[ty][k] * Bs[k][tx];
        }
        __syncthreads();
    }
    int c = wB * BLOCK_SIZE * by + BLOCK_SIZE * bx;
    C[c + wB * ty + tx] = Csub;
}

template <int BLOCK_SIZE>
bool runMatrixMul(int hA, int wA, int wB) {
    std::vector<float> h_A(hA * wA), h_B(wA * wB), h_C(hA * wB), ref(hA * wB);
    for (auto &v : h_A) v = (rand() % 2001 - 1000) / 1000.0f;
    for (auto &v : h_B) v = (rand() % 2001 - 1000) / 1000.0f;
    float *d_A, *d_B, *d_C;
    CUDA_CHECK(cudaMalloc(reinterpret_cast<void **>(&d_A), h_A.size() * sizeof(float)));
    CUDA_CHECK(cudaMalloc(reinterpret_cast<void **>(&d_B), h_B.size() * sizeof(float)));
    CUDA_CHECK(cudaMalloc(reinterpret_cast<void **>(&d_C), h_C.size() * sizeof(float)));
    CUDA_CHECK(cudaMemcpy(d_A, h_A.data(), h_A.size() * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_B, h_B.data(), h_B.size() * sizeof(float), cudaMemcpyHostToDevice));
    dim3 threads(BLOCK_SIZE, BLOCK_SIZE);
    dim3 grid(wB / threads.x, hA / threads.y);
    MatrixMulCUDA<BLOCK_SIZE><<<grid, threads>>>(d_C, d_A, d_B, wA, wB);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaMemcpy(h_C.data(), d_C, h_C.size() * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < hA; ++i)
        for (int j = 0; j < wB; ++j) {
            double s = 0;
            for (int k = 0; k < wA; ++k) s += (double)h_A[i * wA + k] * h_B[k * wB + j];
            ref[i * wB + j] = (float)s;
        }
    int bad = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
        double err = fabs(h_C[i] - ref[i]);
        if (err > 1e-4 * wA) {
            if (bad < 5) printf("Error! Matrix[%05zu]=%.8f, ref=%.8f\n", i, h_C[i], ref[i]);
            ++bad;
        }
    }
    CUDA_CHECK(cudaFree(d_A));
    CUDA_CHECK(cudaFree(d_B));
    CUDA_CHECK(cudaFree(d_C));
    printf("MatrixA(%d,%d), MatrixB(%d,%d), block %d: %s\n", wA, hA, wB, wA, BLOCK_SIZE,
           bad ? "mismatch" : "ok");
    return bad == 0;
}

int main() {
    srand(7);
    bool ok = runMatrixMul<16>(64, 96, 80);
    ok = runMatrixMul<32>(64, 64, 96) && ok;
    printf("%s\n", ok ? "Result = PASSED" : "Result = FAILED");
    return ok ? 0 : 1;
}
