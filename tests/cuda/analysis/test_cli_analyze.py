"""``analyze_cmd`` mounted on a throwaway Typer app, driven by CliRunner."""

from __future__ import annotations

import json
from pathlib import Path

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
