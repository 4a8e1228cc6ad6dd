"""The host-code interpreter behind the estimated time: every launch pattern it must resolve, and the
patterns it must refuse with a reason instead of guessing."""

from __future__ import annotations

import numpy as np
import pytest

from veriforge.cuda.analysis.host import HostUnknownError, host_launches

K = "__global__ void k(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = 0; }\n"


def launches(body: str, scalars: dict, prelude: str = "", **kw):
    src = K + prelude + f'extern "C" void solve(float* x, int n, int m) {{\n{body}\n}}\n'
    return host_launches(src, "solve", scalars, **kw)


def test_dim3_members_in_grid_expression():
    run = launches("dim3 block(16, 16);\n dim3 grid((n + block.x - 1) / block.x, (m + block.y - 1) / block.y);\n"
                   "k<<<grid, block>>>(x, n);", {"n": 47, "m": 33})
    (ln,) = run.launches
    assert ln.grid == (3, 3, 1) and ln.block == (16, 16, 1)
    assert ln.args == (None, 47)


def test_dim3_with_macro_arguments_despite_the_vexing_parse():
    run = launches("dim3 block(TILE, TILE); dim3 grid((n + TILE - 1) / TILE); k<<<grid, block>>>(x, n);",
                   {"n": 100, "m": 1}, prelude="#define TILE 32\n")
    assert run.launches[0].block == (32, 32, 1) and run.launches[0].grid == (4, 1, 1)


def test_multi_pass_reduction_loop_is_unrolled_for_the_config():
    body = """
    int len = n;
    while (len > 1) {
        int blocks = (len + 511) / 512;
        k<<<blocks, 256>>>(x, len);
        len = blocks;
    }"""
    grids = [ln.grid[0] for ln in launches(body, {"n": 1_000_000, "m": 0}).launches]
    assert grids == [1954, 4, 1]
    assert [ln.args[1] for ln in launches(body, {"n": 1_000_000, "m": 0}).launches] == [1_000_000, 1954, 4]
    assert launches(body, {"n": 1, "m": 0}).launches == []  # nothing to reduce: no launch


def test_bitonic_style_nested_for_loops_and_shifts():
    body = """
    for (int size = 2; size <= n; size <<= 1)
        for (int stride = size >> 1; stride > 0; stride >>= 1)
            k<<<n / 256, 256>>>(x, stride);"""
    run = launches(body, {"n": 1024, "m": 0})
    assert len(run.launches) == sum(range(1, 11))  # log2(1024) stages of 1..10 passes
    assert run.launches[-1].args == (None, 1)


def test_helpers_ternary_min_and_ceil_div_function():
    prelude = "static int ceil_div(int a, int b) { return (a + b - 1) / b; }\nconst int THREADS = 128;\n"
    body = "int t = n > 4096 ? 256 : THREADS; int b = std::min(ceil_div(n, t), 64); k<<<b, t>>>(x, n);"
    assert launches(body, {"n": 1000, "m": 0}, prelude=prelude).launches[0].grid[0] == 8
    big = launches(body, {"n": 100_000, "m": 0}, prelude=prelude).launches[0]
    assert big.block[0] == 256 and big.grid[0] == 64


def test_several_kernels_in_sequence_and_an_if_on_a_scalar():
    body = "k<<<(n + 255) / 256, 256>>>(x, n); if (m > 0) { k<<<1, 32>>>(x, m); } else { k<<<2, 64>>>(x, 0); }"
    assert [ln.grid[0] for ln in launches(body, {"n": 1000, "m": 3}).launches] == [4, 1]
    assert [ln.block[0] for ln in launches(body, {"n": 1000, "m": 0}).launches] == [256, 64]


def test_template_kernel_and_template_host_launcher():
    src = """
template <int BLOCK, typename T>
__global__ void tk(T* x, int n) { x[blockIdx.x * BLOCK + threadIdx.x] = 0; }
template <int G>
void launch(float* x, int n) { tk<G * 32, float><<<(n + G * 32 - 1) / (G * 32), G * 32>>>(x, n); }
extern "C" void solve(float* x, int n) { if (n < 100) launch<2>(x, n); else launch<8>(x, n); }
"""
    small = host_launches(src, "solve", {"n": 50}).launches[0]
    assert small.template_args == (64, "float") and small.block == (64, 1, 1) and small.grid == (1, 1, 1)
    assert host_launches(src, "solve", {"n": 1000}).launches[0].template_args[0] == 256


def test_grid_sized_by_sm_count_uses_the_modelled_gpu():
    body = """
    int dev = 0, sms = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    k<<<sms * 4, 256>>>(x, n);"""
    h100 = launches(body, {"n": 10, "m": 0})
    assert h100.launches[0].grid[0] == 132 * 4
    assert any("132" in a for a in h100.assumptions)
    assert launches(body, {"n": 10, "m": 0}, gpu="A100").launches[0].grid[0] == 108 * 4


def test_device_properties_struct():
    body = "cudaDeviceProp prop; cudaGetDeviceProperties(&prop, 0);\n" \
           "k<<<2 * prop.multiProcessorCount, prop.maxThreadsPerBlock / 4>>>(x, n);"
    ln = launches(body, {"n": 10, "m": 0}).launches[0]
    assert ln.grid[0] == 264 and ln.block[0] == 256


def test_pointer_alignment_check_uses_cudamalloc_alignment():
    body = """
    bool aligned = ((reinterpret_cast<uintptr_t>(x) | (size_t)(x + 4)) & 15) == 0;
    if (aligned && n >= 4) k<<<1, 4>>>(x, n); else k<<<1, 1>>>(x, n);
    if ((reinterpret_cast<uintptr_t>(x + 1) & 15) == 0) k<<<9, 9>>>(x, n);"""
    run = launches(body, {"n": 8, "m": 0})
    assert [ln.block[0] for ln in run.launches] == [4]  # x+1 is 4 bytes past a 256-byte boundary
    assert any("aligned to 256 bytes" in a for a in run.assumptions)


def test_value_copied_from_an_input_array_is_read_from_the_case():
    src = K + """extern "C" void solve(const int* row_ptr, float* y, int rows) {
    int nnz = 0;
    cudaMemcpy(&nnz, row_ptr + rows, sizeof(int), cudaMemcpyDeviceToHost);
    if (nnz > 0) k<<<(nnz + 255) / 256, 256>>>(y, nnz);
}"""
    row_ptr = np.array([0, 300, 700, 1000], dtype=np.int32)
    run = host_launches(src, "solve", {"rows": 3}, inputs={"row_ptr": row_ptr})
    assert run.launches[0].grid[0] == 4 and run.launches[0].args[1] == 1000
    with pytest.raises(HostUnknownError, match="nnz"):  # without the input data it is not knowable
        host_launches(src, "solve", {"rows": 3})


def test_error_checks_and_unrelated_unknowns_do_not_block_the_estimate():
    body = """
    float* tmp; cudaMalloc(&tmp, n * sizeof(float));
    int junk = some_library_call(n);
    k<<<(n + 127) / 128, 128>>>(tmp, n);
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) { printf("failed"); return; }
    k<<<1, 32>>>(x, n);"""
    run = launches(body, {"n": 1000, "m": 0})
    assert [ln.grid[0] for ln in run.launches] == [8, 1]


@pytest.mark.parametrize(("body", "reason"), [
    ("int blocks = helper(n); k<<<blocks, 256>>>(x, n);", "helper"),
    ("int c = 0; cudaMemcpy(&c, x, 4, cudaMemcpyDeviceToHost); for (int i = 0; i < c; ++i) k<<<1, 32>>>(x, i);",
     "trip count"),
    ("for (int i = 0; i < n; i += 0) k<<<1, 32>>>(x, i);", "steps"),
    ("if (x[0] > 0) k<<<1, 32>>>(x, n);", "condition"),
])
def test_undeterminable_launch_sequences_are_unknown_with_the_reason(body, reason):
    with pytest.raises(HostUnknownError, match=reason):
        launches(body, {"n": 1000, "m": 0}, max_steps=5000)


def test_missing_entry_is_reported():
    with pytest.raises(HostUnknownError, match="no definition"):
        host_launches(K, "solve", {})


def test_dim3_temporary_in_the_launch():
    ln = launches("k<<<dim3((n + 31) / 32, m), dim3(32, 4)>>>(x, n);", {"n": 100, "m": 3}).launches[0]
    assert ln.grid == (4, 3, 1) and ln.block == (32, 4, 1)


def test_long_host_loop_without_launches_is_skipped_not_fatal():
    body = "int acc = 0; for (int i = 0; i < n; ++i) acc += i; k<<<(n + 255) / 256, 256>>>(x, n);"
    run = launches(body, {"n": 10_000_000, "m": 0})  # far beyond the host-loop step budget
    assert run.launches[0].grid[0] == 39063
    with pytest.raises(HostUnknownError, match="acc"):  # ... but what it computed is unknown, not guessed
        launches(body.replace("(n + 255) / 256", "acc"), {"n": 10_000_000, "m": 0})


@pytest.mark.parametrize("call", ["cudaLaunchKernel((void*)k, dim3(1), dim3(32), args, 0, 0);",
                                  "cub::DeviceReduce::Sum(tmp, bytes, x, x, n);",
                                  "cublasSgemm(h, 0, 0, n, n, n, &a, x, n, x, n, &a, x, n);"])
def test_gpu_work_outside_triple_chevron_launches_is_unknown(call):
    with pytest.raises(HostUnknownError, match="launches GPU work"):
        launches("k<<<1, 32>>>(x, n);\n" + call, {"n": 10, "m": 0})


def test_pointer_arithmetic_in_host_loops():
    body = "float* p = x; for (int c = 0; c < 3; ++c) { k<<<1, 32>>>(p, n); p += n; p++; }"
    assert len(launches(body, {"n": 64, "m": 0}).launches) == 3
