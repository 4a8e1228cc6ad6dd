"""Module.call: extern "C" host launchers that take device pointers and launch kernels themselves,
checked against numpy references with random data, plus their failure modes (faults, crashes,
timeouts, sanitizer reports, bad arguments) and the module staying usable afterwards."""

from __future__ import annotations

import time

import numpy as np
import pytest

from veriforge.cuda import cpu
from veriforge.cuda.cpu.source import scan

SOURCE = r"""
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

__global__ void square(const float* a, float* t, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) t[i] = a[i] * a[i];
}
__global__ void scale_add(const float* t, const float* a, float* c, float s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = s * t[i] + a[i];
}
// c = 3 a^2 + a, through a cudaMalloc'd temporary and two launches
extern "C" void solve(const float* a, float* c, int n) {
    float* t = nullptr;
    cudaMalloc(&t, n * sizeof(float));
    square<<<(n + 127) / 128, 128>>>(a, t, n);
    scale_add<<<(n + 127) / 128, 128>>>(t, a, c, 3.0f, n);
    cudaDeviceSynchronize();
    cudaFree(t);
}

extern "C" void scalars(float f, double d, int i, unsigned u, long long ll, size_t sz, bool b, short s,
                        char c, int64_t i64, uint32_t u32, const int ci, double* out) {
    out[0] = f; out[1] = d; out[2] = i; out[3] = u; out[4] = (double)ll; out[5] = (double)sz;
    out[6] = b ? 1.0 : 0.0; out[7] = s; out[8] = c; out[9] = (double)i64; out[10] = u32; out[11] = ci;
}

__global__ void count_pos(const int* x, int* counter, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && x[i] > 0) atomicAdd(counter, 1);
}
extern "C" int count_positive(const int* x, int n) {          // result back through a device->host copy
    int* d = nullptr;
    cudaMalloc(&d, sizeof(int));
    cudaMemset(d, 0, sizeof(int));
    count_pos<<<(n + 63) / 64, 64>>>(x, d, n);
    int h = 0;
    cudaMemcpy(&h, d, sizeof(int), cudaMemcpyDeviceToHost);
    cudaFree(d);
    return h;
}
extern "C" double mean_of(const double* x, long long n) {
    std::vector<double> h(n);
    cudaMemcpy(h.data(), x, n * sizeof(double), cudaMemcpyDeviceToHost);
    double s = 0;
    for (double v : h) s += v;
    return s / n;
}
extern "C" unsigned long long big_unsigned() { return 18446744073709551615ull; }
extern "C" bool is_even(int v) { return v % 2 == 0; }
extern "C" cudaError_t free_argument(float* p) { return cudaFree(p); }   // not ours to free
extern "C" int memory_type(const void* p) {
    cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) return -1;
    return (int)a.type;
}
extern "C" int temp_memory_type() {
    float* d = nullptr;
    cudaMalloc(&d, 64);
    int host_local = 0;
    int t = memory_type(d) * 10 + memory_type(&host_local);
    cudaFree(d);
    return t;
}

__global__ void bump(int* x, int n, int by) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += by;
}
extern "C" void increment(int* x, int n, int by) { bump<<<(n + 31) / 32, 32>>>(x, n, by); }
extern "C" void add_into(const int* src, int* dst, int n) {    // reads and writes the same array if aliased
    std::vector<int> h(n);
    cudaMemcpy(h.data(), src, n * sizeof(int), cudaMemcpyDeviceToHost);
    for (int& v : h) v *= 2;
    cudaMemcpy(dst, h.data(), n * sizeof(int), cudaMemcpyHostToDevice);
}

__global__ void half_axpy(const __half* x, __half* y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __float2half(a * __half2float(x[i]) + __half2float(y[i]));
}
extern "C" void hax(const __half* x, __half* y, float a, int n) { half_axpy<<<(n + 63) / 64, 64>>>(x, y, a, n); }
__global__ void bf_twice(__nv_bfloat16* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = __float2bfloat16(2.f * __bfloat162float(x[i]));
}
extern "C" void bf16_double(__nv_bfloat16* x, int n) { bf_twice<<<1, 64>>>(x, n); }
extern "C" __half half_first(const __half* x) {
    __half h;
    cudaMemcpy(&h, x, sizeof h, cudaMemcpyDeviceToHost);
    return h;
}

__constant__ float c_coef[2];
__global__ void poly(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = c_coef[0] * x[i] + c_coef[1];
}
// two streams, async copies through a device staging buffer, events, a constant, memset
extern "C" float streamed(const float* x, float* y, int n, float a, float b) {
    float coef[2] = {a, b};
    cudaMemcpyToSymbol(c_coef, coef, sizeof coef);
    cudaStream_t s1, s2;
    cudaStreamCreate(&s1);
    cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
    cudaEvent_t start, stop, copied;
    cudaEventCreate(&start); cudaEventCreate(&stop); cudaEventCreate(&copied);
    float* stage = nullptr;
    cudaMalloc(&stage, n * sizeof(float));
    cudaMemsetAsync(y, 0, n * sizeof(float), s2);
    cudaEventRecord(start, s1);
    cudaMemcpyAsync(stage, x, n * sizeof(float), cudaMemcpyDeviceToDevice, s1);
    cudaEventRecord(copied, s1);
    cudaStreamWaitEvent(s2, copied, 0);
    poly<<<(n + 127) / 128, 128, 0, s2>>>(stage, y, n);
    cudaEventRecord(stop, s2);
    cudaStreamSynchronize(s2);
    float ms = -1.f;
    cudaEventElapsedTime(&ms, start, stop);
    cudaFree(stage);
    cudaEventDestroy(start); cudaEventDestroy(stop); cudaEventDestroy(copied);
    cudaStreamDestroy(s1); cudaStreamDestroy(s2);
    return ms;
}

__global__ void hello(int tag) { if (threadIdx.x == 0) printf("kernel says %d\n", tag); }
extern "C" void chatty(int tag) {
    printf("host says %d\n", tag);
    hello<<<1, 32>>>(tag);
    cudaDeviceSynchronize();
}

__global__ void null_write(int* p) { p[threadIdx.x] = 1; }
extern "C" void crash_in_kernel() { null_write<<<1, 1>>>(nullptr); }
extern "C" void crash_in_host() { abort(); }

__global__ void spin(volatile int* flag) { while (*flag == 0) {} }
extern "C" void hang(int* flag) { spin<<<1, 1>>>(flag); }

__global__ void divergent(float* x) {  // half the block at a barrier, half in a shuffle: deadlock
    if (threadIdx.x < 16) {
        __syncthreads();
    } else { x[threadIdx.x] = __shfl_sync(0xffffffff, 2.f, 0); }
    x[threadIdx.x] = 1.f;
}
extern "C" int divergent_barrier(float* x) {
    divergent<<<1, 32>>>(x);
    cudaError_t launch = cudaGetLastError();
    cudaError_t later = cudaDeviceSynchronize();          // sticky, like a real device fault
    printf("launch=%d later=%d\n", (int)launch, (int)later);
    return (int)launch;
}
extern "C" void bad_config(float* x) { square<<<1, 2048>>>(x, x, 1); }

static float* g_workspace = nullptr;               // a persistent workspace, kept across calls
extern "C" long long workspace_address() {
    if (!g_workspace) cudaMalloc(&g_workspace, 1024);
    return (long long)(uintptr_t)g_workspace;
}

extern "C" void by_reference(int& x) { x = 1; }    // listed, not callable from Python
extern "C" __global__ void c_kernel(float* x) { x[0] = 1.f; }
extern "C" int declared_first(int v);
int declared_first(int v) { return v + 1; }
"""


def _line_of(source: str, text: str) -> int:
    """kernel.cu line of the only source line equal to ``text`` (the module's line 1 is source line 1)."""
    lines = source.split("\n")
    assert lines.count(text) == 1
    return lines.index(text) + 1


@pytest.fixture(scope="module")
def mod(compile_cu):
    return compile_cu(SOURCE)


def test_solve_launches_two_kernels_with_a_temporary(mod):
    rng = np.random.default_rng(1)
    for n in (1, 127, 1000):
        a = rng.standard_normal(n).astype(np.float32)
        c = np.zeros(n, np.float32)
        assert mod.call("solve", [a, c, n]) is None
        np.testing.assert_allclose(c, 3 * a * a + a, rtol=1e-6, atol=1e-6)
    assert mod.last_call.function == "solve" and mod.last_call.value is None and mod.last_call.seconds > 0


def test_functions_lists_extern_c_host_functions_with_signatures(mod):
    fns = mod.functions
    assert fns["solve"].signature == "void solve(const float*, float*, int)"
    assert fns["mean_of"].signature.startswith("double mean_of(const double*, long long")
    assert fns["declared_first"].signature == "int declared_first(int)"
    assert "c_kernel" not in fns and "c_kernel" in mod.kernels  # __global__ stays a kernel
    assert "square" not in fns
    assert fns["by_reference"].problem and not fns["solve"].problem
    with pytest.raises(cpu.LaunchError, match="cannot be called from Python: a parameter is a reference"):
        mod.call("by_reference", [1])


def test_scalar_parameter_types(mod):
    out = np.zeros(12, np.float64)
    args = [np.float32(1.5), 2.25, -7, 4000000000, -(2**40), 2**40 + 3, True, np.int16(-300), 65,
            np.int64(-(2**50)), np.uint32(4294967295), 11, out]
    mod.call("scalars", args)
    np.testing.assert_array_equal(out, [1.5, 2.25, -7, 4000000000, -(2**40), 2**40 + 3, 1, -300, 65,
                                        -(2**50), 4294967295, 11])
    bad = list(args)
    bad[3] = -1
    with pytest.raises(cpu.LaunchError, match=r"argument 3 \(unsigned int\): -1 is out of range"):
        mod.call("scalars", bad)
    bad = list(args)
    bad[2] = 1.5
    with pytest.raises(cpu.LaunchError, match=r"argument 2 \(int\) expects an integer"):
        mod.call("scalars", bad)


def test_return_values(mod):
    rng = np.random.default_rng(2)
    x = rng.integers(-50, 50, 777).astype(np.int32)
    got = mod.call("count_positive", [x, x.size])
    assert isinstance(got, int) and got == int((x > 0).sum())
    d = rng.standard_normal(300)
    mean = mod.call("mean_of", [d, d.size])
    assert isinstance(mean, float) and mean == pytest.approx(d.mean(), rel=1e-12)
    assert mod.call("big_unsigned", []) == 2**64 - 1
    assert mod.call("is_even", [4]) is True and mod.call("is_even", [5]) is False
    assert mod.call("declared_first", [41]) == 42
    assert mod.call("half_first", [np.array([0.75, 2.0], np.float16)]) == 0.75


def test_arguments_are_device_memory(mod):
    x = np.ones(8, np.float32)
    assert mod.call("memory_type", [x]) == 2  # cudaMemoryTypeDevice
    assert mod.call("temp_memory_type", []) == 20  # cudaMalloc'd: device; a host local: unregistered
    assert mod.call("free_argument", [x]) == 1  # cudaErrorInvalidValue: the caller owns it
    np.testing.assert_array_equal(x, 1)


def test_inout_arrays_are_updated_in_place(mod):
    x = np.arange(100, dtype=np.int32)
    view = x[::2]  # a strided view is written back into its base
    mod.call("increment", [view, view.size, 5])
    assert np.array_equal(x[::2], np.arange(0, 100, 2) + 5) and np.array_equal(x[1::2], np.arange(1, 100, 2))
    mod.call("increment", [x, x.size, -1])
    mod.call("increment", [x, x.size, -1])
    expected = np.arange(100) - 2
    expected[::2] += 5
    assert np.array_equal(x, expected)
    y = np.arange(10, dtype=np.int32)
    mod.call("add_into", [y, y, 10])  # the same array twice is one device buffer
    assert np.array_equal(y, np.arange(10) * 2)


def test_every_ndarray_is_a_buffer_even_zero_d(mod):
    x = np.array(7, dtype=np.int32)  # 0-d: a one-element buffer
    mod.call("increment", [x, 1, 3])
    assert int(x) == 10
    with pytest.raises(cpu.LaunchError, match=r"argument 1 \(int\) expects an integer"):
        mod.call("increment", [x, np.array(1, np.int32), 3])


def test_half_buffers(mod):
    rng = np.random.default_rng(3)
    x = rng.standard_normal(200).astype(np.float16)
    y = rng.standard_normal(200).astype(np.float16)
    expected = (0.5 * x.astype(np.float32) + y.astype(np.float32)).astype(np.float16)
    mod.call("hax", [x, y, 0.5, 200])
    np.testing.assert_allclose(y.astype(np.float32), expected.astype(np.float32), rtol=2e-3, atol=2e-3)
    # bfloat16 travels as the int16 bits of the values (numpy has no bfloat16); doubling adds 1 to the exponent
    values = np.array([1.0, -3.5, 0.15625, 1000.0], np.float32)
    bits = (values.view(np.uint32) >> 16).astype(np.uint16).view(np.int16)
    mod.call("bf16_double", [bits, 4])
    back = (bits.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
    np.testing.assert_array_equal(back, 2 * values)
    with pytest.raises(cpu.LaunchError, match=r"__nv_bfloat16\*\): got a float32 array"):
        mod.call("bf16_double", [values, 4])


def test_streams_events_async_copies_and_constants(mod):
    rng = np.random.default_rng(4)
    x = rng.standard_normal(500).astype(np.float32)
    y = np.full(500, np.nan, np.float32)
    ms = mod.call("streamed", [x, y, 500, 2.0, -1.0])
    np.testing.assert_allclose(y, 2 * x - 1, rtol=1e-6, atol=1e-6)
    assert isinstance(ms, float) and ms >= 0.0
    mod.call("streamed", [x, y, 500, -1.0, 0.5])  # the constant is rewritten per call
    np.testing.assert_allclose(y, -x + 0.5, rtol=1e-6, atol=1e-6)


def test_printf_output_of_host_code_and_kernels(mod):
    mod.call("chatty", [42])
    assert mod.last_stdout == "host says 42\nkernel says 42\n"
    mod.call("chatty", [7])
    assert mod.last_stdout == "host says 7\nkernel says 7\n"  # per call, not accumulated


def test_crash_in_a_kernel_is_a_fault_and_the_module_recovers(mod):
    with pytest.raises(cpu.KernelFault, match=r"host function 'crash_in_kernel' crashed.*in kernel 'null_write"):
        mod.call("crash_in_kernel", [])
    with pytest.raises(cpu.KernelFault, match=r"host function 'crash_in_host'"):
        mod.call("crash_in_host", [])
    a = np.ones(10, np.float32)
    c = np.zeros(10, np.float32)
    mod.call("solve", [a, c, 10])
    np.testing.assert_allclose(c, 4.0)


def test_endless_loop_times_out_and_the_module_recovers(mod):
    flag = np.zeros(1, np.int32)
    t0 = time.monotonic()
    with pytest.raises(cpu.KernelTimeoutError, match="host function 'hang' did not finish within 1 s"):
        mod.call("hang", [flag], timeout=1.0)
    assert time.monotonic() - t0 < 10
    assert mod.call("is_even", [2]) is True


def test_fault_inside_a_kernel_raises_and_is_visible_to_the_function(mod):
    x = np.zeros(32, np.float32)
    barrier_line = _line_of(SOURCE, "        __syncthreads();")
    with pytest.raises(cpu.KernelFault, match=rf"host function 'divergent_barrier': kernel 'divergent'.*"
                                              rf"__syncthreads\(\) \(line {barrier_line}\b.*__shfl_sync"):
        mod.call("divergent_barrier", [x])
    # the function saw the error itself (launch error and the sticky fault), and it is not written back
    assert mod.last_call.stdout == "launch=719 later=719\n"
    assert np.all(x == 0)
    # the fault does not stick to the next call
    assert mod.call("count_positive", [np.array([1, -1, 3], np.int32), 3]) == 2


def test_invalid_launch_configuration_inside_is_a_launch_error(mod):
    with pytest.raises(cpu.LaunchError, match=r"'bad_config'.*kernel 'square'.*invalid launch configuration.*2048"):
        mod.call("bad_config", [np.zeros(1, np.float32)])


def test_server_state_persists_between_calls(mod):
    first = mod.call("workspace_address", [])
    pid = mod._server.proc.pid
    assert first != 0 and mod.call("workspace_address", []) == first
    a = np.ones(64, np.float32)
    c = np.zeros(64, np.float32)
    t0 = time.perf_counter()
    for _ in range(20):
        mod.call("solve", [a, c, 64])
    per_call = (time.perf_counter() - t0) / 20
    assert mod._server.proc.pid == pid  # no restart per call
    assert per_call < 0.05, f"{per_call * 1e3:.1f} ms per call"


def test_bad_names_and_arguments(mod):
    with pytest.raises(cpu.LaunchError,
                       match=r"unknown host function 'nope'.*void solve\(const float\*, float\*, int\)"):
        mod.call("nope", [])
    with pytest.raises(cpu.LaunchError, match=r"'square' is a __global__ kernel: run it with launch\(\)"):
        mod.call("square", [])
    with pytest.raises(cpu.LaunchError, match=r"host function 'solve' takes 3 argument\(s\).*got 2"):
        mod.call("solve", [np.zeros(4, np.float32), 4])
    with pytest.raises(cpu.LaunchError, match=r"argument 1 \(float\*\): got a float64 array, expected float32"):
        mod.call("solve", [np.zeros(4, np.float32), np.zeros(4), 4])
    with pytest.raises(cpu.LaunchError, match=r"argument 0 \(const float\*\) is a pointer: pass a numpy array"):
        mod.call("solve", [[1.0, 2.0], np.zeros(2, np.float32), 2])
    ro = np.zeros(4, np.float32)
    ro.flags.writeable = False
    with pytest.raises(cpu.LaunchError, match="non-const pointer but the array is read-only"):
        mod.call("solve", [np.zeros(4, np.float32), ro, 4])


def test_sanitizer_reports_out_of_bounds_in_a_kernel_launched_by_the_function(compile_cu):
    src = r"""
__global__ void shift(const float* a, float* b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) b[i] = a[i + 1];
}
extern "C" void run_shift(const float* a, float* b, int n) {
    shift<<<(n + 31) / 32, 32>>>(a, b, n);
}
__global__ void fill(float* t, int n) { t[n] = 0.f; }
extern "C" void temp_overflow(int n) {
    float* t; cudaMalloc(&t, n * sizeof(float));
    fill<<<1, 1>>>(t, n);
    cudaFree(t);
}
"""
    mod = compile_cu(src, sanitize=True)
    a = np.arange(8, dtype=np.float32)
    b = np.zeros(8, np.float32)
    mod.call("run_shift", [a, b, 7])  # in bounds
    np.testing.assert_array_equal(b[:7], a[1:])
    with pytest.raises(cpu.KernelFault, match=r"heap-buffer-overflow \(READ of size 4\) at kernel\.cu:4"):
        mod.call("run_shift", [a, b, 8])
    with pytest.raises(cpu.KernelFault, match=r"heap-buffer-overflow \(WRITE of size 4\) at kernel\.cu:9"):
        mod.call("temp_overflow", [5])
    mod.call("run_shift", [a, b, 7])  # usable again


def test_scan_finds_extern_c_definitions_only():
    src = r"""
namespace ns { extern "C" int in_ns(int x) { return x; } }
extern "C" {
    struct S { int a; };
    static int helper_decl(int);
    void in_block(float* p) { if (p) { p[0] = 1; } }
    __device__ float device_only(float x) { return x; }
    __host__ __device__ float both(float x) { return x; }
    int printf_like(const char* fmt, ...) { return 0; }
}
extern "C" __global__ void kern(float* x) {}
extern "C" void later(int);
void later(int) {}
extern "C" void never_defined(int);
extern "C" void (*callback)(int);
int main() { return 0; }
// extern "C" void in_comment() {}
"""
    found = scan(src).host_functions
    assert [f.name for f in found] == ["in_ns", "in_block", "both", "later"]
    assert found[0].expr == "ns::in_ns" and found[1].line == 6
