"""tune: coupled constants (a tile that must equal or divide the block size) move together or not at all."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from veriforge.cuda import cpu
from veriforge.optiml.operators import apply_tunable, find_tunables, propose_edits
from veriforge.optiml.operators.tune import couplings

TASKS = Path(__file__).resolve().parents[3] / "src/veriforge/data/tasks/c2cuda"


def _model_style(source: str) -> str:
    """The bundled tiled matmul as a model writes it: the tile (``TILE_SIZE``) and the block
    (``BLOCK_SIZE``) are separate constants that must stay equal."""
    source = re.sub(r"\bTS\b", "TILE_SIZE", source)
    source = source.replace("#define TILE_SIZE 16\n", "#define TILE_SIZE 16\n#define BLOCK_SIZE 16\n")
    head, launch = source.split('extern "C"')
    return head + 'extern "C"' + launch.replace("TILE_SIZE", "BLOCK_SIZE")


MATMUL = _model_style((TASKS / "matmul_fp32/impls/shared_tiled.cu").read_text())


def _values(source: str) -> dict[str, int]:
    return {t.name: t.value for t in find_tunables(source)}


def test_tile_and_block_constants_move_together() -> None:
    links = couplings(MATMUL)
    assert "#define BLOCK_SIZE 16" in MATMUL and "dim3 block(BLOCK_SIZE, BLOCK_SIZE);" in MATMUL
    assert {(c.kind, c.a, c.b) for c in links} == {("equal", "TILE_SIZE", "BLOCK_SIZE")}
    assert any("As[TILE_SIZE]" in c.why for c in links) and any("blockIdx.y * TILE_SIZE + ty" in c.why for c in links)
    edits = propose_edits(MATMUL, operators=["tune"])
    moved = [_values(e.source) for e in edits]
    assert all(v["TILE_SIZE"] == v["BLOCK_SIZE"] for v in moved), [e.description for e in edits]
    assert sorted(v["TILE_SIZE"] for v in moved) == [8, 32]
    together = next(e for e in edits if _values(e.source)["TILE_SIZE"] == 32)
    assert together.description == "coupled TILE_SIZE, BLOCK_SIZE: (16, 16) → (32, 32)"
    assert together.evidence["coupled"] and together.evidence["new_values"] == [32, 32]


def test_the_coupled_move_is_correct_and_the_lone_one_is_not() -> None:
    m, n, k = 40, 37, 45  # not multiples of any tile: partial tiles on every axis
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32)

    def run(source: str) -> np.ndarray:
        c = np.zeros((m, n), dtype=np.float32)
        cpu.compile(source).call("solve", [a, b, c, m, n, k])
        return c

    together = next(e.source for e in propose_edits(MATMUL, operators=["tune"]) if "(32, 32)" in e.description)
    np.testing.assert_allclose(run(together), a @ b, rtol=1e-4, atol=1e-4)
    [block] = [t for t in find_tunables(MATMUL) if t.name == "BLOCK_SIZE"]
    alone = apply_tunable(MATMUL, block, 32)  # what tune proposed before: 32x32 threads, 16x16 tiles
    try:
        wrong = not np.allclose(run(alone), a @ b, rtol=1e-4, atol=1e-4)
    except (cpu.KernelFault, cpu.LaunchError):
        wrong = True
    assert wrong


def test_literal_blocks_move_with_the_tile_and_are_not_reshaped() -> None:
    source = MATMUL.replace("#define BLOCK_SIZE 16\n", "").replace(
        "dim3 block(BLOCK_SIZE, BLOCK_SIZE);", "dim3 block(16, 16);").replace(
        "(N + BLOCK_SIZE - 1) / BLOCK_SIZE, (M + BLOCK_SIZE - 1) / BLOCK_SIZE", "(N + 15) / 16, (M + 15) / 16")
    edits = propose_edits(source, operators=["tune"])
    assert [e.description for e in edits] == ["coupled TILE_SIZE, block.x, block.y: (16, 16, 16) → (32, 32, 32)",
                                              "coupled TILE_SIZE, block.x, block.y: (16, 16, 16) → (8, 8, 8)"]
    assert "dim3 block(32, 32);" in edits[0].source and "dim3 grid((N + 31) / 32, (M + 31) / 32);" in edits[0].source


def test_a_block_tied_to_a_constant_tune_cannot_move_stays() -> None:
    source = """
#define THREADS 256
__global__ void k(const int* x, int* out, int n) {
    __shared__ int bins[256];
    bins[threadIdx.x] = 0;
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&bins[x[i] & 255], 1);
    __syncthreads();
    atomicAdd(&out[threadIdx.x], bins[threadIdx.x]);
}
extern "C" void solve(const int* x, int* out, int n) { k<<<(n + THREADS - 1) / THREADS, THREADS>>>(x, out, n); }
"""
    assert [(c.kind, c.a, c.b) for c in couplings(source)] == [("equal", 256, "THREADS")]
    assert propose_edits(source, operators=["tune"]) == []


def test_a_tile_that_divides_the_block_keeps_dividing_it() -> None:
    source = """
#define BLOCK 256
#define TILE 128
__global__ void k(const float* x, float* y, int n) {
    int i = blockIdx.x * BLOCK + threadIdx.x;
    int lane = threadIdx.x % TILE;
    if (i < n) y[i] = x[i] * (float)lane;
}
extern "C" void solve(const float* x, float* y, int n) { k<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(x, y, n); }
"""
    assert ("divides", "TILE", "BLOCK") in {(c.kind, c.a, c.b) for c in couplings(source)}
    moves = {e.description for e in propose_edits(source, operators=["tune"])}
    assert "block size BLOCK: 256 → 512" in moves and "parameter TILE: 128 → 64" in moves
    assert "block size BLOCK: 256 → 64" not in moves and "parameter TILE: 128 → 256" in moves


def test_bundled_kernels_block_stride_loops_are_generic_and_digit_owners_are_not() -> None:
    tasks = TASKS
    # for (b = threadIdx.x; b < BINS; b += THREADS): correct for any block size, THREADS moves
    generic = (tasks / "histogram_uint8/impls/warp_private_vec.cu").read_text()
    assert couplings(generic) == []
    assert "block size THREADS: 256 → 512" in {e.description for e in propose_edits(generic, operators=["tune"])}
    # cnt[w][threadIdx.x] with cnt[WARPS][RADIX]: "THREADS == RADIX: thread t owns digit t"
    owner = (tasks / "radix_sort_uint32/impls/match_8bit.cu").read_text()
    assert [(c.kind, c.a, c.b) for c in couplings(owner)] == [("equal", 256, "THREADS")]
    moves = [e.description for e in propose_edits(owner, operators=["tune"])]
    assert moves == ["block size SCAN_THREADS: 1024 → 512", "block size SCAN_THREADS: 1024 → 256"]


@pytest.mark.parametrize("name", ["TILE", "TPB"])
def test_unrelated_constants_still_move_alone(name: str) -> None:
    source = f"""
#define {name} 32
__global__ void k(const float* x, float* y, int n) {{
    int i = blockIdx.x * {name} + threadIdx.x;  // its own block: nothing else to keep equal
    if (i < n) y[i] = x[i];
}}
extern "C" void solve(const float* x, float* y, int n) {{ k<<<(n + {name} - 1) / {name}, {name}>>>(x, y, n); }}
"""
    assert couplings(source) == []
    assert {e.description for e in propose_edits(source, operators=["tune"])} >= {f"block size {name}: 32 → 64"}
