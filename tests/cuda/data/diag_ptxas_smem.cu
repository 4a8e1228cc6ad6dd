__global__ void k(float* o) {
    int unused = 3;
    o[threadIdx.x] = 1.0f;
}
__global__ void big(float* o) { __shared__ float s[20000]; s[threadIdx.x] = o[0]; __syncthreads(); o[threadIdx.x] = s[threadIdx.x+1]; }
