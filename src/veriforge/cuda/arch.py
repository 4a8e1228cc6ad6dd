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
  the header itself when it is installed. The unified L1 + shared-memory size per SM comes from the
  per-architecture tuning guides.
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
    # Combined L1 data cache + shared memory per SM (the unified data cache the carveout splits):
    # Volta 128 KB and Turing 96 KB (Volta / Turing tuning guides), GA100 and Orin 192 KB, GA10x
    # and Ada 128 KB (Ampere / Ada tuning guides; Programming Guide, compute capability 8.x),
    # Hopper 256 KB (Hopper tuning guide), B200 256 KB "as Hopper" (Blackwell tuning guide),
    # GB20x 128 KB (RTX Blackwell GPU architecture whitepaper: 128 KB L1/shared per SM).
    # The L1 left for caching is this minus the shared-memory carveout.
    l1_smem_per_sm: int
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
         smem_carveouts=_VOLTA_CARVEOUTS, barrier_slots_per_block=2, fp32_lanes_per_sm=64, l1_smem_per_sm=128 * KB),
    Arch("sm_72", 7, 2, "Volta (Xavier)", max_threads_per_sm=2048, max_blocks_per_sm=32,
         smem_per_sm=96 * KB, smem_per_block_optin=96 * KB, smem_reserved_per_block=0,
         smem_alloc_granularity=256, smem_carveouts=_VOLTA_CARVEOUTS, barrier_slots_per_block=2,
         fp32_lanes_per_sm=64, l1_smem_per_sm=128 * KB),
    Arch("sm_75", 7, 5, "Turing", max_threads_per_sm=1024, max_blocks_per_sm=16, smem_per_sm=64 * KB,
         smem_per_block_optin=64 * KB, smem_reserved_per_block=0, smem_alloc_granularity=256,
         smem_carveouts=_TURING_CARVEOUTS, barrier_slots_per_block=2, fp32_lanes_per_sm=64, l1_smem_per_sm=96 * KB),
    Arch("sm_80", 8, 0, "Ampere (GA100)", max_threads_per_sm=2048, max_blocks_per_sm=32,
         smem_per_sm=164 * KB, smem_per_block_optin=163 * KB, smem_reserved_per_block=1 * KB,
         smem_alloc_granularity=128, smem_carveouts=_GA100_CARVEOUTS, barrier_slots_per_block=2,
         fp32_lanes_per_sm=64, l1_smem_per_sm=192 * KB),
    Arch("sm_86", 8, 6, "Ampere (GA10x)", max_threads_per_sm=1536, max_blocks_per_sm=16,
         smem_per_sm=100 * KB, smem_per_block_optin=99 * KB, smem_reserved_per_block=1 * KB,
         smem_alloc_granularity=128, smem_carveouts=_GA10X_CARVEOUTS, barrier_slots_per_block=1,
         fp32_lanes_per_sm=128, l1_smem_per_sm=128 * KB),
    Arch("sm_87", 8, 7, "Ampere (Orin)", max_threads_per_sm=1536, max_blocks_per_sm=16,
         smem_per_sm=164 * KB, smem_per_block_optin=163 * KB, smem_reserved_per_block=1 * KB,
         smem_alloc_granularity=128, smem_carveouts=_GA100_CARVEOUTS, barrier_slots_per_block=1,
         fp32_lanes_per_sm=128, l1_smem_per_sm=192 * KB),
    Arch("sm_89", 8, 9, "Ada Lovelace", max_threads_per_sm=1536, max_blocks_per_sm=24,
         smem_per_sm=100 * KB, smem_per_block_optin=99 * KB, smem_reserved_per_block=1 * KB,
         smem_alloc_granularity=128, smem_carveouts=_GA10X_CARVEOUTS, barrier_slots_per_block=1,
         fp32_lanes_per_sm=128, l1_smem_per_sm=128 * KB),
    Arch("sm_90", 9, 0, "Hopper", max_threads_per_sm=2048, max_blocks_per_sm=32, smem_per_sm=228 * KB,
         smem_per_block_optin=227 * KB, smem_reserved_per_block=1 * KB, smem_alloc_granularity=128,
         smem_carveouts=_HOPPER_CARVEOUTS, barrier_slots_per_block=2, fp32_lanes_per_sm=128, l1_smem_per_sm=256 * KB,
         occupancy_barrier_limit=True),
    Arch("sm_100", 10, 0, "Blackwell (B100/B200)", max_threads_per_sm=2048, max_blocks_per_sm=32,
         smem_per_sm=228 * KB, smem_per_block_optin=227 * KB, smem_reserved_per_block=1 * KB,
         smem_alloc_granularity=128, smem_carveouts=_HOPPER_CARVEOUTS, barrier_slots_per_block=2,
         fp32_lanes_per_sm=128, l1_smem_per_sm=256 * KB, virtual_resources_per_sm=128, occupancy_barrier_limit=True),
    Arch("sm_120", 12, 0, "Blackwell (GB20x, RTX 50)", max_threads_per_sm=1536, max_blocks_per_sm=24,
         smem_per_sm=100 * KB, smem_per_block_optin=99 * KB, smem_reserved_per_block=1 * KB,
         smem_alloc_granularity=128, smem_carveouts=_GA10X_CARVEOUTS, barrier_slots_per_block=1,
         fp32_lanes_per_sm=128, l1_smem_per_sm=128 * KB, virtual_resources_per_sm=128, occupancy_barrier_limit=True),
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
    GPU("T4", "sm_75", 40, 1590, 16, 320, 4 * MB, 8.1, 65.0, None,
        "NVIDIA Turing GPU Architecture whitepaper (WP-09183-001), Appendix A (Tesla T4); NVIDIA T4 datasheet: "
        "8.1 TFLOPS FP32, 65 TFLOPS mixed-precision FP16/FP32 tensor; Turing tensor cores have no BF16",
        aliases=("Tesla T4", "T4-16GB")),
    GPU("A100-SXM4-40GB", "sm_80", 108, 1410, 40, 1555, 40 * MB, 19.5, 312.0, 312.0,
        "NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020), Table 1; NVIDIA A100 datasheet",
        aliases=("A100-40GB", "A100-SXM-40GB")),
    GPU("A100-SXM4-80GB", "sm_80", 108, 1410, 80, 2039, 40 * MB, 19.5, 312.0, 312.0,
        "NVIDIA A100 80GB datasheet (SXM: 2,039 GB/s HBM2e); A100 architecture whitepaper, Table 1",
        aliases=("A100", "A100-80GB", "A100-SXM-80GB", "A100-SXM")),
    GPU("A100-PCIe-80GB", "sm_80", 108, 1410, 80, 1935, 40 * MB, 19.5, 312.0, 312.0,
        "NVIDIA A100 80GB datasheet (PCIe: 1,935 GB/s HBM2e); A100 architecture whitepaper, Table 1",
        aliases=("A100 PCIe", "A100-PCIe", "A100 80GB PCIe", "A100-PCIE-80GB")),
    GPU("A100-PCIe-40GB", "sm_80", 108, 1410, 40, 1555, 40 * MB, 19.5, 312.0, 312.0,
        "NVIDIA A100 PCIe 40GB datasheet (1,555 GB/s HBM2); A100 architecture whitepaper, Table 1",
        aliases=("A100-PCIE-40GB", "A100 40GB PCIe")),
    GPU("RTX-A6000", "sm_86", 84, 1800, 48, 768, 6 * MB, 38.7, 154.8, 154.8,
        "NVIDIA Ampere GA102 GPU Architecture whitepaper v2.0, Appendix C (RTX A6000): FP16 and BF16 tensor "
        "154.8 TFLOPS dense with FP32 accumulate (309.7 sparse; professional parts run it at full rate); "
        "NVIDIA RTX A6000 datasheet",
        aliases=("RTX A6000", "A6000", "RTXA6000")),
    GPU("RTX-3090", "sm_86", 82, 1695, 24, 936, 6 * MB, 35.6, 71.0, 71.0,
        "NVIDIA Ampere GA102 GPU Architecture whitepaper v2.0, Appendix A (GeForce RTX 3090): FP16 tensor "
        "71 TFLOPS dense with FP32 accumulate (142 with FP16 accumulate), BF16 71",
        aliases=("3090", "GeForce RTX 3090", "RTX3090")),
    GPU("A10G", "sm_86", 80, 1710, 24, 600, 6 * MB, 35.0, 70.0, 70.0,
        "AWS-only GA102 part (EC2 G5); no NVIDIA datasheet or whitepaper entry. 80 SMs as the device "
        "reports them, 1710 MHz max SM clock as nvidia-smi reports it on G5; FP32 = 80 x 128 x 2 x 1.71 GHz "
        "= 35.0; FP16/BF16 tensor 70 TFLOPS dense as AWS quotes it for G5 (half the A10's per-SM tensor "
        "rate: the A10 datasheet's 125 does not apply); 24 GB GDDR6 at 600 GB/s and 6 MB L2 as the A10 "
        "(NVIDIA A10 datasheet)",
        aliases=("A10G-24GB",)),
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
    GPU("H100-NVL", "sm_90", 132, 1785, 94, 3900, 50 * MB, 60.0, 835.5, 835.5,
        "NVIDIA H100 Tensor Core GPU datasheet, H100 NVL column (per GPU; earlier editions listed the "
        "two-card pair): 94 GB HBM3 at 3.9 TB/s, FP32 60 TFLOPS, FP16/BF16 tensor 1,671 sparse = 835.5 dense. "
        "1785 MHz is the max SM clock the card reports (not in the datasheet); 132 x 128 x 2 x 1.785 GHz "
        "= 60.3, the datasheet rounds to 60",
        aliases=("H100 NVL", "H100-NVL-94GB")),
    GPU("H200", "sm_90", 132, 1980, 141, 4800, 50 * MB, 66.9, 989.4, 989.4,
        "NVIDIA H200 Tensor Core GPU datasheet (2024): H200 SXM, 141 GB HBM3e at 4.8 TB/s; "
        "compute as H100 SXM5",
        aliases=("H200-SXM", "H200 SXM", "H200-141GB")),
    GPU("H20", "sm_90", 78, 1980, 96, 4000, 60 * MB, 39.5, 148.0, 148.0,
        "NVIDIA HGX H20 product brief (export-compliant Hopper): 96 GB HBM3 at 4.0 TB/s, 60 MB L2, "
        "FP16/BF16 tensor 148 TFLOPS dense (296 sparse). FP32 differs: NVIDIA quotes 44 TFLOPS, but the part "
        "has 78 SMs (as the device reports) and 78 x 128 x 2 x 1.98 GHz = 39.5, which is used here; 1980 MHz "
        "is assumed from the other Hopper SXM parts (the brief gives no clock)",
        aliases=("H20-96GB", "HGX H20")),
    GPU("B200", "sm_100", 148, 1965, 180, 8000, int(126.5 * MB), 75.0, 2250.0, 2250.0,
        "NVIDIA HGX B200 datasheet (2025, per GPU of 8): 180 GB HBM3e, 8 TB/s, FP32 75 TFLOPS (early 2024 "
        "B200 material said 80), FP16/BF16 tensor 4.5 PFLOPS sparse = 2,250 dense; Blackwell tuning guide: "
        "126 MB L2 (the device reports 126.5 MB and 148 SMs). 1965 MHz is the max SM clock the device reports; "
        "148 x 128 x 2 x 1.965 GHz = 74.4. Drivers report a 7680-bit bus at 3996 MHz, i.e. 7.67 TB/s, below "
        "the datasheet's 8",
        aliases=("B200-SXM", "HGX B200", "DGX B200", "B200-180GB")),
    GPU("GB200", "sm_100", 152, 2062, 186, 8000, int(126.5 * MB), 80.0, 2500.0, 2500.0,
        "NVIDIA GB200 NVL72 datasheet / Blackwell architecture technical brief, Table 2, rack figures / 72 "
        "(per GPU): 186 GB HBM3e (13.4 TB / 72; earlier editions 192 GB), 8 TB/s, FP32 80 TFLOPS, FP16/BF16 "
        "tensor 5 PFLOPS sparse = 2,500 dense. The Grace-Blackwell GPU enables 152 SMs (B200: 148) and "
        "runs up to 2062 MHz (both as the device reports them, not in the datasheet): 152 x 128 x 2 x 2.062 GHz "
        "= 80.2. L2 as B200",
        aliases=("GB200 NVL72", "GB200-NVL72", "GB200-186GB")),
    GPU("RTX-5090", "sm_120", 170, 2407, 32, 1792, 96 * MB, 104.8, 209.5, 209.5,
        "NVIDIA RTX Blackwell GPU Architecture whitepaper, Appendix (GeForce RTX 5090): 170 SMs, 2407 MHz boost, "
        "32 GB GDDR7 at 1,792 GB/s, 96 MB L2, FP32 104.8 TFLOPS, FP16/BF16 tensor 209.5 TFLOPS dense with "
        "FP32 accumulate (419 with FP16 accumulate; the 838 in NVIDIA's product page is FP16-accumulate sparse)",
        aliases=("5090", "GeForce RTX 5090", "RTX5090")),
)


def _norm_gpu(name: str) -> str:
    s = name.lower()
    for noise in ("nvidia", "tesla", "geforce"):
        s = s.replace(noise, "")
    return re.sub(r"[^a-z0-9]", "", s)


def _build_gpu_index(gpus: tuple[GPU, ...]) -> dict[str, GPU]:
    """Normalized name/alias -> GPU. Two products claiming the same spelling is a table bug: a lookup
    would silently return whichever came last, so it fails at import instead."""
    index: dict[str, GPU] = {}
    for g in gpus:
        for alias in (g.name, *g.aliases):
            key = _norm_gpu(alias)
            other = index.get(key)
            if other is not None and other is not g:
                raise ValueError(f"GPU alias {alias!r} ({key!r}) names both {other.name} and {g.name}")
            index[key] = g
    return index


GPUS: dict[str, GPU] = {g.name: g for g in _GPU_LIST}
_GPU_INDEX: dict[str, GPU] = _build_gpu_index(_GPU_LIST)

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
