#include <math.h>

void reference(const float* x, float* out, int n) {
    double acc = 0.0;
    for (int i = 0; i < n; ++i) {
        acc += (double)x[i] * (double)x[i];
    }
    out[0] = (float)sqrt(acc);
}
