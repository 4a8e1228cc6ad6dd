void reference(const float* x, float threshold, int* out, int n) {
    int count = 0;
    for (int i = 0; i < n; ++i) {
        if (x[i] > threshold) ++count;
    }
    out[0] = count;
}
