#include <stdlib.h>
#include <string.h>

/* Serial reference: keys_out = keys_in sorted ascending as unsigned 32-bit integers. */
static int cmp_u32(const void* a, const void* b) {
    unsigned int x = *(const unsigned int*)a, y = *(const unsigned int*)b;
    return (x > y) - (x < y);
}

void reference(const unsigned int* keys_in, unsigned int* keys_out, int n) {
    memcpy(keys_out, keys_in, (size_t)n * sizeof(unsigned int));
    qsort(keys_out, (size_t)n, sizeof(unsigned int), cmp_u32);
}
