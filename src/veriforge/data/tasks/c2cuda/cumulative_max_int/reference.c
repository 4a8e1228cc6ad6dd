/* Serial reference: inclusive running maximum of an int array. */
void reference(const int* x, int* y, int n) {
    int m = x[0];
    for (int i = 0; i < n; ++i) {
        if (x[i] > m) m = x[i];
        y[i] = m;
    }
}
