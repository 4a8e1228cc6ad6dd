void reference(const int* x, int* y, int n) {
    int acc = 0;
    for (int i = 0; i < n; ++i) {
        y[i] = acc;
        acc += x[i];
    }
}
