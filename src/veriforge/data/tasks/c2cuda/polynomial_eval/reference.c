void reference(const float* x, const float* coef, float* y, int n, int degree) {
    for (int i = 0; i < n; ++i) {
        float xi = x[i];
        float acc = coef[degree];
        for (int k = degree - 1; k >= 0; --k) {
            acc = acc * xi + coef[k];
        }
        y[i] = acc;
    }
}
