"""Every way a launch or a build can go wrong comes back as a clear error, never a hang, a dead
caller or silent garbage."""

from __future__ import annotations

import re

import numpy as np
import pytest

from veriforge.cuda import cpu

FAULTY = r"""
#include <cassert>
__global__ void copy(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i];
}
template <int N> __global__ void fill(int* x) { x[threadIdx.x] = N; }
__global__ void divergent(int* x) {
    if (threadIdx.x < 16) {
        x[threadIdx.x] = 1;
        __syncthreads();
    } else {
        __syncthreads();
    }
}
__global__ void early_exit(int* x) {
    __shared__ int s[32];
    if (threadIdx.x >= 8) return;
    s[threadIdx.x] = 2 * x[threadIdx.x];
    __syncthreads();
    x[threadIdx.x] = s[7 - threadIdx.x];
}
__global__ void deadlock(int* x) {
    int v = x[threadIdx.x];
    if (threadIdx.x < 16) v = __shfl_down_sync(0xffffffff, v, 1);
    __syncthreads();
    x[threadIdx.x] = v;
}
__global__ void spin(volatile int* flag) {
    while (flag[0] == 0) { }
}
__global__ void wild_write(int* x) {
    x[threadIdx.x + (1 << 30)] = 1;
}
__global__ void trapper(int* x) {
    if (threadIdx.x == 3) __trap();
    x[threadIdx.x] = 1;
}
__global__ void asserter(int* x) {
    assert(x[threadIdx.x] >= 0);
}
__global__ void bad_mask(int* x) {
    x[threadIdx.x] = __shfl_sync(0x1u, x[threadIdx.x], 0);
}
__global__ void exit_then_diverge(int* x) {
    if (threadIdx.x >= 24) return;
    if (threadIdx.x < 8) {
        __syncthreads();
    } else {
        x[threadIdx.x] = 1;
        __syncthreads();
    }
}
__global__ void exit_then_count(const int* x, int* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int c = __syncthreads_count(x[i] > 0);
    if (threadIdx.x == 0) out[blockIdx.x] = c;
}
"""


@pytest.fixture(scope="module")
def mod(compile_cu):
    return compile_cu(FAULTY)


def _line(src: str, needle: str, nth: int = 1) -> int:
    hits = [i for i, line in enumerate(src.splitlines(), 1) if needle in line]
    return hits[nth - 1]


@pytest.mark.parametrize(
    ("grid", "block", "shared", "message"),
    [
        (1, 1025, 0, "1025 threads; the limit is 1024"),
        (1, (2, 2, 65), 0, "per-dimension limits"),
        ((1, 70000), 32, 0, "exceeds the limits"),
        (1, 32, 300_000, "the limit is 49152"),
        (0, 32, 0, ">= 1"),
        ((1, 2, 3, 4), 32, 0, "tuple of 1-3 ints"),
    ],
)
def test_bad_launch_configurations(mod, grid, block, shared, message):
    x = np.zeros(4, np.float32)
    with pytest.raises(cpu.LaunchError, match=re.escape(message)):
        mod.launch("copy", grid, block, [x, x, 4], shared_mem=shared)


def test_shared_memory_opt_in_like_cudaFuncSetAttribute(mod):
    x = np.zeros(4, np.float32)
    with pytest.raises(cpu.LaunchError, match="set_max_dynamic_shared_memory"):
        mod.launch("copy", 1, 32, [x, x, 4], shared_mem=64 * 1024)
    mod.set_max_dynamic_shared_memory("copy", 100 * 1024)
    mod.launch("copy", 1, 32, [x, x, 4], shared_mem=64 * 1024)
    with pytest.raises(cpu.LaunchError):
        mod.set_max_dynamic_shared_memory("copy", 300 * 1024)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([np.zeros(4, np.float32)], "takes 3 argument"),
        ([np.zeros(4, np.float32), np.zeros(4, np.float32), 2.5], "expects an integer"),
        ([np.zeros(4, np.float32), np.zeros(4, np.float32), 2**40], "out of range"),
        ([np.zeros(4, np.float64), np.zeros(4, np.float32), 4], "float64 array, expected float32"),
        ([[1.0, 2.0], np.zeros(4, np.float32), 4], "pass a numpy array"),
    ],
)
def test_bad_arguments(mod, args, message):
    with pytest.raises(cpu.LaunchError, match=re.escape(message)):
        mod.launch("copy", 1, 32, args)


def test_read_only_array_for_non_const_pointer(mod):
    y = np.zeros(4, np.float32)
    y.flags.writeable = False
    with pytest.raises(cpu.LaunchError, match="read-only"):
        mod.launch("copy", 1, 32, [np.zeros(4, np.float32), y, 4])


def test_unknown_kernel_and_bad_instantiation(mod):
    with pytest.raises(cpu.LaunchError, match=r"unknown kernel 'nope'.*copy.*fill<\.\.\.>"):
        mod.launch("nope", 1, 1, [])
    with pytest.raises(cpu.LaunchError, match=r"cannot instantiate kernel 'fill<float>'"):
        mod.launch("fill<float>", 1, 1, [np.zeros(1, np.int32)])
    x = np.zeros(8, np.int32)
    mod.launch("fill<5>", 1, 8, [x])  # the module still works after the failed instantiation
    assert np.all(x == 5)


def test_divergent_barrier_names_kernel_and_both_lines(mod):
    with pytest.raises(cpu.KernelFault) as err:
        mod.launch("divergent", 1, 32, [np.zeros(32, np.int32)])
    msg = str(err.value)
    assert "kernel 'divergent'" in msg and "divergent __syncthreads()" in msg
    assert f"line {_line(FAULTY, '__syncthreads();', 1)}" in msg
    assert f"line {_line(FAULTY, '__syncthreads();', 2)}" in msg


def test_threads_that_returned_do_not_block_a_barrier(mod):
    # `if (i >= n) return; ... __syncthreads();` works on Volta+ GPUs: exited threads no longer
    # take part in the barrier. In both thread orders (the race probe runs threads in reverse).
    x = np.arange(32, dtype=np.int32)
    mod.launch("early_exit", 1, 32, [x])
    np.testing.assert_array_equal(x[:8], 2 * np.arange(8)[::-1])
    np.testing.assert_array_equal(x[8:], np.arange(8, 32))
    assert mod.race_check("early_exit", 1, 32, [np.arange(32, dtype=np.int32)]).ok


def test_syncthreads_count_ignores_exited_threads(mod):
    x = np.array([1, -1, 2, 3, -5, 6, 7, 8, 9, -1], np.int32)
    out = np.full(3, -1, np.int32)
    mod.launch("exit_then_count", 3, 4, [x, out, 10])  # last block: threads 2, 3 exit
    np.testing.assert_array_equal(out, [3, 3, 1])


def test_divergent_barrier_after_some_threads_exited_is_still_a_fault(mod):
    with pytest.raises(cpu.KernelFault) as err:
        mod.launch("exit_then_diverge", 1, 32, [np.zeros(32, np.int32)])
    msg = str(err.value)
    assert "kernel 'exit_then_diverge'" in msg and "divergent __syncthreads()" in msg
    assert f"line {_line(FAULTY, '__syncthreads();', 5)}" in msg
    assert f"line {_line(FAULTY, '__syncthreads();', 6)}" in msg


def test_deadlock_between_warp_shuffle_and_barrier(mod):
    with pytest.raises(cpu.KernelFault) as err:
        mod.launch("deadlock", 1, 32, [np.arange(32, dtype=np.int32)])
    msg = str(err.value)
    assert "deadlock" in msg and "kernel 'deadlock'" in msg
    assert f"__shfl_down_sync (line {_line(FAULTY, '__shfl_down_sync')}" in msg
    assert f"__syncthreads() (line {_line(FAULTY, '__syncthreads();', 4)}" in msg


def test_warp_mask_without_calling_lane(mod):
    with pytest.raises(cpu.KernelFault, match="does not include the calling lane"):
        mod.launch("bad_mask", 1, 32, [np.zeros(32, np.int32)])


def test_timeout_kills_the_kernel_and_the_module_recovers(mod):
    flag = np.zeros(1, np.int32)
    with pytest.raises(cpu.KernelTimeoutError, match="did not finish within 1 s"):
        mod.launch("spin", 1, 1, [flag], timeout=1.0)
    assert isinstance(cpu.KernelTimeoutError("x"), cpu.KernelFault)
    x = np.arange(4, dtype=np.float32)
    y = np.zeros(4, np.float32)
    mod.launch("copy", 1, 32, [x, y, 4])
    np.testing.assert_array_equal(x, y)


def test_segfault_in_kernel_does_not_kill_the_caller(mod):
    with pytest.raises(cpu.KernelFault, match=r"kernel 'wild_write' crashed .*sanitize=True"):
        mod.launch("wild_write", 1, 4, [np.zeros(4, np.int32)])
    x = np.zeros(8, np.int32)
    mod.launch("fill<5>", 1, 8, [x])
    assert np.all(x == 5)


def test_trap_and_assert(mod):
    with pytest.raises(cpu.KernelFault, match=rf"__trap\(\) at line {_line(FAULTY, '__trap()')} in thread \(3,0,0\)"):
        mod.launch("trapper", 1, 8, [np.zeros(8, np.int32)])
    line = _line(FAULTY, "assert(x[threadIdx.x] >= 0)")
    mod.launch("fill<5>", 1, 8, [np.zeros(8, np.int32)])
    server = mod._server
    with pytest.raises(cpu.KernelFault) as err:
        mod.launch("asserter", 1, 4, [np.array([0, 1, -1, 2], np.int32)])
    assert re.search(rf"kernel 'asserter', block \(0,0,0\): device-side assert triggered: kernel\.cu:{line}: "
                     r"void asserter\(int\*\): block: \[0,0,0\], thread: \[2,0,0\] "
                     r"Assertion `x\[threadIdx.x\] >= 0` failed\.", str(err.value)), str(err.value)
    # the kernel aborted, the server did not (no SIGABRT): the next launch runs in the same process
    assert server is not None and server.alive and mod._server is server
    x = np.zeros(8, np.int32)
    mod.launch("fill<5>", 1, 8, [x])
    assert np.all(x == 5) and mod._server is server


def test_sanitize_reports_out_of_bounds_with_kernel_line(compile_cu):
    src = """__global__ void no_guard(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = 2.0f * x[i];
}
"""
    mod = compile_cu(src, sanitize=True)
    x = np.ones(100, np.float32)
    y = np.zeros(100, np.float32)
    mod.launch("no_guard", 1, 100, [x, y, 100])  # in bounds: fine
    assert np.all(y == 2)
    with pytest.raises(cpu.KernelFault) as err:
        mod.launch("no_guard", 1, 128, [x, y, 100])
    msg = str(err.value)
    assert "heap-buffer-overflow" in msg and "READ of size 4" in msg
    assert "at kernel.cu:3" in msg


def test_compile_error_points_at_the_users_line():
    src = "__global__ void k(float* x) {\n    int i = threadIdx.x;\n    x[i] = undefined_thing * 2;\n}\n"
    with pytest.raises(cpu.CompileError) as err:
        cpu.compile(src)
    e = err.value
    assert e.diagnostics and e.diagnostics[0].file == "kernel.cu" and e.diagnostics[0].line == 3
    assert "undefined_thing" in str(e) and str(e).startswith("kernel.cu:3:")
    assert "/vf_" not in str(e) and "cpu-runtime" not in e.log


def test_error_inside_runtime_templates_is_reported_at_the_call_site():
    src = "__global__ void k(float* x) {\n    x[0] = 1.0f;\n    atomicAnd(x, 1.0f);\n}\n"
    with pytest.raises(cpu.CompileError) as err:
        cpu.compile(src, filename="bits.cu")
    assert any(d.file == "bits.cu" and d.line == 3 for d in err.value.diagnostics)
    assert str(err.value).startswith("bits.cu:3:")


def test_unsupported_feature_is_named_at_compile_time():
    src = '__global__ void k(int* x) {\n    x[0] = 1;\n    asm volatile("pmevent 1;");\n}\n'  # outside the PTX subset
    with pytest.raises(cpu.UnsupportedFeatureError, match=r"inline PTX assembly .*'pmevent 1'.*kernel\.cu:3"):
        cpu.compile(src)


def test_unsupported_runtime_api_is_named():
    src = ("#include <cuda_runtime.h>\nint main() {\n    cudaIpcMemHandle_t h;\n    cudaIpcGetMemHandle(&h, 0);\n"
           "    return 0;\n}\n")
    with pytest.raises(cpu.UnsupportedFeatureError, match="cudaIpcGetMemHandle"):
        cpu.run_program(src)


def test_defines_reach_the_source(compile_cu):
    mod = compile_cu("__global__ void k(int* x) { x[threadIdx.x] = SCALE * threadIdx.x + OFFSET; }",
                     defines={"SCALE": 3, "OFFSET": "(-1)"})
    x = np.zeros(16, np.int32)
    mod.launch("k", 1, 16, [x])
    np.testing.assert_array_equal(x, 3 * np.arange(16) - 1)


def test_single_letter_user_macros_do_not_break_the_runtime(compile_cu):
    """`-D N=64` / `#define K 16` are everyday CUDA; the runtime's templates use N, T, K ... as names,
    so its headers shield themselves (push/undef/pop) and the user's macros still reach the user's code."""
    src = (
        "#include <cooperative_groups.h>\n#include <mma.h>\nnamespace cg = cooperative_groups;\n"
        "__global__ void k(int* x) {\n"
        "    cg::thread_block b = cg::this_thread_block();\n"
        "    x[threadIdx.x] = N * threadIdx.x + K + (int)sizeof(T) + (int)b.size() * 0;\n}\n"
    )
    mod = compile_cu(src, defines={"N": 64, "K": 3, "T": "double", "M": 7})
    x = np.zeros(8, np.int32)
    mod.launch("k", 1, 8, [x])
    np.testing.assert_array_equal(x, 64 * np.arange(8) + 3 + 8)
