#define T float
#define S_COUNT (rows)
#define L (cols)
#define OFF(s, e) ((long long)(s) * cols + (e))
#define LOAD(s, e) ((float)x[OFF(s, e)])

// One thread per slice running the serial algorithm. Lanes walk different rows, so loads do not coalesce and few threads exist.
__global__ void norm_thread(const float* x, float* y, int rows, int cols) {
    int s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= S_COUNT) return;
    float m = -INFINITY;
    for (int e = 0; e < L; ++e) { float v = LOAD(s, e); m = fmaxf(m, v); }
    float d = 0.0f;
    for (int e = 0; e < L; ++e) { float v = LOAD(s, e); d = d + expf(v - m); }
    for (int e = 0; e < L; ++e) { float v = LOAD(s, e); y[OFF(s, e)] = (T)(expf(v - m) / d); }
}

extern "C" void solve(const float* x, float* y, int rows, int cols) {
    int slices = S_COUNT;
    if (slices <= 0) return;
    norm_thread<<<(slices + 127) / 128, 128>>>(x, y, rows, cols);
}
