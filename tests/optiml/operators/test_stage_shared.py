"""The stage_shared operator: staged stencils stay correct (also after the block size changes), and
kernels it does not fully understand get no edit."""

from __future__ import annotations

import numpy as np
import pytest

from veriforge.cuda import cpu
from veriforge.optiml.operators import apply_tunable, apply_tunables, find_tunables
from veriforge.optiml.operators.stage_shared import stage_shared_edits

# Asymmetric offsets -2..+1 through a constant-trip loop and an alias, a ternary guard, and the
# centre read outside the loop; weights in a 4-entry table read as w[k + 2].
STENCIL_1D = """
__global__ void st1(const float* x, const float* w, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float s = 0.5f * x[i];
    for (int k = -2; k <= 1; ++k) {
        int j = i + k;
        s += w[k + 2] * ((j >= 0 && j < n) ? x[j] : 0.0f);
    }
    y[i] = s;
}

extern "C" void solve(const float* x, const float* w, float* y, int n) {
    int threads = 32;
    st1<<<(n + threads - 1) / threads, threads>>>(x, w, y, n);
}
"""

# Jacobi-style 2-D: neighbours through i = r * nx + c and i +- nx / i +- 1, proven in range by the
# else branch of the boundary test; plus a 3x3 filter version with rr = r + dr, cc = c + dc.
JACOBI_2D = """
__global__ void jac(const float* in, float* out, int ny, int nx) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r >= ny || c >= nx) return;
    int i = r * nx + c;
    if (r == 0 || r == ny - 1 || c == 0 || c == nx - 1) {
        out[i] = in[i];
    } else {
        out[i] = 0.125f * (in[i - nx] + 2.0f * in[i + nx] + 3.0f * in[i - 1] + in[i + 1]) + in[i];
    }
}

extern "C" void solve(const float* in, float* out, int ny, int nx) {
    dim3 block(16, 8);
    dim3 grid((nx + 15) / 16, (ny + 7) / 8);
    jac<<<grid, block>>>(in, out, ny, nx);
}
"""

CONV_2D = """
#define BX 16
#define BY 16

__global__ void conv(const float* img, const float* f, float* out, int h, int w) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < h && c < w) {
        float s = 0.0f;
        for (int dr = -1; dr <= 1; ++dr) {
            for (int dc = -1; dc <= 1; ++dc) {
                int rr = r + dr, cc = c + dc;
                if (rr >= 0 && rr < h && cc >= 0 && cc < w) s += f[(dr + 1) * 3 + (dc + 1)] * img[rr * w + cc];
            }
        }
        out[r * w + c] = s;
    }
}

extern "C" void solve(const float* img, const float* f, float* out, int h, int w) {
    dim3 block(BX, BY);
    dim3 grid((w + BX - 1) / BX, (h + BY - 1) / BY);
    conv<<<grid, block>>>(img, f, out, h, w);
}
"""

# 3-D, coordinates through the block constant (blockIdx.x * B), plane = nx * ny, boundary copy with
# its own return inside braces.
STENCIL_3D = """
#define B 4

__global__ void st3(const float* in, float* out, int nx, int ny, int nz) {
    int x = blockIdx.x * B + threadIdx.x;
    int y = blockIdx.y * B + threadIdx.y;
    int z = blockIdx.z * B + threadIdx.z;
    if (x >= nx || y >= ny || z >= nz) return;
    int plane = nx * ny;
    int i = z * plane + y * nx + x;
    if (x == 0 || x == nx - 1 || y == 0 || y == ny - 1 || z == 0 || z == nz - 1) {
        out[i] = in[i];
        return;
    }
    out[i] = in[i] + 2.0f * in[i - 1] + 3.0f * in[i + nx] + 4.0f * in[i - plane] + 5.0f * in[i + plane];
}

extern "C" void solve(const float* in, float* out, int nx, int ny, int nz) {
    dim3 block(B, B, B);
    dim3 grid((nx + B - 1) / B, (ny + B - 1) / B, (nz + B - 1) / B);
    st3<<<grid, block>>>(in, out, nx, ny, nz);
}
"""


def _ref_1d(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    n = len(x)
    pad = np.concatenate([np.zeros(2), x.astype(np.float64), np.zeros(1)])
    return 0.5 * x + sum(w[k + 2] * pad[2 + k:2 + k + n] for k in range(-2, 2))


def _check_1d(source: str, sizes: tuple[int, ...] = (1, 5, 32, 77)) -> None:
    mod = cpu.compile(source, sanitize=True)  # out-of-bounds tile accesses fault
    rng = np.random.default_rng(1)
    w = rng.standard_normal(4).astype(np.float32)
    for n in sizes:
        x = rng.standard_normal(n).astype(np.float32)
        y = np.full(n, np.nan, np.float32)
        mod.call("solve", [x, w, y, n])
        np.testing.assert_allclose(y, _ref_1d(x, w), rtol=1e-5, atol=1e-5)


def _ref_jacobi(a: np.ndarray) -> np.ndarray:
    out = a.astype(np.float64).copy()
    inner = 0.125 * (a[:-2, 1:-1] + 2.0 * a[2:, 1:-1] + 3.0 * a[1:-1, :-2] + a[1:-1, 2:]) + a[1:-1, 1:-1]
    out[1:-1, 1:-1] = inner
    return out


def _check_jacobi(source: str, shapes: tuple[tuple[int, int], ...] = ((3, 3), (9, 21), (20, 5))) -> None:
    mod = cpu.compile(source, sanitize=True)  # out-of-bounds tile accesses fault
    rng = np.random.default_rng(2)
    for ny, nx in shapes:
        a = rng.uniform(0, 1, (ny, nx)).astype(np.float32)
        out = np.full_like(a, np.nan)
        mod.call("solve", [a, out, ny, nx])
        np.testing.assert_allclose(out, _ref_jacobi(a), rtol=1e-5, atol=1e-6)


def _ref_conv(img: np.ndarray, f: np.ndarray) -> np.ndarray:
    h, w = img.shape
    pad = np.zeros((h + 2, w + 2))
    pad[1:-1, 1:-1] = img
    return sum(f[dr * 3 + dc] * pad[dr:dr + h, dc:dc + w] for dr in range(3) for dc in range(3))


def _check_conv(source: str, shapes: tuple[tuple[int, int], ...] = ((1, 1), (7, 40), (33, 5))) -> None:
    mod = cpu.compile(source, sanitize=True)  # out-of-bounds tile accesses fault
    rng = np.random.default_rng(3)
    f = rng.standard_normal(9).astype(np.float32)
    for h, w in shapes:
        img = rng.uniform(-1, 1, (h, w)).astype(np.float32)
        out = np.full_like(img, np.nan)
        mod.call("solve", [img, f, out, h, w])
        np.testing.assert_allclose(out, _ref_conv(img, f), rtol=1e-5, atol=1e-5)


def _check_3d(source: str, shapes: tuple[tuple[int, int, int], ...] = ((3, 3, 3), (5, 6, 7), (9, 4, 5))) -> None:
    mod = cpu.compile(source, sanitize=True)
    rng = np.random.default_rng(5)
    for nx, ny, nz in shapes:
        a = rng.uniform(-1, 1, (nz, ny, nx)).astype(np.float32)
        out = np.full_like(a, np.nan)
        mod.call("solve", [a, out, nx, ny, nz])
        ref = a.astype(np.float64).copy()
        ref[1:-1, 1:-1, 1:-1] = (a[1:-1, 1:-1, 1:-1] + 2.0 * a[1:-1, 1:-1, :-2] + 3.0 * a[1:-1, 2:, 1:-1]
                                 + 4.0 * a[:-2, 1:-1, 1:-1] + 5.0 * a[2:, 1:-1, 1:-1])
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


def _only_edit(source: str) -> str:
    edits = stage_shared_edits(source)
    assert len(edits) == 1 and edits[0].operator == "stage_shared"
    return edits[0].source


def test_1d_stencil_is_staged_and_stays_correct_for_other_block_sizes() -> None:
    [edit] = stage_shared_edits(STENCIL_1D)
    assert edit.evidence["arrays"] == ["x"] and edit.evidence["coefficients"] == ["w"]
    assert edit.evidence["reads_replaced"] == 2 and edit.prior == 2.0
    motivated = stage_shared_edits(STENCIL_1D, [{"kind": "memory_bound", "severity": 0.3, "line": None,
                                                 "message": "low arithmetic intensity"},
                                                {"kind": "small_grid", "severity": 0.5, "line": None, "message": ""}])
    assert motivated[0].prior == pytest.approx(2.3) and motivated[0].evidence["findings"][0]["kind"] == "memory_bound"
    src = edit.source
    assert "__shared__ float x_tile[1024 + 3];" in src and "__syncthreads();" in src
    assert "x_tile[threadIdx.x + (k + 2)]" in src and "x_tile[threadIdx.x + 2]" in src
    assert "w_s[k + 2]" in src
    # the barrier comes before the early return, which is kept
    assert src.index("__syncthreads();") < src.index("if (i >= n) return;")
    _check_1d(src)  # n = 1 and 5 are smaller than the block of 32, 77 is no multiple of it
    # the tune operator can still find and change the block size; the staged kernel follows it
    [threads] = [t for t in find_tunables(src) if t.name == "threads"]
    for size in (64, 1024):
        _check_1d(apply_tunable(src, threads, size), sizes=(3, 1500))


def test_1d_tile_is_sized_from_the_block_constant_when_the_launch_uses_one() -> None:
    src = STENCIL_1D.replace("int threads = 32;\n", "").replace("threads", "BLOCK")
    src = "#define BLOCK 64\n" + src
    staged = _only_edit(src)
    assert "__shared__ float x_tile[BLOCK + 3];" in staged
    _check_1d(staged, sizes=(1, 65, 130))
    [block] = [t for t in find_tunables(staged) if t.name == "BLOCK"]
    _check_1d(apply_tunable(staged, block, 256), sizes=(1, 300))


def test_2d_jacobi_is_staged_and_stays_correct_for_other_block_shapes() -> None:
    src = _only_edit(JACOBI_2D)
    assert "__shared__ float in_tile[3078];" in src  # worst case over every legal block shape
    assert "in_tile[threadIdx.y * in_tile_w + threadIdx.x + 1]" in src  # in[i - nx]
    assert "in_tile[(threadIdx.y + 1) * in_tile_w + threadIdx.x + 2]" in src  # in[i + 1]
    assert "in[" not in src.split("__syncthreads();")[1]  # every read now comes from the tile
    _check_jacobi(src)
    tun = {t.name: t for t in find_tunables(src)}
    _check_jacobi(apply_tunables(src, [(tun["block.x"], 32), (tun["block.y"], 32)]), shapes=((40, 70),))
    _check_jacobi(apply_tunables(src, [(tun["block.x"], 4), (tun["block.y"], 64)]), shapes=((70, 9),))


def test_2d_filter_is_staged_with_its_coefficients() -> None:
    [edit] = stage_shared_edits(CONV_2D)
    assert edit.evidence["dims"] == 2 and edit.evidence["coefficients"] == ["f"]
    src = edit.source
    assert "__shared__ float img_tile[(BX + 2) * (BY + 2)];" in src and "__shared__ float f_s[9];" in src
    assert "img_tile[(threadIdx.y + (dr + 1)) * img_tile_w + threadIdx.x + (dc + 1)]" in src
    _check_conv(src)
    tun = {t.name: t for t in find_tunables(src)}
    _check_conv(apply_tunables(src, [(tun["BX"], 32), (tun["BY"], 4)]), shapes=((9, 70), (1, 3)))


def test_3d_stencil_with_block_constant_coordinates() -> None:
    src = _only_edit(STENCIL_3D)
    # halos only where the stencil reaches: x -1..0, y 0..+1, z -1..+1
    assert "__shared__ float in_tile[(B + 1) * (B + 1) * (B + 2)];" in src
    assert "in_tile[(threadIdx.z * in_tile_h + threadIdx.y) * in_tile_w + threadIdx.x + 1]" in src  # i - plane
    assert "in[" not in src.split("__syncthreads();")[1]
    _check_3d(src)
    [b] = [t for t in find_tunables(src) if t.name == "B"]
    _check_3d(apply_tunable(src, b, 2), shapes=((5, 6, 7),))


def test_staged_kernel_has_no_race() -> None:
    src = _only_edit(JACOBI_2D)
    mod = cpu.compile(src)
    a = np.random.default_rng(4).uniform(0, 1, (20, 37)).astype(np.float32)
    out = np.zeros_like(a)
    report = mod.race_check("jac", (3, 3, 1), (16, 8, 1), [a, out, 20, 37])
    assert not report.differences


REFUSED = {
    "written input": STENCIL_1D.replace("y[i] = s;", "y[i] = s; ((float*)x)[i] = s;"),
    "input written through its name": STENCIL_1D.replace("const float* x", "float* x").replace(
        "y[i] = s;", "x[i] = s; y[i] = s;"),
    # run-time offsets are staged in dynamic shared memory, but a literal block size in the launch would
    # not follow the tune operator's change of it into the launch's byte count
    "runtime offsets with a literal block size": """
__global__ void conv1d(const float* x, const float* wk, float* y, int m, int k) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < m) {
        float s = 0.0f;
        for (int j = 0; j < k; ++j) s += x[i + j] * wk[j];
        y[i] = s;
    }
}
extern "C" void solve(const float* x, const float* wk, float* y, int n, int k) {
    int m = n - k + 1;
    conv1d<<<(m + 255) / 256, 256>>>(x, wk, y, m, k);
}
""",
    "unguarded neighbour": STENCIL_1D.replace("((j >= 0 && j < n) ? x[j] : 0.0f)", "x[j]"),
    "input passed on": STENCIL_1D.replace("y[i] = s;", "y[i] = s + __ldg(&x[i]);"),
    "existing shared memory": STENCIL_1D.replace("float s = 0.5f", "__shared__ float t[32]; float s = 0.5f"),
    "two launch sites": STENCIL_1D.replace("(x, w, y, n);\n}", "(x, w, y, n);\n    st1<<<1, 32>>>(x, w, y, n);\n}"),
    "2-D block for a 1-D kernel": STENCIL_1D.replace("threads>>>", "dim3(threads, 2)>>>"),
    "offset from a tunable constant": "#define TILE 2\n" + STENCIL_1D.replace("k <= 1", "k < TILE"),
    # a name declared twice is never resolved (here the guard's n): the proof cannot be made
    "preprocessor inside the kernel": STENCIL_1D.replace("    float s = 0.5f", "#if 1\n    float s = 0.5f").replace(
        "    y[i] = s;", "#endif\n    y[i] = s;"),
    "3-D block for a 2-D kernel": JACOBI_2D.replace("dim3 block(16, 8);", "dim3 block(16, 8, 2);"),
    "shadowed parameter": STENCIL_1D.replace("int j = i + k;", "int j = i + k; { int n = 2 * k; s += n; }"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_refuses_what_it_does_not_understand(case: str) -> None:
    assert stage_shared_edits(REFUSED[case]) == []


def test_coefficients_picked_by_a_runtime_bound_are_left_in_global_memory() -> None:
    src = STENCIL_1D.replace("int n)", "int n, int m)").replace("s += w[k + 2]", "if (k < m) s += w[k + 2]")
    [edit] = stage_shared_edits(src)
    assert edit.evidence["coefficients"] == [] and "w[k + 2]" in edit.source


def test_applying_twice_gives_nothing_more() -> None:
    for source in (STENCIL_1D, JACOBI_2D, CONV_2D, STENCIL_3D):
        assert stage_shared_edits(_only_edit(source)) == []


@pytest.mark.nvcc
def test_edits_compile_with_nvcc() -> None:
    from veriforge.cuda.toolchain.compiler import compile as nvcc_compile

    for source in (STENCIL_1D, JACOBI_2D, CONV_2D, STENCIL_3D):
        nvcc_compile(_only_edit(source), arch="sm_90")  # raises when it does not compile


def test_bundled_stencil_through_the_evaluator(global_load_requests) -> None:
    from veriforge.core.types import Candidate
    from veriforge.cuda.evaluate import evaluate
    from veriforge.cuda.tasks import bundled_tasks, load_task
    from veriforge.optiml.objective import time_of

    spec = next(s for s in map(load_task, bundled_tasks("c2cuda")) if s.id == "stencil_1d_radius3")
    naive = (spec.folder / spec.implementations[0].file).read_text()
    base, _ = time_of(evaluate(spec, Candidate(source=naive, language="cuda"), backend="cpu").measurements,
                      "estimated")
    result = evaluate(spec, Candidate(source=_only_edit(naive), language="cuda"), backend="cpu")
    assert result.correct, result.verdict.reason
    staged, _ = time_of(result.measurements, "estimated")
    # 7 global reads of x and 7 of w per output are gone; L1 caught most of them already, so the
    # estimate on these small configs may not drop, but it must not rise beyond the barrier's cost
    big = spec.configs[-1].name
    assert global_load_requests(spec, _only_edit(naive), big) < 0.3 * global_load_requests(spec, naive, big)
    assert base and staged and staged < 1.15 * base


# ---------------------------------------------------------------------------------------------
# Run-time-sized windows and tables: dynamic shared memory sized at the launch

CONV_1D = """
__global__ void conv1d(const float* x, const float* wk, float* y, int m, int k) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < m) {
        float s = 0.0f;
        for (int j = 0; j < k; ++j) {
            s += x[i + j] * wk[j];
        }
        y[i] = s;
    }
}

extern "C" void solve(const float* x, const float* wk, float* y, int n, int k) {
    int m = n - k + 1;
    int threads = 32;
    conv1d<<<(m + threads - 1) / threads, threads>>>(x, wk, y, m, k);
}
"""

POLY = """
__global__ void poly(const float* x, const float* coef, float* y, int n, int degree) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float xi = x[i];
        float sum = 0.0f;
        float p = 1.0f;
        for (int k = 0; k <= degree; ++k) {
            sum += coef[k] * p;
            p *= xi;
        }
        y[i] = sum;
    }
}

extern "C" void solve(const float* x, const float* coef, float* y, int n, int degree) {
    dim3 block(32);
    poly<<<(n + 31) / 32, block>>>(x, coef, y, n, degree);
}
"""


def _check_conv1d(source: str, cases: tuple[tuple[int, int], ...]) -> None:
    mod = cpu.compile(source, sanitize=True)  # out-of-bounds tile or dynamic shared accesses fault
    rng = np.random.default_rng(6)
    for n, k in cases:
        x = rng.standard_normal(n).astype(np.float32)
        wk = rng.uniform(-1, 1, k).astype(np.float32)
        m = n - k + 1
        y = np.full(m, np.nan, np.float32)
        mod.call("solve", [x, wk, y, n, k])
        ref = np.correlate(x.astype(np.float64), wk.astype(np.float64), mode="valid")
        np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)


def _check_poly(source: str, cases: tuple[tuple[int, int], ...]) -> None:
    mod = cpu.compile(source, sanitize=True)
    rng = np.random.default_rng(7)
    for n, degree in cases:
        x = rng.uniform(-1, 1, n).astype(np.float32)
        coef = rng.uniform(-1, 1, max(degree + 1, 1)).astype(np.float32)
        y = np.full(n, np.nan, np.float32)
        mod.call("solve", [x, coef, y, n, degree])
        ref = sum(coef[k] * x.astype(np.float64) ** k for k in range(degree + 1)) if degree >= 0 else np.zeros(n)
        np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5)


def test_runtime_window_and_table_are_staged_in_dynamic_shared_memory() -> None:
    [edit] = stage_shared_edits(CONV_1D)
    assert edit.evidence["arrays"] == ["x"] and edit.evidence["coefficients"] == ["wk"] and edit.evidence["dynamic"]
    assert edit.evidence["reads_replaced"] == 2 and edit.prior == 2.0
    src = edit.source
    assert "extern __shared__ float stage_smem[];" in src and "float* wk_s = stage_smem + x_tile_n;" in src
    assert "const int x_tile_n = ((int)blockDim.x + (k - 1));" in src
    assert "x_tile_g < k + m - 1" in src  # the valid range: the last output reads x[m - 1 + k - 1]
    assert "(stage_smem_on ? x_tile[threadIdx.x + (j)] : x[i + j])" in src
    assert "(stage_smem_on ? wk_s[j] : wk[j])" in src
    # the launch requests the bytes from its own block and argument expressions
    assert "threads, (((int)(k) - 1) >= 0 && ((int)(threads) + ((int)(k) - 1)) + ((int)(k)) <= 12288" in src
    assert src.index("__syncthreads();") < src.index("if (i < m)")
    # k = 1; n < block; a window (32 + 39) larger than the block; several blocks; over 48 KiB: global fallback
    _check_conv1d(src, ((5, 1), (10, 3), (77, 40), (300, 5), (6140, 6130)))
    [threads] = [t for t in find_tunables(src) if t.name == "threads"]
    _check_conv1d(apply_tunable(src, threads, 64), ((3, 3), (200, 17)))
    _check_conv1d(apply_tunable(src, threads, 1024), ((1500, 64), (9, 9)))


def test_runtime_table_alone_is_staged_with_a_dim3_block() -> None:
    [edit] = stage_shared_edits(POLY)
    assert edit.evidence["arrays"] == [] and edit.evidence["coefficients"] == ["coef"]
    src = edit.source
    assert "(stage_smem_on ? coef_s[k] : coef[k])" in src and "const int coef_s_n = (degree + 1);" in src
    assert "(int)(block.x)" not in src  # the table's size does not depend on the block
    assert "block, (((int)(degree)) >= 0 && ((int)(degree) + 1) <= 12288 ? " in src
    # degree 0, a table larger than the block, n < block, several blocks, an empty loop, and over 48 KiB
    _check_poly(src, ((5, 0), (5, 40), (70, 7), (3, -1), (3, 13000)))
    assert stage_shared_edits(src) == []


def test_runtime_staging_has_no_race() -> None:
    mod = cpu.compile(_only_edit(CONV_1D))
    rng = np.random.default_rng(8)
    x = rng.standard_normal(100).astype(np.float32)
    wk = rng.standard_normal(9).astype(np.float32)
    y = np.zeros(92, np.float32)
    report = mod.race_check("conv1d", (3, 1, 1), (32, 1, 1), [x, wk, y, 92, 9], shared_mem=(32 + 8 + 9) * 4)
    assert not report.differences


REFUSED_DYNAMIC = {
    "launch with a stream": CONV_1D.replace("threads>>>", "threads, 0, 0>>>"),
    "launch with a dynamic size": CONV_1D.replace("threads>>>", "threads, 64>>>"),
    "block expression with a call": CONV_1D.replace("threads>>>", "pick(threads)>>>").replace(
        "extern", "int pick(int t) { return t; }\nextern"),
    "argument with a side effect": CONV_1D.replace("y, m, k);", "y, m, k += 0);"),
    "entries picked by a condition": CONV_1D.replace("s += x[i + j] * wk[j];", "if (j < 3) s += x[i + j] * wk[j];"),
    "bound written in the kernel": CONV_1D.replace("float s = 0.0f;", "float s = 0.0f; k = k + 0;"),
    "bound changed in the kernel": POLY.replace("k <= degree", "k <= d").replace(
        "float p = 1.0f;", "float p = 1.0f; int d = degree; d++;"),
}


def test_runtime_window_not_proven_stays_in_global_memory() -> None:
    [edit] = stage_shared_edits(CONV_1D.replace("x[i + j]", "x[i - j]"))  # reads below the block: not proven
    assert edit.evidence["arrays"] == [] and edit.evidence["coefficients"] == ["wk"]
    assert "s += x[i - j] * (stage_smem_on ? wk_s[j] : wk[j]);" in edit.source
    # a second condition (thread 0 skipped) leaves the window's ends unread by the kernel: not staged
    [edit] = stage_shared_edits(CONV_1D.replace("if (i < m)", "if (i < m && i > 0)"))
    assert edit.evidence["arrays"] == [] and "s += x[i + j] * (stage_smem_on ? wk_s[j] : wk[j]);" in edit.source


@pytest.mark.parametrize("case", sorted(REFUSED_DYNAMIC))
def test_runtime_staging_refuses(case: str) -> None:
    assert stage_shared_edits(REFUSED_DYNAMIC[case]) == []


@pytest.mark.nvcc
def test_runtime_edits_compile_with_nvcc() -> None:
    from veriforge.cuda.toolchain.compiler import compile as nvcc_compile

    for source in (CONV_1D, POLY):
        nvcc_compile(_only_edit(source), arch="sm_90")


@pytest.mark.parametrize("task", ["conv1d_kernel", "polynomial_eval"])
def test_bundled_runtime_sized_tasks_through_the_evaluator(task: str, global_load_requests) -> None:
    from veriforge.core.types import Candidate
    from veriforge.cuda.evaluate import evaluate
    from veriforge.cuda.tasks import bundled_tasks, load_task
    from veriforge.optiml.objective import time_of

    spec = next(s for s in map(load_task, bundled_tasks("c2cuda")) if s.id == task)
    naive = (spec.folder / spec.implementations[0].file).read_text()
    base, _ = time_of(evaluate(spec, Candidate(source=naive, language="cuda"), backend="cpu").measurements,
                      "estimated")
    result = evaluate(spec, Candidate(source=_only_edit(naive), language="cuda"), backend="cpu")
    assert result.correct, result.verdict.reason
    staged, _ = time_of(result.measurements, "estimated")
    # k (degree + 1) global reads of the table per output are gone (L1 served most of them before)
    big = spec.configs[-1].name
    assert global_load_requests(spec, _only_edit(naive), big) < 0.5 * global_load_requests(spec, naive, big)
    assert base and staged and staged < 1.15 * base
