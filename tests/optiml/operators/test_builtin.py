"""Built-in edit operators: tunable detection, and every edit still compiles with the CPU runtime."""

from __future__ import annotations

import pytest

from veriforge.cuda import cpu
from veriforge.optiml.operators import BuiltinProposer, apply_tunable, find_tunables, propose_edits

TILED = """
#define TILE 16
#define WARP_SIZE 32
#define RADIUS 3
__global__ void k(const float* a, float* b, int n) {
    __shared__ float s[TILE][TILE + 1];
    int i = blockIdx.x * TILE * TILE + threadIdx.y * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int r = 0; r < RADIUS; ++r) acc += (i < n) ? a[i] : 0.0f;
    s[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (i < n) b[i] = s[threadIdx.y][threadIdx.x] + (float)(WARP_SIZE - 32);
}

extern "C" void solve(const float* a, float* b, int n) {
    dim3 block(TILE, TILE);
    k<<<(n + TILE * TILE - 1) / (TILE * TILE), block>>>(a, b, n);
}
"""

LITERAL = """
__global__ void scale(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        for (int r = 0; r < 4; ++r) v = v * 0.5f + 1.0f;
        y[i] = v;
    }
}

extern "C" void solve(const float* x, float* y, int n) {
    int threads = 128;
    scale<<<(n + 127) / 128, 128>>>(x, y, n);
    dim3 block(16, 8);
    dim3 grid((n + 15) / 16, 1);
    scale<<<grid, block>>>(x, y, n);
    scale<<<(n + threads - 1) / threads, threads>>>(x, y, n);
}
"""


def test_tunable_detection() -> None:
    tiled = {t.name: t for t in find_tunables(TILED)}
    assert set(tiled) == {"TILE"}  # WARP_SIZE is hardware, RADIUS is not a tuning name
    assert set(tiled["TILE"].roles) >= {"block", "grid", "shared", "kernel"}
    assert tiled["TILE"].value == 16 and tiled["TILE"].kind == "define"

    lit = {t.name: t for t in find_tunables(LITERAL)}
    assert set(lit) == {"threads", "block.x", "block.y", "<<<scale>>> block"}
    launch = lit["<<<scale>>> block"]
    assert launch.value == 128 and len(launch.spans) == 3  # the block and the grid's 127 and 128
    new = apply_tunable(LITERAL, launch, 256)
    assert "scale<<<(n + 255) / 256, 256>>>" in new
    new = apply_tunable(LITERAL, lit["block.x"], 32)
    assert "dim3 block(32, 8);" in new and "dim3 grid((n + 31) / 32, 1);" in new
    assert lit["threads"].kind == "local" and lit["threads"].roles[0] == "block"


def test_neighbours_stay_within_hardware_limits() -> None:
    edits = propose_edits(TILED, operators=["tune"])
    descs = [e.description for e in edits]
    # TILE 16 -> 32 gives 1024 threads (ok), 64 would give 4096 (dropped); 8 and 4 are fine.
    assert "block size TILE: 16 → 32" in descs
    assert not any("→ 64" in d for d in descs)
    assert all(e.operator == "tune" for e in edits)


@pytest.mark.parametrize("source", [TILED, LITERAL])
def test_every_builtin_edit_compiles_on_the_cpu_runtime(source: str) -> None:
    edits = propose_edits(source)
    ops = {e.operator for e in edits}
    # LITERAL launches its kernel with different block sizes: no single __launch_bounds__ fits.
    assert ops == ({"tune", "restrict", "launch_bounds", "unroll"} if source is TILED
                   else {"tune", "restrict", "unroll"})
    assert all(e.source != source and e.description for e in edits)
    # Chain one edit of every operator (and, for LITERAL, the multi-place block rewrites), re-proposing
    # on the edited source each time, then compile the composition once: every step must keep it valid.
    current = source
    for pick in ("restrict", "unroll", "launch_bounds", "<<<", "shape", "tune"):
        step = [e for e in propose_edits(current) if pick in (e.operator, *e.description.split())
                or pick in e.description]
        if step:
            current = step[0].source
    assert current.count("__restrict__") >= 2 and "#pragma unroll" in current
    cpu.compile(current)  # raises CompileError with the compiler's message if an edit broke the code


def test_restrict_and_const_only_where_safe() -> None:
    edit = next(e for e in propose_edits(LITERAL, operators=["restrict"]))
    assert "const float* __restrict__ x" in edit.source and "float* __restrict__ y" in edit.source
    assert "const float* __restrict__ y" not in edit.source  # y is written
    bounds = next(e for e in propose_edits(TILED, operators=["launch_bounds"]))
    assert "__launch_bounds__(256)" in bounds.source


def test_builtin_proposer_records_findings_as_evidence() -> None:
    from veriforge.core.types import Candidate
    from veriforge.search.interfaces import Evaluation

    class Node:
        state = Candidate(source=LITERAL)
        evaluation = Evaluation(ok=True, objective=1.0, details={"findings": [
            {"kind": "small_grid", "severity": 0.5, "line": None, "message": "grid of 2 blocks"}]})

    edits = BuiltinProposer().propose(Node(), 8)
    tune = [e for e in edits if e.metadata["operator"] == "tune"]
    assert tune and all(e.evidence["findings"][0]["kind"] == "small_grid" for e in tune)
    assert all(e.prior == pytest.approx(1.5) for e in tune)
    assert all(e.state.parent == Node.state.hash for e in edits)


def test_grid_follows_the_block_through_tiny_sizes() -> None:
    """A chain of reshapes through block.x = 2 must keep the grid's ceil-division in step (a value-based
    rule once stopped following at 2 and left a grid 4x too large, which the search then exploited)."""
    src = """
__global__ void k(const float* a, float* c, int M, int N) {
    int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < M && col < N) c[row * N + col] = a[row * N + col];
}
extern "C" void solve(const float* a, float* c, int M, int N) {
    dim3 block(16, 16);
    dim3 grid((N + 15) / 16, (M + 15) / 16);
    k<<<grid, block>>>(a, c, M, N);
}
"""
    for value in (8, 4, 2, 4, 8):
        [tx] = [t for t in find_tunables(src) if t.name == "block.x"]
        src = apply_tunable(src, tx, value)
        assert f"dim3 block({value}, 16)" in src
        assert f"dim3 grid((N + {value - 1}) / {value}, (M + 15) / 16)" in src
