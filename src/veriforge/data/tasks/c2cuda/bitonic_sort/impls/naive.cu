// Textbook bitonic sort: for every merge size k and every stride j, one kernel launch in which thread i
// compares keys[i] with keys[i ^ j] (only the lower index of each pair acts). O(n log^2 n) global
// memory traffic and log2(n)*(log2(n)+1)/2 launches.
__global__ void bitonic_step(int* keys, int n, int j, int k) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int partner = i ^ j;
    if (partner > i) {
        int a = keys[i], b = keys[partner];
        bool ascending = (i & k) == 0;
        if ((a > b) == ascending) {
            keys[i] = b;
            keys[partner] = a;
        }
    }
}

extern "C" void solve(int* keys, int n) {
    int threads = n < 256 ? n : 256;
    if (threads < 1) return;
    int blocks = (n + threads - 1) / threads;
    for (int k = 2; k <= n; k <<= 1) {
        for (int j = k >> 1; j > 0; j >>= 1) {
            bitonic_step<<<blocks, threads>>>(keys, n, j, k);
        }
    }
}
