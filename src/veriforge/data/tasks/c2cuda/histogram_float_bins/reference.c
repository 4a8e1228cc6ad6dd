void reference(const float* x, unsigned int* hist, int n, int nbins) {
    for (int b = 0; b < nbins; ++b) hist[b] = 0;
    for (int i = 0; i < n; ++i) {
        int b = (int)(x[i] * (float)nbins);
        if (b > nbins - 1) b = nbins - 1;
        hist[b] += 1;
    }
}
