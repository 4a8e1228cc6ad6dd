"""`veriforge optimize KERNEL.cu --kernel K --grid ... --block ... --param ... --size ...`: a user's own
kernel, no task folder, the original kernel (or a NumPy function) is the reference (issue 16, part 1)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from veriforge.cli.optimize_cmd import optimize_cmd
from veriforge.core.paths import cache_dir
from veriforge.cuda.evaluate import evaluate
from veriforge.cuda.tasks import load_task
from veriforge.cuda.tasks.ctypes_map import find_signature
from veriforge.optiml.user_kernel import GENERATED_MARK, build_user_task

ROW_SUM = """\
// one thread per row: the row loop reads A with a stride of cols between neighbouring threads
__global__ void row_sum(const float* __restrict__ A, float* out, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float s = 0.0f;
    for (int c = 0; c < cols; ++c) s += A[r * cols + c];
    out[r] = s;
}
"""

COL_SUM = """\
__global__ void col_sum(const float* A, float* out, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c < cols) {
        float acc = 0.0f;
        for (int r = 0; r < rows; ++r) acc += A[r * cols + c];
        out[c] = acc;
    }
}
"""

TRANSPOSE = """\
__device__ inline int at(int r, int c, int w) { return r * w + c; }

__global__ void transpose(const float* in, float* out, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) out[at(c, r, rows)] = in[at(r, c, cols)];
}
"""
TRANSPOSE_ARGS = ["--kernel", "transpose", "--grid", "(cols + 15) / 16, (rows + 15) / 16", "--block", "16, 16",
                  "--param", "rows=64", "--param", "cols=32", "--size", "in=rows*cols", "--size", "out=rows*cols"]

COLSUM_NUMPY = """\
import numpy as np

def col_sum(A, out, rows, cols):
    return A.reshape(int(rows), int(cols)).sum(axis=0, dtype=np.float64).astype(np.float32)
"""


def _app() -> typer.Typer:
    app = typer.Typer()
    app.command()(optimize_cmd)
    return app


def _run(args: list[str]):
    return CliRunner().invoke(_app(), [*args, "--quiet"])


def _user_tasks() -> list[Path]:
    return sorted(p for p in cache_dir("optiml-user-tasks").iterdir() if (p / "task.toml").is_file())


def _with_solve(text: str) -> str:
    """A written kernel file with its launch comment turned back into code (a caller's view)."""
    body, _, tail = text.partition("// veriforge optimize:")
    lines = [ln[len("//   "):] for ln in tail.splitlines() if ln.startswith("//   ")]
    return body + "\n".join(lines) + "\n"


def test_row_sum_task_is_built_and_the_best_kernel_keeps_name_and_signature(tmp_path) -> None:
    kernel = tmp_path / "row_sum.cu"
    kernel.write_text(ROW_SUM)
    out = tmp_path / "row_sum_fast.cu"
    res = _run([str(kernel), "--kernel", "row_sum", "--grid", "(rows + 127) / 128", "--block", "128",
                "--param", "rows=100", "--param", "cols=64", "--size", "A=rows*cols", "--size", "out=rows",
                "--budget", "3", "--out", str(out)])
    assert res.exit_code == 0, res.output
    [folder] = _user_tasks()
    spec = load_task(folder)
    assert [(p.name, p.role, p.size) for p in spec.params] == [
        ("A", "in", "rows*cols"), ("out", "inout", "rows"), ("rows", "scalar", None), ("cols", "scalar", None)]
    assert (folder / "reference.cu").is_file() and not (folder / "reference.c").exists()
    configs = {c.name: c.variables for c in spec.configs}
    assert configs["given"] == {"rows": 100, "cols": 64}
    # derived sizes: odd (tails of every block) and smaller than a block
    assert configs["half"] == {"rows": 51, "cols": 33} and configs["small"] == {"rows": 19, "cols": 19}
    tree = json.loads((tmp_path / "row_sum_fast.optiml" / "tree.json").read_text())
    assert tree["task"] == spec.id and len(tree["nodes"]) >= 2
    text = out.read_text()
    assert GENERATED_MARK not in text and "extern" not in text.split("// veriforge optimize:")[0]
    sig = [(p.name, p.ctype) for p in find_signature(text, "row_sum")]
    assert [n for n, _ in sig] == ["A", "out", "rows", "cols"]
    assert "float" in sig[0][1] and "*" in sig[0][1] and "*" in sig[1][1] and "const" not in sig[1][1]
    # the file drops back in: with the launch it documents, it compiles (CPU runtime) and is correct
    ev = evaluate(spec, _with_solve(text), backend="cpu", trials=2, estimate=False)
    assert ev.correct, ev.verdict.reason
    launch = re.search(r"launch unchanged|LAUNCH CHANGED", text)
    assert launch is not None
    flat = res.output.replace("\n", " ")
    assert ("LAUNCH CHANGED" in flat) == (launch.group(0) == "LAUNCH CHANGED"), res.output


def test_wrong_candidates_are_rejected_against_the_original_at_given_and_generated_sizes(tmp_path) -> None:
    kernel = tmp_path / "transpose.cu"
    kernel.write_text(TRANSPOSE)
    res = _run([str(kernel), *TRANSPOSE_ARGS, "--budget", "1", "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    [folder] = _user_tasks()
    spec = load_task(folder)
    assert spec.params[1].role == "inout" and spec.params[1].size == "rows*cols"
    assert re.sub(r"\s+", "", (tmp_path / "o" / "transpose.cu").read_text()).count("__global__voidtranspose(") == 1
    # deliberately wrong: copies instead of transposing -> rejected against the original's outputs
    wrong = TRANSPOSE.replace("out[at(c, r, rows)]", "out[at(r, c, cols)]")
    source = wrong + "\n" + GENERATED_MARK + (folder / "reference.cu").read_text().split(GENERATED_MARK)[1]
    ev = evaluate(spec, source, backend="cpu", trials=2, estimate=False)
    assert not ev.correct and "given" in ev.verdict.reason
    # correct only at the given sizes (multiples of 16: no bounds check needed there)
    tiled = TRANSPOSE.replace("if (r < rows && c < cols) ", "")
    source = tiled + "\n" + GENERATED_MARK + (folder / "reference.cu").read_text().split(GENERATED_MARK)[1]
    assert evaluate(spec, source, backend="cpu", trials=2, configs=["given"], estimate=False).correct
    ev = evaluate(spec, source, backend="cpu", trials=2, estimate=False)
    assert not ev.correct  # wrong outputs, a crash or order-dependent writes out of bounds, at a derived size
    failed = {r.config for r in ev.verdict.results if not r.passed}
    assert "given" not in failed and re.search(r"'(half|small)'", ev.verdict.reason), ev.verdict.reason


def test_numpy_reference_is_the_reference(tmp_path) -> None:
    kernel = tmp_path / "col_sum.cu"
    kernel.write_text(COL_SUM)
    ref = tmp_path / "ref.py"
    ref.write_text(COLSUM_NUMPY)
    args = [str(kernel), "--kernel", "col_sum", "--grid", "(cols + 127) / 128", "--block", "128",
            "--param", "rows=40", "--param", "cols=300", "--size", "A=rows*cols", "--size", "out=cols"]
    res = _run([*args, "--reference", f"{ref}:col_sum", "--budget", "1", "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    [folder] = _user_tasks()
    assert (folder / "reference_numpy.py").is_file() and not (folder / "reference.cu").exists()
    # a NumPy reference that disagrees with the kernel: the start itself is rejected (exit 2)
    ref.write_text(COLSUM_NUMPY.replace("return A", "return 2 * A"))
    res = _run([*args, "--reference", f"{ref}:col_sum", "--budget", "1", "--out", str(tmp_path / "o2")])
    assert res.exit_code == 2 and "cannot be optimised" in res.output, res.output


def test_the_original_defines_the_domain(tmp_path) -> None:
    kernel = tmp_path / "pairs.cu"
    kernel.write_text("""\
__global__ void pair_sum(const float* x, float* y, int n) {
    if (n % 2) __trap();  // only even n
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n / 2) y[i] = x[2 * i] + x[2 * i + 1];
}
""")
    task = build_user_task(kernel, "pair_sum", "(n / 2 + 63) / 64", "64", {"n": "64"}, {"x": "n", "y": "n / 2"})
    assert [c.name for c in task.spec.configs] == ["given"]
    assert set(task.dropped) == {"half", "small"} and "reference fails" in task.dropped["half"]


def test_size_is_inferred_only_when_unambiguous(tmp_path) -> None:
    kernel = tmp_path / "scale.cu"
    kernel.write_text("__global__ void scale(float* x, float a, int n) {\n"
                      "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) x[i] = a * x[i];\n}\n")
    task = build_user_task(kernel, "scale", "(n + 255) / 256", "256", {"n": "1000", "a": "0.5"}, {})
    assert task.spec.params[0].size == "n" and task.spec.params[0].role == "inout"


@pytest.mark.parametrize("extra, needle", [
    ([], "give --size A=EXPR"),
    (["--size", "A=rows*cols", "--size", "out=cols", "--param", "nope=3"], "no parameter 'nope'"),
])
def test_unusable_options_exit_2_with_one_line(tmp_path, extra, needle) -> None:
    kernel = tmp_path / "col_sum.cu"
    kernel.write_text(COL_SUM)
    res = _run([str(kernel), "--kernel", "col_sum", "--grid", "(cols + 127) / 128", "--block", "128",
                "--param", "rows=40", "--param", "cols=300", *extra, "--out", str(tmp_path / "o")])
    assert res.exit_code == 2, res.output
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and needle in lines[0], res.output


SAXPY_APP = """\
#include <cstdio>
#define N (1 << 12)

__global__ void saxpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

int main() {
    int n = N;
    const int threads = 256;
    int blocks = (n + threads - 1) / threads;
    size_t bytes = n * sizeof(float);
    float *d_x, *d_y;
    cudaMalloc(&d_x, bytes);
    cudaMalloc((void**)&d_y, n * sizeof(float));
    saxpy<<<blocks, threads>>>(2.0f, d_x, d_y, n);
    cudaDeviceSynchronize();
    printf("done\\n");
    return 0;
}
"""


def test_a_kernel_file_with_main_gives_the_launch_sizes_and_values(tmp_path) -> None:
    app = tmp_path / "app.cu"
    app.write_text(SAXPY_APP)
    out = tmp_path / "app_fast.cu"
    res = _run([str(app), "--budget", "2", "--out", str(out)])  # no options: all from main's launch
    assert res.exit_code == 0, res.output
    [folder] = _user_tasks()
    spec = load_task(folder)
    assert [(p.name, p.role, p.size) for p in spec.params] == [
        ("a", "scalar", None), ("x", "in", "n"), ("y", "inout", "n"), ("n", "scalar", None)]
    assert spec.configs[0].variables == {"a": 2.0, "n": 4096}
    ref = (folder / "reference.cu").read_text()
    assert "int main" not in ref and "saxpy<<<(n + 256 - 1) / 256, 256>>>(a, x, y, n);" in ref
    text = out.read_text()
    assert "// your host code, unchanged" in text and text.count("int main()") == 1
    assert [p.name for p in find_signature(text, "saxpy")] == ["a", "x", "y", "n"]


def test_an_incomplete_host_launch_names_the_option_to_give(tmp_path) -> None:
    kernel = tmp_path / "k.cu"
    kernel.write_text(SAXPY_APP.split("int main")[0])
    host = tmp_path / "main.cu"
    host.write_text('#include <cstdlib>\nint main(int argc, char** argv) {\n    int n = 1000;\n'
                    '    int threads = atoi(argv[1]);\n    float *d_x, *d_y;\n'
                    '    cudaMalloc(&d_x, n * sizeof(float));\n    cudaMalloc(&d_y, n * sizeof(float));\n'
                    '    saxpy<<<(n + threads - 1) / threads, threads>>>(0.5f, d_x, d_y, n);\n}\n')
    res = _run([str(kernel), "--host", str(host), "--out", str(tmp_path / "o")])
    assert res.exit_code == 2, res.output
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and "cannot infer --grid" in lines[0] and "give --grid EXPR" in lines[0], res.output
    task = build_user_task(kernel, None, "(n + 127) / 128", "128", {}, {}, host=host)
    assert {p.name: p.size for p in task.spec.params if p.size} == {"x": "n", "y": "n"}
    assert task.spec.configs[0].variables == {"a": 0.5, "n": 1000}


PAIR_SUM = """
__global__ void pairsum(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float acc = 0.0f;
        for (int k = 0; k < n; ++k) acc += x[k] * x[(i + k) % n];
        y[i] = acc;
    }
}
"""


def test_given_sizes_too_slow_to_emulate_are_timed_and_verified_shrunk(tmp_path) -> None:
    """O(n^2) work at n = 65536 takes seconds per run on the CPU runtime (4.3e9 multiply-adds and
    modulos; n = 16384 can take under 0.5 s on a quiet machine): the given size becomes a [[timing]]
    config (estimated) and correctness is checked at halved sizes where one run fits the budget; a
    candidate is then verified there and timed at the given size."""
    kernel = tmp_path / "pairsum.cu"
    kernel.write_text(PAIR_SUM)
    built = build_user_task(kernel, "pairsum", "(n + 255) / 256", "256", {"n": "65536"}, {"x": "n", "y": "n"},
                            root=tmp_path / "tasks", emulation_budget_s=0.5)
    emu = built.emulation
    assert emu is not None and emu["budget_s"] == 0.5
    assert emu["given_seconds"] is None or emu["given_seconds"] > 0.5
    shrunk = emu["shrunk"]["n"]
    assert 32 <= shrunk < 65536 and 65536 % shrunk == 0  # halvings of the given size
    spec = built.spec
    assert [(c.name, c.variables) for c in spec.timing] == [("given", {"n": 65536})]
    assert spec.configs[0].name == "shrunk" and spec.configs[0].variables == {"n": shrunk}
    assert all(c.variables["n"] < shrunk for c in spec.configs[1:])  # derived from the shrunk size
    res = evaluate(spec, built.start, backend="cpu", trials=2)
    assert res.correct, res.verdict.reason
    assert {r.config for r in res.verdict.results} == {c.name for c in spec.configs}  # given is not run
    assert "given" in res.details["estimate"]["timing"]
    assert res.details["estimate"]["configs"]["given"]["status"] != "unknown"
    assert float(spec.metrics["bytes"]) > 0  # the original's traffic at the given size
    # hostile: right at every verified (smaller) size, does a quarter of the work at the given size
    # only. The estimate there is not trusted (it moves less than half of the original's bytes).
    part = f"(n > {shrunk} ? n / 4 : n)"
    skip = built.start.source.replace("if (i < n) {", f"if (i < {part}) {{", 1).replace(
        "k < n;", f"k < {part};", 1)
    assert skip.count(part) == 2
    cheat = evaluate(spec, skip, backend="cpu", trials=2)
    assert cheat.correct  # nothing wrong where it was checked...
    given = cheat.details["estimate"]["configs"]["given"]
    assert given["status"] == "unknown" and "metrics.bytes" in " ".join(given["unknown"])  # ...but no speed
    # the same build again is the cached task: nothing is probed twice
    again = build_user_task(kernel, "pairsum", "(n + 255) / 256", "256", {"n": "65536"}, {"x": "n", "y": "n"},
                            root=tmp_path / "tasks", emulation_budget_s=0.5)
    assert again.emulation == emu and again.spec.folder == spec.folder


def test_sizes_that_cannot_be_shrunk_under_the_budget_are_one_clear_error(tmp_path) -> None:
    """The work here is set by a constant, not by a size parameter: halving n does not help."""
    spin = PAIR_SUM.replace("for (int k = 0; k < n; ++k) acc += x[k] * x[(i + k) % n];",
                            "for (int k = 0; k < (1 << 25); ++k) acc = acc * 0.999f + x[(i + k) % n];")
    kernel = tmp_path / "spin.cu"
    kernel.write_text(spin)
    res = _run([str(kernel), "--kernel", "pairsum", "--grid", "1", "--block", "32", "--param", "n=32",
                "--size", "x=n", "--size", "y=n", "--emulation-budget", "0.5", "--budget", "1",
                "--out", str(tmp_path / "o")])
    assert res.exit_code == 2, res.output
    assert "on the CPU runtime at the given sizes" in res.output and "--emulation-budget" in res.output
    assert "Traceback" not in res.output
    assert not _user_tasks()  # nothing half-built is left in the cache


COLSUM_TORCH = """\
import torch

def col_sum(A, out, rows, cols):
    assert isinstance(A, torch.Tensor) and isinstance(rows, int)
    out.copy_(A.view(rows, cols).double().sum(dim=0).float())   # in place: the buffer is the output
"""


def test_pytorch_function_is_the_reference(tmp_path) -> None:
    """A module that imports torch gets tensors (sharing the buffers) and Python scalars; an in-place
    write or a returned tensor is the output. A wrong PyTorch reference rejects the start."""
    pytest.importorskip("torch")
    from veriforge.cuda.tasks.generate import make_case
    from veriforge.cuda.tasks.reference import run_c_reference

    kernel = tmp_path / "col_sum.cu"
    kernel.write_text(COL_SUM)
    ref = tmp_path / "ref_torch.py"
    ref.write_text(COLSUM_TORCH)
    built = build_user_task(kernel, "col_sum", "(cols + 127) / 128", "128", {"rows": "40", "cols": "300"},
                            {"A": "rows*cols", "out": "cols"}, reference=f"{ref}:col_sum", root=tmp_path / "t")
    spec = built.spec
    case = make_case(spec, "given", 0)
    got = run_c_reference(spec, case)["out"]
    a = np.asarray(case.args[0], dtype=np.float64).reshape(40, 300)
    np.testing.assert_allclose(got, a.sum(axis=0), rtol=1e-6)
    assert evaluate(spec, built.start, backend="cpu", trials=2, estimate=False).correct
    # returning a tensor works too; a wrong one makes the original kernel fail verification
    ref.write_text(COLSUM_TORCH.replace("out.copy_(", "return 2 * ("))
    wrong = build_user_task(kernel, "col_sum", "(cols + 127) / 128", "128", {"rows": "40", "cols": "300"},
                            {"A": "rows*cols", "out": "cols"}, reference=f"{ref}:col_sum", root=tmp_path / "t")
    np.testing.assert_allclose(run_c_reference(wrong.spec, make_case(wrong.spec, "given", 0))["out"],
                               2 * a.sum(axis=0), rtol=1e-6)
    assert not evaluate(wrong.spec, wrong.start, backend="cpu", trials=2, estimate=False).correct
