// expect: assembly
__global__ void k(const float* x, const float* y, float* out, float alpha, int n) {
    int i;
    asm("mov.u32 %0, %%tid.x;" : "=r"(i));
    if (i < n) out[i] = alpha * x[i] + y[i];
}
extern "C" void solve(const float* x, const float* y, float* out, float alpha, int n) {
    k<<<1, 1024>>>(x, y, out, alpha, n);
}
