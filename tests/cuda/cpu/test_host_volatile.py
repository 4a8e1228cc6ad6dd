"""Host code's ``volatile`` pointers stay plain C++ (issue 19, part 2): only device code is rewritten
for warp lockstep. Rewritten host pointers broke ordinary programs - silently, as here."""

from __future__ import annotations

from veriforge.cuda import cpu

# The pattern of a flag in pinned memory a kernel polls (as in NVIDIA's p2p bandwidth sample): the
# host's `volatile int* flag` is allocated through `(void**)&flag`. Rewritten to a LockstepPtr,
# `&flag` was the wrapper's address, cudaHostAlloc wrote into the wrapper, and `*flag` read garbage.
PINNED_FLAG = r"""
#include <cstdio>
#include <cuda_runtime.h>
__global__ void wait_for(volatile int* flag, long long spins) {
    for (long long k = 0; k < spins && !*flag; ++k) {}
}
int main() {
    volatile int* flag = NULL;
    cudaHostAlloc((void**)&flag, sizeof(*flag), cudaHostAllocPortable);
    *flag = 0;
    wait_for<<<1, 1>>>(flag, 1000);
    *flag = 1;
    cudaDeviceSynchronize();
    volatile int* other = (volatile int*)(size_t)0;  // an integer made into a pointer: plain C++ here
    printf("flag %d %d\n", *flag, other == nullptr);
    cudaFreeHost((void*)flag);
    return 0;
}
"""


def test_host_volatile_pointers_are_plain_pointers() -> None:
    res = cpu.run_program(PINNED_FLAG, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "flag 1 1"
