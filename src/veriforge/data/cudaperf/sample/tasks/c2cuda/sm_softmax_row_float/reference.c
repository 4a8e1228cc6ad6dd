#include <math.h>

/* Serial reference (softmax over row slices); every reduction accumulates in double. */
void reference(const float* x, float* y, int rows, int cols) {
    for (int s = 0; s < rows; ++s) {
        double m = -INFINITY;
        for (int e = 0; e < cols; ++e) { double v = (double)x[(s * cols + e)]; m = fmax(m, v); }
        double d = 0.0;
        for (int e = 0; e < cols; ++e) { double v = (double)x[(s * cols + e)]; d = d + exp(v - m); }
        for (int e = 0; e < cols; ++e) { double v = (double)x[(s * cols + e)]; y[(s * cols + e)] = (float)(exp(v - m) / d); }
    }
}
