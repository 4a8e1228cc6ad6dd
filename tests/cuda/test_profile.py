"""Tests for veriforge.cuda.profile: ncu CSV parsing into shared features, the command line, and
(on a GPU) a real Nsight Compute run.

The CSV fixtures in data/ncu/ are written in ncu's exact ``--csv --page raw`` / ``--page details``
layout by data/ncu/generate.py (values derived from the kernels' shapes, not recorded on a GPU).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from veriforge.cuda import profile
from veriforge.cuda.features import FEATURES
from veriforge.cuda.profile import (
    ExpressionError,
    NcuParseError,
    evaluate_expression,
    ncu_command,
    parse_ncu_csv,
    parse_unit,
    parse_value,
)
from veriforge.errors import ToolchainNotFoundError

DATA = Path(__file__).parent / "data" / "ncu"


@pytest.fixture(scope="module")
def h100():
    return parse_ncu_csv((DATA / "h100_raw_auto_units.csv").read_text())


@pytest.fixture(scope="module")
def a100():
    return parse_ncu_csv((DATA / "a100_raw_base_units.csv").read_text())


def test_fixtures_are_what_generate_py_writes():
    import importlib.util

    spec = importlib.util.spec_from_file_location("ncu_fixture_gen", DATA / "generate.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    assert (DATA / "h100_raw_auto_units.csv").read_text() == gen.h100()
    assert (DATA / "a100_raw_base_units.csv").read_text() == gen.a100()
    assert (DATA / "h100_details_long.csv").read_text() == gen.details()


def test_raw_page_launches_names_and_shapes(h100):
    assert [p.launch_id for p in h100] == [0, 1, 2, 3]
    assert [p.name for p in h100] == ["copy_float4", "transpose_naive", "transpose_shared", "matmul_tiled"]
    assert h100[1].kernel == "void transpose_naive<float>(float *, const float *, int)"
    assert h100[1].grid == (256, 1024, 1) and h100[1].block == (32, 8, 1)
    assert h100[0].info["CC"] == "9.0" and h100[0].info["Process ID"] == "48213"
    assert all(p.provenance == "measured" for p in h100)


def test_units_are_converted_to_ncu_base_units(h100):
    copy = h100[0]
    assert copy.metrics["gpu__time_duration.sum"] == pytest.approx(44860.0)  # "44.86" usecond -> ns
    assert copy.units["gpu__time_duration.sum"] == "nsecond"
    assert copy.metrics["dram__bytes_read.sum"] == pytest.approx(67.11e6)  # "67.11" Mbyte (decimal)
    assert copy.units["dram__bytes_read.sum"] == "byte"
    assert h100[2].metrics["launch__shared_mem_per_block_static"] == pytest.approx(4220.0)  # 4.22 Kbyte/block
    assert h100[2].units["launch__shared_mem_per_block_static"] == "byte/block"
    assert copy.metrics["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"] == 2_097_152  # thousands separators


def test_features_in_shared_vocabulary(h100):
    copy, naive, shared, matmul = h100
    assert set(copy.features) <= set(FEATURES)
    assert copy.features["time_s"] == pytest.approx(44.86e-6)
    assert copy.time_s == copy.features["time_s"]
    assert copy.features["global_load_sectors_per_request"] == 16  # float4: 512 B per warp request
    assert naive.features["global_load_sectors_per_request"] == 4
    assert naive.features["global_store_sectors_per_request"] == 32  # naive transpose store
    assert naive.features["global_store_efficiency"] == pytest.approx(0.125)
    assert copy.features["dram_bytes"] == pytest.approx(67.11e6 * 2)
    assert copy.features["dram_throughput"] == pytest.approx(0.8931)
    assert copy.features["theoretical_occupancy"] == 1.0
    assert copy.features["achieved_occupancy"] == pytest.approx(0.8862)
    assert copy.features["warp_execution_efficiency"] == 1.0
    assert copy.features["registers_per_thread"] == 16
    assert matmul.features["flops"] == pytest.approx(2 * 1_073_741_824)
    assert matmul.features["arithmetic_intensity"] == pytest.approx(2 * 1_073_741_824 / (8.42e6 + 4.19e6))
    assert shared.features["shared_load_bank_conflict_ways"] == 1.0
    assert matmul.features["barrier_stall_fraction"] == pytest.approx(0.1841)


def test_missing_metric_na_and_zero_division_leave_features_absent_with_notes(h100, a100):
    matmul = h100[3]
    # the H100 file did not collect l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum
    assert "shared_store_bank_conflict_ways" not in matmul.features
    assert any(
        n.startswith("shared_store_bank_conflict_ways absent (not in profile: l1tex__data_pipe_lsu")
        for n in matmul.notes
    )
    naive = h100[1]  # barrier stall reported "n/a"
    assert "barrier_stall_fraction" not in naive.features
    assert "smsp__warp_issue_stalled_barrier_per_warp_active.pct" not in naive.metrics
    assert any("barrier_stall_fraction absent (reported n/a" in n for n in naive.notes)
    copy = h100[0]  # no shared memory at all: ways undefined, not 0
    assert "shared_load_bank_conflict_ways" not in copy.features
    assert any("shared_load_bank_conflict_ways absent (undefined" in n for n in copy.notes)
    assert copy.features["shared_bank_conflicts"] == 0  # a count of 0 is a real answer
    fill = a100[2]
    assert fill.features["dram_bytes"] == 1_048_576
    assert fill.features["flops"] == 0 and fill.features["arithmetic_intensity"] == 0


def test_base_units_file_and_divergence(a100):
    div, seq, _ = a100
    assert div.info["CC"] == "8.0"
    assert div.metrics["gpu__time_duration.sum"] == 195_436
    assert div.features["time_s"] == pytest.approx(195.436e-6)
    assert div.features["warp_execution_efficiency"] == pytest.approx(13.61 / 32)
    assert seq.features["warp_execution_efficiency"] > div.features["warp_execution_efficiency"]
    assert div.features["shared_load_bank_conflict_ways"] == pytest.approx(1.25)
    assert "global_load_sectors_per_request" not in div.features


def test_details_long_format():
    (p,) = parse_ncu_csv((DATA / "h100_details_long.csv").read_text())
    assert p.name == "gather_strided" and p.grid == (8192, 1, 1)
    assert p.features["time_s"] == pytest.approx(1.21e-3)
    assert p.metrics["dram__bytes_read.sum"] == pytest.approx(1.07e9)
    assert p.metrics["dram__bytes_write.sum"] == pytest.approx(524_290)
    assert p.features["global_load_sectors_per_request"] == 32
    assert p.features["achieved_occupancy"] == pytest.approx(0.479)
    assert "dram_throughput" not in p.features
    assert "Section Name" not in p.info and "Metric Name" not in p.info


def test_to_measurement(h100):
    from veriforge.core.types import Measurement

    m = h100[0].to_measurement()
    assert m.provenance == "measured" and m.unit == "s"
    assert m.value == pytest.approx(44.86e-6)
    assert m.details["features"]["global_load_sectors_per_request"] == 16
    assert Measurement.from_json(m.to_json()) == m


def test_parse_errors_are_clear():
    with pytest.raises(NcuParseError, match="no ncu CSV table"):
        parse_ncu_csv("hello\n==ERROR== The application returned an error code (1).\n")
    with pytest.raises(NcuParseError, match=r"ncu said: ==ERROR== The application"):
        parse_ncu_csv("==ERROR== The application returned an error code (1).\n")
    text = (DATA / "a100_raw_base_units.csv").read_text().replace('"195,436"', '"lots"')
    with pytest.raises(NcuParseError, match=r"gpu__time_duration\.sum: not a number"):
        parse_ncu_csv(text)


@pytest.mark.parametrize(
    ("unit", "factor", "base"),
    [
        ("nsecond", 1, "nsecond"),
        ("usecond", 1e3, "nsecond"),
        ("msecond", 1e6, "nsecond"),
        ("second", 1e9, "nsecond"),
        ("byte", 1, "byte"),
        ("Kbyte", 1e3, "byte"),
        ("Gbyte", 1e9, "byte"),
        ("Kbyte/block", 1e3, "byte/block"),
        ("Gbyte/second", 1e9, "byte/second"),
        ("byte/usecond", 1e6, "byte/second"),
        ("Ghz", 1e9, "hz"),
        ("cycle/nsecond", 1e9, "cycle/second"),
        ("%", 1, "%"),
        ("sector", 1, "sector"),
        ("", 1, ""),
        ("register/thread", 1, "register/thread"),
    ],
)
def test_parse_unit(unit, factor, base):
    f, b = parse_unit(unit)
    assert f == pytest.approx(factor) and b == base


def test_parse_value():
    assert parse_value("1,234,567") == 1234567
    assert parse_value("12.50") == 12.5
    assert parse_value("1e-3") == 0.001
    assert parse_value("n/a") is None and parse_value("") is None
    with pytest.raises(ValueError):
        parse_value("(256, 1, 1)")


def test_expression_evaluator_is_arithmetic_only():
    vals = {"a__x.sum": 6.0, "b__y.sum": 3.0, "l1tex__z.sum": 2.0}
    assert evaluate_expression("a__x.sum / b__y.sum", vals) == 2
    assert evaluate_expression("2 * a__x.sum + b__y.sum - -1", vals) == 16
    assert evaluate_expression("(a__x.sum + b__y.sum) / (l1tex__z.sum * 1.5e0)", vals) == 3
    with pytest.raises(KeyError, match=r"c__w\.sum"):
        evaluate_expression("a__x.sum + c__w.sum", vals)
    with pytest.raises(ZeroDivisionError):
        evaluate_expression("a__x.sum / (b__y.sum - 3)", vals)
    for bad in ("__import__('os').system('true')", "a__x.sum ** 2", "a__x.sum +", "(a__x.sum", "a__x.sum; 1"):
        with pytest.raises((ExpressionError, KeyError)):
            evaluate_expression(bad, vals)
    assert profile.expression_metrics(FEATURES["flops"].ncu) == [
        "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
        "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
        "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
    ]


def test_every_shared_feature_expression_parses():
    metrics = profile.feature_metrics()
    assert "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum" in metrics  # digits in the unit name kept
    assert "gpu__time_duration.sum" in metrics
    for feat in FEATURES.values():
        if feat.ncu:
            assert set(profile.expression_metrics(feat.ncu)) <= set(metrics)


def test_ncu_command():
    cmd = ncu_command(
        "./bench",
        ["--n", "1024"],
        metrics=["gpu__time_duration.sum", "dram__bytes_read.sum"],
        kernel_regex="matmul.*",
        launch_skip=2,
        launch_count=1,
        ncu="/opt/ncu",
    )
    assert cmd == [
        "/opt/ncu",
        "--csv",
        "--page",
        "raw",
        "--metrics",
        "gpu__time_duration.sum,dram__bytes_read.sum",
        "--kernel-name",
        "regex:matmul.*",
        "--launch-skip",
        "2",
        "--launch-count",
        "1",
        "./bench",
        "--n",
        "1024",
    ]
    default = ncu_command(["python", "run.py"])
    assert default[:4] == ["ncu", "--csv", "--page", "raw"]
    assert default[5] == ",".join(profile.feature_metrics())
    assert default[-2:] == ["python", "run.py"]
    with pytest.raises(ValueError, match="not ncu metric names"):
        ncu_command("./a", metrics=["x; rm -rf /"])
    with pytest.raises(ValueError):
        ncu_command("./a", launch_count=0)


def test_find_ncu(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.delenv("VERIFORGE_NCU", raising=False)
    if Path("/usr/local/cuda/bin/ncu").exists() or list(Path("/opt/nvidia/nsight-compute").glob("*/ncu")):
        pytest.skip("a system ncu exists")
    with pytest.raises(ToolchainNotFoundError, match="ncu"):
        profile.find_ncu()
    fake = tmp_path / "ncu"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    assert profile.find_ncu() == fake
    monkeypatch.setenv("VERIFORGE_NCU", str(tmp_path))
    assert profile.find_ncu() == fake


def test_run_ncu_with_a_fake_ncu_parses_and_reports_failures(tmp_path):
    """A stand-in ncu (a shell script) exercises the real subprocess path without a GPU."""
    fixture = DATA / "a100_raw_base_units.csv"
    ok = tmp_path / "ncu_ok"
    ok.write_text(f"#!/bin/sh\necho program output\ncat '{fixture}'\n")
    perm = tmp_path / "ncu_perm"
    perm.write_text(
        "#!/bin/sh\necho '==ERROR== ERR_NVGPUCTRPERM - The user does not have permission' >&2\nexit 1\n"
    )
    fail = tmp_path / "ncu_fail"
    fail.write_text("#!/bin/sh\necho '==ERROR== Failed to find kernel' \nexit 1\n")
    for f in (ok, perm, fail):
        f.chmod(0o755)
    profiles = profile.run_ncu("./prog", ncu=ok, timeout=30)
    assert [p.name for p in profiles] == ["reduce_divergent", "reduce_sequential", "fill"]
    with pytest.raises(profile.ProfileError, match="NVreg_RestrictProfilingToAdminUsers"):
        profile.run_ncu("./prog", ncu=perm, timeout=30)
    with pytest.raises(profile.ProfileError, match="Failed to find kernel"):
        profile.run_ncu("./prog", ncu=fail, timeout=30)


def test_run_ncu_timeout_kills(tmp_path):
    from veriforge.errors import KernelTimeoutError

    slow = tmp_path / "ncu_slow"
    slow.write_text("#!/bin/sh\nsleep 30\n")
    slow.chmod(0o755)
    with pytest.raises(KernelTimeoutError, match="killed"):
        profile.run_ncu("./prog", ncu=slow, timeout=0.5)


GPU_PROGRAM = r"""
#include <cstdio>
__global__ void copy_coalesced(const float* __restrict__ a, float* __restrict__ b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) b[i] = a[i];
}
__global__ void copy_strided(const float* __restrict__ a, float* __restrict__ b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n / 32) b[i] = a[(long long)i * 32];
}
int main() {
    int n = 1 << 24; float *a, *b;
    cudaMalloc(&a, n * sizeof(float)); cudaMalloc(&b, n * sizeof(float));
    cudaMemset(a, 0, n * sizeof(float));
    copy_coalesced<<<n / 256, 256>>>(a, b, n);
    copy_strided<<<n / 32 / 256, 256>>>(a, b, n);
    cudaDeviceSynchronize();
    printf("done\n");
    return 0;
}
"""


@pytest.mark.gpu
@pytest.mark.nvcc
def test_run_ncu_on_a_real_gpu(tmp_path):
    try:
        profile.find_ncu()
    except ToolchainNotFoundError:
        pytest.skip("ncu not installed")
    src = tmp_path / "prog.cu"
    src.write_text(GPU_PROGRAM)
    exe = tmp_path / "prog"
    subprocess.run([shutil.which("nvcc") or "nvcc", "-O2", "-o", str(exe), str(src)], check=True)
    profiles = profile.run_ncu(exe, launch_count=2, timeout=300)
    by_name = {p.name: p for p in profiles}
    assert set(by_name) == {"copy_coalesced", "copy_strided"}
    good, bad = by_name["copy_coalesced"], by_name["copy_strided"]
    assert good.features["time_s"] > 0
    assert good.features["global_load_sectors_per_request"] == pytest.approx(4, rel=0.05)
    assert bad.features["global_load_sectors_per_request"] == pytest.approx(32, rel=0.05)
    assert good.features["global_load_efficiency"] > 0.95 > 0.2 > bad.features["global_load_efficiency"]
    assert good.grid == (1 << 16, 1, 1)
