"""``analyze_cmd`` mounted on a throwaway Typer app, driven by CliRunner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from veriforge.cli.cuda_analyze import analyze_cmd

KERNELS = Path(__file__).parent / "kernels"


def make_app() -> typer.Typer:
    app = typer.Typer()
    app.command("analyze")(analyze_cmd)

    @app.callback()
    def _root() -> None:
        """Test root (keeps `analyze` a sub-command)."""

    return app


def run(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(make_app(), ["analyze", *args])


def test_json_report_for_naive_transpose() -> None:
    r = run(
        str(KERNELS / "transpose.cu"),
        "--kernel",
        "transpose_naive",
        "--grid",
        "32,32",
        "--block",
        "32x32",
        "--param",
        "width=1024",
        "--param",
        "height=1 << 10",
        "--no-nvcc",
        "--json",
    )
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    stores = [a for a in data["global_accesses"] if a["kind"] == "store"]
    assert stores[0]["sectors_per_request"] == 32
    assert data["grid"] == [32, 32, 1]


def test_readable_report_shows_accesses_conflicts_and_unknowns() -> None:
    r = run(
        str(KERNELS / "transpose.cu"),
        "-k",
        "transpose_tiled",
        "--grid",
        "4,4",
        "--block",
        "32,32",
        "-p",
        "width=128",
        "-p",
        "height=128",
        "-t",
        "PAD=0",
        "--no-nvcc",
    )
    assert r.exit_code == 0, r.output
    assert "tile[threadIdx.x][threadIdx.y]" in r.output  # brackets survive rich markup
    assert "32" in r.output and "Shared memory accesses" in r.output
    assert "occupancy unknown" in r.output


def test_bad_kernel_and_bad_dims_exit_2() -> None:
    r = run(str(KERNELS / "matmul.cu"), "--kernel", "nope", "--grid", "1", "--block", "32", "--no-nvcc")
    assert r.exit_code == 2
    assert "kernels found: matmul_naive, matmul_tiled" in r.output
    r = run(str(KERNELS / "matmul.cu"), "--kernel", "matmul_naive", "--grid", "1,a", "--block", "32", "--no-nvcc")
    assert r.exit_code == 2
    r = run(
        str(KERNELS / "matmul.cu"),
        "--kernel",
        "matmul_naive",
        "--grid",
        "1",
        "--block",
        "32",
        "--param",
        "N=abc",
        "--no-nvcc",
    )
    assert r.exit_code == 2


WRAPPED = r"""
__global__ void add(const float* a, const float* b, float* c, int n) {
    for (int r = 0; r < (int)a[0] * 0 + 1; ++r) {
        for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) c[i] = a[i] + b[i];
    }
}
"""


def test_gpu_estimate_is_printed_and_unknown_work_is_not_priced(tmp_path: Path) -> None:
    plain = tmp_path / "plain.cu"
    plain.write_text(WRAPPED.replace("for (int r = 0; r < (int)a[0] * 0 + 1; ++r) {", "if (n > 0) {"))
    wrapped = tmp_path / "wrapped.cu"
    wrapped.write_text(WRAPPED)
    launch = ["--kernel", "add", "--grid", "264", "--block", "256", "-p", "n=1000000", "--no-nvcc", "--gpu", "H100-SXM"]

    r = run(str(plain), *launch)
    assert r.exit_code == 0, r.output
    line = next(ln for ln in r.output.splitlines() if ln.startswith("estimate"))
    assert "H100-SXM" in line and " µs" in line and "unknown" not in line
    assert "status exact" in line or "status upper_bound" in line
    assert "bound memory" in line or "bound latency" in line or "bound compute" in line

    r = run(str(wrapped), *launch)
    assert r.exit_code == 0, r.output
    line = next(ln for ln in r.output.splitlines() if ln.startswith("estimate"))
    assert "unknown — lower bound" in line and "status unknown" in line
    assert "  unknown: global load of a at line 4" in r.output and "(int)a[0] * 0 + 1" in r.output

    r = run(str(wrapped), *launch, "--json")
    assert r.exit_code == 0, r.output
    est = json.loads(r.output)["estimate"]
    assert est["time_s"] is None and est["status"] == "unknown" and est["complete"] is False
    assert est["lower_bound_s"] > 0 and est["gpu"] == "H100-SXM" and est["provenance"] == "estimated"
    assert any("(int)a[0] * 0 + 1" in u for u in est["unknown"])
    r = run(str(plain), *launch, "--json")
    est = json.loads(r.output)["estimate"]
    assert est["time_s"] > 0 and est["status"] in ("exact", "upper_bound")

    r = run(str(plain), *launch, "--no-estimate", "--json")
    assert "estimate" not in json.loads(r.output)
    r = run(str(plain), *launch[:-2], "--gpu", "no-such-gpu")
    assert r.exit_code == 2 and "unknown GPU" in r.output


@pytest.mark.nvcc
def test_ptxas_sees_the_users_headers_and_names_the_users_file(tmp_path: Path) -> None:
    """A real program includes its own headers (the CUDA samples' helper_cuda.h): without -I the
    resources are unknown with nvcc's message naming the user's file, with -I they are known."""
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "helpers.h").write_text("#pragma once\n#define CHECK(x) (x)\n")
    src = tmp_path / "scale.cu"
    src.write_text('#include "helpers.h"\n'
                   "__global__ void scale(float* x, int n) {\n"
                   "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                   "    if (i < n) x[i] *= 2.0f;\n}\n"
                   "void go(float* x, int n) { scale<<<(n + 255) / 256, 256>>>(x, n); CHECK(0); }\n")
    launch = ["--kernel", "scale", "--grid", "4", "--block", "256", "-p", "n=1024", "--no-estimate", "--json"]
    blind = json.loads(run(str(src), *launch).output)
    reason = next(u for u in blind["unknowns"] if u.startswith("resources unknown"))
    assert "scale.cu:1" in reason and "helpers.h" in reason and "kernel.cu" not in reason
    seen = json.loads(run(str(src), "-I", str(tmp_path / "inc"), *launch).output)
    assert seen["resources"]["registers"] > 0
    assert not any(u.startswith("resources unknown") for u in seen["unknowns"])


def test_the_readable_report_prints_round_numbers_whole(tmp_path: Path) -> None:
    """The CUDA samples' matrixMul (320x320, 32x32 tiles) printed 32 requests for 32000 and a trip
    count of 1 for 10: trailing zeros were stripped from whole numbers."""
    src = tmp_path / "tiles.cu"
    src.write_text("__global__ void tiles(const float* a, float* c, int n) {\n"
                   "    float s = 0.0f;\n"
                   "    for (int t = 0; t < n; t += 32) s += a[t + threadIdx.x];\n"
                   "    c[blockIdx.x * blockDim.x + threadIdx.x] = s;\n}\n")
    r = run(str(src), "-k", "tiles", "--grid", "100", "--block", "32", "-p", "n=320", "--no-nvcc", "--no-estimate")
    assert r.exit_code == 0, r.output
    load = next(line for line in r.output.splitlines() if "a[t + threadIdx.x]" in line)
    assert load.split("│")[-3].strip() == "1000"  # 100 blocks x 1 warp x 10 trips
    assert "trip count 10" in r.output
    assert "FLOPs 32000 " in r.output  # 3200 threads x 10 additions
