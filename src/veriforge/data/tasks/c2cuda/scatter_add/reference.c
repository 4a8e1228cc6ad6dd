/* Serial reference: out[j] = sum of src[i] with idx[i] == j, accumulated in double. */
#include <stdlib.h>

void reference(const float* src, const int* idx, float* out, int n, int n_out) {
    double* acc = (double*)calloc((size_t)n_out, sizeof(double));
    for (int i = 0; i < n; ++i) acc[idx[i]] += src[i];
    for (int j = 0; j < n_out; ++j) out[j] = (float)acc[j];
    free(acc);
}
