"""The C→CUDA harness's order check names the racy kernel and its launch line (issue 15 item 4)."""

from __future__ import annotations

import pytest

from veriforge.cuda.evaluate import cpu as cpu_backend
from veriforge.cuda.evaluate.backend import CCase, CParam, CRequest
from veriforge.cuda.evaluate.cpu import CpuBackend
from veriforge.cuda.tasks.generate import make_case

# The last thread of each block sums the block's shared memory without waiting for the others (no
# __syncthreads()): right in index order, where the last thread runs last; wrong in reverse order.
LAST_READER = r'''
__global__ void fill(const float* x, float* tmp, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) tmp[i] = x[i];
}
__global__ void block_total(const float* tmp, float* out, int n) {
    __shared__ float s[256];
    int i = blockIdx.x * 256 + threadIdx.x;
    s[threadIdx.x] = i < n ? tmp[i] : 0.0f;
    if (threadIdx.x == blockDim.x - 1) {
        float t = 0.0f;
        for (int k = 0; k < blockDim.x; ++k) t += s[k];
        atomicAdd(out, t);
    }
}
extern "C" void solve(const float* x, float* out, int n) {
    float* tmp;
    cudaMalloc(&tmp, n * sizeof(float));
    cudaMemset(out, 0, sizeof(float));
    fill<<<(n + 255) / 256, 256>>>(x, tmp, n);
    block_total<<<(n + 255) / 256, 256>>>(tmp, out, n);
    cudaFree(tmp);
}
'''
LAUNCH_LINE = 21

CORRECT = r'''
__global__ void block_total(const float* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(out, x[i]);
}
extern "C" void solve(const float* x, float* out, int n) {
    cudaMemset(out, 0, sizeof(float));
    block_total<<<(n + 255) / 256, 256>>>(x, out, n);
}
'''


def _request(source: str) -> CRequest:
    from veriforge.cuda.evaluate.harness import resolve_task

    spec = resolve_task("sum_reduce")
    case = make_case(spec, "odd", 0)
    params = [CParam(p.name, p.type, p.role) for p in spec.params]
    return CRequest(task_id=spec.id, source=source, entry=spec.entry, params=params,
                    cases=[CCase(config="odd", trial=0, args=case.args)], race_check=True)


def test_line_constant():
    assert "block_total<<<" in LAST_READER.splitlines()[LAUNCH_LINE - 1]


def test_order_problem_names_kernel_launch_and_buffer() -> None:
    run = CpuBackend().run_c(_request(LAST_READER))
    problems = [p for p in run.cases[0].problems if "differs when threads run in another order" in p]
    assert problems, run.cases
    text = problems[0]
    assert f"the first launch whose memory differs: kernel 'block_total' launched at candidate.cu:{LAUNCH_LINE}" \
        in text, text
    assert "argument 2 'out'" in text and "'out'" in text


def test_no_rerun_without_an_order_problem(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*a, **k):
        raise AssertionError("the race was located although no output differed")

    monkeypatch.setattr(cpu_backend, "_locate_race", boom)
    run = CpuBackend().run_c(_request(CORRECT))
    assert run.ok and not run.cases[0].problems, run.cases
