/* Serial reference: out[i] = src[idx[i]]. */
void reference(const float* src, const int* idx, float* out, int n_src, int n) {
    (void)n_src;
    for (int i = 0; i < n; ++i) out[i] = src[idx[i]];
}
