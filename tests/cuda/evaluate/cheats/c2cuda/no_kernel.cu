// expect: no __global__ kernel
extern "C" void solve(const float* x, const float* y, float* out, float alpha, int n) {
    cudaMemcpy(out, y, n * sizeof(float), cudaMemcpyDeviceToDevice);
}
