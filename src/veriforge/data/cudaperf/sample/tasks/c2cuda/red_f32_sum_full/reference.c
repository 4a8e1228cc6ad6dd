#include <math.h>
#include <limits.h>

typedef struct { double s; } Acc;

static inline Acc acc_identity(void) {
    Acc a;
    a.s = 0;
    return a;
}

static inline Acc acc_lift(float x, int r) {
    Acc a;
    (void)r;
    a.s = x;
    return a;
}

static inline Acc acc_merge(Acc a, Acc b) {
    a.s += b.s;
    return a;
}

static inline float acc_final(Acc a, int R) {
    (void)R;
    return (float)a.s;
}

void reference(const float* x, float* out, int n) {
    const int R = n;
    const int nout = 1;
    for (int o = 0; o < nout; ++o) {
        Acc a = acc_identity();
        for (int r = 0; r < R; ++r) a = acc_merge(a, acc_lift(x[r], r));
        out[o] = acc_final(a, R);
    }
}
