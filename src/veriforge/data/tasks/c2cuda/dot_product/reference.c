void reference(const float* a, const float* b, float* out, int n) {
    double acc = 0.0;
    for (int i = 0; i < n; ++i) {
        acc += (double)a[i] * (double)b[i];
    }
    out[0] = (float)acc;
}
