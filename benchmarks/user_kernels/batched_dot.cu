// One dot product per batch entry; one thread per batch entry.
__global__ void batched_dot(const float* x, const float* y, float* out, int batch, int len) {
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b < batch) {
        float acc = 0.0f;
        for (int k = 0; k < len; ++k) acc += x[b * len + k] * y[b * len + k];
        out[b] = acc;
    }
}
