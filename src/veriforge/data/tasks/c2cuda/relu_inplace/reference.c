void reference(float* x, int n) {
    for (int i = 0; i < n; ++i) {
        if (x[i] < 0.0f) {
            x[i] = 0.0f;
        }
    }
}
