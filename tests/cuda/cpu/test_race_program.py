"""run_program(race_check=True) and `veriforge cuda run --race-check`: races reported with the kernel,
the launch's file:line and the memory that differs; float atomics are not races."""

from __future__ import annotations

import numpy as np
import pytest

from veriforge.cuda import cpu
from veriforge.cuda.cpu import race as race_mod

HEADER = r"""
#include <cstdio>
#include <cuda_runtime.h>
"""

# The bug of PolyBench's mvt: a 2-D block whose threadIdx.y is unused, so the 8 threads of a column
# all do x[i] += ... on the same element without atomics.
MATVEC = HEADER + r"""#define N 64
__global__ void matvec(const float* a, float* x, const float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N)
        for (int j = 0; j < N; j++) x[i] += a[i * N + j] * y[j];
}
__global__ void scale(float* x, float s) { x[blockIdx.x * blockDim.x + threadIdx.x] *= s; }
int main() {
    static float ha[N * N], hx[N], hy[N];
    for (int i = 0; i < N * N; i++) ha[i] = (i % 7) * 0.5f;
    for (int i = 0; i < N; i++) { hx[i] = 0; hy[i] = i % 5; }
    float *a, *x, *y;
    cudaMalloc(&a, sizeof ha); cudaMalloc(&x, sizeof hx); cudaMalloc(&y, sizeof hy);
    cudaMemcpy(a, ha, sizeof ha, cudaMemcpyHostToDevice);
    cudaMemcpy(x, hx, sizeof hx, cudaMemcpyHostToDevice);
    cudaMemcpy(y, hy, sizeof hy, cudaMemcpyHostToDevice);
    scale<<<1, N>>>(x, 2.0f);
    dim3 block(8, 8), grid(N / 8, 1);
    matvec<<<grid, block>>>(a, x, y);
    cudaMemcpy(hx, x, sizeof hx, cudaMemcpyDeviceToHost);
    printf("%.1f\n", hx[1]);
    return 0;
}
"""
MATVEC_LINE = 22  # the matvec<<<...>>> line (1-based)

# A shared-memory tree reduction missing the __syncthreads() inside its loop.
REDUCE = HEADER + r"""#define T 64
__global__ void copy(const int* in, int* out) { out[threadIdx.x] = in[threadIdx.x]; }
__global__ void block_sum(const int* in, int* out) {
    __shared__ int s[T];
    s[threadIdx.x] = in[blockIdx.x * T + threadIdx.x];
    __syncthreads();
    for (int stride = T / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride) s[threadIdx.x] += s[threadIdx.x + stride];
        // missing: __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}
int main() {
    const int blocks = 4;
    static int h[blocks * T], r[blocks];
    for (int i = 0; i < blocks * T; i++) h[i] = i % 11;
    int *in, *tmp, *out;
    cudaMalloc(&in, sizeof h); cudaMalloc(&tmp, sizeof h); cudaMalloc(&out, sizeof r);
    cudaMemcpy(in, h, sizeof h, cudaMemcpyHostToDevice);
    copy<<<blocks, T>>>(in, tmp);
    block_sum<<<blocks, T>>>(tmp, out);
    cudaMemcpy(r, out, sizeof r, cudaMemcpyDeviceToHost);
    printf("%d %d\n", r[0], r[3]);
    return 0;
}
"""
REDUCE_LINE = 24

# Correct: a float sum with atomicAdd; the order changes only the rounding.
ATOMIC = HEADER + r"""#define N 4096
__global__ void total(const float* x, float* sum) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) atomicAdd(sum, x[i]);
}
int main() {
    static float h[N];
    for (int i = 0; i < N; i++) h[i] = 1.0f / (1 + i % 97) + 1e-3f * (i % 13);
    float *x, *sum, s = 0;
    cudaMalloc(&x, sizeof h); cudaMalloc(&sum, sizeof(float));
    cudaMemcpy(x, h, sizeof h, cudaMemcpyHostToDevice);
    cudaMemset(sum, 0, sizeof(float));
    total<<<N / 128, 128>>>(x, sum);
    cudaMemcpy(&s, sum, sizeof s, cudaMemcpyDeviceToHost);
    printf("%.2f\n", s);
    return 0;
}
"""

# Correct and integer: nothing may differ at all.
CLEAN = HEADER + r"""
__global__ void iota(int* out, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = 3 * i; }
int main() {
    int* d; int h[256];
    cudaMalloc(&d, sizeof h);
    iota<<<4, 64>>>(d, 256);
    cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    printf("%d\n", h[255]);
    return 0;
}
"""


def _line_of(source: str, needle: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if needle in line)


def test_line_constants_match_the_sources():
    assert _line_of(MATVEC, "matvec<<<") == MATVEC_LINE
    assert _line_of(REDUCE, "block_sum<<<") == REDUCE_LINE


def test_unguarded_read_modify_write_is_a_race_at_its_launch():
    res = cpu.run_program(MATVEC, filename="matvec.cu", race_check=True)
    assert res.ok and res.stdout.strip()  # the result returned is the index-order run's
    race = res.race
    assert race is not None and race.found
    assert race.kernel == "matvec"
    assert race.location == f"matvec.cu:{MATVEC_LINE}"
    assert race.launch == 1  # the earlier scale<<<>>> launch is clean
    assert race.probe == "interleave"
    assert "argument 2 'x'" in race.allocation and "256 bytes" in race.allocation
    assert race.differences == race.elements == 64
    assert race.first_offsets[:3] == (0, 4, 8)
    text = str(race)
    assert "RACE in kernel 'matvec' launched at matvec.cu:22" in text and "\n" not in text


def test_missing_syncthreads_in_a_reduction_is_a_race():
    res = cpu.run_program(REDUCE, filename="reduce.cu", race_check=True)
    race = res.race
    assert race.found, str(race)
    assert (race.kernel, race.location, race.launch) == ("block_sum", f"reduce.cu:{REDUCE_LINE}", 1)
    assert race.probe == "reverse"
    assert "argument 2 'out'" in race.allocation
    assert 0 < race.differences <= 4 and race.elements == 4


def test_float_atomics_are_rounding_not_a_race():
    res = cpu.run_program(ATOMIC, filename="atomic.cu", race_check=True)
    race = res.race
    assert not race.found, str(race)
    assert race.kernel is None
    # the sum's rounding may or may not change with the order; when it does, it is named as such
    if race.rounding:
        assert "rounding" in race.rounding and "total" in race.rounding
    assert "no race" in str(race)


def test_clean_program_and_no_check():
    assert cpu.run_program(CLEAN, race_check=True).race.found is False
    assert cpu.run_program(CLEAN).race is None


def test_project_source_and_parameter_names(tmp_path):
    (tmp_path / "mv.cu").write_text(MATVEC)
    proj = cpu.Project.from_args([str(tmp_path / "mv.cu")], root=str(tmp_path))
    race = cpu.run_program(proj, race_check=True).race
    assert race.found and race.location == f"mv.cu:{MATVEC_LINE}" and "'x'" in race.allocation


@pytest.fixture
def open_dir():
    """A folder the sandbox uid can reach (the CLI runs the program in the current directory)."""
    import shutil
    import tempfile
    from pathlib import Path

    path = Path(tempfile.mkdtemp(prefix="vf-race-cli-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_cli_race_check_exits_3_and_names_the_launch(open_dir, monkeypatch):
    from typer.testing import CliRunner

    from veriforge.cli.cuda import EXIT_RACE, app

    tmp_path = open_dir
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mv.cu").write_text(MATVEC)
    (tmp_path / "ok.cu").write_text(CLEAN)
    res = CliRunner().invoke(app, ["run", "--race-check", "mv.cu"])
    assert res.exit_code == EXIT_RACE == 3, res.output
    assert f"RACE in kernel 'matvec' launched at mv.cu:{MATVEC_LINE}" in res.stderr
    ok = CliRunner().invoke(app, ["run", "--race-check", "ok.cu"])
    assert ok.exit_code == 0 and "no race" in ok.stderr
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".vf-race")]  # trace files removed


# ---- the comparison rule, without running anything --------------------------------------------

def test_classify_float_rounding_vs_race():
    a = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    b = a.copy()
    b[1] = np.nextafter(b[1], np.float32(3))
    assert race_mod.classify(a.tobytes(), b.tobytes(), "f").rounding
    assert race_mod.classify(a.tobytes(), b.tobytes(), "").rounding  # unknown data that reads as floats
    assert not race_mod.classify(a.tobytes(), b.tobytes(), "i").rounding  # integers: exact
    c = a.copy()
    c[2] = 0.375
    d = race_mod.classify(a.tobytes(), c.tobytes(), "f")
    assert not d.rounding and d.differences == 1 and d.offsets == (8,)
    ints = np.array([1000000, 7], dtype=np.int32)
    other = np.array([1000001, 7], dtype=np.int32)
    assert not race_mod.classify(ints.tobytes(), other.tobytes(), "").rounding  # denormal floats: not rounding
    x = np.array([1.0, 2.0], dtype=np.float64)
    y = x.copy()
    y[0] += 1e-13
    assert race_mod.classify(x.tobytes(), y.tobytes(), "d").rounding


def test_parse_trace_and_kernel_params():
    text = ("L\t0\t0\tk.cu\t12\tpfi\tk<float>\nH\t1\t16\tdevice\t0\t00ff\t-\nH\t2\t8\tsymbol\t-1\t0a0a\tbuf\n"
            "L\t1\t0\tk.cu\t13\t.\tother\nH\t1\t16\tdevice\t-1\t00f\t-\nH\t2\t8\tsym")  # cut short by a crash
    launches = race_mod.parse_trace(text)
    assert [(x.kernel, x.location, x.kinds) for x in launches] == [("k<float>", "k.cu:12", "pfi"),
                                                                  ("other", "k.cu:13", "")]
    assert launches[0].allocs[2].label == "buf" and launches[1].allocs[1].digest == "00f"
    assert list(launches[1].allocs) == [1]
    src = "template <class T> __global__ void k(const T* __restrict__ in, T* out, int n = 3) {}"
    assert race_mod.kernel_params([src], "k<float>") == ["in", "out", "n"]


@pytest.mark.parametrize("source", [MATVEC, REDUCE])
def test_probe_build_keeps_line_numbers(source):
    from veriforge.cuda.cpu.source import rewrite, scan

    assert len(rewrite(scan(source), probe=True).splitlines()) == len(source.splitlines())


def _trace(hash1: str, error: int = 0) -> list:
    return race_mod.parse_trace(f"L\t0\t{error}\ta.cu\t3\tf\tk\nH\t1\t8\tdevice\t0\t{hash1}\t-\n")


def test_compare_runs_rounding_failures_and_exit_status():
    a = np.array([1.0, 2.0], dtype=np.float32)
    b = np.array([1.0, 2.0000002], dtype=np.float32)
    base = race_mod.RunTrace(_trace("aa"), 0, "x", {(0, 1): a.tobytes()})
    other = race_mod.RunTrace(_trace("bb"), 0, "x", {(0, 1): b.tobytes()})
    verdict = race_mod.compare_runs(base, {"reverse": other})
    assert not verdict.found and "rounding" in verdict.rounding and "kernel 'k' at a.cu:3" in verdict.rounding
    c = np.array([1.0, 5.0], dtype=np.float32)
    other = race_mod.RunTrace(_trace("bb"), 0, "y", {(0, 1): c.tobytes()})
    verdict = race_mod.compare_runs(base, {"reverse": other})
    assert verdict.found and verdict.differences == 1 and verdict.first_offsets == (4,) and verdict.stdout_differs
    assert verdict.values[0] == ("2", "5")
    failing = race_mod.RunTrace(_trace("aa", error=719), 0, "x")
    verdict = race_mod.compare_runs(base, {"interleave": failing})
    assert verdict.found and verdict.kernel == "k" and "fails (error 719) only" in str(verdict)
    crashed = race_mod.RunTrace(_trace("aa"), -11, "x")
    verdict = race_mod.compare_runs(base, {"reverse": crashed})
    assert verdict.found and "exit status differs: 0 in index order, -11" in str(verdict)


def test_without_the_probe_build_the_reverse_run_still_checks():
    # `put(out + i, v)` must deduce U from a U*: the probe's ProbePtr cannot, so the probe build fails
    source = REDUCE.replace(
        "__global__ void copy(const int* in, int* out) { out[threadIdx.x] = in[threadIdx.x]; }",
        "template <class U> __device__ void put(U* p, U v) { *p = v; }\n"
        "__global__ void copy(const int* in, int* out) { put(out + threadIdx.x, in[threadIdx.x]); }")
    race = cpu.run_program(source, filename="reduce.cu", race_check=True).race
    assert race.found and race.kernel == "block_sum" and race.location == f"reduce.cu:{REDUCE_LINE + 1}"
    assert race.probes == ("reverse",)
    assert any("interleaving probe could not be built" in n for n in race.notes)
