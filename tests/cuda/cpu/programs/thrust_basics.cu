// Thrust as benchmark solutions use it next to hand-written kernels: device_vector, transform with a
// functor, reduce, sort, inclusive_scan, and thrust::raw_pointer_cast to hand the storage to a kernel.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <numeric>
#include <thrust/device_vector.h>
#include <thrust/host_vector.h>
#include <thrust/transform.h>
#include <thrust/reduce.h>
#include <thrust/sort.h>
#include <thrust/scan.h>
#include <thrust/functional.h>

struct saxpy_functor {
    const int a;
    saxpy_functor(int _a) : a(_a) {}
    __host__ __device__ int operator()(const int &x, const int &y) const { return a * x + y; }
};

__global__ void addIndex(int *v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] += i;
}

int main() {
    const int n = 5000;
    std::vector<int> hx(n), hy(n);
    srand(77);
    for (int i = 0; i < n; ++i) {
        hx[i] = rand() % 1000 - 500;
        hy[i] = rand() % 1000 - 500;
    }
    thrust::device_vector<int> x(hx.begin(), hx.end()), y(hy.begin(), hy.end()), z(n);
    thrust::transform(x.begin(), x.end(), y.begin(), z.begin(), saxpy_functor(3));
    addIndex<<<(n + 255) / 256, 256>>>(thrust::raw_pointer_cast(z.data()), n);
    cudaDeviceSynchronize();
    long long sum = thrust::reduce(z.begin(), z.end(), 0LL, thrust::plus<long long>());
    thrust::device_vector<int> sorted = z;
    thrust::sort(sorted.begin(), sorted.end());
    thrust::device_vector<int> scanned(n);
    thrust::inclusive_scan(x.begin(), x.end(), scanned.begin());
    thrust::host_vector<int> hz = z, hs = sorted, hsc = scanned;

    std::vector<int> ref(n);
    for (int i = 0; i < n; ++i) ref[i] = 3 * hx[i] + hy[i] + i;
    long long refSum = std::accumulate(ref.begin(), ref.end(), 0LL);
    std::vector<int> refSorted = ref;
    std::sort(refSorted.begin(), refSorted.end());
    std::vector<int> refScan(n);
    std::partial_sum(hx.begin(), hx.end(), refScan.begin());
    int bad = 0;
    for (int i = 0; i < n; ++i) bad += (hz[i] != ref[i]) + (hs[i] != refSorted[i]) + (hsc[i] != refScan[i]);
    printf("thrust: sum %lld/%lld, mismatches %d\n", sum, refSum, bad);
    bool ok = bad == 0 && sum == refSum;
    printf("%s\n", ok ? "PASSED" : "FAILED");
    return ok ? 0 : 1;
}
