void reference(const int* x, int* hist, int n, int bins) {
    for (int b = 0; b < bins; ++b) hist[b] = 0;
    for (int i = 0; i < n; ++i) hist[x[i]]++;
}
