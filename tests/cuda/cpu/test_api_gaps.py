"""Gaps real programs hit (issue 15, item 3): cooperative groups beyond one warp, binary/labeled
partitions, shuffles of wide types, device clocks in cycles, and the host API of stream callbacks,
peer access, stream attributes, L2 persistence, memory pools and legacy aliases."""

from __future__ import annotations

import re

import pytest

from veriforge.cuda import cpu

CG_PROGRAM = r"""
#include <cstdio>
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cooperative_groups/scan.h>
namespace cg = cooperative_groups;
struct Big { double a, b, c; int d; };   // 32 bytes: shuffled in pieces

__global__ void tiles(int* out, double* dout) {
    __shared__ cg::block_tile_memory<256> scratch;
    cg::thread_block block = cg::this_thread_block(scratch);
    cg::thread_block_tile<128> t128 = cg::tiled_partition<128>(block);
    int r = t128.thread_rank();
    int* o = out + threadIdx.x * 10;
    o[0] = cg::reduce(t128, r, cg::plus<int>());
    o[1] = cg::inclusive_scan(t128, 1);
    o[2] = cg::exclusive_scan(t128, 2);
    o[3] = t128.shfl((int)threadIdx.x, 5);
    t128.sync();
    o[4] = t128.meta_group_rank() * 100 + t128.meta_group_size() * 10 + (t128.num_threads() == 128);
    o[5] = t128.any(threadIdx.x == 200) + 2 * t128.all(threadIdx.x < 250);
    auto t64 = cg::tiled_partition<64>(block);
    o[6] = t64.meta_group_rank() * 10 + cg::reduce(t64, 1, cg::plus<int>()) / 64;
    cg::thread_block_tile<32> w = cg::tiled_partition<32>(block);
    Big v{threadIdx.x * 1.0, threadIdx.x * 2.0, 3.0, (int)threadIdx.x};
    Big got = w.shfl_down(v, 1);
    double2 d2 = make_double2(threadIdx.x, -1.0 * threadIdx.x);
    double2 g2 = __shfl_xor_sync(0xffffffff, d2, 3);
    dout[threadIdx.x] = got.b + g2.x * 1000 + got.d * 1e6 + g2.y * 1e-3;
    cg::coalesced_group part = cg::binary_partition(w, threadIdx.x % 3 == 0);
    o[7] = part.size() * 100 + part.meta_group_rank() * 10 + part.meta_group_size();
    cg::coalesced_group lab = cg::labeled_partition(w, (int)(threadIdx.x % 4));
    o[8] = lab.size() * 100 + lab.meta_group_rank() * 10 + cg::reduce(lab, (int)threadIdx.x % 8, cg::plus<int>()) % 10;
    auto t4 = cg::tiled_partition<4>(cg::tiled_partition<16>(block));
    o[9] = t4.meta_group_rank() * 10 + t4.meta_group_size();
}

int main() {
    int* out; double* d;
    cudaMallocManaged(&out, 256 * 10 * sizeof(int));
    cudaMallocManaged(&d, 256 * sizeof(double));
    tiles<<<2, 256>>>(out, d);
    printf("status %s\n", cudaGetErrorString(cudaDeviceSynchronize()));
    for (int t = 0; t < 256; ++t) {
        printf("t%d", t);
        for (int j = 0; j < 10; ++j) printf(" %d", out[t * 10 + j]);
        printf(" %.3f\n", d[t]);
    }
    return 0;
}
"""


@pytest.fixture(scope="module")
def cg_rows(cpu_session_home):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VERIFORGE_HOME", cpu_session_home)
        res = cpu.run_program(CG_PROGRAM, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "status no error" in res.stdout
    rows = {}
    for line in res.stdout.splitlines():
        if line.startswith("t"):
            parts = line.split()
            rows[int(parts[0][1:])] = ([int(x) for x in parts[1:-1]], float(parts[-1]))
    assert len(rows) == 256
    return rows


def test_multi_warp_tile_collectives(cg_rows):
    for t, (o, _) in cg_rows.items():
        tile, r = divmod(t, 128)
        assert o[0] == 127 * 128 // 2, t            # reduce over 128 threads (4 warps)
        assert o[1] == r + 1, t                      # inclusive scan across warp boundaries
        assert o[2] == 2 * r, t                      # exclusive scan
        assert o[3] == tile * 128 + 5, t             # shfl from rank 5 of the thread's own tile
        assert o[4] == tile * 100 + 2 * 10 + 1, t    # meta_group_rank / size, num_threads
        assert o[5] == (1 if tile else 2), t         # any / all over 4 warps
        assert o[6] == (t // 64) * 10 + 1, t         # tiles of 64


def test_binary_and_labeled_partitions(cg_rows):
    for t, (o, _) in cg_rows.items():
        warp = range(t // 32 * 32, t // 32 * 32 + 32)
        mine = [x for x in warp if (x % 3 == 0) == (t % 3 == 0)]
        assert o[7] == len(mine) * 100 + (t % 3 == 0) * 10 + 2, t
        same = [x for x in warp if x % 4 == t % 4]
        # label rank: labels ordered by their lowest lane, which is the label itself (0..3)
        assert o[8] == 8 * 100 + (t % 4) * 10 + sum(x % 8 for x in same) % 10, t
        assert o[9] == ((t % 16) // 4) * 10 + 4, t   # meta group within the parent tile of 16


def test_wide_shuffles(cg_rows):
    for t, (_, d) in cg_rows.items():
        lane = t % 32
        src = t + 1 if lane < 31 else t              # shfl_down of a 32-byte struct
        x = t ^ 3                                    # __shfl_xor_sync of a double2
        assert d == pytest.approx(2.0 * src + x * 1000 + src * 1e6 - x * 1e-3, abs=1e-6), t


DIVERGENT_TILES = r"""
#include <cstdio>
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;
__global__ void k(int* out) {
    auto t128 = cg::tiled_partition<128>(cg::this_thread_block());
    int v;
    if (t128.meta_group_rank() == 0) {
        v = cg::reduce(t128, 1, cg::plus<int>()) + t128.shfl((int)threadIdx.x, 3);
    } else {
        t128.sync();
        v = cg::reduce(t128, 2, cg::plus<int>()) + 1000;
    }
    out[blockIdx.x * 256 + threadIdx.x] = v;
}
int main() {
    int* out;
    cudaMallocManaged(&out, 3 * 256 * sizeof(int));
    k<<<3, 256>>>(out);
    printf("status %s\n", cudaGetErrorName(cudaDeviceSynchronize()));
    printf("values %d %d %d\n", out[0], out[127], out[2 * 256 + 200]);
    return 0;
}
"""


def test_tiles_taking_different_paths_are_right_or_a_reported_fault(cpu_session_home, monkeypatch):
    # Multi-warp tiles synchronise with the block's barrier unless the scheduler lets a spinning
    # wait start new threads (VF_YIELD_STARTS_NEW_THREADS): either way never a silent wrong answer.
    monkeypatch.setenv("VERIFORGE_HOME", cpu_session_home)
    res = cpu.run_program(DIVERGENT_TILES, timeout=60)
    assert res.returncode == 0, res.stderr
    if "status cudaSuccess" in res.stdout:
        assert "values 131 131 1256" in res.stdout
    else:
        assert "status cudaErrorLaunchFailure" in res.stdout
        assert "divergent __syncthreads()" in res.stderr and "line 10" in res.stderr


CLOCK_PROGRAM = r"""
#include <cstdio>
#include <ctime>
#include <cuda_runtime.h>
__device__ int flag;
__global__ void sleep_cycles(long long cycles, long long* measured, clock_t* c32) {
    long long t0 = clock64();
    clock_t c0 = clock();
    while (clock64() - t0 < cycles) {}
    measured[threadIdx.x] = clock64() - t0;
    c32[threadIdx.x] = clock() - c0;
}
// Thread 0 waits (with a time-out) for thread 1 of its block: the wait must let thread 1 run.
__global__ void handshake(int* seen) {
    if (threadIdx.x == 0) {
        long long t0 = clock64();
        while (atomicAdd(&flag, 0) == 0 && clock64() - t0 < 1755000000LL) {}   // up to 1 s
        seen[0] = atomicAdd(&flag, 0);
        seen[1] = (int)((clock64() - t0) / 1755000);                              // ms waited
    } else if (threadIdx.x == 1) {
        atomicExch(&flag, 1);
    }
}
int main() {
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, 0);
    long long *m; clock_t* c; int* seen;
    cudaMallocManaged(&m, 64 * sizeof(long long));
    cudaMallocManaged(&c, 64 * sizeof(clock_t));
    cudaMallocManaged(&seen, 2 * sizeof(int));
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0); cudaEventCreate(&e1);
    long long cycles = (long long)prop.clockRate * 50;   // 50 ms at the reported clock
    cudaEventRecord(e0);
    sleep_cycles<<<1, 1>>>(cycles, m, c);
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float one = 0; cudaEventElapsedTime(&one, e0, e1);
    cudaEventRecord(e0);
    sleep_cycles<<<1, 16>>>(cycles / 5, m + 32, c + 32);   // 10 ms in each of 16 threads
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float many = 0; cudaEventElapsedTime(&many, e0, e1);
    handshake<<<1, 2>>>(seen);
    cudaDeviceSynchronize();
    clock_t h0 = clock();
    volatile double x = 0; for (int i = 0; i < 20000000; ++i) x = x + 1.0;
    clock_t h1 = clock();
    printf("rate %d one %.1f many %.1f cycles %lld clock %ld each %lld seen %d %d host %ld\n", prop.clockRate, one,
           many, m[0], (long)c[0], m[47], seen[0], seen[1], (long)(h1 - h0));
    return 0;
}
"""


def test_device_clock_counts_cycles_at_the_reported_rate(cpu_session_home, monkeypatch):
    monkeypatch.setenv("VERIFORGE_HOME", cpu_session_home)
    res = cpu.run_program(CLOCK_PROGRAM, timeout=60)
    assert res.returncode == 0, res.stderr
    m = re.search(r"rate (\d+) one ([\d.]+) many ([\d.]+) cycles (\d+) clock (\d+) each (\d+) seen (\d+) (\d+) "
                  r"host (\d+)", res.stdout)
    assert m, res.stdout
    rate, one, many, cycles, c32, each, seen, waited, host = (float(x) for x in m.groups())
    assert rate == 1755000
    # the spin-wait of 50 ms worth of cycles lasts ~50 ms of wall time, and counts that many cycles
    assert 45 <= one < 1000
    assert 50 * 1755000 <= cycles < 1000 * 1755000
    assert 49 * 1755000 <= c32 < 1000 * 1755000      # device clock() counts cycles too
    # 16 threads each sleeping 10 ms share the wall time instead of taking 16 x 10 ms one by one
    assert 10 <= many < 16 * 10
    assert 10 * 1755000 <= each < 1000 * 1755000
    # a thread waiting for another thread of its block lets it run (no time-out)
    assert seen == 1 and waited < 500
    # host clock() is still the C library's processor time (CLOCKS_PER_SEC = 1e6 units)
    assert 1000 <= host < 5_000_000


HOST_API_PROGRAM = r"""
#include <cstdio>
#include <cuda_runtime.h>
#define SHOW(x) printf("%s = %s\n", #x, cudaGetErrorName(x))
static int order[8], norder = 0, statuses[8];
void CUDART_CB callback(cudaStream_t, cudaError_t status, void* user) {
    statuses[norder] = (int)status;
    order[norder++] = 100 + *(int*)user;
}
void host_fn(void* user) { order[norder++] = 200 + *(int*)user; }
__global__ void store(int* p, int v) { *p = v; }
__global__ void boom() { __trap(); }
int main() {
    int least, greatest, prio = 99;
    SHOW(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    cudaStream_t s, t;
    SHOW(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, -100));
    SHOW(cudaStreamCreate(&t));
    cudaStreamGetPriority(s, &prio);
    unsigned flags = 9; cudaStreamGetFlags(s, &flags);
    printf("priority range %d %d stream %d flags %u\n", least, greatest, prio, flags);
    int* d; cudaMalloc(&d, sizeof(int));
    int a = 1, b = 2, seen_by_host_fn = -1;
    store<<<1, 1, 0, s>>>(d, 7);
    SHOW(cudaStreamAddCallback(s, callback, &a, 0));
    SHOW(cudaLaunchHostFunc(s, host_fn, &b));
    SHOW(cudaStreamAddCallback(s, callback, &a, 1));
    cudaGetLastError();
    cudaMemcpy(&seen_by_host_fn, d, sizeof(int), cudaMemcpyDeviceToHost);
    printf("order %d %d n=%d status %d value %d\n", order[0], order[1], norder, statuses[0], seen_by_host_fn);
    SHOW(cudaStreamQuery(s));
    cudaEvent_t ev; cudaEventCreate(&ev); cudaEventRecord(ev, s);
    SHOW(cudaEventQuery(ev));

    int can = 7;
    SHOW(cudaDeviceCanAccessPeer(&can, 0, 0));
    printf("can access peer %d\n", can);
    SHOW(cudaDeviceCanAccessPeer(&can, 0, 1));
    SHOW(cudaDeviceEnablePeerAccess(0, 0));
    SHOW(cudaDeviceEnablePeerAccess(1, 0));
    SHOW(cudaDeviceDisablePeerAccess(1));
    SHOW(cudaGetLastError());
    SHOW(cudaGetLastError());

    cudaDeviceProp prop; cudaGetDeviceProperties(&prop, 0);
    printf("persisting max %d window max %d\n", prop.persistingL2CacheMaxSize, prop.accessPolicyMaxWindowSize);
    SHOW(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 1 << 20));
    size_t lim = 0; cudaDeviceGetLimit(&lim, cudaLimitPersistingL2CacheSize);
    SHOW(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, (size_t)1 << 40));
    size_t capped = 0; cudaDeviceGetLimit(&capped, cudaLimitPersistingL2CacheSize);
    printf("persisting limit %zu capped %d\n", lim, capped == (size_t)prop.persistingL2CacheMaxSize);
    cudaStreamAttrValue v = {};
    v.accessPolicyWindow.base_ptr = d;
    v.accessPolicyWindow.num_bytes = 4096;
    v.accessPolicyWindow.hitRatio = 0.75f;
    v.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
    v.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
    SHOW(cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &v));
    cudaStreamAttrValue g = {};
    SHOW(cudaStreamGetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &g));
    printf("window same %d bytes %zu ratio %.2f hit %d miss %d\n", g.accessPolicyWindow.base_ptr == (void*)d,
           g.accessPolicyWindow.num_bytes, g.accessPolicyWindow.hitRatio, (int)g.accessPolicyWindow.hitProp,
           (int)g.accessPolicyWindow.missProp);
    cudaStreamAttrValue other = {};
    cudaStreamGetAttribute(t, cudaStreamAttributeAccessPolicyWindow, &other);
    cudaStreamAttrValue pr = {};
    cudaStreamGetAttribute(s, cudaStreamAttributePriority, &pr);
    printf("other stream bytes %zu priority attr %d\n", other.accessPolicyWindow.num_bytes, pr.priority);
    v.accessPolicyWindow.hitRatio = 2.0f;
    SHOW(cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &v));
    SHOW(cudaCtxResetPersistingL2Cache());

    cudaMemPool_t pool, current;
    SHOW(cudaDeviceGetDefaultMemPool(&pool, 0));
    cudaDeviceGetMemPool(&current, 0);
    uint64_t threshold = 1 << 30, used = 0, used_after = 0, reserved = 0, trimmed = 0, high = 0, got = 0;
    SHOW(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
    cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &got);
    void *p, *q;
    SHOW(cudaMallocAsync(&p, 1000, s));
    SHOW(cudaMallocFromPoolAsync(&q, 24, pool, s));
    cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used);
    cudaMemsetAsync(p, 0, 1000, s);
    SHOW(cudaFreeAsync(p, s));
    SHOW(cudaFreeAsync(q, s));
    cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used_after);
    cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved);
    cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &high);
    SHOW(cudaMemPoolTrimTo(pool, 0));
    cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &trimmed);
    uint64_t nonzero = 5;
    SHOW(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &nonzero));
    printf("pool default %d threshold %llu used %llu after %llu reserved %llu high %llu trimmed %llu\n",
           pool == current, (unsigned long long)got, (unsigned long long)used, (unsigned long long)used_after,
           (unsigned long long)reserved, (unsigned long long)high, (unsigned long long)trimmed);
    int pools = 0;
    cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, 0);
    int l2max = 0;
    cudaDeviceGetAttribute(&l2max, cudaDevAttrMaxPersistingL2CacheSize, 0);
    printf("pools supported %d l2max ok %d\n", pools, l2max == prop.persistingL2CacheMaxSize);

    SHOW(cudaThreadSynchronize());
    SHOW(cudaThreadSetLimit(cudaLimitStackSize, 4096));
    size_t stack = 0; cudaThreadGetLimit(&stack, cudaLimitStackSize);
    printf("stack %zu\n", stack);

    cudaExtent ext = make_cudaExtent(10 * sizeof(int), 3, 2);
    cudaPitchedPtr vol;
    SHOW(cudaMalloc3D(&vol, ext));
    SHOW(cudaMemset3D(vol, 0, ext));
    int box[2][3][10];
    for (int z = 0; z < 2; ++z)
        for (int y = 0; y < 3; ++y)
            for (int x = 0; x < 10; ++x) box[z][y][x] = z * 100 + y * 10 + x;
    cudaMemcpy3DParms up = {};
    up.srcPtr = make_cudaPitchedPtr(box, 10 * sizeof(int), 10, 3);
    up.dstPtr = vol;
    up.extent = make_cudaExtent(9 * sizeof(int), 2, 2);   // a sub-box: 9 x 2 x 2
    up.kind = cudaMemcpyHostToDevice;
    SHOW(cudaMemcpy3D(&up));
    int back[2][3][10] = {};
    cudaMemcpy3DParms down = {};
    down.srcPtr = vol;
    down.dstPtr = make_cudaPitchedPtr(back, 10 * sizeof(int), 10, 3);
    down.extent = ext;
    down.kind = cudaMemcpyDeviceToHost;
    SHOW(cudaMemcpy3DAsync(&down, s));
    printf("pitch %zu box %d %d %d %d\n", vol.pitch, back[1][1][8], back[1][1][9], back[1][2][0], back[0][0][3]);
    int* pinned; cudaHostAlloc(&pinned, 64, cudaHostAllocDefault);
    unsigned hflags = 7;
    SHOW(cudaHostGetFlags(&hflags, pinned));
    SHOW(cudaMemset2DAsync(vol.ptr, vol.pitch, 0, 8, 3, s));

    boom<<<1, 1, 0, s>>>();
    cudaDeviceSynchronize();
    norder = 0;
    SHOW(cudaStreamAddCallback(s, callback, &a, 0));
    SHOW(cudaLaunchHostFunc(s, host_fn, &b));
    printf("after fault n=%d status %d\n", norder, statuses[0]);
    SHOW(cudaThreadExit());
    SHOW(cudaStreamQuery(0));
    return 0;
}
"""


@pytest.fixture(scope="module")
def host_api_out(cpu_session_home):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VERIFORGE_HOME", cpu_session_home)
        res = cpu.run_program(HOST_API_PROGRAM, timeout=60)
    assert res.returncode == 0, res.stderr
    return res.stdout


def test_stream_callbacks_and_host_functions_run_in_order(host_api_out):
    out = host_api_out
    assert "cudaStreamAddCallback(s, callback, &a, 0) = cudaSuccess" in out
    assert "cudaLaunchHostFunc(s, host_fn, &b) = cudaSuccess" in out
    assert "cudaStreamAddCallback(s, callback, &a, 1) = cudaErrorInvalidValue" in out   # flags must be 0
    assert "order 101 202 n=2 status 0 value 7" in out
    assert "cudaStreamQuery(s) = cudaSuccess" in out
    assert "cudaEventQuery(ev) = cudaSuccess" in out
    # after a device fault: the callback gets the error, the host function does not run
    assert "cudaStreamAddCallback(s, callback, &a, 0) = cudaErrorLaunchFailure" in out
    assert "cudaLaunchHostFunc(s, host_fn, &b) = cudaErrorLaunchFailure" in out
    assert "after fault n=1 status 719" in out
    assert "cudaThreadExit() = cudaSuccess" in out and "cudaStreamQuery(0) = cudaSuccess" in out


def test_stream_priorities(host_api_out):
    assert "cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, -100) = cudaSuccess" in host_api_out
    assert "priority range 0 -5 stream -5 flags 1" in host_api_out   # clamped to the greatest priority


def test_peer_access_on_one_device(host_api_out):
    out = host_api_out
    assert "cudaDeviceCanAccessPeer(&can, 0, 0) = cudaSuccess" in out and "can access peer 0" in out
    assert "cudaDeviceCanAccessPeer(&can, 0, 1) = cudaErrorInvalidDevice" in out
    assert "cudaDeviceEnablePeerAccess(0, 0) = cudaErrorInvalidDevice" in out
    assert "cudaDeviceEnablePeerAccess(1, 0) = cudaErrorInvalidDevice" in out
    assert "cudaDeviceDisablePeerAccess(1) = cudaErrorInvalidDevice" in out
    # the error is the last error once, then cleared
    assert "cudaGetLastError() = cudaErrorInvalidDevice\ncudaGetLastError() = cudaSuccess" in out


def test_stream_attributes_and_l2_persistence(host_api_out):
    out = host_api_out
    m = re.search(r"persisting max (\d+) window max (\d+)", out)
    assert m and int(m.group(1)) > 0 and int(m.group(2)) > 0
    assert "persisting limit 1048576 capped 1" in out
    assert "window same 1 bytes 4096 ratio 0.75 hit 2 miss 1" in out
    assert "other stream bytes 0 priority attr -5" in out
    assert "cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &v) = cudaErrorInvalidValue" in out
    assert "cudaCtxResetPersistingL2Cache() = cudaSuccess" in out


def test_memory_pools(host_api_out):
    out = host_api_out
    assert "cudaMallocFromPoolAsync(&q, 24, pool, s) = cudaSuccess" in out
    assert "pool default 1 threshold 1073741824 used 1024 after 0 reserved 1024 high 1024 trimmed 0" in out
    assert "cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &nonzero) = cudaErrorInvalidValue" in out
    assert "pools supported 1 l2max ok 1" in out


def test_3d_memory_on_pitched_pointers(host_api_out):
    assert "cudaMalloc3D(&vol, ext) = cudaSuccess" in host_api_out
    assert "cudaMemcpy3D(&up) = cudaSuccess" in host_api_out
    # copied 9 x 2 x 2 of the 10 x 3 x 2 box into a zeroed volume, then the whole volume back
    assert "pitch 256 box 118 0 0 3" in host_api_out
    assert "cudaHostGetFlags(&hflags, pinned) = cudaSuccess" in host_api_out
    assert "cudaMemset2DAsync(vol.ptr, vol.pitch, 0, 8, 3, s) = cudaSuccess" in host_api_out


def test_legacy_aliases(host_api_out):
    assert "cudaThreadSynchronize() = cudaSuccess" in host_api_out
    assert "cudaThreadSetLimit(cudaLimitStackSize, 4096) = cudaSuccess" in host_api_out
    assert "stack 4096" in host_api_out


def test_unsupported_api_function_is_refused_with_its_line(cpu_session_home, monkeypatch):
    monkeypatch.setenv("VERIFORGE_HOME", cpu_session_home)
    src = ("#include <cuda_runtime.h>\n// cudaIpcGetMemHandle(&h, p) in a comment does not count\n"
           "int main() {\n    cudaIpcMemHandle_t h; void* p = nullptr;\n"
           "    cudaIpcGetMemHandle(&h, p);\n    cudaIpcCloseMemHandle(p);\n"
           "    return 0;\n}\n")
    with pytest.raises(cpu.UnsupportedFeatureError) as info:
        cpu.run_program(src, timeout=60)
    msg = str(info.value)
    assert "cudaIpcGetMemHandle (program.cu:5: cudaIpcGetMemHandle(&h, p);)" in msg
    assert "cudaIpcCloseMemHandle (program.cu:6:" in msg
