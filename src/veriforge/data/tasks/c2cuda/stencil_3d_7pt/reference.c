/* Serial reference: one 7-point stencil sweep, boundary points copied unchanged. fp32 arithmetic. */
void reference(const float* in, float* out, int nx, int ny, int nz, float c0, float c1) {
    long plane = (long)nx * ny;
    for (int z = 0; z < nz; ++z) {
        for (int y = 0; y < ny; ++y) {
            for (int x = 0; x < nx; ++x) {
                long i = z * plane + (long)y * nx + x;
                if (x == 0 || x == nx - 1 || y == 0 || y == ny - 1 || z == 0 || z == nz - 1) {
                    out[i] = in[i];
                } else {
                    float s = in[i - 1] + in[i + 1] + in[i - nx] + in[i + nx] + in[i - plane] + in[i + plane];
                    out[i] = c0 * in[i] + c1 * s;
                }
            }
        }
    }
}
