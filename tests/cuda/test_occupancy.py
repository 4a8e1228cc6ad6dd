"""The occupancy port against NVIDIA's own cuda_occupancy.h, plus hand-checked cases.

The harness (tests/cuda/data/occupancy_harness.cpp) is compiled with g++ against the installed
header and fed the same launches as the Python port; device properties come from our arch table,
so a wrong table entry shows up here as a disagreement too.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from veriforge.cuda import occupancy
from veriforge.cuda.arch import KB, Arch, UnknownArchError, get_arch, get_gpu, list_archs
from veriforge.cuda.occupancy import OccupancyInputError, max_potential_block_size, theoretical
from veriforge.errors import CudaError

HARNESS = Path(__file__).parent / "data" / "occupancy_harness.cpp"
INT_MAX = 2**31 - 1
CACHE_CODES = {"none": 0, "shared": 1, "l1": 2, "equal": 3}
N_RANDOM = 1200


def _find_header() -> Path | None:
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    nvcc = shutil.which("nvcc")
    if nvcc:
        roots.append(str(Path(nvcc).resolve().parent.parent))
    for root in roots:
        if root and (Path(root) / "include" / "cuda_occupancy.h").is_file():
            return Path(root) / "include"
    return None


@pytest.fixture(scope="module")
def harness(tmp_path_factory) -> Path:
    include = _find_header()
    if include is None:
        pytest.skip("cuda_occupancy.h not found (no CUDA toolkit: set CUDA_HOME)")
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("g++ not found")
    exe = tmp_path_factory.mktemp("occ") / "occupancy_harness"
    subprocess.run(
        [gxx, "-std=c++14", "-O1", f"-I{include}", str(HARNESS), "-o", str(exe)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return exe


def _run(exe: Path, lines: list[str]) -> list[list[int]]:
    out = subprocess.run(
        [str(exe)], input="\n".join(lines) + "\n", capture_output=True, text=True, check=True, timeout=120
    ).stdout.splitlines()
    assert len(out) == len(lines)
    return [[int(v) for v in row.split()] for row in out]


def _device(a: Arch, num_sms: int = 1) -> str:
    return (
        f"{a.major} {a.minor} {a.max_threads_per_block} {a.max_threads_per_sm} {a.max_regs_per_block} "
        f"{a.regs_per_sm} {a.warp_size} {a.smem_per_block_default} {a.smem_per_sm} {num_sms} "
        f"{a.smem_per_block_optin} {a.smem_reserved_per_block}"
    )


def _resolved_max_dynamic(a: Arch, cfg: dict) -> int:
    if cfg["max_dynamic_smem"] is not None:
        return cfg["max_dynamic_smem"]
    return max(0, a.smem_per_block_optin - cfg["smem_static"])


def _func_state(a: Arch, cfg: dict, regs: int, func_max_threads: int = 1024) -> str:
    shmem_cfg = 1 if cfg["smem_limit"] == "optin" else 0
    carveout = -1 if cfg["smem_carveout"] is None else cfg["smem_carveout"]
    cache = CACHE_CODES[cfg["cache_config"]]
    return (
        f"{func_max_threads} {regs} {cfg['smem_static']} {shmem_cfg} {_resolved_max_dynamic(a, cfg)} "
        f"{cfg['num_block_barriers']} {cfg['virtual_resources']} {cache} {carveout}"
    )


def _random_config(rng: random.Random, a: Arch) -> dict:
    block = rng.choice(
        [
            rng.randint(1, 1024),
            32 * rng.randint(1, 32),
            rng.choice(
                [
                    1,
                    31,
                    32,
                    33,
                    63,
                    64,
                    96,
                    100,
                    128,
                    192,
                    255,
                    256,
                    257,
                    384,
                    512,
                    640,
                    768,
                    992,
                    1000,
                    1023,
                    1024,
                    1025,
                    2048,
                ]
            ),
        ]
    )
    regs = rng.choice(
        [
            rng.randint(0, 256),
            rng.choice([0, 1, 16, 24, 32, 33, 40, 63, 64, 65, 72, 80, 96, 128, 129, 168, 200, 255, 256, 257]),
        ]
    )
    optin = a.smem_per_block_optin
    static = rng.choice(
        [0, 0, 0, rng.randint(0, 48 * KB), rng.randint(0, optin), 48 * KB, optin, rng.randrange(0, 48 * KB, 1024)]
    )
    room = max(0, optin - static)
    dynamic = rng.choice(
        [
            0,
            0,
            rng.randint(0, optin),
            rng.randint(0, room),
            room,
            rng.randint(0, optin + 8 * KB),
            rng.randrange(0, 64 * KB, 4096),
        ]
    )
    cfg = {
        "smem_static": static,
        "smem_dynamic": dynamic,
        "smem_carveout": rng.choice([None] * 4 + [-1, 0, 25, 50, 100, rng.randint(0, 100)]),
        "cache_config": rng.choice(["none"] * 5 + ["shared", "l1", "equal"]),
        "max_dynamic_smem": rng.choice([None] * 4 + [max(0, 48 * KB - static), rng.randint(0, optin)]),
        "smem_limit": rng.choice(["optin"] * 5 + ["default"]),
        "num_block_barriers": rng.choice([1] * 6 + [0, 2, 3, 5, 16, 70]),
        "virtual_resources": rng.choice([0] * 6 + [1, 3, 7, 64, 129]),
    }
    return {"block": block, "regs": regs, **cfg}


_OPTION_KEYS = (
    "smem_carveout",
    "cache_config",
    "max_dynamic_smem",
    "smem_limit",
    "num_block_barriers",
    "virtual_resources",
)


def _py(a: Arch, cfg: dict) -> occupancy.Occupancy:
    return theoretical(
        a, cfg["block"], cfg["regs"], cfg["smem_static"], cfg["smem_dynamic"], **{k: cfg[k] for k in _OPTION_KEYS}
    )


def _as_header(v: int | None) -> int:
    return INT_MAX if v is None else v


@pytest.mark.parametrize("arch", [a.name for a in list_archs()])
def test_matches_cuda_occupancy_h_on_random_launches(harness, arch):
    a = get_arch(arch)
    rng = random.Random(f"occupancy-{arch}")
    configs = [_random_config(rng, a) for _ in range(N_RANDOM)]
    lines = [f"O {_device(a)} {_func_state(a, c, c['regs'])} {c['block']} {c['smem_dynamic']}" for c in configs]
    answers = _run(harness, lines)
    mismatches = []
    zero = limited_by = 0
    for cfg, ref in zip(configs, answers, strict=True):
        status, active, _flags, l_regs, l_smem, l_warps, l_blocks, l_bars, l_virt, _a_regs, _a_smem = ref
        if status != 0:
            with pytest.raises(OccupancyInputError):
                _py(a, cfg)
            continue
        occ = _py(a, cfg)
        got = [
            0,
            occ.active_blocks_per_sm,
            occ.limiting_flags,
            _as_header(occ.blocks_limit_regs),
            _as_header(occ.blocks_limit_smem),
            occ.blocks_limit_warps,
            occ.blocks_limit_blocks,
            _as_header(occ.blocks_limit_barriers),
            _as_header(occ.blocks_limit_virtual),
            occ.allocated_regs_per_block,
            occ.allocated_smem_per_block,
        ]
        if got != ref:
            mismatches.append((cfg, ref, got))
        header_limits = {
            "warps": l_warps,
            "registers": l_regs,
            "shared_mem": l_smem,
            "blocks": l_blocks,
            "barriers": l_bars,
            "virtual_resources": l_virt,
        }
        assert set(occ.limiting) == {k for k, v in header_limits.items() if v == active and v != INT_MAX}
        assert occ.active_warps_per_sm == active * -(-cfg["block"] // 32)
        zero += active == 0
        limited_by += len(occ.limiting) > 0
    assert not mismatches, f"{len(mismatches)} disagreements with cuda_occupancy.h, first: {mismatches[:3]}"
    # The sample must exercise both fitting and non-fitting launches.
    assert 0 < zero < N_RANDOM * 0.8


@pytest.mark.parametrize("arch", ["sm_70", "sm_75", "sm_86", "sm_90", "sm_120"])
def test_max_potential_block_size_matches_header(harness, arch):
    a = get_arch(arch)
    rng = random.Random(f"potential-{arch}")
    cases = []
    for _ in range(150):
        cfg = _random_config(rng, a)
        cfg["smem_static"] = rng.choice([0, 0, rng.randint(0, 16 * KB)])
        per_thread = rng.choice([0, 0, 4, 8, 16, 32, 64])
        const = rng.choice([0, 0, rng.randint(0, 32 * KB)])
        limit = rng.choice([1024, 1024, rng.randint(1, 1024), 1000, 33])
        sms = rng.choice([1, 80, 132])
        cases.append((cfg, per_thread, const, limit, sms))
    lines = [
        f"P {_device(a, sms)} {_func_state(a, cfg, cfg['regs'], limit)} {pt} {const}"
        for cfg, pt, const, limit, sms in cases
    ]
    answers = _run(harness, lines)
    for (cfg, per_thread, const, limit, sms), (status, min_grid, block) in zip(cases, answers, strict=True):
        opts = {k: cfg[k] for k in _OPTION_KEYS}
        dyn = (lambda b, pt=per_thread, c=const: pt * b + c) if per_thread else const
        if status != 0:
            with pytest.raises(OccupancyInputError):
                max_potential_block_size(
                    a, cfg["regs"], cfg["smem_static"], dyn, block_size_limit=limit, sm_count=sms, **opts
                )
            continue
        got = max_potential_block_size(
            a, cfg["regs"], cfg["smem_static"], dyn, block_size_limit=limit, sm_count=sms, **opts
        )
        assert (got.min_grid_size, got.block_size) == (min_grid, block), (cfg, per_thread, const, limit)


# Hand-checked cases: these hold with or without the header installed.


def test_full_occupancy_limited_by_warps_and_registers():
    occ = theoretical("sm_80", 256, 32, 0)
    # 32 regs x 32 lanes = 1024 regs/warp; 16384 per sub-partition -> 16 warps x 4 = 64 warps = 8 blocks.
    assert occ.active_blocks_per_sm == 8
    assert occ.active_warps_per_sm == 64
    assert occ.occupancy == 1.0
    assert occ.limiting == ("warps", "registers")
    assert occ.allocated_regs_per_block == 8 * 1024
    assert occ.allocated_smem_per_block == 1024  # the 1 KB the driver reserves per block from sm_80
    assert occ.blocks_limit_smem == 164


def test_register_limit_with_granularity():
    occ = theoretical("sm_90", 128, 255)
    # 255 x 32 = 8160 -> rounded to 8192 per warp -> 2 warps per sub-partition -> 8 warps -> 2 blocks of 4.
    assert occ.blocks_limit_regs == 2
    assert occ.active_blocks_per_sm == 2
    assert occ.limiting == ("registers",)
    assert occ.occupancy == pytest.approx(8 / 64)


def test_register_limit_per_thread_and_per_block():
    assert theoretical("sm_90", 32, 257).active_blocks_per_sm == 0
    # 1024 threads x 128 regs = 131072 > 65536 registers per block.
    occ = theoretical("sm_89", 1024, 128)
    assert occ.active_blocks_per_sm == 0 and "registers" in occ.limiting


def test_shared_memory_limit_and_reservation():
    occ = theoretical("sm_90", 256, 0, 100 * KB)
    # 100 KB + 1 KB reserved = 101 KB per block; 228 KB per SM -> 2 blocks.
    assert occ.allocated_smem_per_block == 101 * KB
    assert occ.active_blocks_per_sm == 2
    assert occ.limiting == ("shared_mem",)
    assert occ.blocks_limit_regs is None  # zero registers: no register limit


def test_shared_memory_beyond_optin_does_not_fit():
    a = get_arch("sm_86")
    assert theoretical(a, 128, 32, 0, a.smem_per_block_optin).active_blocks_per_sm == 1
    assert theoretical(a, 128, 32, 0, a.smem_per_block_optin + 1).active_blocks_per_sm == 0
    # Without opting in, dynamic shared memory is capped at 48 KB - static.
    occ = theoretical(a, 128, 32, 0, 60 * KB, max_dynamic_smem=48 * KB)
    assert occ.active_blocks_per_sm == 0
    assert occ.limiting == ("shared_mem",)


def test_carveout_preference_limits_blocks():
    free = theoretical("sm_86", 128, 32, 20 * KB)
    assert free.smem_config_bytes == 100 * KB and free.active_blocks_per_sm == 4
    # 25% of 100 KB = 25 KB -> the 32 KB carveout -> one 21 KB block.
    pref = theoretical("sm_86", 128, 32, 20 * KB, smem_carveout=25)
    assert pref.smem_config_bytes == 32 * KB and pref.active_blocks_per_sm == 1
    # A preference smaller than one block is raised to the carveout that holds it.
    tiny = theoretical("sm_80", 128, 32, 40 * KB, smem_carveout=0)
    assert tiny.smem_config_bytes == 64 * KB and tiny.active_blocks_per_sm == 1
    assert theoretical("sm_80", 128, 32, 40 * KB, cache_config="l1").smem_config_bytes == 64 * KB


def test_block_limits_per_arch():
    assert theoretical("sm_89", 32, 16).active_blocks_per_sm == 24
    assert theoretical("sm_86", 32, 16).active_blocks_per_sm == 16
    assert theoretical("sm_75", 32, 16).limiting == ("blocks",)
    assert theoretical("sm_75", 1025, 16).active_blocks_per_sm == 0


def test_barrier_limit_from_hopper():
    occ = theoretical("sm_90", 32, 0, num_block_barriers=3)
    # 32 blocks x 2 barrier slots / 3 barriers = 21 blocks.
    assert occ.blocks_limit_barriers == 21 and occ.active_blocks_per_sm == 21
    assert occ.limiting == ("barriers",)
    # The header keeps the flag it set before the barrier limit applied.
    assert occ.limiting_flags == occupancy.LIMIT_FLAGS["blocks"] | occupancy.LIMIT_FLAGS["barriers"]
    assert theoretical("sm_80", 32, 0, num_block_barriers=3).blocks_limit_barriers is None


def test_block_shape_gpu_name_and_to_dict():
    occ = theoretical("H100", (16, 16), 32, 0)
    assert occ.arch == "sm_90" and occ.block_threads == 256
    d = occ.to_dict()
    assert d["limiting"] == ["warps", "registers"] and d["occupancy"] == 1.0
    assert set(d) >= {
        "active_blocks_per_sm",
        "blocks_limit_warps",
        "blocks_limit_regs",
        "blocks_limit_smem",
        "blocks_limit_blocks",
        "allocated_regs_per_block",
        "allocated_smem_per_block",
    }


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(OccupancyInputError, match="block size"):
        theoretical("sm_90", 0, 32)
    with pytest.raises(OccupancyInputError, match="registers"):
        theoretical("sm_90", 128, -1)
    with pytest.raises(OccupancyInputError, match="carveout"):
        theoretical("sm_90", 128, 32, smem_carveout=101)
    with pytest.raises(OccupancyInputError, match="cache config"):
        theoretical("sm_90", 128, 32, cache_config="bogus")
    with pytest.raises(UnknownArchError) as err:
        theoretical("sm_61", 128, 32)
    assert isinstance(err.value, CudaError) and "sm_90" in str(err.value)


def test_max_potential_block_size_examples():
    s = max_potential_block_size("sm_90", 32)
    assert (s.block_size, s.blocks_per_sm, s.occupancy) == (1024, 2, 1.0)
    assert s.min_grid_size is None
    # 128 regs: 4096 per warp -> 16 warps per SM -> 512 threads is the first to reach the best.
    s = max_potential_block_size(get_gpu("H100-SXM"), 128)
    assert (s.block_size, s.blocks_per_sm, s.min_grid_size) == (512, 1, 132)
    s = max_potential_block_size("sm_80", 32, 0, lambda b: b * 256)  # 256 B/thread dynamic
    assert s.block_size * s.blocks_per_sm * 256 <= 164 * KB


def test_theoretical_is_fast():
    a = get_arch("sm_90")
    theoretical(a, 256, 32, 4096)
    n = 5000
    start = time.perf_counter()
    for i in range(n):
        theoretical(a, 32 + (i % 32) * 32, i % 255, (i % 40) * 1024)
    per_call = (time.perf_counter() - start) / n
    assert per_call < 100e-6, f"{per_call * 1e6:.1f} µs per call"


_RUNTIME_PROBE = r"""
#include <cstdio>
#include <cuda_runtime.h>

__global__ void light(float *out) { out[threadIdx.x] = threadIdx.x * 2.0f; }

__global__ void heavy(float *out, int n) {
    float acc[48];
#pragma unroll
    for (int i = 0; i < 48; ++i) acc[i] = out[i * blockDim.x + threadIdx.x];
    for (int k = 0; k < n; ++k) {
#pragma unroll
        for (int i = 0; i < 48; ++i) acc[i] = acc[i] * acc[(i + k) % 48 == i ? i : (i + 1) % 48] + 1.0f;
    }
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < 48; ++i) s += acc[i];
    out[threadIdx.x] = s;
}

__global__ void tiled(float *out) {
    __shared__ float tile[4096];
    extern __shared__ float dyn[];
    tile[threadIdx.x] = threadIdx.x;
    dyn[threadIdx.x] = 1.0f;
    __syncthreads();
    out[threadIdx.x] = tile[(threadIdx.x + 1) % blockDim.x] + dyn[0];
}

template <typename K>
static void probe(const char *name, K kernel, const cudaDeviceProp &p) {
    cudaFuncAttributes a;
    cudaFuncGetAttributes(&a, kernel);
    size_t room = p.sharedMemPerBlockOptin - a.sharedSizeBytes;
    cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)room);
    const int blocks[] = {32, 64, 96, 100, 128, 192, 256, 384, 512, 640, 768, 1000, 1024};
    const size_t dyns[] = {0, 4096, 20000, 48 * 1024, room};
    for (int b : blocks) {
        for (size_t d : dyns) {
            int n = -1;
            cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, b, d);
            std::printf("%s %d %zu %d %zu %d %d\n", name, a.numRegs, a.sharedSizeBytes, b, d, n, (int)e);
        }
    }
}

int main() {
    cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) return 2;
    std::printf("%d %d %d %d %zu %zu %zu %d %d %d\n", p.major, p.minor, p.multiProcessorCount,
                p.maxThreadsPerMultiProcessor, p.sharedMemPerMultiprocessor, p.sharedMemPerBlockOptin,
                p.reservedSharedMemPerBlock, p.regsPerMultiprocessor, p.regsPerBlock, p.maxThreadsPerBlock);
    probe("light", light, p);
    probe("heavy", heavy, p);
    probe("tiled", tiled, p);
    return 0;
}
"""


@pytest.mark.gpu
@pytest.mark.nvcc
def test_matches_cuda_runtime_on_this_gpu(tmp_path):
    """On a real GPU: the device's properties equal the table, and the runtime's
    cudaOccupancyMaxActiveBlocksPerMultiprocessor equals the port for real kernels."""
    src = tmp_path / "probe.cu"
    src.write_text(_RUNTIME_PROBE)
    exe = tmp_path / "probe"
    subprocess.run(
        ["nvcc", "-O2", "-arch=native", str(src), "-o", str(exe)], check=True, capture_output=True, timeout=300
    )
    lines = subprocess.run([str(exe)], check=True, capture_output=True, text=True, timeout=120).stdout.splitlines()
    header = [int(v) for v in lines[0].split()]
    major, minor, _sms, threads, smem, optin, reserved, regs_sm, regs_block, max_block = header
    try:
        a = get_arch((major, minor))
    except UnknownArchError:
        pytest.skip(f"this GPU (cc {major}.{minor}) is not in the arch table")
    assert (threads, smem, optin, reserved, regs_sm, regs_block, max_block) == (
        a.max_threads_per_sm,
        a.smem_per_sm,
        a.smem_per_block_optin,
        a.smem_reserved_per_block,
        a.regs_per_sm,
        a.max_regs_per_block,
        a.max_threads_per_block,
    )
    disagreements = []
    for line in lines[1:]:
        name, regs, static, block, dyn, blocks, err = line.split()
        if int(err) != 0:
            continue
        ours = theoretical(a, int(block), int(regs), int(static), int(dyn)).active_blocks_per_sm
        if ours != int(blocks):
            disagreements.append((name, regs, static, block, dyn, blocks, ours))
    assert not disagreements, disagreements[:5]
