"""The architecture and GPU tables: lookups, internal consistency, and the per-CC constants
that must equal what NVIDIA's cuda_occupancy.h hard-codes."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from veriforge.cuda.arch import (
    ARCHS,
    GPUS,
    KB,
    MB,
    Arch,
    UnknownArchError,
    UnknownGPUError,
    _build_gpu_index,
    _norm_gpu,
    get_arch,
    get_gpu,
    list_archs,
    list_gpus,
    parse_arch_name,
)
from veriforge.errors import CudaError

HARNESS = Path(__file__).parent / "data" / "occupancy_harness.cpp"
REQUIRED_ARCHS = ("sm_70", "sm_72", "sm_75", "sm_80", "sm_86", "sm_87", "sm_89", "sm_90")


@pytest.mark.parametrize(
    ("spec", "name"),
    [
        ("sm_90", "sm_90"),
        ("sm_90a", "sm_90"),
        ("compute_86", "sm_86"),
        ("90", "sm_90"),
        (90, "sm_90"),
        (9.0, "sm_90"),
        (8.6, "sm_86"),
        ("8.9", "sm_89"),
        ((7, 5), "sm_75"),
        (" SM_80 ", "sm_80"),
        (12.0, "sm_120"),
        ("sm_100a", "sm_100"),
    ],
)
def test_get_arch_spellings(spec, name):
    assert get_arch(spec).name == name


@pytest.mark.parametrize("spec", ["sm_61", "sm_35", 61, (6, 1), "hopper", "", None, True, 3.5])
def test_get_arch_unknown_is_a_clear_error(spec):
    with pytest.raises(UnknownArchError) as err:
        get_arch(spec)
    assert isinstance(err.value, CudaError) and isinstance(err.value, LookupError)
    assert "sm_90" in str(err.value)  # lists what is known


def test_parse_arch_name_tells_arch_spellings_from_other_names():
    assert parse_arch_name("sm_61") == "sm_61"
    assert parse_arch_name("H100") is None


@pytest.mark.parametrize(
    ("name", "canonical"),
    [
        ("H100", "H100-SXM"),
        ("h100-sxm", "H100-SXM"),
        ("NVIDIA H100 80GB HBM3", "H100-SXM"),
        ("H100 PCIe", "H100-PCIe"),
        ("h200", "H200"),
        ("A100", "A100-SXM4-80GB"),
        ("NVIDIA A100-SXM4-40GB", "A100-SXM4-40GB"),
        ("Tesla V100-SXM2-32GB", "V100-SXM2"),
        ("NVIDIA GeForce RTX 4090", "RTX-4090"),
        ("l40s", "L40S"),
        ("NVIDIA L4", "L4"),
        # nvidia-smi / torch.cuda.get_device_name spellings of the added parts
        ("Tesla T4", "T4"),
        ("NVIDIA RTX A6000", "RTX-A6000"),
        ("NVIDIA GeForce RTX 3090", "RTX-3090"),
        ("NVIDIA A10G", "A10G"),
        ("NVIDIA A100 80GB PCIe", "A100-PCIe-80GB"),
        ("NVIDIA A100-PCIE-40GB", "A100-PCIe-40GB"),
        ("A100 PCIe", "A100-PCIe-80GB"),
        ("NVIDIA A100-SXM4-80GB", "A100-SXM4-80GB"),
        ("NVIDIA H100 NVL", "H100-NVL"),
        ("NVIDIA H100 PCIe", "H100-PCIe"),
        ("NVIDIA H20", "H20"),
        ("NVIDIA B200", "B200"),
        ("NVIDIA GB200", "GB200"),
        ("NVIDIA GeForce RTX 5090", "RTX-5090"),
        ("5090", "RTX-5090"),
        ("3090", "RTX-3090"),
    ],
)
def test_get_gpu_names(name, canonical):
    assert get_gpu(name).name == canonical


def test_bare_family_names_keep_their_parts():
    # Adding PCIe / NVL variants must not steal the bare family name.
    assert get_gpu("A100").name == "A100-SXM4-80GB"
    assert get_gpu("H100").name == "H100-SXM"
    assert get_gpu("H200").name == "H200"
    assert get_gpu("H20").name == "H20"  # not a prefix match of H200


def test_no_alias_names_two_gpus():
    seen: dict[str, str] = {}
    for g in list_gpus():
        for alias in (g.name, *g.aliases):
            key = _norm_gpu(alias)
            assert seen.setdefault(key, g.name) == g.name, (alias, seen[key], g.name)
            assert get_gpu(alias) is g


def test_alias_collision_is_rejected_at_build_time():
    a, b = GPUS["H100-SXM"], GPUS["H200"]
    clash = dataclasses.replace(b, aliases=(*b.aliases, "NVIDIA H100 80GB HBM3"))
    with pytest.raises(ValueError, match="names both H100-SXM and H200"):
        _build_gpu_index((a, clash))


def test_get_gpu_unknown():
    with pytest.raises(UnknownGPUError, match=r"known: .*H100-SXM"):
        get_gpu("Voodoo 3")


def test_required_entries_present():
    assert set(REQUIRED_ARCHS) <= set(ARCHS)
    names = {g.name for g in list_gpus()}
    assert {
        "V100-SXM2",
        "A100-SXM4-40GB",
        "A100-SXM4-80GB",
        "L40S",
        "RTX-4090",
        "H100-SXM",
        "H100-PCIe",
        "H200",
        "T4",
        "RTX-A6000",
        "RTX-3090",
        "A10G",
        "A100-PCIe-80GB",
        "A100-PCIe-40GB",
        "H100-NVL",
        "H20",
        "B200",
        "GB200",
        "RTX-5090",
    } <= names


# Facts from CUDA.md's occupancy table and the Programming Guide.
@pytest.mark.parametrize(
    ("arch", "threads", "blocks", "smem", "optin"),
    [
        ("sm_70", 2048, 32, 96 * KB, 96 * KB),
        ("sm_75", 1024, 16, 64 * KB, 64 * KB),
        ("sm_80", 2048, 32, 164 * KB, 163 * KB),
        ("sm_86", 1536, 16, 100 * KB, 99 * KB),
        ("sm_89", 1536, 24, 100 * KB, 99 * KB),
        ("sm_90", 2048, 32, 228 * KB, 227 * KB),
    ],
)
def test_documented_per_sm_limits(arch, threads, blocks, smem, optin):
    a = get_arch(arch)
    assert (a.max_threads_per_sm, a.max_blocks_per_sm, a.smem_per_sm, a.smem_per_block_optin) == (
        threads,
        blocks,
        smem,
        optin,
    )
    assert a.max_warps_per_sm == threads // 32
    assert a.regs_per_sm == a.max_regs_per_block == 64 * KB and a.max_regs_per_thread == 255


@pytest.mark.parametrize("arch", list(ARCHS))
def test_arch_entries_are_self_consistent(arch):
    a = get_arch(arch)
    assert a.name == f"sm_{a.major}{a.minor}"
    # The largest carveout is the per-SM shared memory; the opt-in limit plus the reservation fills it.
    assert a.smem_carveouts[-1] == a.smem_per_sm
    assert a.align_smem_carveout(a.smem_per_sm) == a.smem_per_sm
    assert a.smem_per_block_optin + a.smem_reserved_per_block == a.smem_per_sm
    assert a.smem_reserved_per_block == (1 * KB if a.major >= 8 else 0)
    assert list(a.smem_carveouts) == sorted(set(a.smem_carveouts))
    assert a.occupancy_barrier_limit == (a.major >= 9)
    assert a.max_threads_per_sm % a.warp_size == 0
    # The shared-memory carveout comes out of the unified L1/shared array.
    assert a.l1_smem_per_sm >= a.smem_per_sm
    d = a.to_dict()
    assert json.loads(json.dumps(d))["max_warps_per_sm"] == a.max_warps_per_sm
    assert d["l1_smem_per_sm"] == a.l1_smem_per_sm


# Combined L1 + shared memory per SM, from the per-architecture tuning guides.
@pytest.mark.parametrize(
    ("arch", "kb"),
    [
        ("sm_70", 128),
        ("sm_72", 128),
        ("sm_75", 96),
        ("sm_80", 192),
        ("sm_86", 128),
        ("sm_87", 192),
        ("sm_89", 128),
        ("sm_90", 256),
        ("sm_100", 256),
        ("sm_120", 128),
    ],
)
def test_l1_smem_per_sm(arch, kb):
    assert get_arch(arch).l1_smem_per_sm == kb * KB


def test_every_arch_sets_l1_smem_explicitly():
    field = {f.name: f for f in dataclasses.fields(Arch)}["l1_smem_per_sm"]
    assert field.default is dataclasses.MISSING
    assert set(ARCHS) == {a.name for a in list_archs()}


@pytest.mark.parametrize("gpu", list(GPUS))
def test_gpu_entries_are_consistent(gpu):
    g = get_gpu(gpu)
    assert g.arch in ARCHS and g.source
    # Peak FP32 = SMs x FP32 lanes x 2 (FMA) x boost clock: catches a wrong SM count or clock.
    # Every entry agrees within 3 %; where the datasheet's own figure does not fit (H20), the table keeps
    # the derived value and its source string says so.
    derived = g.sm_count * g.arch_info.fp32_lanes_per_sm * 2 * g.boost_clock_mhz * 1e6 / 1e12
    assert derived == pytest.approx(g.fp32_tflops, rel=0.03)
    assert g.fp16_tensor_tflops > g.fp32_tflops
    # BF16 tensor cores arrived with Ampere: Volta and Turing have none.
    if g.arch in ("sm_70", "sm_75"):
        assert g.bf16_tensor_tflops is None
    else:
        assert g.bf16_tensor_tflops == g.fp16_tensor_tflops
    assert 1 * MB <= g.l2_bytes <= 128 * MB and 100 <= g.dram_bandwidth_gbs <= 10_000
    assert 1 <= g.memory_gb <= 256 and g.sm_count >= 1
    assert json.loads(json.dumps(g.to_dict()))["name"] == g.name


def _find_include() -> Path | None:
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    nvcc = shutil.which("nvcc")
    if nvcc:
        roots.append(str(Path(nvcc).resolve().parent.parent))
    for root in roots:
        if root and (Path(root) / "include" / "cuda_occupancy.h").is_file():
            return Path(root) / "include"
    return None


def test_table_constants_match_cuda_occupancy_h(tmp_path):
    include = _find_include()
    if include is None:
        pytest.skip("cuda_occupancy.h not found (no CUDA toolkit: set CUDA_HOME)")
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("g++ not found")
    exe = tmp_path / "harness"
    subprocess.run(
        [gxx, "-std=c++14", "-O1", f"-I{include}", str(HARNESS), "-o", str(exe)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    archs = list_archs()
    query = "".join(f"A {a.major} {a.minor}\n" for a in archs)
    out = subprocess.run(
        [str(exe)], input=query, capture_output=True, text=True, check=True, timeout=60
    ).stdout.splitlines()
    for a, line in zip(archs, out, strict=True):
        status, smem_gran, reg_max, reg_gran, parts, blocks, virt, bars, *carveouts = map(int, line.split())
        assert status == 0, a.name
        assert (smem_gran, reg_max, reg_gran, parts, blocks, virt, bars) == (
            a.smem_alloc_granularity,
            a.occ_max_regs_per_thread,
            a.reg_alloc_granularity,
            a.sub_partitions,
            a.max_blocks_per_sm,
            a.virtual_resources_per_sm,
            a.barrier_slots_per_block,
        ), a.name
        assert tuple(carveouts) == a.smem_carveouts, a.name
