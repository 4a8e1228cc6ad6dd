#include <stdlib.h>

/* Serial reference: ascending sort of int32 keys (qsort with an overflow-safe comparison). */
static int cmp_int(const void* a, const void* b) {
    int x = *(const int*)a, y = *(const int*)b;
    return (x > y) - (x < y);
}

void reference(int* keys, int n) {
    qsort(keys, (size_t)n, sizeof(int), cmp_int);
}
