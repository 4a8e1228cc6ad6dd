void reference(const float* x, const float* wk, float* y, int n, int k) {
    int m = n - k + 1;
    for (int i = 0; i < m; ++i) {
        float s = 0.0f;
        for (int j = 0; j < k; ++j) {
            s += x[i + j] * wk[j];
        }
        y[i] = s;
    }
}
