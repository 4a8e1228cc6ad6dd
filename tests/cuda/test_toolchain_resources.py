"""ptxas -v parsing on logs recorded from real nvcc 13.0 runs (tests/cuda/data, see TOOLCHAIN_FIXTURES.md)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from veriforge.cuda.toolchain.demangle import base_name, demangle_names, no_demangle, short_name
from veriforge.cuda.toolchain.resources import (
    KernelResources,
    find_kernel,
    parse_ptxas_log,
    parse_ptxas_verbose,
)

DATA = Path(__file__).parent / "data"

# Itanium demangling, written out by hand so the parser tests need no c++filt.
NAMES = {
    "_Z7spillerPfPKfi": "spiller(float*, float const*, int)",
    "_Z11uses_helperPfi": "uses_helper(float*, int)",
    "_Z10reduce_sumILi128EdEvPKT0_PS0_i": "void reduce_sum<128, double>(double const*, double*, int)",
    "_Z10reduce_sumILi256EfEvPKT0_PS0_i": "void reduce_sum<256, float>(float const*, float*, int)",
    "_Z12matmul_tiledPKfS0_Pfi": "matmul_tiled(float const*, float const*, float*, int)",
    "_Z6helperfi": "helper(float, int)",
}


def fake_demangle(names: list[str]) -> dict[str, str]:
    return {n: NAMES.get(n, n) for n in names}


def log(name: str) -> str:
    return (DATA / name).read_text()


# (arch, matmul registers, spiller stack frame, spill stores, spill loads, cmem bank 0 of matmul)
ARCH_EXPECTATIONS = [
    ("sm_75", 32, 5456, 7968, 11136, 380),
    ("sm_80", 31, 5224, 7644, 10628, 380),
    ("sm_86", 31, 5224, 7644, 10628, 380),
    ("sm_89", 31, 5224, 7644, 10628, 380),
    ("sm_90", 32, 5328, 7924, 11016, None),
    ("sm_120", 32, 5400, 8084, 11084, None),
]


@pytest.mark.parametrize(("arch", "mm_regs", "stack", "stores", "loads", "cmem0"), ARCH_EXPECTATIONS)
def test_every_kernel_parsed_per_architecture(arch, mm_regs, stack, stores, loads, cmem0):
    res = parse_ptxas_verbose(log(f"ptxas_maxrreg32_{arch}.log"), demangle=fake_demangle)
    assert sorted(k.short_name for k in res.values()) == [
        "matmul_tiled",
        "reduce_sum<128, double>",
        "reduce_sum<256, float>",
        "saxpy",
        "spiller",
        "uses_helper",
    ]
    assert all(k.arch == arch for k in res.values())
    mm = res["matmul_tiled(float const*, float const*, float*, int)"]
    assert (mm.registers, mm.smem_static_bytes, mm.barriers) == (mm_regs, 2048, 1)
    assert mm.cmem.get(0) == cmem0
    assert mm.max_registers == 32
    assert not mm.spills
    sp = find_kernel(res, "spiller")
    assert (sp.stack_frame_bytes, sp.spill_store_bytes, sp.spill_load_bytes) == (stack, stores, loads)
    assert sp.cumulative_stack_bytes == stack
    assert sp.spills and sp.barriers == 0 and sp.registers == 32
    assert sp.compile_time_ms is not None and sp.compile_time_ms > 100


def test_templates_extern_c_and_device_functions():
    report = parse_ptxas_log(log("ptxas_maxrreg32_sm_80.log"), demangle=fake_demangle)
    kernels = {k.short_name: k for k in report.kernels}
    r256, r128 = kernels["reduce_sum<256, float>"], kernels["reduce_sum<128, double>"]
    assert (r256.registers, r256.smem_static_bytes, r256.barriers) == (9, 1024, 1)
    assert (r128.registers, r128.smem_static_bytes) == (14, 1024)
    assert r256.base_name == r128.base_name == "reduce_sum"
    assert r256.mangled == "_Z10reduce_sumILi256EfEvPKT0_PS0_i"
    saxpy = kernels["saxpy"]  # extern "C": not mangled at all
    assert saxpy.name == saxpy.mangled == "saxpy" and saxpy.registers == 10
    # A non-inlined __device__ function is reported separately, not as a kernel.
    assert [f.name for f in report.functions] == ["helper(float, int)"]
    assert "helper" not in kernels
    # The caller of the device function carries the stack frame.
    assert kernels["uses_helper"].stack_frame_bytes == 8
    # Module-level memory: printf format string in gmem, __constant__ array in bank 3.
    assert report.gmem_bytes == {"sm_80": 10}
    assert report.module_cmem == {"sm_80": {3: 256, 4: 16}}


def test_without_register_cap_no_spills_and_no_max_registers():
    res = parse_ptxas_verbose(log("ptxas_default_sm_90.log"), demangle=no_demangle)
    sp = res["_Z7spillerPfPKfi"]  # no_demangle keeps mangled names as keys
    assert sp.registers == 136 and not sp.spills and sp.max_registers is None


def test_multi_architecture_log_needs_an_arch():
    text = log("ptxas_multiarch.log")
    with pytest.raises(ValueError, match="sm_75, sm_86"):
        parse_ptxas_verbose(text, demangle=fake_demangle)
    sm86 = parse_ptxas_verbose(text, arch="sm_86", demangle=fake_demangle)
    sm75 = parse_ptxas_verbose(text, arch="sm_75", demangle=fake_demangle)
    assert len(sm86) == len(sm75) == 6
    assert {k.arch for k in sm86.values()} == {"sm_86"}
    assert parse_ptxas_verbose(text, arch="sm_90", demangle=fake_demangle) == {}


def test_ptxas_errors_and_unallocated_kernels():
    report = parse_ptxas_log(log("diag_ptxas_smem.log"), demangle=no_demangle)
    assert report.errors and "too much shared data" in report.errors[0]
    big = next(k for k in report.kernels if k.mangled == "_Z3bigPf")
    assert big.smem_static_bytes == 80000


def test_lenient_on_older_and_unknown_formats():
    text = (
        "ptxas info    : Compiling entry function '_Z1kv' for 'sm_52'\n"
        "ptxas info    : Function properties for _Z1kv\n"
        "    16 bytes stack frame, 4 bytes spill stores, 8 bytes spill loads\n"
        "ptxas info    : Used 5 registers, 8 bytes lmem, 360 bytes cmem[0], 4 bytes cmem[2]\n"
        "ptxas warning : Registers are spilled to local memory in function '_Z1kv', 4 bytes spill stores\n"
    )
    (k,) = parse_ptxas_verbose(text, demangle=no_demangle).values()
    assert (k.registers, k.barriers, k.cmem, k.extra) == (5, 0, {0: 360, 2: 4}, {"lmem": 8})
    assert (k.stack_frame_bytes, k.spill_store_bytes, k.spill_load_bytes) == (16, 4, 8)
    assert parse_ptxas_log(text, demangle=no_demangle).warnings[0].startswith("Registers are spilled")


def test_round_trip_through_dict():
    res = parse_ptxas_verbose(log("ptxas_maxrreg32_sm_75.log"), demangle=fake_demangle)
    for k in res.values():
        assert KernelResources.from_dict(k.to_dict()) == k


def test_find_kernel_lookups_and_errors():
    res = parse_ptxas_verbose(log("ptxas_maxrreg32_sm_90.log"), demangle=fake_demangle)
    assert find_kernel(res, "_Z12matmul_tiledPKfS0_Pfi").short_name == "matmul_tiled"
    assert find_kernel(res, "reduce_sum<256,float>").registers == 12
    with pytest.raises(KeyError, match="ambiguous"):
        find_kernel(res, "reduce_sum")
    with pytest.raises(KeyError, match="no kernel 'nope'"):
        find_kernel(res, "nope")


@pytest.mark.parametrize(
    ("demangled", "short", "base"),
    [
        ("void reduce_sum<256, float>(float const*, float*, int)", "reduce_sum<256, float>", "reduce_sum"),
        ("matmul_tiled(float const*, float*, int)", "matmul_tiled", "matmul_tiled"),
        ("saxpy", "saxpy", "saxpy"),
        ("void ns::k<(int)3, Foo<int> >(Foo<int>*)", "ns::k<(int)3, Foo<int> >", "ns::k"),
    ],
)
def test_short_and_base_names(demangled, short, base):
    assert short_name(demangled) == short
    assert base_name(demangled) == base


@pytest.mark.skipif(shutil.which("c++filt") is None and shutil.which("cu++filt") is None, reason="no demangler")
def test_real_demangler_batch():
    out = demangle_names(["_Z12matmul_tiledPKfS0_Pfi", "saxpy", "_Z10reduce_sumILi256EfEvPKT0_PS0_i"])
    assert out["saxpy"] == "saxpy"
    assert short_name(out["_Z12matmul_tiledPKfS0_Pfi"]) == "matmul_tiled"
    assert short_name(out["_Z10reduce_sumILi256EfEvPKT0_PS0_i"]) == "reduce_sum<256, float>"


def test_without_any_demangler_names_stay_mangled_and_status_says_so(tmp_path, monkeypatch):
    from veriforge.cuda.toolchain.demangle import demangler_status

    monkeypatch.setenv("PATH", str(tmp_path))
    assert demangle_names(["_Z6helperfi", "saxpy"]) == {"_Z6helperfi": "_Z6helperfi", "saxpy": "saxpy"}
    assert "kernel names are reported mangled" in demangler_status(None)
    (k,) = parse_ptxas_verbose(
        "ptxas info    : Compiling entry function '_Z1kv' for 'sm_90'\nptxas info    : Used 4 registers\n"
    ).values()
    assert k.name == k.mangled == "_Z1kv" and k.short_name == "_Z1kv"


def test_toolkit_cu_filt_is_preferred(tmp_path, monkeypatch):
    from veriforge.cuda.toolchain.demangle import find_demangler

    tool = tmp_path / "cu++filt"
    tool.write_text('#!/bin/sh\nwhile read line; do echo "demangled:$line"; done\n')
    tool.chmod(0o755)
    assert find_demangler(str(tmp_path)) == str(tool)
    assert demangle_names(["_Z1kv"], str(tmp_path)) == {"_Z1kv": "demangled:_Z1kv"}
