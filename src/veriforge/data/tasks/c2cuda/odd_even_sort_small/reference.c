#include <stdlib.h>

/* Serial reference: ascending sort of finite floats. */
static int cmp_float(const void* a, const void* b) {
    float x = *(const float*)a, y = *(const float*)b;
    return (x > y) - (x < y);
}

void reference(float* keys, int n) {
    qsort(keys, (size_t)n, sizeof(float), cmp_float);
}
