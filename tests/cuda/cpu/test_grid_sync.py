"""Cooperative launches: cudaLaunchCooperativeKernel / cudaLaunchKernelEx with the cooperative attribute run
every block at once (one OS thread each) with a grid-wide barrier for this_grid().sync(); a grid larger than
the occupancy limit is cudaErrorCooperativeLaunchTooLarge; grid.sync() elsewhere, or a block that leaves
while the others wait, is a KernelFault."""

from __future__ import annotations

import re

import pytest

from veriforge.cuda import cpu

PROGRAM = r"""
#include <cstdio>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

// Phase 1 writes, grid.sync(), phase 2 reads what other blocks wrote (mirror index), twice.
__global__ void mirror(int* data, int* out, int n) {
    cg::grid_group grid = cg::this_grid();
    for (int i = grid.thread_rank(); i < n; i += grid.size()) data[i] = i;
    grid.sync();
    int sum = 0;
    for (int i = grid.thread_rank(); i < n; i += grid.size()) sum += data[n - 1 - i];
    atomicAdd(&out[0], sum);
    cg::sync(grid);
    if (grid.thread_rank() == 0) out[1] = grid.is_valid() + 10 * (int)grid.num_blocks();
}

template <int Rounds> __global__ void relay(int* cell) {
    // each round one block (round % blocks) increments; everyone sees every increment
    cg::grid_group grid = cg::this_grid();
    for (int r = 0; r < Rounds; ++r) {
        if (blockIdx.x == r % gridDim.x && threadIdx.x == 0) *cell += 1;
        grid.sync();
        if (*cell != r + 1) cell[1] = 1000 + r;   // a block that ran ahead would see a stale value
        grid.sync();
    }
}

__global__ void not_cooperative(int* out) { cg::this_grid().sync(); }

__global__ void leaves_early(int* out) {
    if (blockIdx.x == 1) return;
    cg::this_grid().sync();
}

int main() {
    int n = 50000;
    int *d, *o;
    cudaMallocManaged(&d, n * sizeof(int));
    cudaMallocManaged(&o, 4 * sizeof(int));
    int coop = 0, sms = 0, per_sm = 0;
    cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, 0);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, mirror, 256, 0);
    int blocks = sms * per_sm;
    o[0] = o[1] = 0;
    void* args[] = {&d, &o, &n};
    cudaError_t e = cudaLaunchCooperativeKernel((void*)mirror, blocks, 256, args, 0, 0);
    cudaDeviceSynchronize();
    printf("attr %d full grid %d: %s sum %s valid %d\n", coop, blocks, cudaGetErrorString(e),
           o[0] == (int)((long long)n * (n - 1) / 2) ? "ok" : "WRONG", o[1]);
    e = cudaLaunchCooperativeKernel((void*)mirror, blocks + 1, 256, args, 0, 0);
    printf("one block too many: %d %s; last error %d\n", (int)e, cudaGetErrorName(e), (int)cudaGetLastError());
    int* cell = o + 2;
    cell[0] = cell[1] = 0;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(7);
    cfg.blockDim = dim3(64);
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeCooperative;
    attr[0].val.cooperative = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    e = cudaLaunchKernelEx(&cfg, relay<20>, cell);
    cudaDeviceSynchronize();
    printf("launchEx: %s cell %d stale %d\n", cudaGetErrorString(e), cell[0], cell[1]);
    not_cooperative<<<2, 32>>>(o);
    printf("plain launch: %s\n", cudaGetErrorString(cudaDeviceSynchronize()));
    return 0;
}
"""


@pytest.fixture(scope="module")
def result(cpu_session_home):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VERIFORGE_HOME", cpu_session_home)
        res = cpu.run_program(PROGRAM, filename="grid.cu", timeout=120)
    assert res.returncode == 0, res.stderr
    return res


def test_full_occupancy_grid_syncs_across_blocks(result):
    line = result.stdout.splitlines()[0]
    m = re.fullmatch(r"attr 1 full grid (\d+): no error sum ok valid (\d+)", line)
    assert m, line
    blocks = int(m.group(1))
    assert blocks == 16 * 8                  # 16 SMs x 2048/256 blocks
    assert int(m.group(2)) == 1 + 10 * blocks


def test_a_grid_beyond_the_occupancy_limit_is_refused(result):
    assert "one block too many: 720 cudaErrorCooperativeLaunchTooLarge; last error 720" in result.stdout
    assert "cooperative launch of 129 blocks of 256 threads: at most 128 blocks" in result.stderr


def test_launch_kernel_ex_with_the_cooperative_attribute(result):
    assert "launchEx: no error cell 20 stale 0" in result.stdout


def test_grid_sync_outside_a_cooperative_launch_is_a_fault(result):
    assert "plain launch: unspecified launch failure" in result.stdout
    assert re.search(r"kernel 'not_cooperative', block \(\d,0,0\): this_grid\(\)\.sync\(\) at line 29 .*"
                     r"not launched with cudaLaunchCooperativeKernel", result.stderr)


def test_a_block_leaving_while_others_wait_is_a_deadlock():
    src = PROGRAM.replace("not_cooperative<<<2, 32>>>(o);",
                          "void* a2[] = {&o}; cudaLaunchCooperativeKernel((void*)leaves_early, 4, 32, a2, 0, 0);")
    res = cpu.run_program(src, filename="grid.cu", timeout=120)
    assert "plain launch: unspecified launch failure" in res.stdout
    assert re.search(r"deadlock: block \(1,0,0\) exited without reaching this_grid\(\)\.sync\(\), which the grid's "
                     r"other blocks wait at \(line 33\)", res.stderr), res.stderr


def test_only_programs_with_cooperative_launches_get_a_thread_per_block(tmp_path):
    # the sandbox's task limit is loosened by COOPERATIVE_BLOCKS only where a cooperative launch is written
    from veriforge.cuda.cpu.program import _COOPERATIVE, COOPERATIVE_BLOCKS, _program_policy

    plain = _program_policy(10, False, tmp_path / "p").limits.max_procs
    coop = _program_policy(10, False, tmp_path / "p", cooperative=True).limits.max_procs
    assert coop - plain == COOPERATIVE_BLOCKS and plain < COOPERATIVE_BLOCKS
    assert _COOPERATIVE.search("cudaLaunchCooperativeKernel((void*)k, g, b, args)")
    assert _COOPERATIVE.search("attr.id = cudaLaunchAttributeCooperative;")
    assert not _COOPERATIVE.search("k<<<g, b>>>(x);")
