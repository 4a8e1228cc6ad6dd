// expect: dereferenced a device pointer
// The host loop reads the device buffers through a struct, which no reading of the source follows:
// only the CPU runtime's device-memory guard sees it (on a GPU it crashes: device memory is not host
// memory).
struct Views {
    const float* u;
    const float* v;
    float* w;
};
__global__ void touch(float* out) {}
void scale_add(const Views& s, float a, int m) {
    for (int i = 0; i < m; ++i) s.w[i] = a * s.u[i] + s.v[i];
}
extern "C" void solve(const float* x, const float* y, float* out, float alpha, int n) {
    touch<<<1, 1>>>(out);
    Views s{x, y, out};
    scale_add(s, alpha, n);
}
