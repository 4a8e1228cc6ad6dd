// Reductions by global atomics: atomicAdd on float, double, int, unsigned long long, plus atomicMin/
// atomicMax on int and unsigned, with grid-stride loops so every thread touches several elements.
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <climits>
#include <cuda_runtime.h>

#define CUDA_CHECK(x)                                                          \
    do {                                                                       \
        cudaError_t e = (x);                                                   \
        if (e != cudaSuccess) {                                                \
            fprintf(stderr, "%s -> %s\n", #x, cudaGetErrorString(e));         \
            exit(1);                                                           \
        }                                                                      \
    } while (0)

struct Stats {
    float fsum;
    double dsum;
    int isum;
    int imin;
    int imax;
    unsigned umax;
    unsigned long long count;
};

__global__ void statsKernel(const int *data, size_t n, Stats *st) {
    float fs = 0.f;
    double ds = 0.0;
    int is = 0, mn = INT_MAX, mx = INT_MIN;
    unsigned um = 0;
    unsigned long long cnt = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)blockDim.x * gridDim.x) {
        int v = data[i];
        fs += (float)v * 0.5f;
        ds += v * 0.25;
        is += v;
        mn = min(mn, v);
        mx = max(mx, v);
        um = max(um, (unsigned)(v & 0xffff));
        if (v % 3 == 0) ++cnt;
    }
    atomicAdd(&st->fsum, fs);
    atomicAdd(&st->dsum, ds);
    atomicAdd(&st->isum, is);
    atomicMin(&st->imin, mn);
    atomicMax(&st->imax, mx);
    atomicMax(&st->umax, um);
    atomicAdd(&st->count, cnt);
}

int main() {
    const size_t n = 123457;
    int *h = (int *)malloc(n * sizeof(int));
    srand(77);
    double fref = 0, dref = 0;
    long long iref = 0;
    int mn = INT_MAX, mx = INT_MIN;
    unsigned um = 0;
    unsigned long long cnt = 0;
    for (size_t i = 0; i < n; ++i) {
        h[i] = rand() % 20001 - 10000;
        fref += h[i] * 0.5;
        dref += h[i] * 0.25;
        iref += h[i];
        mn = h[i] < mn ? h[i] : mn;
        mx = h[i] > mx ? h[i] : mx;
        unsigned lo = (unsigned)(h[i] & 0xffff);
        um = lo > um ? lo : um;
        if (h[i] % 3 == 0) ++cnt;
    }
    int *d;
    Stats *dst;
    Stats init = {0.f, 0.0, 0, INT_MAX, INT_MIN, 0u, 0ull};
    CUDA_CHECK(cudaMalloc(&d, n * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&dst, sizeof(Stats)));
    CUDA_CHECK(cudaMemcpy(d, h, n * sizeof(int), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dst, &init, sizeof(Stats), cudaMemcpyHostToDevice));
    statsKernel<<<40, 128>>>(d, n, dst);
    CUDA_CHECK(cudaGetLastError());
    Stats r;
    CUDA_CHECK(cudaMemcpy(&r, dst, sizeof(Stats), cudaMemcpyDeviceToHost));
    printf("fsum %f/%f dsum %f/%f isum %d/%lld min %d/%d max %d/%d umax %u/%u count %llu/%llu\n", r.fsum,
           fref, r.dsum, dref, r.isum, iref, r.imin, mn, r.imax, mx, r.umax, um, r.count, cnt);
    bool ok = fabs(r.fsum - fref) <= 1e-4 * fabs(fref) + 64 && fabs(r.dsum - dref) < 1e-6 && r.isum == iref &&
              r.imin == mn && r.imax == mx && r.umax == um && r.count == cnt;
    CUDA_CHECK(cudaFree(d));
    CUDA_CHECK(cudaFree(dst));
    free(h);
    puts(ok ? "PASSED" : "FAILED");
    return ok ? 0 : 1;
}
