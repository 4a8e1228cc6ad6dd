#include <math.h>

/* Serial reference: row-wise softmax with max subtraction; denominator accumulated in double. */
void reference(const float* x, float* y, int rows, int cols) {
    for (int r = 0; r < rows; ++r) {
        const float* in = x + (long)r * cols;
        float* out = y + (long)r * cols;
        float m = in[0];
        for (int c = 1; c < cols; ++c) m = in[c] > m ? in[c] : m;
        double sum = 0.0;
        for (int c = 0; c < cols; ++c) sum += exp((double)in[c] - (double)m);
        for (int c = 0; c < cols; ++c) out[c] = (float)(exp((double)in[c] - (double)m) / sum);
    }
}
