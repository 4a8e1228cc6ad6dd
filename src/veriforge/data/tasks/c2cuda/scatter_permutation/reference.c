/* Serial reference: out[idx[i]] = src[i], idx a permutation of 0..n-1. */
void reference(const float* src, const int* idx, float* out, int n) {
    for (int i = 0; i < n; ++i) out[idx[i]] = src[i];
}
