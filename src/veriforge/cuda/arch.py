"""Per-architecture SM limits and a table of common GPUs.

Occupancy, the cost model and the structure analysis all need the same hardware facts, and a
wrong fact silently produces a plausible wrong number. So every fact lives here once, with where it
came from:

* :class:`Arch` — per compute capability. The fields a ``cudaDeviceProp`` carries (threads/SM,
  shared memory/SM, opt-in limit, reserved shared memory, ...) come from the CUDA C++ Programming
  Guide's "Technical Specifications per Compute Capability" table. The fields that NVIDIA's
  ``cuda_occupancy.h`` hard-codes per compute capability (max blocks/SM, register and shared-memory
  allocation granularity, sub-partitions, the shared-memory carveout sizes, the barrier budget,
  virtual resources) are copied from that header; ``tests/cuda/test_arch.py`` checks them against
  the header itself when it is installed.
* :class:`GPU` — per product: SM count, boost clock, DRAM bandwidth, L2, peak FP32 and dense tensor
  FP16/BF16 rates, each with the datasheet / whitepaper it came from.

Lookups accept the spellings people actually type (``"sm_90"``, ``"sm_90a"``, ``"90"``, ``9.0``,
``(9, 0)``; ``"H100"``, ``"h100-sxm"``, ``"NVIDIA H100 80GB HBM3"`` as ``nvidia-smi`` prints it) and
raise :class:`UnknownArchError` / :class:`UnknownGPUError` listing what is known, never a guess.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from veriforge.errors import CudaError

KB = 1024
MB = 1024 * 1024

__all__ = [
    "ARCHS",
    "GPU",
    "GPUS",
    "Arch",
    "UnknownArchError",
    "UnknownGPUError",
    "get_arch",
    "get_gpu",
    "list_archs",
    "list_gpus",
    "parse_arch_name",
]


class UnknownArchError(CudaError, LookupError):
    """The architecture is not in the table (or the spelling could not be parsed)."""


class UnknownGPUError(CudaError, LookupError):
    """The GPU name matches no entry of the GPU table."""


_GUIDE = "CUDA C++ Programming Guide, Technical Specifications per Compute Capability"
_HEADER = "cuda_occupancy.h (CUDA 13.0)"


@dataclass(frozen=True, slots=True)
class Arch:
    """Hardware limits of one compute capability, as the occupancy calculator needs them.

    Sizes are in bytes; register counts in 32-bit registers.
    """

    name: str  # "sm_90"
    major: int
    minor: int
    family: str
    max_threads_per_sm: int
    max_blocks_per_sm: int  # cuda_occupancy.h cudaOccMaxBlocksPerMultiprocessor
    smem_per_sm: int  # largest shared-memory carveout (sharedMemPerMultiprocessor)
    smem_per_block_optin: int  # sharedMemPerBlockOptin
    smem_reserved_per_block: int  # reservedSharedMemPerBlock (driver-reserved, from sm_80)
    smem_alloc_granularity: int  # cudaOccSMemAllocationGranularity
    smem_carveouts: tuple[int, ...]  # cudaOccAlignUpShmemSizeVoltaPlus: the L1/shared split sizes
    barrier_slots_per_block: int  # cudaOccMaxBlocksPerSMBlockBarrierLimit: barriers = blocks/SM * this
    fp32_lanes_per_sm: int  # FP32 FMA units per SM (peak FP32 = SMs * lanes * 2 * clock)
    virtual_resources_per_sm: int = 0  # cudaOccMaxVirtualResourceCountPerSM (Blackwell: 128)
    warp_size: int = 32
    max_threads_per_block: int = 1024
    regs_per_sm: int = 64 * KB
    max_regs_per_block: int = 64 * KB
    max_regs_per_thread: int = 255  # what ptxas can allocate (Programming Guide)
    occ_max_regs_per_thread: int = 256  # cudaOccRegAllocationMaxPerThread: the header's check
    reg_alloc_unit: str = "warp"  # registers are allocated per warp ...
    reg_alloc_granularity: int = 256  # ... rounded up to this many (cudaOccRegAllocationGranularity)
    sub_partitions: int = 4  # SM sub-partitions (register file split), cudaOccSubPartitionsPerMultiprocessor
    smem_per_block_default: int = 48 * KB  # sharedMemPerBlock: limit without cudaFuncSetAttribute
    named_barriers_per_block: int = 16  # bar.sync ids 0..15 (PTX ISA)
    occupancy_barrier_limit: bool = False  # header applies the barrier limit (cc >= 9.0)
    source: str = f"{_GUIDE}; {_HEADER}"

    @property
    def max_warps_per_sm(self) -> int:
        return self.max_threads_per_sm // self.warp_size

    @property
    def compute_capability(self) -> str:
        return f"{self.major}.{self.minor}"

    @property
    def cc(self) -> tuple[int, int]:
        return (self.major, self.minor)

    def align_smem_carveout(self, size: int) -> int | None:
        """The smallest carveout that holds ``size`` bytes, or None when none does.

        This is how the driver maps a carveout preference (and a block's shared-memory need) onto
        the sizes the hardware can actually configure.
        """
        for carveout in self.smem_carveouts:
            if size <= carveout:
                return carveout
        return None

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["smem_carveouts"] = list(self.smem_carveouts)
        out["max_warps_per_sm"] = self.max_warps_per_sm
        out["compute_capability"] = self.compute_capability
        return out


_VOLTA_CARVEOUTS = (0, 8 * KB, 16 * KB, 32 * KB, 64 * KB, 96 * KB)
_TURING_CARVEOUTS = (32 * KB, 64 * KB)
_GA100_CARVEOUTS = (0, 8 * KB, 16 * KB, 32 * KB, 64 * KB, 100 * KB, 132 * KB, 164 * KB)
_GA10X_CARVEOUTS = (0, 8 * KB, 16 * KB, 32 * KB, 64 * KB, 100 * KB)
_HOPPER_CARVEOUTS = (*_GA100_CARVEOUTS, 196 * KB, 228 * KB)

_ARCH_LIST = (
    Arch("sm_70", 7, 0, "Volta", max_threads_per_sm=2048, max_blocks_per_sm=32, smem_per_sm=96 * KB,
         smem_per_block_optin=96 * KB, smem_reserved_per_block=0, smem_alloc_granularity=256,
         smem_carveouts=_VOLTA_CARVEOUTS, barrier_slots_per_block=2, fp32_lanes_per_sm=64),
    Arch("sm_72", 7, 2, "Volta (Xavier)", max_threads_per_sm=2048, max_blocks_per_sm=32,
         smem_per_sm=96 * KB, smem_per_block_optin=96 * KB, smem_reserved_per_block=0,
         smem_alloc_granularity=256, smem_carveouts=_VOLTA_CARVEOUTS, barrier_slots_per_block=2,
         fp32_lanes_per_sm=64),
    Arch("sm_75", 7, 5, "Turing", max_threads_per_sm=1024, max_blocks_per_sm=16, smem_per_sm=64 * KB,
         smem_per_block_optin=64 * KB, smem_reserved_per_block=0, smem_alloc_granularity=256,
         smem_carveouts=_TURING_CARVEOUTS, barrier_slots_per_block=2, fp32_lanes_per_sm=64),
    Arch("sm_80", 8, 0, "Ampere (GA100)", max_threads_per_sm=2048, max_blocks_per_sm=32,
         smem_per_sm=164 * KB, smem_per_block_optin=163 * KB, smem_reserved_per_block=1 * KB,
         smem_alloc_granularity=128, smem_carveouts=_GA100_CARVEOUTS, barrier_slots_per_block=2,
         fp32_lanes_per_sm=64),
    Arch("sm_86", 8, 6, "Ampere (GA10x)", max_threads_per_sm=1536, max_blocks_per_sm=16,
         smem_per_sm=100 * KB, smem_per_block_optin=99 * KB, smem_reserved_per_block=1 * KB,
         smem_alloc_granularity=128, smem_carveouts=_GA10X_CARVEOUTS, barrier_slots_per_block=1,
         fp32_lanes_per_sm=128),
    Arch("sm_87", 8, 7, "Ampere (Orin)", max_threads_per_sm=1536, max_blocks_per_sm=16,
         smem_per_sm=164 * KB, smem_per_block_optin=163 * KB, smem_reserved_per_block=1 * KB,
         smem_alloc_granularity=128, smem_carveouts=_GA100_CARVEOUTS, barrier_slots_per_block=1,
         fp32_lanes_per_sm=128),
    Arch("sm_89", 8, 9, "Ada Lovelace", max_threads_per_sm=1536, max_blocks_per_sm=24,
         smem_per_sm=100 * KB, smem_per_block_optin=99 * KB, smem_reserved_per_block=1 * KB,
         smem_alloc_granularity=128, smem_carveouts=_GA10X_CARVEOUTS, barrier_slots_per_block=1,
         fp32_lanes_per_sm=128),
    Arch("sm_90", 9, 0, "Hopper", max_threads_per_sm=2048, max_blocks_per_sm=32, smem_per_sm=228 * KB,
         smem_per_block_optin=227 * KB, smem_reserved_per_block=1 * KB, smem_alloc_granularity=128,
         smem_carveouts=_HOPPER_CARVEOUTS, barrier_slots_per_block=2, fp32_lanes_per_sm=128,
         occupancy_barrier_limit=True),
    Arch("sm_100", 10, 0, "Blackwell (B100/B200)", max_threads_per_sm=2048, max_blocks_per_sm=32,
         smem_per_sm=228 * KB, smem_per_block_optin=227 * KB, smem_reserved_per_block=1 * KB,
         smem_alloc_granularity=128, smem_carveouts=_HOPPER_CARVEOUTS, barrier_slots_per_block=2,
         fp32_lanes_per_sm=128, virtual_resources_per_sm=128, occupancy_barrier_limit=True),
    Arch("sm_120", 12, 0, "Blackwell (GB20x, RTX 50)", max_threads_per_sm=1536, max_blocks_per_sm=24,
         smem_per_sm=100 * KB, smem_per_block_optin=99 * KB, smem_reserved_per_block=1 * KB,
         smem_alloc_granularity=128, smem_carveouts=_GA10X_CARVEOUTS, barrier_slots_per_block=1,
         fp32_lanes_per_sm=128, virtual_resources_per_sm=128, occupancy_barrier_limit=True),
)

ARCHS: dict[str, Arch] = {a.name: a for a in _ARCH_LIST}


@dataclass(frozen=True, slots=True)
class GPU:
    """One GPU product. Rates are peak (boost clock), dense (no 2:4 sparsity).

    ``fp16_tensor_tflops`` / ``bf16_tensor_tflops`` are tensor-core rates with FP32 accumulation
    (what training and most kernels use; GeForce parts run FP16-accumulate at twice this rate).
    None means the data type is not supported by the tensor cores.
    """

    name: str
    arch: str
    sm_count: int
    boost_clock_mhz: int
    memory_gb: float
    dram_bandwidth_gbs: float  # GB/s, 10^9 bytes
    l2_bytes: int
    fp32_tflops: float
    fp16_tensor_tflops: float
    bf16_tensor_tflops: float | None
    source: str
    aliases: tuple[str, ...] = ()

    @property
    def arch_info(self) -> Arch:
        return ARCHS[self.arch]

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["aliases"] = list(self.aliases)
        return out


_GPU_LIST = (
    GPU("V100-SXM2", "sm_70", 80, 1530, 32, 900, 6 * MB, 15.7, 125.0, None,
        "NVIDIA Tesla V100 GPU Architecture whitepaper (WP-08608-001 v1.1), Table 1; Tesla V100 datasheet",
        aliases=("V100", "Tesla V100-SXM2-32GB", "Tesla V100-SXM2-16GB", "V100-SXM2-32GB", "V100-SXM2-16GB")),
    GPU("A100-SXM4-40GB", "sm_80", 108, 1410, 40, 1555, 40 * MB, 19.5, 312.0, 312.0,
        "NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020), Table 1; NVIDIA A100 datasheet",
        aliases=("A100-40GB", "A100-SXM-40GB")),
    GPU("A100-SXM4-80GB", "sm_80", 108, 1410, 80, 2039, 40 * MB, 19.5, 312.0, 312.0,
        "NVIDIA A100 80GB datasheet (SXM: 2,039 GB/s HBM2e); A100 architecture whitepaper, Table 1",
        aliases=("A100", "A100-80GB", "A100-SXM-80GB", "A100-SXM")),
    GPU("L4", "sm_89", 58, 2040, 24, 300, 48 * MB, 30.3, 121.0, 121.0,
        "NVIDIA L4 Tensor Core GPU datasheet (2023); Ada GPU architecture whitepaper"),
    GPU("L40S", "sm_89", 142, 2520, 48, 864, 96 * MB, 91.6, 362.05, 362.05,
        "NVIDIA L40S GPU datasheet (2023): FP16/BF16 tensor 362.05 dense / 733 sparse"),
    GPU("RTX-4090", "sm_89", 128, 2520, 24, 1008, 72 * MB, 82.6, 165.2, 165.2,
        "NVIDIA Ada GPU Architecture whitepaper v2.1, Appendix A (GeForce RTX 4090): "
        "FP16 tensor 165.2 TFLOPS with FP32 accumulate (330.3 with FP16 accumulate)",
        aliases=("4090", "GeForce RTX 4090", "RTX4090")),
    GPU("H100-SXM", "sm_90", 132, 1980, 80, 3350, 50 * MB, 66.9, 989.4, 989.4,
        "NVIDIA H100 Tensor Core GPU datasheet; NVIDIA H100 Tensor Core GPU Architecture whitepaper "
        "(Hopper), Table 3: H100 SXM5",
        aliases=("H100", "H100-SXM5", "H100 80GB HBM3", "H100-SXM5-80GB")),
    GPU("H100-PCIe", "sm_90", 114, 1755, 80, 2000, 50 * MB, 51.2, 756.5, 756.5,
        "NVIDIA H100 Tensor Core GPU datasheet; NVIDIA H100 Tensor Core GPU Architecture whitepaper "
        "(Hopper), Table 3: H100 PCIe",
        aliases=("H100 PCIe", "H100-PCIE-80GB")),
    GPU("H200", "sm_90", 132, 1980, 141, 4800, 50 * MB, 66.9, 989.4, 989.4,
        "NVIDIA H200 Tensor Core GPU datasheet (2024): H200 SXM, 141 GB HBM3e at 4.8 TB/s; "
        "compute as H100 SXM5",
        aliases=("H200-SXM", "H200 SXM", "H200-141GB")),
)


def _norm_gpu(name: str) -> str:
    s = name.lower()
    for noise in ("nvidia", "tesla", "geforce"):
        s = s.replace(noise, "")
    return re.sub(r"[^a-z0-9]", "", s)


GPUS: dict[str, GPU] = {g.name: g for g in _GPU_LIST}
_GPU_INDEX: dict[str, GPU] = {}
for _g in _GPU_LIST:
    for _alias in (_g.name, *_g.aliases):
        _GPU_INDEX[_norm_gpu(_alias)] = _g

_ARCH_CACHE: dict[Any, Arch] = {}
_ARCH_RE = re.compile(r"^(?:sm|compute|arch)?[_\-]?(\d+)([af]?)$")
_CC_RE = re.compile(r"^(\d+)\.(\d)$")


def parse_arch_name(spec: Any) -> str | None:
    """Map a spelling to "sm_XY" (known or not), or None when it is not an architecture spelling at all.

    Callers that also accept GPU names use this to tell "unsupported architecture" from "maybe a GPU".
    """
    if isinstance(spec, Arch):
        return spec.name
    if isinstance(spec, bool):
        return None
    if isinstance(spec, tuple) and len(spec) == 2 and all(isinstance(v, int) for v in spec):
        return f"sm_{spec[0]}{spec[1]}"
    if isinstance(spec, int):
        return f"sm_{spec}"
    if isinstance(spec, float):
        major = int(spec)
        minor = round((spec - major) * 10)
        return f"sm_{major}{minor}"
    if isinstance(spec, str):
        s = spec.strip().lower()
        m = _CC_RE.match(s)
        if m:
            return f"sm_{m.group(1)}{m.group(2)}"
        m = _ARCH_RE.match(s)
        if m:
            return f"sm_{m.group(1)}"
    return None


def get_arch(spec: Any) -> Arch:
    """The :class:`Arch` for ``"sm_90"``, ``"sm_90a"``, ``"compute_90"``, ``"90"``, ``90``, ``9.0``,
    ``"9.0"`` or ``(9, 0)``. Raises :class:`UnknownArchError` for anything else."""
    if isinstance(spec, Arch):
        return spec
    try:
        return _ARCH_CACHE[spec]
    except (KeyError, TypeError):
        pass
    name = parse_arch_name(spec)
    arch = ARCHS.get(name) if name else None
    if arch is None:
        known = ", ".join(ARCHS)
        raise UnknownArchError(f"unknown CUDA architecture {spec!r}; known: {known}")
    try:
        _ARCH_CACHE[spec] = arch
    except TypeError:
        pass
    return arch


def get_gpu(name: str | GPU) -> GPU:
    """The :class:`GPU` for a product name, case/punctuation-insensitive (``"H100"``, ``"h100-sxm"``,
    ``"NVIDIA H100 80GB HBM3"``). A bare family name picks the most common variant (``"H100"`` is
    the SXM part, ``"A100"`` the 80 GB SXM part). Raises :class:`UnknownGPUError` otherwise."""
    if isinstance(name, GPU):
        return name
    gpu = _GPU_INDEX.get(_norm_gpu(str(name))) if isinstance(name, str) else None
    if gpu is None:
        raise UnknownGPUError(f"unknown GPU {name!r}; known: {', '.join(GPUS)}")
    return gpu


def list_archs() -> list[Arch]:
    return list(_ARCH_LIST)


def list_gpus() -> list[GPU]:
    return list(_GPU_LIST)
