/* Serial reference (inplace, whole, ascending). */
void reference(int* keys, int n) {
    for (int a = 1; a < n; ++a) {
        int key = keys[a];
        int b = a - 1;
        while (b >= 0 && (keys[b] > key)) {
            keys[b + 1] = keys[b];
            --b;
        }
        keys[b + 1] = key;
    }
}
