// Sum of N floats into *out (zeroed by the host), the six steps of the reduce-sum post.
// Every kernel but the first stages blockDim.x values in dynamic shared memory
// (blockDim.x * 4 bytes) and adds the block's total to *out with one atomicAdd.
// Written for this benchmark.

// 1: every thread loads one float4 and atomically adds its 4-element sum to *out.
__global__ void reduce_atomic_float4(float *out, const float4 *in, int N) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N) {  // N is the float count; the grid covers N / 4 vectors
    const float4 v = in[i];
    atomicAdd(out, v.x + v.y + v.z + v.w);
  }
}

// 2: tree in shared memory, interleaved addressing with a modulo test (divergent warps).
__global__ void reduce_interleaved(float *out, const float *in, int N) {
  extern __shared__ float s[];
  const int t = threadIdx.x;
  const int i = blockIdx.x * blockDim.x + t;
  if (i < N) {
    s[t] = in[i];
    __syncthreads();
    for (int stride = 1; stride < blockDim.x; stride *= 2) {
      if (t % (2 * stride) == 0) s[t] += s[t + stride];
      __syncthreads();
    }
    if (t == 0) atomicAdd(out, s[0]);
  }
}

// 3: interleaved addressing with contiguous active threads (strided shared index, bank conflicts).
__global__ void reduce_strided_index(float *out, const float *in, int N) {
  extern __shared__ float s[];
  const int t = threadIdx.x;
  const int i = blockIdx.x * blockDim.x + t;
  if (i < N) {
    s[t] = in[i];
    __syncthreads();
    for (int stride = 1; stride < blockDim.x; stride *= 2) {
      const int j = 2 * stride * t;
      if (j < blockDim.x) s[j] += s[j + stride];
      __syncthreads();
    }
    if (t == 0) atomicAdd(out, s[0]);
  }
}

// 4: sequential addressing (halving stride, conflict-free).
__global__ void reduce_sequential(float *out, const float *in, int N) {
  extern __shared__ float s[];
  const int t = threadIdx.x;
  const int i = blockIdx.x * blockDim.x + t;
  if (i < N) {
    s[t] = in[i];
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
      if (t < half) s[t] += s[t + half];
      __syncthreads();
    }
    if (t == 0) atomicAdd(out, s[0]);
  }
}

// 5: half as many blocks; each thread adds two elements blockDim.x apart while loading.
__global__ void reduce_first_add(float *out, const float *in, int N) {
  extern __shared__ float s[];
  const int t = threadIdx.x;
  const int i = blockIdx.x * blockDim.x * 2 + t;
  if (i < N) {
    s[t] = in[i] + in[i + blockDim.x];
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
      if (t < half) s[t] += s[t + half];
      __syncthreads();
    }
    if (t == 0) atomicAdd(out, s[0]);
  }
}

__device__ void last_warp_sum(volatile float *s, int t) {
  s[t] += s[t + 32];
  s[t] += s[t + 16];
  s[t] += s[t + 8];
  s[t] += s[t + 4];
  s[t] += s[t + 2];
  s[t] += s[t + 1];
}

// 6: as 5, with the last six steps done by the first warp without barriers.
__global__ void reduce_unrolled_warp(float *out, float *in, int N) {
  extern __shared__ float s[];
  const int t = threadIdx.x;
  const int i = blockIdx.x * blockDim.x * 2 + t;
  if (i < N) {
    s[t] = in[i] + in[i + blockDim.x];
    __syncthreads();
    for (int half = blockDim.x / 2; half > 32; half /= 2) {
      if (t < half) s[t] += s[t + half];
      __syncthreads();
    }
    if (t < 32) last_warp_sum(s, t);
    if (t == 0) atomicAdd(out, s[0]);
  }
}
