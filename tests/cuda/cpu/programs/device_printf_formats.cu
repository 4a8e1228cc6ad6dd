// Device-side printf with the usual conversions (%d %i %u %x %X %o %ld %lld %llu %f %.3f %e %g %s %c %%
// and widths/padding), from one thread and from one thread per block; host printf interleaved around
// cudaDeviceSynchronize. The expected lines are in device_printf_formats.expected (block lines may come
// in any order; the test compares them as a multiset).
#include <cstdio>
#include <cuda_runtime.h>

__global__ void formats(int i, unsigned u, long long ll, unsigned long long ull, float f, double d) {
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        printf("ints: %d %i %u %x %X %o\n", i, i, u, u, u, 8u);
        printf("longs: %ld %lld %llu\n", (long)ll, ll, ull);
        printf("floats: %f %.3f %e %g %g\n", f, d, d, 0.5, 1e-5);
        printf("text: %s %c%c %5d|%-5d|%05d %%\n", "hello", 'o', 'k', 42, 42, 42);
    }
}

__global__ void perBlock(const int *vals) {
    if (threadIdx.x == 0) printf("block %d of %d sees value %d\n", blockIdx.x, gridDim.x, vals[blockIdx.x]);
}

int main() {
    printf("host: before kernels\n");
    formats<<<2, 32>>>(-123, 3735928559u, -9000000000LL, 18000000000000000000ULL, 3.25f, 2.0 / 3.0);
    cudaError_t e1 = cudaDeviceSynchronize();
    int h[4] = {10, 20, 30, 40}, *d;
    cudaMalloc(&d, sizeof(h));
    cudaMemcpy(d, h, sizeof(h), cudaMemcpyHostToDevice);
    perBlock<<<4, 64>>>(d);
    cudaError_t e2 = cudaDeviceSynchronize();
    printf("host: after kernels\n");
    cudaFree(d);
    bool ok = e1 == cudaSuccess && e2 == cudaSuccess;
    printf("%s\n", ok ? "PASSED" : "FAILED");
    return ok ? 0 : 1;
}
