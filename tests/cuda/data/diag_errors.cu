#include <cstdio>
template <typename T>
__global__ void k(T* out, int n) {
    int unused = 3;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = undefined_thing + i;
}
__global__ void k2(float* o) { float x = 1.0; o[0] = x; missing_fn(o); }
int main() { float* p; k<<<1,1>>>(p, 1); return 0; }
