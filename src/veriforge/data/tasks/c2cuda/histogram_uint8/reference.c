void reference(const unsigned char* data, unsigned int* hist, int n) {
    for (int v = 0; v < 256; ++v) hist[v] = 0;
    for (int i = 0; i < n; ++i) hist[data[i]] += 1;
}
