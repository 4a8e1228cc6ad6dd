__global__ void axpy_gs(const float* __restrict__ x, const float* __restrict__ y, float* __restrict__ out,
                        float alpha, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        out[i] = alpha * x[i] + y[i];
}

extern "C" void solve(const float* x, const float* y, float* out, float alpha, int n) {
    axpy_gs<<<4, 64>>>(x, y, out, alpha, n);
}
