__global__ void copy_float4(const float* __restrict__ in, float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n / 4) {
        float4 v = reinterpret_cast<const float4*>(in)[i];
        reinterpret_cast<float4*>(out)[i] = v;
    }
}

__global__ void copy_cast(const float* in, float* out, int n) {
    int i = 4 * (blockIdx.x * blockDim.x + threadIdx.x);
    float4 v = *(const float4*)(&in[i]);
    *(float4*)(out + i) = v;
}

__global__ void grid_stride(const float* __restrict__ x, float* __restrict__ y, float a, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        y[i] = a * __ldg(&x[i]) + y[i];
    }
}
