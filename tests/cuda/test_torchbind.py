"""The veriforge binding: signatures, argument checks, real kernels on the CPU runtime, GPU build."""

from __future__ import annotations

import os
import subprocess
import sysconfig
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from veriforge.cuda.torchbind import (  # noqa: E402
    BindingSignatureError,
    BindingTypeError,
    BindingValueError,
    clear_cache,
    load_cuda,
    parse_extern_c,
)
from veriforge.cuda.torchbind.args import check_tensor  # noqa: E402
from veriforge.cuda.torchbind.gpu_backend import extension_name, generate_wrapper  # noqa: E402
from veriforge.errors import CompileError, LaunchError  # noqa: E402

RELU = r"""
__global__ void relu_kernel(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
extern "C" void relu(const float* x, float* y, int n) {   // host launcher, DEVICE pointers
    relu_kernel<<<(n + 255) / 256, 256>>>(x, y, n);
}
"""

# Row softmax: the host launcher runs two kernels (row maxima, then exp/normalise) and uses a
# temporary device buffer, like real candidates do.
SOFTMAX = r"""
#include <cuda_runtime.h>
#include <math.h>
__global__ void row_max(const float* x, float* m, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float best = -INFINITY;
    for (int c = 0; c < cols; ++c) best = fmaxf(best, x[r * cols + c]);
    m[r] = best;
}
__global__ void exp_norm(const float* x, const float* m, float* y, int rows, int cols) {
    int r = blockIdx.x;
    if (r >= rows) return;
    __shared__ float total;
    if (threadIdx.x == 0) total = 0.f;
    __syncthreads();
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        float e = expf(x[r * cols + c] - m[r]);
        y[r * cols + c] = e;
        atomicAdd(&total, e);
    }
    __syncthreads();
    for (int c = threadIdx.x; c < cols; c += blockDim.x) y[r * cols + c] /= total;
}
extern "C" void softmax(const float* x, float* y, int rows, int cols) {
    float* m = nullptr;
    cudaMalloc(&m, rows * sizeof(float));
    row_max<<<(rows + 63) / 64, 64>>>(x, m, rows, cols);
    exp_norm<<<rows, 64>>>(x, m, y, rows, cols);
    cudaFree(m);
}
"""

SCALE = r"""
__global__ void axpb(const float* x, float* y, float a, int b, long long n, bool square) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { float v = a * x[i] + (float)b; y[i] = square ? v * v : v; }
}
extern "C" void axpb_launch(const float* x, float* y, float a, int b, long long n, bool square) {
    axpb<<<(unsigned)((n + 127) / 128), 128>>>(x, y, a, b, n, square);
}
extern "C" void count_positive(const double* x, int* counter, unsigned int n);
__global__ void count_k(const double* x, int* counter, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && x[i] > 0.0) atomicAdd(counter, 1);
}
extern "C" void count_positive(const double* x, int* counter, unsigned int n) {
    count_k<<<(n + 255) / 256, 256>>>(x, counter, n);
}
"""


@pytest.fixture(autouse=True)
def _fresh_cache():
    clear_cache()
    yield
    clear_cache()


# ---------------------------------------------------------------------------------------------
# Signatures (no compiler).

def test_parse_extern_c_finds_launchers_blocks_and_types():
    src = r'''
    // extern "C" void in_comment(int x);
    const char* s = "extern \"C\" void in_string(int);";
    __global__ void k(float* p) {}
    extern "C" void relu(const float* __restrict__ x, float *y, int n) { k<<<1, 1>>>(y); }
    extern "C" {
      void many(double* a, unsigned int u, long long w, bool b, size_t z, const __half* h);
      void many(double* a, unsigned int u, long long w, bool b, size_t z, const __half* h) {}
      int helper(void);
    }
    extern "C" __global__ void kern(float* x) {}
    extern "C" void pp(float** x) {}
    '''
    fns = parse_extern_c(src)
    assert list(fns) == ["relu", "many", "helper", "kern", "pp"]
    relu = fns["relu"]
    assert [(p.name, p.pointer, p.const, p.dtype) for p in relu.params] == [
        ("x", True, True, "float32"), ("y", True, False, "float32"), ("n", False, False, "int32")]
    assert not relu.problem
    many = fns["many"]
    assert [p.dtype for p in many.params] == ["float64", "uint32", "int64", "bool", "uint64", "float16"]
    assert "returns 'int'" in fns["helper"].problem
    assert "__global__" in fns["kern"].problem
    assert "pointer to a pointer" in fns["pp"].problem


def test_parse_rejects_conflicting_redeclaration():
    src = 'extern "C" void f(int a);\nextern "C" void f(float a) {}\n'
    with pytest.raises(BindingSignatureError, match="declared twice"):
        parse_extern_c(src)


def test_generated_wrapper_declares_void_pointers_and_exact_scalars():
    fns = list(parse_extern_c(SCALE).values())
    text = generate_wrapper(fns)
    assert 'extern "C" void axpb_launch(const void*, void*, float, int, long long, bool);' in text
    assert 'extern "C" void count_positive(const void*, void*, unsigned int);' in text
    assert "static_cast<float>(a2)" in text and "static_cast<long long>(a4)" in text
    assert 'm.def("axpb_launch", &vf_wrap_axpb_launch' in text
    assert text.count("OptionalCUDAGuard") == 2 and text.count("vf_check_launch(\"") == 2
    name = extension_name("my ext!", "ab" * 32)
    assert name == "vf_my_ext_" + "ab" * 8 and name.isidentifier()


# ---------------------------------------------------------------------------------------------
# CPU back-end: real kernels on the CPU runtime.

def test_relu_writes_into_the_torch_tensor():
    ext = load_cuda("relu_ext", RELU, backend="cpu")
    assert ext.backend == "cpu" and "relu" in dir(ext)
    x = torch.randn(1000, generator=torch.Generator().manual_seed(0))
    y = torch.full_like(x, float("nan"))
    ext.relu(x, y, x.numel())
    assert torch.equal(y, torch.relu(x))
    # A 2-D tensor and a keyword argument; the output is a view of a bigger allocation's storage.
    x2 = torch.randn(8, 33)
    y2 = torch.empty(8, 33)
    ext.relu(x2, y=y2, n=x2.numel())
    assert torch.equal(y2, torch.relu(x2))
    assert load_cuda("relu_ext", RELU, backend="cpu") is ext  # cached per process by content


def test_softmax_host_launcher_with_two_kernels_and_a_temporary():
    ext = load_cuda("softmax_ext", SOFTMAX, backend="cpu")
    x = torch.randn(6, 100, generator=torch.Generator().manual_seed(1)) * 5
    y = torch.zeros_like(x)
    ext.softmax(x, y, 6, 100)
    torch.testing.assert_close(y, torch.softmax(x, dim=1), rtol=1e-5, atol=1e-6)


def test_float_int_bool_scalars_and_other_dtypes():
    ext = load_cuda("scale_ext", SCALE, backend="cpu")
    x = torch.linspace(-2, 2, 300)
    y = torch.empty_like(x)
    ext.axpb_launch(x, y, 1.5, 3, x.numel(), False)
    torch.testing.assert_close(y, 1.5 * x + 3)
    ext.axpb_launch(x, y, 2, -1, x.numel(), True)  # an int is fine for a float parameter
    torch.testing.assert_close(y, (2 * x - 1) ** 2)
    d = torch.tensor([1.0, -2.0, 3.0, 0.0, 5.0], dtype=torch.float64)
    counter = torch.zeros(1, dtype=torch.int32)
    ext.count_positive(d, counter, d.numel())
    assert int(counter.item()) == 3


def test_argument_errors_are_clear():
    ext = load_cuda("relu_ext", RELU, backend="cpu")
    x = torch.randn(64)
    y = torch.empty(64)
    with pytest.raises(BindingTypeError, match=r"relu\(\) takes 3 argument\(s\).*got 2"):
        ext.relu(x, y)
    with pytest.raises(BindingTypeError, match=r"needs torch\.float32, got torch\.float64"):
        ext.relu(x.double(), y, 64)
    with pytest.raises(BindingValueError, match="not contiguous"):
        ext.relu(torch.randn(8, 8).t(), y, 64)
    with pytest.raises(BindingTypeError, match=r"is a pointer: pass a torch\.Tensor"):
        ext.relu(x.numpy(), y, 64)
    with pytest.raises(BindingTypeError, match="expects an int, got float"):
        ext.relu(x, y, 64.0)
    with pytest.raises(BindingTypeError, match="got the bool"):
        ext.relu(x, y, True)
    with pytest.raises(BindingValueError, match="out of range"):
        ext.relu(x, y, 2**31)
    with pytest.raises(BindingTypeError, match="no parameter 'm'"):
        ext.relu(x, y, m=3)
    relu = ext.functions["relu"]
    with pytest.raises(BindingValueError, match="is on cpu, but this extension runs on the GPU"):
        check_tensor(relu, 0, relu.params[0], x, "cuda")  # what a GPU extension says about a CPU tensor
    with pytest.raises(AttributeError, match=r"has no extern \"C\" function 'gelu'.*relu"):
        ext.gelu(x, y, 64)
    # Errors are LaunchErrors (veriforge hierarchy) as well as TypeError/ValueError.
    assert issubclass(BindingTypeError, LaunchError) and issubclass(BindingValueError, ValueError)


def test_unbindable_functions_raise_only_when_called():
    src = RELU + 'extern "C" int helper(void) { return 1; }\n'
    ext = load_cuda("relu_helper", src, backend="cpu")
    with pytest.raises(BindingSignatureError, match="must return void"):
        ext.helper()
    with pytest.raises(BindingSignatureError, match="no callable extern"):
        load_cuda("none", "__global__ void k(float* x) {}\n", backend="cpu")


def test_compile_error_names_the_line():
    with pytest.raises(CompileError):
        load_cuda("broken", 'extern "C" void f(float* x) { undefined_thing(x); }\n', backend="cpu")


# ---------------------------------------------------------------------------------------------
# GPU back-end.

def _torch_includes() -> list[str]:
    from torch.utils.cpp_extension import include_paths

    return [f"-I{p}" for p in include_paths()]


@pytest.mark.nvcc
@pytest.mark.slow
@pytest.mark.expensive
def test_generated_wrapper_compiles_against_torch_headers(tmp_path: Path):
    """The generated pybind wrapper is valid C++ for torch's headers (no GPU needed to check that)."""
    from veriforge.cuda.toolchain import find_toolchain

    cuda_incs = [f"-I{p}" for p in find_toolchain().include_dirs]
    stub = tmp_path / "stub" / "c10" / "cuda" / "impl"
    stub.mkdir(parents=True)
    (stub / "cuda_cmake_macros.h").write_text("#pragma once\n")  # absent from CPU wheels of torch
    src = tmp_path / "wrap.cpp"
    src.write_text("#include <torch/extension.h>\n" + generate_wrapper(list(parse_extern_c(SCALE).values())))
    cmd = ["g++", "-std=c++20", "-fsyntax-only", "-DTORCH_EXTENSION_NAME=vf_test", f"-I{tmp_path / 'stub'}",
           *_torch_includes(), *cuda_incs, f"-I{sysconfig.get_paths()['include']}", str(src)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.mark.gpu
def test_gpu_backend_runs_the_same_source():
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA")
    os.environ.setdefault("MAX_JOBS", "8")
    ext = load_cuda("scale_ext", SCALE)  # auto: gpu
    assert ext.backend == "gpu"
    x = torch.linspace(-2, 2, 3000, device="cuda")
    y = torch.empty_like(x)
    ext.axpb_launch(x, y, 1.5, 3, x.numel(), True)
    torch.testing.assert_close(y, (1.5 * x + 3) ** 2)
    with pytest.raises(BindingValueError, match="runs on the GPU"):
        ext.axpb_launch(x.cpu(), y, 1.5, 3, x.numel(), True)
    sm = load_cuda("softmax_ext", SOFTMAX)
    a = torch.randn(16, 257, device="cuda")
    b = torch.empty_like(a)
    sm.softmax(a, b, 16, 257)
    torch.testing.assert_close(b, torch.softmax(a, dim=1), rtol=1e-5, atol=1e-6)
    # The CPU runtime agrees with the GPU on the same source.
    cpu = load_cuda("softmax_ext", SOFTMAX, backend="cpu")
    c = torch.empty(16, 257)
    cpu.softmax(a.cpu(), c, 16, 257)
    torch.testing.assert_close(c, b.cpu(), rtol=1e-5, atol=1e-6)
