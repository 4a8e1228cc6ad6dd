void reference(float alpha, const float* x, float* y, int n) {
    for (int i = 0; i < n; ++i) {
        y[i] = alpha * x[i] + y[i];
    }
}
