"""run_program: whole CUDA programs with main(), the runtime API, printf, faults and timeouts."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from veriforge.cuda import cpu

API_TOUR = r"""
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#define CHECK(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) { \
    printf("CUDA error %s at line %d\n", cudaGetErrorString(e_), __LINE__); return 1; } } while (0)

__constant__ float c_scale[4];
__device__ int d_counter;

__global__ void scale(const float* in, float* out, int n) {
    extern __shared__ float tile[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    tile[threadIdx.x] = i < n ? in[i] : 0.0f;
    __syncthreads();
    if (i < n) out[i] = tile[threadIdx.x] * c_scale[i % 4];
    if (i == 0) printf("device says hello, n=%d\n", n);
    if (i < n) atomicAdd(&d_counter, 1);
}

int main(int argc, char** argv) {
    int n = argc > 1 ? atoi(argv[1]) : 1000;
    int extra = 0;
    if (scanf("%d", &extra) != 1) extra = -1;
    int count = 0, dev = -1;
    CHECK(cudaGetDeviceCount(&count));
    CHECK(cudaSetDevice(0));
    CHECK(cudaGetDevice(&dev));
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    printf("devices=%d dev=%d sm=%d.%d warp=%d smem=%zu\n", count, dev, prop.major, prop.minor, prop.warpSize,
           prop.sharedMemPerBlock);
    float *h_in, *h_out, *d_in, *d_out, *m;
    CHECK(cudaMallocHost(&h_in, n * sizeof(float)));
    h_out = (float*)malloc(n * sizeof(float));
    CHECK(cudaMalloc(&d_in, n * sizeof(float)));
    CHECK(cudaMalloc(&d_out, n * sizeof(float)));
    CHECK(cudaMallocManaged(&m, 4 * sizeof(float)));
    for (int i = 0; i < n; ++i) h_in[i] = (float)i;
    float scales[4] = {1.0f, 2.0f, 3.0f, 4.0f};
    CHECK(cudaMemcpyToSymbol(c_scale, scales, sizeof(scales)));
    int zero = 0;
    CHECK(cudaMemcpyToSymbol(d_counter, &zero, sizeof(int)));
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    CHECK(cudaMemcpyAsync(d_in, h_in, n * sizeof(float), cudaMemcpyHostToDevice, s));
    CHECK(cudaMemset(d_out, 0, n * sizeof(float)));
    CHECK(cudaEventRecord(start, s));
    int threads = 128, blocks = (n + threads - 1) / threads;
    scale<<<blocks, threads, threads * sizeof(float), s>>>(d_in, d_out, n);
    CHECK(cudaGetLastError());
    CHECK(cudaEventRecord(stop, s));
    CHECK(cudaEventSynchronize(stop));
    CHECK(cudaStreamSynchronize(s));
    float ms = -1.0f;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    CHECK(cudaMemcpy(h_out, d_out, n * sizeof(float), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(m, d_out, 4 * sizeof(float), cudaMemcpyDefault));
    CHECK(cudaMemcpy(d_in, d_out, n * sizeof(float), cudaMemcpyDeviceToDevice));
    int counted = 0;
    CHECK(cudaMemcpyFromSymbol(&counted, d_counter, sizeof(int)));
    CHECK(cudaDeviceSynchronize());
    int bad = 0;
    for (int i = 0; i < n; ++i) if (h_out[i] != (float)i * scales[i % 4]) ++bad;
    printf("bad=%d counted=%d ms_ok=%d managed=%g extra=%d\n", bad, counted, ms >= 0.0f, m[3], extra);
    scale<<<1, 2048>>>(d_in, d_out, n);
    cudaError_t e = cudaGetLastError();
    printf("oversized launch: %s (%s)\n", cudaGetErrorName(e), cudaGetErrorString(e));
    printf("after GetLastError: %s\n", cudaGetErrorString(cudaPeekAtLastError()));
    CHECK(cudaEventDestroy(start));
    CHECK(cudaEventDestroy(stop));
    CHECK(cudaStreamDestroy(s));
    CHECK(cudaFree(d_in));
    CHECK(cudaFree(d_out));
    CHECK(cudaFree(m));
    CHECK(cudaFreeHost(h_in));
    free(h_out);
    return bad == 0 ? 0 : 2;
}
"""


def test_api_tour_with_device_printf_argv_and_stdin():
    res = cpu.run_program(API_TOUR, argv=["777"], stdin=b"42\n")
    assert res.returncode == 0, res.stdout + res.stderr
    assert not res.timed_out and res.ok
    out = res.stdout
    assert "devices=1 dev=0 sm=9.0 warp=32 smem=49152" in out
    assert "device says hello, n=777" in out
    assert "bad=0 counted=777 ms_ok=1 managed=12 extra=42" in out
    assert "oversized launch: cudaErrorInvalidConfiguration (invalid configuration argument)" in out
    assert "after GetLastError: no error" in out


FAULTING = r"""
#include <cstdio>
#include <cuda_runtime.h>
__global__ void bad(int* x) {
    if (threadIdx.x < 4) { x[threadIdx.x] = 2; __syncthreads(); }
    else { __syncthreads(); }
    x[threadIdx.x] = 1;
}
int main() {
    int* d;
    cudaMalloc(&d, 64 * sizeof(int));
    bad<<<1, 64>>>(d);
    cudaError_t e = cudaDeviceSynchronize();
    printf("sync: %s\n", cudaGetErrorString(e));
    printf("sticky: %s\n", cudaGetErrorName(cudaMemset(d, 0, 4)));
    return e == cudaSuccess ? 0 : 3;
}
"""


def test_kernel_fault_goes_down_the_programs_error_path():
    res = cpu.run_program(FAULTING)
    assert res.returncode == 3
    assert "sync: unspecified launch failure" in res.stdout
    assert "sticky: cudaErrorLaunchFailure" in res.stdout
    assert "kernel 'bad'" in res.stderr and "divergent __syncthreads()" in res.stderr
    assert "line 5" in res.stderr and "line 6" in res.stderr


ASSERTING = r"""
#include <cassert>
#include <cstdio>
__global__ void check_positive(const int *p) { assert(p[threadIdx.x] > 0); }
__global__ void trapper(int *p) { if (threadIdx.x == 1) __trap(); p[threadIdx.x] = 0; }
int main(int argc, char **) {
    printf("before the kernel\n");
    int h[4] = {1, 2, -3, 4}, *d;
    cudaMalloc(&d, sizeof(h));
    cudaMemcpy(d, h, sizeof(h), cudaMemcpyHostToDevice);
    if (argc > 1) trapper<<<1, 4>>>(d); else check_positive<<<1, 4>>>(d);
    cudaError_t e = cudaDeviceSynchronize();
    printf("sync: %s\n", cudaGetErrorString(e));
    printf("sticky: %s\n", cudaGetErrorName(cudaMemcpy(h, d, sizeof(h), cudaMemcpyDeviceToHost)));
    cudaDeviceReset();
    printf("after reset: %s\n", cudaGetErrorName(cudaGetLastError()));
    return 0;
}
"""


def test_device_assert_aborts_the_kernel_not_the_program():
    res = cpu.run_program(ASSERTING)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.splitlines() == ["before the kernel", "sync: device-side assert triggered",
                                       "sticky: cudaErrorAssert", "after reset: cudaSuccess"]
    assert ("program.cu:4: void check_positive(const int*): block: [0,0,0], thread: [2,0,0] "
            "Assertion `p[threadIdx.x] > 0` failed.") in res.stderr


def test_trap_is_an_unspecified_launch_failure():
    res = cpu.run_program(ASSERTING, argv=["trap"])
    assert res.returncode == 0, res.stdout + res.stderr
    assert "sync: unspecified launch failure" in res.stdout and "sticky: cudaErrorLaunchFailure" in res.stdout
    assert "kernel 'trapper'" in res.stderr and "__trap() at line 5" in res.stderr


def test_output_printed_before_a_crash_survives():
    src = ("#include <cstdio>\n#include <cassert>\n#include <cstdint>\n"
           "int main(int argc, char**) {\n    printf(\"step 1\\n\");\n"
           "    if (argc > 1) { int* p = (int*)(uintptr_t)(argc - 2); *p = 1; }\n"
           "    assert(argc == 7);\n    return 0;\n}\n")
    res = cpu.run_program(src)  # host assert: glibc's message, SIGABRT, but stdout kept
    assert res.returncode < 0 and "SIGABRT" in res.stderr
    assert res.stdout == "step 1\n"
    assert "program.cu:7: int main(int, char**): Assertion `argc == 7' failed." in res.stderr
    res = cpu.run_program(src, argv=["x"])
    assert res.returncode < 0 and "SIGSEGV" in res.stderr and res.stdout == "step 1\n"


ARGV0 = r"""
#include <cstdio>
#include <cstring>
#include <cassert>
int main(int argc, char** argv) {
    printf("argv0=%s\n", argv[0]);
    // look for data beside the executable, as the CUDA samples' sdkFindFilePath does
    char path[256];
    const char* slash = strrchr(argv[0], '/');
    snprintf(path, sizeof path, "%.*s/input.txt", slash ? (int)(slash - argv[0]) : 1, slash ? argv[0] : ".");
    FILE* f = fopen(path, "r");
    char word[32] = "";
    if (f) { fscanf(f, "%31s", word); fclose(f); }
    printf("found=%s\n", word);
    assert(argc == 1);
    return 0;
}
"""


def test_the_program_sees_its_own_name_as_argv0_not_the_cached_executable():
    work = Path(tempfile.mkdtemp(prefix="vf-argv0-"))  # in the system temp dir: the sandbox uid reaches it
    try:
        os.chmod(work, 0o777)
        (work / "input.txt").write_text("beside\n")
        (work / "histogram.cu").write_text(ARGV0)
        os.chmod(work / "input.txt", 0o644)
        res = cpu.run_program(cpu.Project(files=["histogram.cu"], root=work), cwd=work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == ["argv0=./histogram", "found=beside"]
    res = cpu.run_program(ARGV0, filename="scan.cu", argv=["x"])  # glibc's assert names the program
    assert res.stdout.startswith("argv0=./scan\n")
    assert "scan: scan.cu:15: int main(int, char**): Assertion `argc == 1' failed." in res.stderr
    assert "cache" not in res.stdout + res.stderr


def test_timeout_is_a_result_not_a_hang():
    src = "#include <cstdio>\nint main() { volatile int x = 0; while (x == 0) {} return 0; }\n"
    res = cpu.run_program(src, timeout=1.0)
    assert res.timed_out and not res.ok
    assert "did not finish within 1 s" in res.stderr
    assert res.seconds < 10


def test_the_default_time_limit_comes_from_the_settings(tmp_path, monkeypatch):
    cfg = tmp_path / "veriforge.toml"
    cfg.write_text("[cuda]\nprogram_timeout_s = 1.5\n")
    monkeypatch.setenv("VERIFORGE_CONFIG", str(cfg))
    src = "#include <cstdio>\nint main() { volatile int x = 0; while (x == 0) {} return 0; }\n"
    res = cpu.run_program(src)  # no timeout argument: the settings' 1.5 s, not the built-in 60 s
    assert res.timed_out and "within 1.5 s" in res.stderr and res.seconds < 30


def test_crash_is_reported_with_the_signal():
    src = "#include <cstdint>\nint main(int argc, char**) { int* p = (int*)(uintptr_t)(argc - 1); *p = 1; return 0; }\n"
    res = cpu.run_program(src)
    assert res.returncode < 0 and "SIGSEGV" in res.stderr


def test_compile_errors_raise_with_user_lines():
    with pytest.raises(cpu.CompileError) as err:
        cpu.run_program("int main() {\n  return nope;\n}\n", filename="p.cu")
    assert err.value.diagnostics[0].line == 2 and str(err.value).startswith("p.cu:2:")


def test_output_printed_before_a_timeout_is_kept():
    src = ('#include <cstdio>\nint main() { printf("started\\n"); fprintf(stderr, "err\\n");\n'
           "  volatile int x = 0; while (x == 0) {} return 0; }\n")
    res = cpu.run_program(src, timeout=1.5)
    assert res.timed_out and res.stdout == "started\n" and res.stderr.startswith("err\n")


def test_host_asm_compiles_unused_device_asm_is_accepted_device_asm_is_refused():
    src = """#include <cstdio>
static unsigned long long ticks() { unsigned lo, hi; __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return ((unsigned long long)hi << 32) | lo; }
__global__ void k(int* p) {
#if __CUDA_ARCH__ < 700
    asm volatile("pmevent 1;");
#endif
#if 0
    asm("mov.u32 %0, %%laneid;" : "=r"(p[0]));
#endif
    p[threadIdx.x] = threadIdx.x;
}
int main() {
    int* d; cudaMalloc(&d, 4 * sizeof(int));
    k << < 1, 4 >> > (d);
    int h[4]; cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    asm volatile("" ::: "memory");
    printf("%d %d\\n", h[3], ticks() > 0);
    return 0;
}
"""
    res = cpu.run_program(src)
    assert res.ok and res.stdout == "3 1\n", res.stderr
    bad = src.replace("#if __CUDA_ARCH__ < 700", "#ifdef __CUDA_ARCH__")  # what the device pass compiles
    with pytest.raises(cpu.UnsupportedFeatureError, match=r"inline PTX.*\(p\.cu:6: "):
        cpu.run_program(bad, filename="p.cu")


def test_a_missing_cuda_api_function_is_refused_with_its_line():
    src = ('#include <cstdio>\nextern "C" int cudaVfNoSuchFunction(int);\nint main() {\n'
           "  // cudaVfNoSuchFunction(0) in a comment does not count\n  return cudaVfNoSuchFunction(1);\n}\n")
    with pytest.raises(cpu.UnsupportedFeatureError, match=r"cudaVfNoSuchFunction \(p\.cu:5: return"):
        cpu.run_program(src, filename="p.cu")
