// Integer intrinsics (__popc, __popcll, __clz, __clzll, __ffs, __ffsll, __brev, __brevll,
// __byte_perm, __funnelshift_l, __umulhi, __umul64hi, __mulhi, __usad, __mul24) against portable host
// implementations, plus a bit-manipulation kernel (next power of two, parity, log2) built on them.
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cuda_runtime.h>

#define CUDA_CHECK(x)                                                               \
    do {                                                                            \
        cudaError_t e = (x);                                                        \
        if (e != cudaSuccess) {                                                     \
            fprintf(stderr, "CUDA: %s (line %d)\n", cudaGetErrorString(e), __LINE__); \
            exit(1);                                                                \
        }                                                                           \
    } while (0)

#define NOUT 16

__global__ void intrinsicsKernel(const unsigned *a, const unsigned *b, const unsigned long long *w, unsigned long long *out,
                                 int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned x = a[i], y = b[i];
    unsigned long long z = w[i];
    unsigned long long *o = out + (size_t)i * NOUT;
    o[0] = __popc(x);
    o[1] = __popcll(z);
    o[2] = __clz((int)x);
    o[3] = __clzll((long long)z);
    o[4] = __ffs((int)x);
    o[5] = __ffsll((long long)z);
    o[6] = __brev(x);
    o[7] = __brevll(z);
    o[8] = __byte_perm(x, y, 0x5140);
    o[9] = __funnelshift_l(x, y, i & 31);
    o[10] = __umulhi(x, y);
    o[11] = __umul64hi(z, (unsigned long long)y * 2654435761ull);
    o[12] = (unsigned)__mulhi((int)x, (int)y);
    o[13] = __usad(x & 0xffff, y & 0xffff, 7u);
    o[14] = (unsigned)__mul24((int)(x & 0x7fffff), (int)(y & 0xff));
    // next power of two >= x (x > 0) via clz, and parity via popc
    unsigned v = x | 1u;
    unsigned long long np = (v & (v - 1)) == 0 ? v : (1ull << (32 - __clz(v)));  // 2^32 possible
    o[15] = ((unsigned long long)(__popc(x) & 1) << 40) | np;
}

static int popc32(uint32_t x) { int c = 0; while (x) { c += x & 1; x >>= 1; } return c; }
static int popc64(uint64_t x) { int c = 0; while (x) { c += x & 1; x >>= 1; } return c; }
static int clz32(uint32_t x) { int c = 0; for (int k = 31; k >= 0 && !((x >> k) & 1); --k) ++c; return c; }
static int clz64(uint64_t x) { int c = 0; for (int k = 63; k >= 0 && !((x >> k) & 1); --k) ++c; return c; }
static int ffs32(uint32_t x) { for (int k = 0; k < 32; ++k) if ((x >> k) & 1) return k + 1; return 0; }
static int ffs64(uint64_t x) { for (int k = 0; k < 64; ++k) if ((x >> k) & 1) return k + 1; return 0; }
static uint32_t brev32(uint32_t x) { uint32_t r = 0; for (int k = 0; k < 32; ++k) r |= ((x >> k) & 1u) << (31 - k); return r; }
static uint64_t brev64(uint64_t x) { uint64_t r = 0; for (int k = 0; k < 64; ++k) r |= ((x >> k) & 1ull) << (63 - k); return r; }
static uint32_t byteperm(uint32_t x, uint32_t y, uint32_t s) {
    uint64_t both = ((uint64_t)y << 32) | x;
    uint32_t r = 0;
    for (int k = 0; k < 4; ++k) {
        uint32_t sel = (s >> (4 * k)) & 7;
        r |= (uint32_t)((both >> (8 * sel)) & 0xff) << (8 * k);
    }
    return r;
}
static uint64_t mulhi64(uint64_t a, uint64_t b) {
    uint64_t a0 = a & 0xffffffffu, a1 = a >> 32, b0 = b & 0xffffffffu, b1 = b >> 32;
    uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    uint64_t mid = (p00 >> 32) + (p01 & 0xffffffffu) + (p10 & 0xffffffffu);
    return p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
}

int main() {
    const int n = 4096;
    unsigned *ha = new unsigned[n], *hb = new unsigned[n];
    unsigned long long *hw = new unsigned long long[n], *ho = new unsigned long long[n * NOUT];
    srand(0xbeef);
    for (int i = 0; i < n; ++i) {
        ha[i] = ((unsigned)rand() << 17) ^ (unsigned)rand();
        hb[i] = ((unsigned)rand() << 15) ^ (unsigned)rand();
        hw[i] = ((unsigned long long)rand() << 40) ^ ((unsigned long long)rand() << 20) ^ (unsigned long long)rand();
        if (i % 97 == 0) ha[i] = 0;          // edge cases: zero
        if (i % 89 == 0) hw[i] = 0;
        if (i % 83 == 0) ha[i] = 0x80000000u;
    }
    unsigned *da, *db;
    unsigned long long *dw, *dout;
    CUDA_CHECK(cudaMalloc(&da, n * sizeof(unsigned)));
    CUDA_CHECK(cudaMalloc(&db, n * sizeof(unsigned)));
    CUDA_CHECK(cudaMalloc(&dw, n * sizeof(unsigned long long)));
    CUDA_CHECK(cudaMalloc(&dout, n * NOUT * sizeof(unsigned long long)));
    CUDA_CHECK(cudaMemcpy(da, ha, n * sizeof(unsigned), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(db, hb, n * sizeof(unsigned), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dw, hw, n * sizeof(unsigned long long), cudaMemcpyHostToDevice));
    intrinsicsKernel<<<n / 128, 128>>>(da, db, dw, dout, n);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaMemcpy(ho, dout, n * NOUT * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
    int badPer[NOUT] = {0};
    for (int i = 0; i < n; ++i) {
        uint32_t x = ha[i], y = hb[i];
        uint64_t z = hw[i];
        uint64_t e[NOUT];
        e[0] = popc32(x);
        e[1] = popc64(z);
        e[2] = clz32(x);
        e[3] = clz64(z);
        e[4] = ffs32(x);
        e[5] = ffs64(z);
        e[6] = brev32(x);
        e[7] = brev64(z);
        e[8] = byteperm(x, y, 0x5140);
        int sh = i & 31;
        e[9] = sh == 0 ? y : (uint32_t)((y << sh) | (x >> (32 - sh)));
        e[10] = (uint32_t)(((uint64_t)x * y) >> 32);
        e[11] = mulhi64(z, (uint64_t)y * 2654435761ull);
        e[12] = (uint32_t)(int32_t)(((int64_t)(int32_t)x * (int64_t)(int32_t)y) >> 32);
        uint32_t xa = x & 0xffff, yb = y & 0xffff;
        e[13] = (xa > yb ? xa - yb : yb - xa) + 7u;
        e[14] = (uint32_t)((int64_t)(int32_t)(x & 0x7fffff) * (int32_t)(y & 0xff));
        uint32_t v = x | 1u;
        uint64_t np = (v & (v - 1)) == 0 ? v : (1ull << (32 - clz32(v)));
        e[15] = ((uint64_t)(popc32(x) & 1) << 40) | np;
        for (int k = 0; k < NOUT; ++k)
            if (ho[(size_t)i * NOUT + k] != e[k]) badPer[k]++;
    }
    int bad = 0;
    for (int k = 0; k < NOUT; ++k) {
        if (badPer[k]) printf("intrinsic #%d: %d mismatches\n", k, badPer[k]);
        bad += badPer[k];
    }
    printf("integer intrinsics: %d mismatches\n", bad);
    cudaFree(da); cudaFree(db); cudaFree(dw); cudaFree(dout);
    printf("%s\n", bad == 0 ? "PASSED" : "FAILED");
    return bad == 0 ? 0 : 1;
}
