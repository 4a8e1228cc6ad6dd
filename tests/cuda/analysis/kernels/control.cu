__global__ void even_odd(float* a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (threadIdx.x % 2 == 0) {
        a[i] = a[i] * 2.0f;
    } else {
        a[i] = a[i] + 1.0f;
    }
}

__global__ void half_block(float* a) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (threadIdx.x < 128) {
        a[i] += 1.0f;
    }
}

__global__ void bad_barrier(float* a) {
    __shared__ float s[256];
    s[threadIdx.x] = a[threadIdx.x];
    if (threadIdx.x < 128) {
        __syncthreads();
        a[threadIdx.x] = s[threadIdx.x + 1];
    }
    __syncthreads();
}

__global__ void early_exit(float* a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    a[i] = 0.0f;
    __syncthreads();
}
