"""The dynamic checks of the CPU back-end a GPU would make (docs/tasks.md "Dynamic checks").

Real compiles and real runs. The static scan is switched off where a candidate is spelled so that it
would catch it anyway: these checks must not depend on how the code is written.
"""

from __future__ import annotations

import numpy as np
import pytest

from veriforge.cuda import cpu
from veriforge.cuda.evaluate import anticheat_c
from veriforge.cuda.evaluate.backend import CCase, CParam, CRequest
from veriforge.cuda.evaluate.cpu import CpuBackend
from veriforge.cuda.evaluate.harness import evaluate, resolve_task
from veriforge.cuda.tasks.generate import make_case
from veriforge.cuda.tasks.reference import reference_outputs

HOST_LOOP = r'''
__global__ void touch(float* c) {}
extern "C" void solve(const float* a, const float* b, float* c, int n) {
    touch<<<1, 1>>>(c);
    for (int i = 0; i < n; ++i) c[i] = a[i] + b[i];
}
'''

ROUND_TRIP = r'''
#include <vector>
__global__ void touch(float* c) {}
extern "C" void solve(const float* a, const float* b, float* c, int n) {
    std::vector<float> ha(n), hb(n);
    cudaMemcpy(ha.data(), a, n * sizeof(float), cudaMemcpyDeviceToHost);
    cudaMemcpy(hb.data(), b, n * sizeof(float), cudaMemcpyDeviceToHost);
    for (int i = 0; i < n; ++i) ha[i] += hb[i];
    cudaMemcpy(c, ha.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    touch<<<1, 1>>>(c);
}
'''

# The last thread of each block sums the block's shared memory without a __syncthreads(): right
# when threads run in index order (as the CPU runtime runs them), a race on a GPU.
RACY_SUM = r'''
__global__ void block_sum(const float* x, float* out, int n) {
    __shared__ float s[256];
    int i = blockIdx.x * 256 + threadIdx.x;
    s[threadIdx.x] = i < n ? x[i] : 0.0f;
    if (threadIdx.x == blockDim.x - 1) {
        float t = 0.0f;
        for (int k = 0; k < blockDim.x; ++k) t += s[k];
        atomicAdd(out, t);
    }
}
extern "C" void solve(const float* x, float* out, int n) {
    cudaMemset(out, 0, sizeof(float));
    block_sum<<<(n + 255) / 256, 256>>>(x, out, n);
}
'''

# Legitimate: per-block partial sums on the device, the few partials finished on the host.
HOST_FINISH = r'''
#include <vector>
__global__ void partial_sums(const float* x, float* part, int n) {
    __shared__ float s[256];
    int i = blockIdx.x * 256 + threadIdx.x;
    s[threadIdx.x] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int step = 128; step > 0; step >>= 1) {
        if (threadIdx.x < step) s[threadIdx.x] += s[threadIdx.x + step];
        __syncthreads();
    }
    if (threadIdx.x == 0) part[blockIdx.x] = s[0];
}
extern "C" void solve(const float* x, float* out, int n) {
    int blocks = (n + 255) / 256;
    float* part;
    cudaMalloc(&part, blocks * sizeof(float));
    partial_sums<<<blocks, 256>>>(x, part, n);
    std::vector<float> h(blocks);
    cudaMemcpy(h.data(), part, blocks * sizeof(float), cudaMemcpyDeviceToHost);
    double total = 0.0;
    for (float v : h) total += v;
    float f = (float)total;
    cudaMemcpy(out, &f, sizeof(float), cudaMemcpyHostToDevice);
    cudaFree(part);
}
'''

# Thread 0 publishes a flag in shared memory that the last thread checks without a barrier: fine in
# index order, a trap when the order is reversed.
FAULTS_IN_REVERSE = r'''
__global__ void k(const float* a, const float* b, float* c, int n) {
    __shared__ int ready;
    if (threadIdx.x == 0) ready = 1 + blockIdx.x;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
    if (threadIdx.x == blockDim.x - 1 && ready != 1 + (int)blockIdx.x) __trap();
}
extern "C" void solve(const float* a, const float* b, float* c, int n) {
    k<<<(n + 255) / 256, 256>>>(a, b, c, n);
}
'''


@pytest.fixture
def no_static_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(anticheat_c, "scan_c", lambda *a, **k: [])


def test_host_loop_over_device_pointers_is_rejected(no_static_scan: None) -> None:
    res = evaluate("vector_add", HOST_LOOP, configs=["small"], estimate=False)
    assert res.verdict.rejected and res.details["rejection"] == "dynamic", res.verdict.reason
    reason = res.verdict.reason
    assert "host code dereferenced a device pointer (this crashes on a GPU)" in reason
    assert "read device memory at a+0 (device buffer 'a'" in reason and "config 'small', trial 0" in reason


def test_copying_the_inputs_to_the_host_and_back_is_rejected(no_static_scan: None) -> None:
    res = evaluate("vector_add", ROUND_TRIP, configs=["small"], estimate=False)
    assert res.verdict.rejected and res.details["rejection"] == "dynamic", res.verdict.reason
    assert "solve() copied 8000 of 8000 input bytes to the host and back: the work must be done by kernels" \
        in res.verdict.reason


def test_small_copies_to_the_host_stay_allowed(no_static_scan: None) -> None:
    res = evaluate("sum_reduce", HOST_FINISH, estimate=False)
    assert res.verdict.correct, res.verdict.reason


def test_racy_reduction_is_rejected_as_order_dependent() -> None:
    res = evaluate("sum_reduce", RACY_SUM, estimate=False)
    assert res.verdict.rejected and res.details["rejection"] == "dynamic", res.verdict.reason
    assert "output 'out' differs when threads run in another order (data race or order-dependent reduction)" \
        in res.verdict.reason


def _request(task: str, source: str, config: str, race_check: bool) -> tuple[CRequest, dict]:
    spec = resolve_task(task)
    case = make_case(spec, config, 0)
    params = [CParam(p.name, p.type, p.role) for p in spec.params]
    request = CRequest(task_id=spec.id, source=source, entry=spec.entry, params=params,
                       cases=[CCase(config=config, trial=0, args=case.args)], race_check=race_check)
    return request, reference_outputs(spec, case)


def test_the_race_check_is_what_catches_the_race_and_can_be_skipped() -> None:
    backend = CpuBackend()
    request, ref = _request("sum_reduce", RACY_SUM, "odd", race_check=False)
    run = backend.run_c(request)
    assert run.ok and not run.cases[0].problems, run.message
    np.testing.assert_allclose(run.cases[0].outputs["out"], ref["out"], rtol=1e-4)  # index order: right
    request.race_check = True
    run = backend.run_c(request)
    assert any("differs when threads run in another order" in p for p in run.cases[0].problems), run.cases


def test_a_fault_only_in_reverse_order_fails_the_case() -> None:
    res = evaluate("vector_add", FAULTS_IN_REVERSE, configs=["small"], estimate=False)
    assert not res.verdict.correct
    assert "only when blocks and threads run in reverse order" in res.verdict.reason, res.verdict.reason


HONEST = [("vector_add", "naive"), ("vector_add", "vectorized"), ("sum_reduce", "shared_tree"),
          ("sum_reduce", "warp_shuffle"), ("histogram_uint8", "shared_private"), ("histogram_uint8", "global_atomic"),
          ("softmax_rows", "block_per_row"), ("softmax_rows", "online"), ("matmul_fp32", "shared_tiled"),
          ("scatter_add", "atomic"), ("scatter_add", "warp_aggregated")]


@pytest.mark.parametrize(("task", "impl"), HONEST, ids=[f"{t}-{i}" for t, i in HONEST])
def test_honest_implementations_pass_every_check(task: str, impl: str) -> None:
    spec = resolve_task(task)
    assert spec.folder is not None
    res = evaluate(spec, spec.folder / "impls" / f"{impl}.cu", estimate=False)
    assert res.verdict.correct, res.verdict.reason


def test_honest_implementation_passes_under_memcheck() -> None:
    # AddressSanitizer: no device-memory guard (ASan needs malloc'd blocks), the other checks run.
    spec = resolve_task("sum_reduce")
    assert spec.folder is not None
    res = evaluate(spec, spec.folder / "impls" / "shared_tree.cu", configs=["small"], memcheck=True, estimate=False)
    assert res.verdict.correct, res.verdict.reason
    res = evaluate(spec, RACY_SUM, configs=["small"], memcheck=True, estimate=False)
    assert "differs when threads run in another order" in res.verdict.reason, res.verdict.reason


# ---- the runtime's hooks, in a plain program ------------------------------------------------------

GUARDED = r'''
#include <cstdio>
__device__ float table[64];
__global__ void fill(float* p, int n) { int i = threadIdx.x; if (i < n) p[i] = i; }
int main() {
    ::vf::enable_device_guard();
    float *d, *m, *h, *pitched;
    size_t pitch;
    cudaMalloc(&d, 64 * sizeof(float));
    ::vf::label_device_buffer(d, "d");
    cudaMallocManaged(&m, 64 * sizeof(float));
    cudaMallocHost(&h, 64 * sizeof(float));
    cudaMallocPitch(&pitched, &pitch, 16 * sizeof(float), 4);
    float* e;
    cudaMalloc(&e, 10 * sizeof(float));
    ::vf::label_device_buffer(e, "e");
    m[0] = 1.0f;                     // managed and pinned memory stay host-accessible
    h[0] = 2.0f;
    fill<<<1, 64>>>(d, 64);
    fill<<<1, 64>>>(m, 64);
    cudaMemset2D(pitched, pitch, 0, 16 * sizeof(float), 4);
    cudaMemcpy2D(pitched, pitch, d, 16 * sizeof(float), 16 * sizeof(float), 4, cudaMemcpyDeviceToDevice);
    ::vf::reset_copy_counters();
    cudaMemcpyToSymbol(table, d, 64 * sizeof(float), 0, cudaMemcpyDeviceToDevice);  // device -> device
    cudaMemcpy(h, d, 64 * sizeof(float), cudaMemcpyDefault);                          // device -> host
    cudaMemcpy(d, m, 8 * sizeof(float), cudaMemcpyDeviceToDevice);                    // managed is host memory
    uint64_t d2h, h2d;
    ::vf::copy_counters(&d2h, &h2d);
    printf("%g %g %lu %lu\n", m[63], h[63], (unsigned long)d2h, (unsigned long)h2d);
    fflush(stdout);
    if (MODE == 1) printf("%g\n", d[3]);
    if (MODE == 2) e[12] = 1.0f;
    if (MODE == 3) pitched[1] = 1.0f;
    cudaFree(d);
    cudaFree(m);
    cudaFreeHost(h);
    cudaFree(pitched);
    cudaFree(e);
    return 0;
}
'''


def test_runtime_guard_and_copy_counters() -> None:
    ok = cpu.run_program(GUARDED, defines={"MODE": 0})
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.split() == ["63", "63", "256", "32"]  # classified by pointer, not by cudaMemcpyKind
    read = cpu.run_program(GUARDED, defines={"MODE": 1})
    assert read.returncode != 0 and read.stdout.startswith("63 63")
    assert "veriforge: host code read device memory at d+12 (device buffer 'd' of 256 bytes" in read.stderr
    past = cpu.run_program(GUARDED, defines={"MODE": 2})
    assert "host code wrote device memory at e+48 (past the end of device buffer 'e' of 40 bytes" in past.stderr
    pitched = cpu.run_program(GUARDED, defines={"MODE": 3})
    assert "host code wrote device memory at 0x" in pitched.stderr and "cudaMalloc'd buffer" in pitched.stderr


def test_programs_without_the_guard_are_unchanged() -> None:
    src = GUARDED.replace("::vf::enable_device_guard();", "")
    res = cpu.run_program(src, defines={"MODE": 1})
    assert res.returncode == 0 and res.stdout.split()[-1] == "3", res.stderr
