"""Theoretical occupancy: a pure-Python port of NVIDIA's ``cuda_occupancy.h``.

Occupancy feeds rewards, the cost model and search loops, so it must be exactly what CUDA itself
computes (``cudaOccMaxActiveBlocksPerMultiprocessor``) and cheap enough to call millions of times.
This module re-implements the header's integer arithmetic line by line for compute capability
7.0 and newer — register allocation per warp rounded to 256 and spread over four sub-partitions,
shared memory rounded to the allocation granularity plus the driver's per-block reservation, the
L1/shared carveout chosen from the cache preference (and bumped when one block needs more), the
per-SM block and warp limits, the Hopper+ barrier budget and Blackwell's virtual resources — and
``tests/cuda/test_occupancy.py`` compares it with the real header on thousands of random launches.

Partitioned global caching (only sm_52/53/6x) is not modelled: no supported architecture has it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from veriforge.cuda.arch import (
    ARCHS,
    GPU,
    GPUS,
    Arch,
    UnknownArchError,
    UnknownGPUError,
    get_arch,
    get_gpu,
    parse_arch_name,
)
from veriforge.errors import CudaError

__all__ = [
    "CACHE_CONFIGS",
    "LIMIT_FLAGS",
    "BlockSizeSuggestion",
    "Occupancy",
    "OccupancyInputError",
    "max_potential_block_size",
    "theoretical",
]

_UNLIMITED = 2**31 - 1  # the header's INT_MAX: "this resource does not limit"

# cudaOccLimitingFactor bits, in the header's order.
LIMIT_FLAGS: dict[str, int] = {
    "warps": 0x01,
    "registers": 0x02,
    "shared_mem": 0x04,
    "blocks": 0x08,
    "barriers": 0x10,
    "virtual_resources": 0x20,
}

# cudaOccCacheConfig -> the carveout percentage it means when no carveout is given.
CACHE_CONFIGS: dict[str, int] = {"none": -1, "shared": 100, "l1": 0, "equal": 50}


class OccupancyInputError(CudaError, ValueError):
    """A launch configuration the calculator rejects (the header's CUDA_OCC_ERROR_INVALID_INPUT)."""


@dataclass(frozen=True, slots=True)
class Occupancy:
    """How many blocks of one kernel fit on one SM, and which resource stops more from fitting.

    ``blocks_limit_*`` are the blocks/SM each resource alone would allow (None: that resource sets
    no limit, the header's INT_MAX). ``limiting`` names every resource whose limit equals the
    result. ``limiting_flags`` is the header's ``limitingFactors`` bit field, bit for bit; it
    differs from ``limiting`` only when the Hopper+ barrier limit lowers the result, where the
    header keeps the flags it set before applying that limit.
    """

    arch: str
    block_threads: int
    active_blocks_per_sm: int
    active_warps_per_sm: int
    max_warps_per_sm: int
    occupancy: float
    limiting: tuple[str, ...]
    limiting_flags: int
    blocks_limit_warps: int | None
    blocks_limit_regs: int | None
    blocks_limit_smem: int | None
    blocks_limit_blocks: int | None
    blocks_limit_barriers: int | None
    blocks_limit_virtual: int | None
    allocated_regs_per_block: int
    allocated_smem_per_block: int
    smem_config_bytes: int | None  # the L1/shared carveout the calculation assumed (None: no block fits)

    @property
    def active_threads_per_sm(self) -> int:
        return self.active_blocks_per_sm * self.block_threads

    def to_dict(self) -> dict[str, Any]:
        return {
            "arch": self.arch,
            "block_threads": self.block_threads,
            "active_blocks_per_sm": self.active_blocks_per_sm,
            "active_warps_per_sm": self.active_warps_per_sm,
            "max_warps_per_sm": self.max_warps_per_sm,
            "occupancy": self.occupancy,
            "limiting": list(self.limiting),
            "limiting_flags": self.limiting_flags,
            "blocks_limit_warps": self.blocks_limit_warps,
            "blocks_limit_regs": self.blocks_limit_regs,
            "blocks_limit_smem": self.blocks_limit_smem,
            "blocks_limit_blocks": self.blocks_limit_blocks,
            "blocks_limit_barriers": self.blocks_limit_barriers,
            "blocks_limit_virtual": self.blocks_limit_virtual,
            "allocated_regs_per_block": self.allocated_regs_per_block,
            "allocated_smem_per_block": self.allocated_smem_per_block,
            "smem_config_bytes": self.smem_config_bytes,
        }


@dataclass(frozen=True, slots=True)
class BlockSizeSuggestion:
    """Result of :func:`max_potential_block_size` (``cudaOccMaxPotentialOccupancyBlockSize``)."""

    block_size: int  # 0: no block size can run
    blocks_per_sm: int
    min_grid_size: int | None  # blocks to fill every SM once (None when the SM count is unknown)
    occupancy: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "block_size": self.block_size,
            "blocks_per_sm": self.blocks_per_sm,
            "min_grid_size": self.min_grid_size,
            "occupancy": self.occupancy,
        }


_RESOLVED: dict[str, tuple[Arch, int | None]] = {}


def _resolve(arch: Any) -> tuple[Arch, int | None]:
    """Arch (and SM count when a GPU was named) from an Arch, GPU, arch spelling or GPU name."""
    if isinstance(arch, Arch):
        return arch, None
    if isinstance(arch, GPU):
        return arch.arch_info, arch.sm_count
    if isinstance(arch, str):
        hit = _RESOLVED.get(arch)
        if hit is None:
            hit = _RESOLVED[arch] = _resolve_uncached(arch)
        return hit
    return _resolve_uncached(arch)


def _resolve_uncached(arch: Any) -> tuple[Arch, int | None]:
    try:
        return get_arch(arch), None
    except UnknownArchError:
        if not isinstance(arch, str) or parse_arch_name(arch) is not None:
            raise  # it is spelled like an architecture: the arch error (with the known list) is the answer
        try:
            gpu = get_gpu(arch)
        except UnknownGPUError:
            raise UnknownArchError(
                f"{arch!r} is neither a known CUDA architecture ({', '.join(ARCHS)}) "
                f"nor a known GPU ({', '.join(GPUS)})"
            ) from None
        return gpu.arch_info, gpu.sm_count


def _threads(block: int | tuple[int, ...] | list[int]) -> int:
    if isinstance(block, int):
        return block
    n = 1
    for d in block:
        n *= int(d)
    return n


def _smem_preference(a: Arch, carveout: int, cache_config: str) -> int:
    """cudaOccSMemPreferenceVoltaPlus: the carveout the user's preference asks for."""
    if carveout < -1 or carveout > 100:
        raise OccupancyInputError(
            f"shared-memory carveout must be -1 (default) or 0..100 percent, not {carveout}"
        )
    if carveout == -1:
        try:
            carveout = CACHE_CONFIGS[cache_config]
        except KeyError:
            raise OccupancyInputError(
                f"unknown cache config {cache_config!r}; use one of {', '.join(CACHE_CONFIGS)}"
            ) from None
    size = a.smem_per_sm if carveout == -1 else carveout * a.smem_per_sm // 100
    aligned = a.align_smem_carveout(size)
    if aligned is None:  # unreachable for table entries: the preference never exceeds smem/SM
        raise OccupancyInputError(f"{size} bytes of shared memory exceeds every carveout of {a.name}")
    return aligned


def theoretical(
    arch: Any,
    block_threads: int | tuple[int, ...],
    regs_per_thread: int,
    smem_static: int = 0,
    smem_dynamic: int = 0,
    *,
    smem_carveout: int | None = None,
    cache_config: str = "none",
    max_dynamic_smem: int | None = None,
    smem_limit: str = "optin",
    num_block_barriers: int = 1,
    virtual_resources: int = 0,
) -> Occupancy:
    """Theoretical occupancy of one launch, exactly as ``cudaOccMaxActiveBlocksPerMultiprocessor``.

    ``arch`` is anything :func:`~veriforge.cuda.arch.get_arch` accepts, an :class:`Arch`, or a GPU
    name. ``block_threads`` may be a block shape ``(x, y, z)``.

    ``smem_carveout`` is the ``cudaFuncAttributePreferredSharedMemoryCarveout`` percentage (None or
    -1: no preference, then ``cache_config`` — "none" | "shared" | "l1" | "equal" — decides). With
    no preference the driver assumes the largest carveout, so the default gives the best case.

    ``max_dynamic_smem`` is the kernel's ``cudaFuncAttributeMaxDynamicSharedMemorySize``. None
    means the kernel opted in to everything the device allows (opt-in limit minus static shared
    memory), i.e. the launch is judged only by what the hardware can hold; pass ``48*1024 -
    smem_static`` to model a kernel that never called ``cudaFuncSetAttribute``. ``smem_limit``
    "default" ignores the opt-in and caps a block at 48 KB (FUNC_SHMEM_LIMIT_DEFAULT).

    ``num_block_barriers`` (default 1: ``__syncthreads``) limits blocks on cc >= 9.0;
    ``virtual_resources`` limits blocks on Blackwell when non-zero.
    """
    a, _ = _resolve(arch)
    threads = _threads(block_threads)
    if threads <= 0:
        raise OccupancyInputError(f"block size must be positive, not {threads}")
    if regs_per_thread < 0:
        raise OccupancyInputError(f"registers per thread must be >= 0, not {regs_per_thread}")
    if smem_static < 0 or smem_dynamic < 0:
        raise OccupancyInputError("shared memory sizes must be >= 0")
    if smem_limit not in ("optin", "default"):
        raise OccupancyInputError(f"smem_limit must be 'optin' or 'default', not {smem_limit!r}")

    warp = a.warp_size
    warps_per_block = (threads + warp - 1) // warp
    max_warps = a.max_threads_per_sm // warp

    # Registers (cudaOccMaxBlocksPerSMRegsLimit).
    gran = a.reg_alloc_granularity
    regs_per_warp = (regs_per_thread * warp + gran - 1) // gran * gran
    regs_per_block = regs_per_warp * warps_per_block
    parts = a.sub_partitions
    regs_assumed = regs_per_warp * ((warps_per_block + parts - 1) // parts * parts)
    if (
        a.max_regs_per_block < regs_assumed
        or a.max_regs_per_block < regs_per_block
        or regs_per_thread > a.occ_max_regs_per_thread
    ):
        lim_regs = 0
    elif regs_per_warp > 0:
        lim_regs = (a.regs_per_sm // parts // regs_per_warp) * parts // warps_per_block
    else:
        lim_regs = _UNLIMITED

    # Warps (cudaOccMaxBlocksPerSMWarpsLimit).
    lim_warps = 0 if threads > a.max_threads_per_block else max_warps // warps_per_block

    # Blocks (cudaOccMaxBlocksPerMultiprocessor).
    lim_blocks = a.max_blocks_per_sm

    # Shared memory (cudaOccMaxBlocksPerSMSmemLimit).
    carveout = -1 if smem_carveout is None else smem_carveout
    preference = _smem_preference(a, carveout, cache_config)
    sgran = a.smem_alloc_granularity
    reserved = a.smem_reserved_per_block
    static_total = smem_static + reserved
    smem_per_block = (static_total + smem_dynamic + sgran - 1) // sgran * sgran
    if max_dynamic_smem is None:
        max_dynamic_smem = max(0, a.smem_per_block_optin - smem_static)
    config: int | None = None
    if smem_limit == "optin":
        dynamic_exceeded = smem_dynamic > max_dynamic_smem
        wants_optin = static_total + max_dynamic_smem > a.smem_per_block_default
        block_cap = a.smem_per_block_optin if wants_optin else a.smem_per_block_default
    else:
        dynamic_exceeded = False
        block_cap = a.smem_per_block_default
    if a.major >= 8:
        block_cap += reserved
    if dynamic_exceeded or smem_per_block > block_cap:
        lim_smem = 0
    else:
        if preference >= smem_per_block:
            config = preference
        else:
            config = a.align_smem_carveout(smem_per_block)
            if config is None:
                raise OccupancyInputError(
                    f"{smem_per_block} bytes per block exceeds every carveout of {a.name}"
                )
        lim_smem = config // smem_per_block if smem_per_block > 0 else _UNLIMITED

    # Virtual resources (cudaOccMaxBlocksPerSMVirtualResource).
    if a.virtual_resources_per_sm > 0 and virtual_resources > 0:
        lim_virtual = a.virtual_resources_per_sm // virtual_resources
    else:
        lim_virtual = _UNLIMITED

    active = min(lim_regs, lim_smem, lim_warps, lim_blocks, lim_virtual)
    flags = 0
    if active == lim_warps:
        flags |= 0x01
    if active == lim_regs:
        flags |= 0x02
    if active == lim_smem:
        flags |= 0x04
    if active == lim_blocks:
        flags |= 0x08
    if active == lim_virtual:
        flags |= 0x20

    # Barriers (cudaOccMaxBlocksPerSMBlockBarrierLimit), Hopper onwards only.
    if a.occupancy_barrier_limit and num_block_barriers > 0:
        lim_bars = lim_blocks * a.barrier_slots_per_block // num_block_barriers
        active = min(active, lim_bars)
        if active == lim_bars:
            flags |= 0x10
    else:
        lim_bars = _UNLIMITED

    limits = (
        ("warps", lim_warps),
        ("registers", lim_regs),
        ("shared_mem", lim_smem),
        ("blocks", lim_blocks),
        ("barriers", lim_bars),
        ("virtual_resources", lim_virtual),
    )
    limiting = tuple(name for name, lim in limits if lim == active and lim != _UNLIMITED)
    active_warps = active * warps_per_block
    return Occupancy(
        arch=a.name,
        block_threads=threads,
        active_blocks_per_sm=active,
        active_warps_per_sm=active_warps,
        max_warps_per_sm=max_warps,
        occupancy=active_warps / max_warps,
        limiting=limiting,
        limiting_flags=flags,
        blocks_limit_warps=lim_warps,
        blocks_limit_regs=None if lim_regs == _UNLIMITED else lim_regs,
        blocks_limit_smem=None if lim_smem == _UNLIMITED else lim_smem,
        blocks_limit_blocks=lim_blocks,
        blocks_limit_barriers=None if lim_bars == _UNLIMITED else lim_bars,
        blocks_limit_virtual=None if lim_virtual == _UNLIMITED else lim_virtual,
        allocated_regs_per_block=regs_per_block,
        allocated_smem_per_block=smem_per_block,
        smem_config_bytes=config,
    )


def max_potential_block_size(
    arch: Any,
    regs_per_thread: int,
    smem_static: int = 0,
    smem_dynamic: int | Callable[[int], int] = 0,
    *,
    block_size_limit: int | None = None,
    sm_count: int | None = None,
    **occupancy_options: Any,
) -> BlockSizeSuggestion:
    """The block size with the most resident threads per SM (``cudaOccMaxPotentialOccupancyBlockSize``).

    Tries every multiple of the warp size from the largest allowed block down (plus the limit itself
    when it is not a multiple), keeps the first size reaching the most threads, and stops early once
    the SM is full — the same order and tie-break as the header, so the same answer.
    ``smem_dynamic`` may be a function of the block size (``...VariableSMem``).
    ``block_size_limit`` is the kernel's ``__launch_bounds__`` maximum. ``sm_count`` (or a GPU name
    as ``arch``) gives ``min_grid_size``. Other options go to :func:`theoretical`.
    """
    a, gpu_sms = _resolve(arch)
    if sm_count is None:
        sm_count = gpu_sms
    limit = a.max_threads_per_block
    if block_size_limit is not None:
        limit = min(limit, block_size_limit)
    if limit <= 0:
        raise OccupancyInputError(f"block size limit must be positive, not {block_size_limit}")
    if regs_per_thread < 0:
        raise OccupancyInputError(f"registers per thread must be >= 0, not {regs_per_thread}")
    warp = a.warp_size
    best_size = best_blocks = best_threads = 0
    size_fn = smem_dynamic if callable(smem_dynamic) else None
    aligned = (limit + warp - 1) // warp * warp
    while aligned > 0:
        size = min(limit, aligned)
        dynamic = int(size_fn(size)) if size_fn is not None else smem_dynamic
        occ = theoretical(a, size, regs_per_thread, smem_static, dynamic, **occupancy_options)
        threads = size * occ.active_blocks_per_sm
        if threads > best_threads:
            best_size, best_blocks, best_threads = size, occ.active_blocks_per_sm, threads
        if best_threads == a.max_threads_per_sm:
            break
        aligned -= warp
    warps = best_blocks * ((best_size + warp - 1) // warp)
    return BlockSizeSuggestion(
        block_size=best_size,
        blocks_per_sm=best_blocks,
        min_grid_size=None if sm_count is None else best_blocks * sm_count,
        occupancy=warps / a.max_warps_per_sm,
    )
