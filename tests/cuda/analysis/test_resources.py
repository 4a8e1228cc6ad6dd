"""ptxas resources and theoretical occupancy for the launch (nvcc tests need the CUDA compiler)."""

from __future__ import annotations

from pathlib import Path

import pytest

from veriforge.cuda import analysis
from veriforge.cuda.occupancy import theoretical

KERNELS = Path(__file__).parent / "kernels"


@pytest.mark.nvcc
def test_tiled_matmul_resources_and_occupancy_come_from_ptxas() -> None:
    rep = analysis.analyze(
        (KERNELS / "matmul.cu").read_text(),
        kernel="matmul_tiled",
        grid=(32, 32),
        block=(16, 16),
        params={"N": 512},
        arch="sm_90",
    )
    res = rep.resources
    assert res is not None and res["source"] == "ptxas"
    assert res["smem_static"] == 2 * 16 * 16 * 4 and res["registers"] > 0 and not res["spills"]
    expected = theoretical("sm_90", 256, res["registers"], res["smem_static"], 0)
    assert rep.occupancy == expected.to_dict()
    assert rep.features["registers_per_thread"] == res["registers"]
    assert rep.features["theoretical_occupancy"] == expected.occupancy
    assert rep.features["occupancy_limit_warps"] == 8  # 2048 threads / 256
    assert not [u for u in rep.unknowns if "occupancy" in u or "resources" in u]


@pytest.mark.nvcc
def test_template_kernel_is_instantiated_for_ptxas_and_dynamic_smem_counts() -> None:
    rep = analysis.analyze(
        (KERNELS / "transpose.cu").read_text(),
        kernel="transpose_tiled",
        grid=(32, 32),
        block=(32, 32),
        params={"width": 1024, "height": 1024},
        template_args={"PAD": 1},
        arch="sm_80",
        dynamic_smem=64 * 1024,
    )
    assert rep.resources is not None and rep.resources["smem_static"] == 32 * 33 * 4
    assert rep.occupancy is not None
    expected = theoretical("sm_80", 1024, rep.resources["registers"], 32 * 33 * 4, 64 * 1024)
    assert rep.occupancy["active_blocks_per_sm"] == expected.active_blocks_per_sm
    assert rep.features["shared_mem_dynamic_bytes"] == 64 * 1024


def test_without_nvcc_resources_and_occupancy_are_unknown_with_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VERIFORGE_NVCC", "/nonexistent/bin/nvcc")
    monkeypatch.setenv("CUDA_HOME", "/nonexistent")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    rep = analysis.analyze(
        (KERNELS / "matmul.cu").read_text(), kernel="matmul_tiled", grid=(4, 4), block=(16, 16), params={"N": 64}
    )
    if rep.resources is not None:  # a pip-installed nvcc wheel is still importable
        pytest.skip("an nvcc wheel is installed in the environment")
    assert rep.occupancy is None
    assert any(u.startswith("resources unknown: nvcc not available") for u in rep.unknowns)
    assert any(u.startswith("occupancy unknown") for u in rep.unknowns)
    assert "registers_per_thread" not in rep.features and "theoretical_occupancy" not in rep.features
    # the static part of the analysis is unaffected
    assert rep.arithmetic_intensity is not None


@pytest.mark.nvcc
def test_compile_error_is_reported_not_raised() -> None:
    src = "__global__ void k(float* a) { a[threadIdx.x] = undefined_name; }\n"
    rep = analysis.analyze(src, kernel="k", grid=1, block=32)
    assert rep.resources is None
    assert any("nvcc failed to compile" in u for u in rep.unknowns)
    assert rep.global_accesses[0].sectors_per_request == 4


@pytest.mark.nvcc
def test_a_template_instantiated_twice_gives_the_analysed_instances_resources() -> None:
    """The CUDA samples' matrixMul launches MatrixMulCUDA<16> and <32>: the bare name is ambiguous
    to ptxas's report, so the analysed instance is looked up by its arguments."""
    src = ("template <int B> __global__ void tile(float* x) {\n"
           "    __shared__ float s[B];\n"
           "    s[threadIdx.x] = x[threadIdx.x];\n    __syncthreads();\n"
           "    x[threadIdx.x] = s[B - 1 - threadIdx.x];\n}\n"
           "void run(float* x) { tile<16><<<1, 16>>>(x); tile<32><<<1, 32>>>(x); }\n")
    for b in (16, 32):
        rep = analysis.analyze(src, kernel="tile", grid=1, block=b, template_args={"B": b}, arch="sm_90")
        assert rep.resources is not None, rep.unknowns
        assert rep.resources["smem_static"] == 4 * b


@pytest.mark.nvcc
def test_a_template_whose_parameters_use_its_type_is_instantiated_and_found() -> None:
    """The CUDA samples' reduce6<T, blockSize, nIsPow2>(T *g_idata, ...): the instantiation the
    analysis appends must spell the parameters with the arguments (``float *``, not ``T *``), and
    ptxas names the instance ``reduce<float, 128u, true>`` (the unsigned suffix the user omits)."""
    src = ("template <class T, unsigned int blockSize, bool pow2>\n"
           "__global__ void reduce(T* g_idata, T* g_odata, unsigned int n) {\n"
           "    __shared__ T s[blockSize];\n"
           "    s[threadIdx.x] = pow2 ? g_idata[threadIdx.x] : T(0);\n    __syncthreads();\n"
           "    if (threadIdx.x == 0) g_odata[blockIdx.x] = s[blockSize - 1];\n}\n")
    rep = analysis.analyze(src, kernel="reduce", grid=1, block=128, arch="sm_90",
                           template_args={"T": "double", "blockSize": 128, "pow2": "true"})
    assert rep.resources is not None, rep.unknowns
    assert rep.resources["smem_static"] == 8 * 128
