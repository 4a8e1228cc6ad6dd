#include <math.h>

/* Serial reference: two-pass layer norm per row in double, then affine gamma/beta. */
void reference(const float* x, const float* gamma, const float* beta, float* y, int rows, int cols, float eps) {
    for (int r = 0; r < rows; ++r) {
        const float* in = x + (long)r * cols;
        float* out = y + (long)r * cols;
        double mean = 0.0;
        for (int c = 0; c < cols; ++c) mean += in[c];
        mean /= cols;
        double var = 0.0;
        for (int c = 0; c < cols; ++c) {
            double d = in[c] - mean;
            var += d * d;
        }
        var /= cols;
        double inv = 1.0 / sqrt(var + (double)eps);
        for (int c = 0; c < cols; ++c) out[c] = (float)((in[c] - mean) * inv * gamma[c] + beta[c]);
    }
}
