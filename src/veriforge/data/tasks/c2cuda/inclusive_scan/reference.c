void reference(const float* x, float* y, int n) {
    double acc = 0.0;
    for (int i = 0; i < n; ++i) {
        acc += (double)x[i];
        y[i] = (float)acc;
    }
}
