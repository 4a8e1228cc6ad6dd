__global__ void axpy4(const float4* x, const float4* y, float4* out, float alpha, int n4) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 a = x[i], b = y[i];
        out[i] = make_float4(alpha * a.x + b.x, alpha * a.y + b.y, alpha * a.z + b.z, alpha * a.w + b.w);
    }
}

__global__ void axpy_tail(const float* x, const float* y, float* out, float alpha, int start, int n) {
    int i = start + blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = alpha * x[i] + y[i];
}

extern "C" void solve(const float* x, const float* y, float* out, float alpha, int n) {
    int n4 = n / 4;
    if (n4 > 0)
        axpy4<<<(n4 + 127) / 128, 128>>>((const float4*)x, (const float4*)y, (float4*)out, alpha, n4);
    if (n % 4) axpy_tail<<<1, 32>>>(x, y, out, alpha, n4 * 4, n);
}
