// Custom atomics built on atomicCAS: atomicMax/atomicMin for float via __float_as_int, atomicAdd for
// double in the pre-sm_60 CAS-loop style (renamed to avoid clashing with the builtin), an atomic
// "multiply" and an argmax packed into 64 bits; plus atomicExch, atomicInc/atomicDec wrap-around and
// atomicAnd/Or/Xor.
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cfloat>
#include <cuda_runtime.h>

#define CUDA_CHECK(x)                                                                \
    do {                                                                             \
        cudaError_t e = (x);                                                         \
        if (e != cudaSuccess) {                                                      \
            fprintf(stderr, "CUDA error %s at line %d\n", cudaGetErrorString(e), __LINE__); \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

__device__ float atomicMaxFloat(float *addr, float value) {
    int *addrAsInt = (int *)addr;
    int old = *addrAsInt, assumed;
    do {
        assumed = old;
        if (__int_as_float(assumed) >= value) break;
        old = atomicCAS(addrAsInt, assumed, __float_as_int(value));
    } while (assumed != old);
    return __int_as_float(old);
}

__device__ float atomicMinFloat(float *addr, float value) {
    unsigned int *a = (unsigned int *)addr;
    unsigned int old = *a, assumed;
    do {
        assumed = old;
        old = atomicCAS(a, assumed, __float_as_uint(fminf(value, __uint_as_float(assumed))));
    } while (assumed != old);
    return __uint_as_float(old);
}

__device__ double atomicAddDoubleCAS(double *address, double val) {
    unsigned long long int *address_as_ull = (unsigned long long int *)address;
    unsigned long long int old = *address_as_ull, assumed;
    do {
        assumed = old;
        old = atomicCAS(address_as_ull, assumed, __double_as_longlong(val + __longlong_as_double(assumed)));
    } while (assumed != old);
    return __longlong_as_double(old);
}

__device__ void atomicMulFloat(float *addr, float m) {
    int *ai = (int *)addr;
    int old = *ai, assumed;
    do {
        assumed = old;
        old = atomicCAS(ai, assumed, __float_as_int(__int_as_float(assumed) * m));
    } while (assumed != old);
}

// argmax: pack (orderable value bits, ~index) so larger value wins and ties go to the smaller index
__device__ void atomicArgMax(unsigned long long *slot, float v, int idx) {
    unsigned int bits = __float_as_uint(v);
    bits = (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);  // total order for floats
    unsigned long long packed = ((unsigned long long)bits << 32) | (unsigned)(~idx);
    atomicMax(slot, packed);
}

__global__ void customAtomics(const float *x, int n, float *fmaxOut, float *fminOut, double *dsum,
                              unsigned long long *argmax, float *prod, unsigned *flags, unsigned *ring,
                              unsigned *down, int *lastWriter) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    atomicMaxFloat(fmaxOut, v);
    atomicMinFloat(fminOut, v);
    atomicAddDoubleCAS(dsum, (double)v);
    atomicArgMax(argmax, v, i);
    if (i < 20) atomicMulFloat(prod, 1.0f + 0.01f * (i % 5));
    atomicOr(&flags[0], 1u << (i % 32));
    atomicAnd(&flags[1], ~(1u << (i % 29)));
    atomicXor(&flags[2], (unsigned)i);
    atomicInc(ring, 99u);   // counts 0..99 then wraps to 0
    atomicDec(down, 1000u);
    atomicExch(lastWriter, 1);
}

int main() {
    const int n = 20000;
    float *h = new float[n];
    srand(4242);
    for (int i = 0; i < n; ++i) h[i] = 200.f * rand() / RAND_MAX - 100.f;
    h[777] = 150.f;
    h[1234] = 150.f;  // tie for the maximum: argmax must report 777
    float *dx, *dfmax, *dfmin, *dprod;
    double *dsum;
    unsigned long long *darg;
    unsigned *dflags, *dring, *ddown;
    int *dlast;
    CUDA_CHECK(cudaMalloc(&dx, n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dfmax, sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dfmin, sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dprod, sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dsum, sizeof(double)));
    CUDA_CHECK(cudaMalloc(&darg, sizeof(unsigned long long)));
    CUDA_CHECK(cudaMalloc(&dflags, 3 * sizeof(unsigned)));
    CUDA_CHECK(cudaMalloc(&dring, sizeof(unsigned)));
    CUDA_CHECK(cudaMalloc(&ddown, sizeof(unsigned)));
    CUDA_CHECK(cudaMalloc(&dlast, sizeof(int)));
    float init_max = -FLT_MAX, init_min = FLT_MAX, one = 1.f;
    double zero = 0.0;
    unsigned long long zero64 = 0;
    unsigned flags0[3] = {0u, 0xffffffffu, 0u}, ring0 = 0, down0 = 500;
    int last0 = 0;
    CUDA_CHECK(cudaMemcpy(dx, h, n * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dfmax, &init_max, sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dfmin, &init_min, sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dprod, &one, sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dsum, &zero, sizeof(double), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(darg, &zero64, sizeof(zero64), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dflags, flags0, sizeof(flags0), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dring, &ring0, sizeof(unsigned), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(ddown, &down0, sizeof(unsigned), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dlast, &last0, sizeof(int), cudaMemcpyHostToDevice));
    customAtomics<<<(n + 255) / 256, 256>>>(dx, n, dfmax, dfmin, dsum, darg, dprod, dflags, dring, ddown, dlast);
    CUDA_CHECK(cudaGetLastError());
    float gmax, gmin, gprod;
    double gsum;
    unsigned long long garg;
    unsigned gflags[3], gring, gdown;
    int glast;
    CUDA_CHECK(cudaMemcpy(&gmax, dfmax, sizeof(float), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(&gmin, dfmin, sizeof(float), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(&gprod, dprod, sizeof(float), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(&gsum, dsum, sizeof(double), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(&garg, darg, sizeof(garg), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(gflags, dflags, sizeof(gflags), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(&gring, dring, sizeof(unsigned), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(&gdown, ddown, sizeof(unsigned), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(&glast, dlast, sizeof(int), cudaMemcpyDeviceToHost));
    float rmax = -FLT_MAX, rmin = FLT_MAX;
    double rsum = 0, rprod = 1;
    unsigned rxor = 0;
    for (int i = 0; i < n; ++i) {
        rmax = fmaxf(rmax, h[i]);
        rmin = fminf(rmin, h[i]);
        rsum += h[i];
        rxor ^= (unsigned)i;
        if (i < 20) rprod *= 1.0 + 0.01 * (i % 5);
    }
    int argIdx = (int)~(unsigned)(garg & 0xffffffffu);
    // atomicInc(ring, 99): ((old >= 99) ? 0 : old + 1), n times from 0 -> n % 100
    // atomicDec(down, 1000): ((old == 0) || (old > 1000)) ? 1000 : old - 1, n times from 500
    unsigned rdown = 500;
    for (int i = 0; i < n; ++i) rdown = (rdown == 0 || rdown > 1000) ? 1000 : rdown - 1;
    bool ok = gmax == rmax && gmin == rmin && fabs(gsum - rsum) < 1e-6 && argIdx == 777 &&
              fabs(gprod - rprod) < 1e-5 * rprod && gflags[0] == 0xffffffffu && gflags[1] == 0xe0000000u &&
              gflags[2] == rxor && gring == (unsigned)(n % 100) && gdown == rdown && glast == 1;
    printf("max %f/%f min %f/%f sum %.6f/%.6f argmax %d prod %f/%f flags %08x %08x %08x/%08x ring %u dec %u/%u\n",
           gmax, rmax, gmin, rmin, gsum, rsum, argIdx, gprod, rprod, gflags[0], gflags[1], gflags[2], rxor, gring,
           gdown, rdown);
    cudaFree(dx); cudaFree(dfmax); cudaFree(dfmin); cudaFree(dprod); cudaFree(dsum); cudaFree(darg);
    cudaFree(dflags); cudaFree(dring); cudaFree(ddown); cudaFree(dlast);
    delete[] h;
    printf("%s\n", ok ? "PASSED" : "FAILED");
    return ok ? 0 : 1;
}
