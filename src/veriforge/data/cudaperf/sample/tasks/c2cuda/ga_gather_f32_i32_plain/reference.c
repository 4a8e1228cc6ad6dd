#include <math.h>
#include <limits.h>

static inline long long ga_map(long long j, long long m) {
    (void)m;
    return j;
}

void reference(const float* src, const int* idx, float* out, int n, int m) {
    for (int i = 0; i < n; ++i) {
        out[i] = src[ga_map(idx[i], m)];
    }
}
