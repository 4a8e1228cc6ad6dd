#include <math.h>

/* Serial reference: y = x / sqrt(mean(x^2) + eps) * gamma per row, accumulated in double. */
void reference(const float* x, const float* gamma, float* y, int rows, int cols, float eps) {
    for (int r = 0; r < rows; ++r) {
        const float* in = x + (long)r * cols;
        float* out = y + (long)r * cols;
        double ss = 0.0;
        for (int c = 0; c < cols; ++c) ss += (double)in[c] * in[c];
        double inv = 1.0 / sqrt(ss / cols + (double)eps);
        for (int c = 0; c < cols; ++c) out[c] = (float)(in[c] * inv * gamma[c]);
    }
}
