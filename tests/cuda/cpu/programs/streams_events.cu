// Overlapped work across several streams: pinned host memory (cudaMallocHost), cudaMemcpyAsync in
// chunks, kernels launched with <<<grid, block, 0, stream>>>, events recorded on streams and timed
// with cudaEventElapsedTime (printed, not checked), cudaStreamWaitEvent for a cross-stream dependency.
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cuda_runtime.h>

#define checkCuda(x)                                                                   \
    do {                                                                               \
        cudaError_t r = (x);                                                           \
        if (r != cudaSuccess) {                                                        \
            fprintf(stderr, "CUDA Runtime Error at line %d: %s\n", __LINE__, cudaGetErrorString(r)); \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

__global__ void kernel(float *a, int offset) {
    int i = offset + threadIdx.x + blockIdx.x * blockDim.x;
    float x = (float)i;
    float s = sinf(x), c = cosf(x);
    a[i] = a[i] + sqrtf(s * s + c * c);
}

__global__ void combine(const float *a, const float *b, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] * 2.0f - b[i];
}

int main() {
    const int blockSize = 256, nStreams = 4;
    const int n = 4 * 1024 * blockSize / 16;  // 65536
    const int streamSize = n / nStreams;
    const int streamBytes = streamSize * sizeof(float);
    const int bytes = n * sizeof(float);
    float *a, *b, *out, *d_a, *d_b, *d_out;
    checkCuda(cudaMallocHost((void **)&a, bytes));
    checkCuda(cudaMallocHost((void **)&b, bytes));
    checkCuda(cudaMallocHost((void **)&out, bytes));
    checkCuda(cudaMalloc((void **)&d_a, bytes));
    checkCuda(cudaMalloc((void **)&d_b, bytes));
    checkCuda(cudaMalloc((void **)&d_out, bytes));
    srand(1);
    for (int i = 0; i < n; ++i) {
        a[i] = (float)rand() / RAND_MAX;
        b[i] = (float)rand() / RAND_MAX;
    }
    cudaEvent_t startEvent, stopEvent, bReady;
    cudaStream_t stream[nStreams];
    checkCuda(cudaEventCreate(&startEvent));
    checkCuda(cudaEventCreate(&stopEvent));
    checkCuda(cudaEventCreateWithFlags(&bReady, cudaEventDisableTiming));
    for (int i = 0; i < nStreams; ++i) checkCuda(cudaStreamCreate(&stream[i]));
    float ms;

    // sequential baseline on the default stream
    checkCuda(cudaEventRecord(startEvent, 0));
    checkCuda(cudaMemcpy(d_a, a, bytes, cudaMemcpyHostToDevice));
    kernel<<<n / blockSize, blockSize>>>(d_a, 0);
    checkCuda(cudaMemcpy(out, d_a, bytes, cudaMemcpyDeviceToHost));
    checkCuda(cudaEventRecord(stopEvent, 0));
    checkCuda(cudaEventSynchronize(stopEvent));
    checkCuda(cudaEventElapsedTime(&ms, startEvent, stopEvent));
    printf("Time for sequential transfer and execute (ms): %f\n", ms);
    int bad = 0;
    for (int i = 0; i < n; ++i) bad += fabsf(out[i] - (a[i] + 1.0f)) > 1e-5f;

    // asynchronous version: copy, compute, copy back per chunk in its own stream
    checkCuda(cudaEventRecord(startEvent, 0));
    checkCuda(cudaMemcpyAsync(d_b, b, bytes, cudaMemcpyHostToDevice, stream[0]));
    checkCuda(cudaEventRecord(bReady, stream[0]));
    for (int i = 0; i < nStreams; ++i) {
        int offset = i * streamSize;
        checkCuda(cudaMemcpyAsync(&d_a[offset], &a[offset], streamBytes, cudaMemcpyHostToDevice, stream[i]));
        kernel<<<streamSize / blockSize, blockSize, 0, stream[i]>>>(d_a, offset);
        checkCuda(cudaStreamWaitEvent(stream[i], bReady, 0));
        combine<<<dim3(streamSize / blockSize), dim3(blockSize), 0, stream[i]>>>(d_a + offset, d_b + offset,
                                                                                d_out + offset, streamSize);
        checkCuda(cudaMemcpyAsync(&out[offset], &d_out[offset], streamBytes, cudaMemcpyDeviceToHost, stream[i]));
    }
    checkCuda(cudaEventRecord(stopEvent, 0));
    checkCuda(cudaEventSynchronize(stopEvent));
    for (int i = 0; i < nStreams; ++i) checkCuda(cudaStreamSynchronize(stream[i]));
    checkCuda(cudaEventElapsedTime(&ms, startEvent, stopEvent));
    printf("Time for asynchronous V1 transfer and execute (ms): %f\n", ms);
    for (int i = 0; i < n; ++i) bad += fabsf(out[i] - ((a[i] + 1.0f) * 2.0f - b[i])) > 1e-5f;
    printf("mismatches: %d\n", bad);

    checkCuda(cudaEventDestroy(startEvent));
    checkCuda(cudaEventDestroy(stopEvent));
    checkCuda(cudaEventDestroy(bReady));
    for (int i = 0; i < nStreams; ++i) checkCuda(cudaStreamDestroy(stream[i]));
    cudaFree(d_a); cudaFree(d_b); cudaFree(d_out);
    cudaFreeHost(a); cudaFreeHost(b); cudaFreeHost(out);
    printf("%s\n", bad == 0 ? "PASSED" : "FAILED");
    return bad == 0 ? 0 : 1;
}
