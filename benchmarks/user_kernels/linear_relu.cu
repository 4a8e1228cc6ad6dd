// y = relu(x W^T + b): x is M x K, W is N x K (a PyTorch Linear weight), one thread per output.
__global__ void linear_relu(const float* x, const float* W, const float* b, float* y, int M, int N, int K) {
    int n = blockIdx.x * blockDim.x + threadIdx.x;
    int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m < M && n < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) acc = acc + x[m * K + k] * W[n * K + k];
        y[m * N + n] = fmaxf(acc + b[n], 0.0f);
    }
}
