"""Layout operators: swap_axes (x <-> y of a 2-D kernel and its launches) and block_shape (per-axis block shape).

Every accepted edit is run on the CPU runtime against numpy with asymmetric shapes (rows != cols, block
(16, 4), extents that are not multiples of the block), and each refusal rule is exercised by a kernel that
an edit would break (warp shuffles, lane arithmetic, a shared array sized by the block constant).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from veriforge.cuda import cpu
from veriforge.optiml.operators import find_tunables
from veriforge.optiml.operators.block_shape import block_shape_edits
from veriforge.optiml.operators.swap_axes import swap_axes_edits

# threadIdx.x walks rows (uncoalesced); the grid is written through the block's members.
ROWS_ON_X = """
__global__ void scale_t(const float* a, float* c, int rows, int cols, float s) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    int q = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && q < cols) c[r * cols + q] = s * a[r * cols + q] + (float)r - 0.5f * (float)q;
}

extern "C" void solve(const float* a, float* c, int rows, int cols, float s) {
    dim3 block(16, 4);
    dim3 grid((rows + block.x - 1) / block.x, (cols + block.y - 1) / block.y);
    scale_t<<<grid, block>>>(a, c, rows, cols, s);
}
"""

# A block-wide shared tile (+ __syncthreads), a linearised block id and dim3(...) written in the launch.
TILE_SUMS = """
#define TX 16
#define TY 4

__global__ void tile_sum(const float* a, float* out, int rows, int cols) {
    __shared__ float t[TY][TX];
    int r = blockIdx.x * TX + threadIdx.x;
    int q = blockIdx.y * TY + threadIdx.y;
    t[threadIdx.y][threadIdx.x] = (r < rows && q < cols) ? a[r * cols + q] * (float)(1 + threadIdx.x) : 0.0f;
    __syncthreads();
    if (threadIdx.x == 0 && threadIdx.y == 0) {
        float s = 0.0f;
        for (int i = 0; i < TY; ++i)
            for (int j = 0; j < TX; ++j) s += t[i][j];
        out[blockIdx.y * gridDim.x + blockIdx.x] = s;
    }
}

extern "C" void solve(const float* a, float* out, int rows, int cols) {
    tile_sum<<<dim3((rows + TX - 1) / TX, (cols + TY - 1) / TY), dim3(TX, TY)>>>(a, out, rows, cols);
}
"""

SHUFFLE = """
__global__ void row_max(const float* a, float* out, int rows, int cols) {
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    float v = -1e30f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) v = fmaxf(v, a[r * cols + c]);
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_down_sync(0xffffffff, v, o));
    if (threadIdx.x == 0 && r < rows) out[r] = v;
}

extern "C" void solve(const float* a, float* out, int rows, int cols) {
    dim3 block(32, 8);
    dim3 grid(1, (rows + 7) / 8);
    row_max<<<grid, block>>>(a, out, rows, cols);
}
"""

LANE_ARITHMETIC = """
__global__ void k(const float* a, float* out, int n) {
    int t = threadIdx.y * blockDim.x + threadIdx.x;
    __shared__ float s[256];
    s[t] = a[blockIdx.x * 256 + t];
    __syncthreads();
    if (t % 32 == 0) out[blockIdx.x * 8 + t / 32] = s[t] + s[t + 1];
}

extern "C" void solve(const float* a, float* out, int n) {
    k<<<dim3(n / 256, 2), dim3(32, 8)>>>(a, out, n);
}
"""

STENCIL_3D = """
#define B 8

__global__ void st(const float* in, float* out, int nx, int ny, int nz) {
    int x = blockIdx.x * B + threadIdx.x;
    int y = blockIdx.y * B + threadIdx.y;
    int z = B * blockIdx.z + threadIdx.z;
    if (x >= nx || y >= ny || z >= nz) return;
    int i = (z * ny + y) * nx + x;
    float l = x > 0 ? in[i - 1] : 0.0f, u = y > 0 ? in[i - nx] : 0.0f, d = z > 0 ? in[i - nx * ny] : 0.0f;
    out[i] = 2.0f * in[i] + l + u + d + (float)(x + 3 * y + 7 * z);
}

extern "C" void solve(const float* in, float* out, int nx, int ny, int nz) {
    dim3 block(B, B, B);
    dim3 grid((nx + B - 1) / B, (ny + B - 1) / B, (nz + B - 1) / B);
    st<<<grid, block>>>(in, out, nx, ny, nz);
}
"""


def _scale_ref(a: np.ndarray, rows: int, cols: int, s: float) -> np.ndarray:
    r = np.arange(rows, dtype=np.float32)[:, None]
    q = np.arange(cols, dtype=np.float32)[None, :]
    return (s * a.reshape(rows, cols) + r - 0.5 * q).astype(np.float32)


def test_swap_axes_rows_on_x_runs_like_numpy() -> None:
    [edit] = swap_axes_edits(ROWS_ON_X, [{"kind": "uncoalesced_store", "severity": 0.8, "line": 5,
                                          "message": "stride"}])
    new = edit.source
    assert "dim3 block(4, 16);" in new
    assert "dim3 grid((cols + block.x - 1) / block.x, (rows + block.y - 1) / block.y);" in new
    assert "int r = blockIdx.y * blockDim.y + threadIdx.y;" in new
    assert "int q = blockIdx.x * blockDim.x + threadIdx.x;" in new
    assert edit.operator == "swap_axes" and edit.evidence["swap_grid"] is True
    assert edit.prior == pytest.approx(2.8) and edit.evidence["findings"][0]["kind"] == "uncoalesced_store"
    mod = cpu.compile(new)
    rng = np.random.default_rng(1)
    for rows, cols in ((37, 5), (3, 70), (50, 21)):
        a = rng.standard_normal(rows * cols).astype(np.float32)
        c = np.zeros(rows * cols, np.float32)
        mod.call("solve", [a, c, rows, cols, 1.5])
        np.testing.assert_allclose(c.reshape(rows, cols), _scale_ref(a, rows, cols, 1.5), rtol=1e-6, atol=1e-5)


def test_swap_axes_keeps_shared_tiles_and_linear_block_ids() -> None:
    [edit] = swap_axes_edits(TILE_SUMS)
    new = edit.source
    assert "dim3((cols + TY - 1) / TY, (rows + TX - 1) / TX), dim3(TY, TX)" in new
    assert "t[threadIdx.x][threadIdx.y]" in new and "out[blockIdx.x * gridDim.y + blockIdx.y]" in new
    mod = cpu.compile(new)
    rows, cols = 45, 10
    a = np.random.default_rng(2).standard_normal(rows * cols).astype(np.float32)
    gx, gy = (rows + 15) // 16, (cols + 3) // 4
    out = np.zeros(gx * gy, np.float32)
    mod.call("solve", [a, out, rows, cols])
    weighted = np.zeros((gx * 16, gy * 4), np.float32)
    weighted[:rows, :cols] = a.reshape(rows, cols) * (1 + np.arange(rows) % 16)[:, None]
    expect = weighted.reshape(gx, 16, gy, 4).sum(axis=(1, 3))  # [block x, block y]
    np.testing.assert_allclose(out.reshape(gy, gx), expect.T, rtol=1e-5, atol=1e-4)


def test_swap_axes_refuses_warp_level_code() -> None:
    assert swap_axes_edits(SHUFFLE) == []
    assert swap_axes_edits(LANE_ARITHMETIC) == []
    named_lane = ROWS_ON_X.replace("int q =", "int lane_id = threadIdx.x;\n    int q =")
    assert swap_axes_edits(named_lane) == []
    assert swap_axes_edits(ROWS_ON_X.replace("(float)r", "(float)(r & 31)")) == []


def test_swap_axes_refuses_launches_it_cannot_rewrite() -> None:
    # A 1-D block, a block variable shared with another kernel, a helper reading threadIdx, a grid too tall.
    one_d = ROWS_ON_X.replace("dim3 block(16, 4);", "int block = 64;").replace("block.x", "64").replace(
        "block.y", "1")
    assert swap_axes_edits(one_d) == []
    shared_block = ROWS_ON_X.replace("scale_t<<<grid, block>>>(a, c, rows, cols, s);",
                                     "scale_t<<<grid, block>>>(a, c, rows, cols, s);\n    other<<<1, block>>>(c);")
    assert swap_axes_edits(shared_block) == []
    helper = "__device__ int col() { return threadIdx.y; }\n" + ROWS_ON_X
    assert swap_axes_edits(helper) == []
    tall = ROWS_ON_X.replace("dim3 grid((rows + block.x - 1) / block.x, (cols + block.y - 1) / block.y);",
                             "dim3 grid(70000, (cols + block.y - 1) / block.y);")
    assert swap_axes_edits(tall) == []
    assert len(swap_axes_edits(tall.replace("70000", "6000"))) == 1


def _stencil_ref(a: np.ndarray, nx: int, ny: int, nz: int) -> np.ndarray:
    v = a.reshape(nz, ny, nx)
    out = 2.0 * v
    out[:, :, 1:] += v[:, :, :-1]
    out[:, 1:, :] += v[:, :-1, :]
    out[1:, :, :] += v[:-1, :, :]
    z, y, x = np.meshgrid(np.arange(nz), np.arange(ny), np.arange(nx), indexing="ij")
    return (out + x + 3 * y + 7 * z).astype(np.float32)


def test_block_shape_3d_runs_like_numpy() -> None:
    edits = block_shape_edits(STENCIL_3D)
    shapes = [tuple(e.evidence["new"]) for e in edits]
    assert shapes == [(32, 4, 4), (32, 8, 2), (64, 4, 2)]
    rng = np.random.default_rng(3)
    for edit in edits:
        new = edit.source
        assert "#define B " not in new and "dim3 block(B_X, B_Y, B_Z);" in new
        assert "(nz + B_Z - 1) / B_Z" in new and "B_Z * blockIdx.z + threadIdx.z" in new
        tun = {t.name: t for t in find_tunables(new)}
        assert {"B_X", "B_Y", "B_Z"} <= set(tun) and "block" in tun["B_Y"].roles  # tune can move each axis
        mod = cpu.compile(new)
        for nx, ny, nz in ((37, 11, 5), (9, 70, 3), (65, 3, 17)):
            a = rng.standard_normal(nx * ny * nz).astype(np.float32)
            out = np.zeros_like(a)
            mod.call("solve", [a, out, nx, ny, nz])
            np.testing.assert_allclose(out.reshape(nz, ny, nx), _stencil_ref(a, nx, ny, nz), rtol=1e-5, atol=1e-4)


def test_block_shape_literal_2d_block_follows_grid() -> None:
    swapped = swap_axes_edits(ROWS_ON_X)[0].source.replace("dim3 block(4, 16);", "dim3 block(16, 16);")
    [e32, e64] = block_shape_edits(swapped)
    assert "dim3 block(32, 8);" in e32.source and "dim3 block(64, 4);" in e64.source
    literal = ROWS_ON_X.replace("(rows + block.x - 1) / block.x", "(rows + 15) / 16").replace(
        "(cols + block.y - 1) / block.y", "(cols + 3) / 4")
    [edit] = [e for e in block_shape_edits(literal.replace("(16, 4)", "(8, 32)").replace("15) / 16", "7) / 8")
                                           .replace("3) / 4", "31) / 32")) if e.evidence["new"] == [32, 8]]
    assert "dim3 block(32, 8);" in edit.source and "dim3 grid((rows + 31) / 32, (cols + 7) / 8);" in edit.source
    mod = cpu.compile(edit.source)
    rows, cols = 41, 19
    a = np.random.default_rng(4).standard_normal(rows * cols).astype(np.float32)
    c = np.zeros_like(a)
    mod.call("solve", [a, c, rows, cols, -2.0])
    np.testing.assert_allclose(c.reshape(rows, cols), _scale_ref(a, rows, cols, -2.0), rtol=1e-6, atol=1e-5)


def test_block_shape_refuses_constants_it_cannot_attribute() -> None:
    shared = STENCIL_3D.replace("    int x =", "    __shared__ float s[B][B];\n    int x =")
    assert block_shape_edits(shared) == []
    other_arith = STENCIL_3D.replace("x > 0 ?", "threadIdx.x < B - 1 && x > 0 ?")
    assert block_shape_edits(other_arith) == []
    bounds = STENCIL_3D.replace("__global__ void", "__global__ __launch_bounds__(B * B * B) void")
    assert block_shape_edits(bounds) == []
    assert block_shape_edits(SHUFFLE) == []  # warps regroup when the shape changes
    literal_in_kernel = ROWS_ON_X.replace("(float)r", "(float)(threadIdx.x < 16)")
    assert [e for e in block_shape_edits(literal_in_kernel.replace("(16, 4)", "(16, 16)"))] == []


def test_swap_then_shape_on_bundled_matrix_add_beats_naive() -> None:
    from veriforge.core.types import Candidate
    from veriforge.cuda.evaluate import evaluate
    from veriforge.cuda.tasks import bundled_tasks, load_task
    from veriforge.optiml.objective import time_of

    spec = next(load_task(f) for f in bundled_tasks("c2cuda") if f.name == "matrix_add_2d")
    naive = (spec.folder / spec.implementations[0].file).read_text()
    [swapped] = swap_axes_edits(naive)
    shaped = next(e for e in block_shape_edits(swapped.source) if e.evidence["new"] == [64, 4])
    assert "#define TILE_X 64" in shaped.source and "dim3 block(TILE_X, TILE_Y);" in shaped.source
    times = []
    for src in (naive, shaped.source):
        res = evaluate(spec, Candidate(source=src, language="cuda"), backend="cpu")
        assert res.correct, res.verdict.reason
        times.append(time_of(res.measurements, "estimated")[0])
    # the swap makes the loads coalesced (fewer sectors per request); at the bundled small sizes
    # the estimate is near the launch overhead, so the time gain is modest
    assert times[1] < 0.97 * times[0]


@pytest.mark.nvcc
def test_edits_compile_with_nvcc() -> None:
    from veriforge.cuda.toolchain.compiler import compile as nvcc_compile

    for src in (swap_axes_edits(TILE_SUMS)[0].source, block_shape_edits(STENCIL_3D)[-1].source):
        nvcc_compile(src, arch="sm_90")  # raises NvccCompileError with diagnostics when it does not compile


def test_priors_follow_the_predicted_coalescing() -> None:
    """The swap is tried early only where it moves a strided access off the warp's axis."""
    from veriforge.optiml.operators._layout import axis_strides
    from veriforge.optiml.source_scan import scan

    tasks = Path(__file__).resolve().parents[3] / "src/veriforge/data/tasks/c2cuda"
    finding = [{"kind": "uncoalesced_load", "severity": 0.5, "line": 8, "message": "strided"}]

    nt = (tasks / "matmul_transposed_b/impls/naive.cu").read_text()
    sc = scan(nt)
    strides = axis_strides(sc, sc.kernels()[0])
    # A[i*K+k] is broadcast along x, B[j*K+k] strided (the run-time k loop is read), C[i*N+j] unit.
    assert strides == {"x": {"unit": 1, "broadcast": 1, "strided": 1},
                       "y": {"unit": 0, "broadcast": 1, "strided": 2}}
    swap = swap_axes_edits(nt, finding)
    assert len(swap) == 1 and swap[0].prior < 0.5  # would make A and C strided instead
    assert all(e.prior <= 0.4 for e in block_shape_edits(nt, finding))  # wider x spreads B's stride

    madd = (tasks / "matrix_add_2d/impls/naive.cu").read_text()
    swap = swap_axes_edits(madd, finding)
    assert len(swap) == 1 and swap[0].prior >= 2.5 and swap[0].evidence["strides"]["x"]["strided"] == 3

    stencil = (tasks / "stencil_3d_7pt/impls/naive.cu").read_text()
    assert all(e.prior >= 2.5 for e in block_shape_edits(stencil, finding))  # every access unit-stride in x
