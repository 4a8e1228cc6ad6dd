"""Numbers a user can weigh (issue 19, part 7): every time says where it came from, for which GPU
and for which problem size; relative errors stay meaningful where the reference is zero; device
printf is never free in the estimate."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import typer
from typer.testing import CliRunner

from veriforge.cli.eval_cmd import eval_cmd
from veriforge.cuda import analysis, costmodel
from veriforge.cuda.evaluate.compare import compare
from veriforge.cuda.evaluate.harness import evaluate

AXPY = Path(__file__).parents[1] / "tasks" / "data" / "c2cuda" / "vec_scale_add"


def test_relative_error_is_finite_and_small_where_the_reference_is_zero() -> None:
    ref = np.array([0.0, 1e-300, 1.0, -2.0], dtype=np.float32)
    got = np.array([1e-8, 1e-9, 1.0000001, -2.0], dtype=np.float32)
    c = compare("out", got, ref, (1e-5, 1e-6))
    assert c.passed
    # |err| / max(|ref|, atol * max|ref|): 1e-8 / 2e-6, not 1e-8 / 1e-300
    assert c.max_rel_error is not None and c.max_rel_error < 0.01


def test_eval_labels_every_time_with_provenance_gpu_and_sizes(tmp_path: Path) -> None:
    app = typer.Typer()
    app.command("eval")(eval_cmd)
    app.command("noop")(lambda: None)
    res = CliRunner().invoke(app, ["eval", str(AXPY), str(AXPY / "impls" / "naive.cu"), "--no-cache"])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    small = next(line for line in lines if line.strip().startswith("small"))
    assert "sizes n=100, alpha=2.5" in small
    assert "tolerance: out rtol=1e-05, atol=1e-06 x max|ref|" in res.output
    times = [line for line in lines if "time[" in line]
    assert times
    for line in times:  # never an unlabelled time
        assert "emulated on this machine's CPU" in line or "estimated for H100-SXM" in line, line
        assert "sizes n=" in line, line


def test_result_records_sizes_and_tolerances() -> None:
    res = evaluate(AXPY, AXPY / "impls" / "naive.cu", estimate=False, configs=["small"])
    assert res.details["sizes"]["small"] == {"n": 100, "alpha": 2.5}
    assert res.details["tolerances"]["out"]["rtol"] == 1e-5


PRINTF = r"""
__global__ void scale(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
    if (GUARD) printf("i=%d\n", i);
}
"""


def test_device_printf_makes_the_estimate_unknown_saying_why() -> None:
    src = PRINTF.replace("GUARD", "i == 0")
    rep = analysis.analyze(src, kernel="scale", grid=8, block=128, params={"n": 1000}, use_nvcc=False)
    assert rep.flops is None and any("printf" in u for u in rep.unknowns)
    est = costmodel.estimate(rep, "H100-SXM")
    assert est.status == "unknown" and est.time_s is None
    assert any("printf" in u for u in est.unknown)


def test_printf_no_thread_reaches_costs_nothing() -> None:
    src = PRINTF.replace("GUARD", "n < 0")
    rep = analysis.analyze(src, kernel="scale", grid=8, block=128, params={"n": 1000}, use_nvcc=False)
    assert rep.flops == 1000.0
    assert costmodel.estimate(rep, "H100-SXM").status == "exact"
