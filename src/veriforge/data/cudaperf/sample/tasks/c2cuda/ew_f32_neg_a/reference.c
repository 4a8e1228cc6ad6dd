#include <math.h>
#include <limits.h>

static inline float ew_elem(float xa) {
    float t0 = -xa;
    return t0;
}

void reference(const float* a, float* out, int n) {
    for (int i = 0; i < n; ++i) {
        out[i] = ew_elem(a[i]);
    }
}
