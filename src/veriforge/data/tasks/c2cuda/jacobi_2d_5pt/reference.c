void reference(const float* in, float* out, int ny, int nx) {
    for (int r = 0; r < ny; ++r) {
        for (int c = 0; c < nx; ++c) {
            int i = r * nx + c;
            if (r == 0 || r == ny - 1 || c == 0 || c == nx - 1) {
                out[i] = in[i];
            } else {
                out[i] = 0.25f * (in[i - nx] + in[i + nx] + in[i - 1] + in[i + 1]);
            }
        }
    }
}
