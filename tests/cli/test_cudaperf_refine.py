"""`veriforge cudaperf refine` through typer's CliRunner: a bundled task and a KernelBench file,
answers replayed from a JSONL file (``--model scripted:FILE``), real CPU-runtime evaluations."""

from __future__ import annotations

import json
import re

import typer
from typer.testing import CliRunner

from veriforge.cli.cudaperf_refine import register
from veriforge.cuda.tasks.load import find_task

runner = CliRunner()
# The command as `veriforge cudaperf` registers it, on an app of its own: this test must not depend
# on the other `cudaperf` command modules importing cleanly.
app = typer.Typer()
register(app)


@app.callback()
def _group() -> None:
    """Keep `refine` a subcommand (typer collapses a one-command app otherwise)."""

IMPLS = find_task("c2cuda/sum_reduce") / "impls"

KB_PROBLEM = '''import torch
import torch.nn as nn

batch_size = 4
dim = 96


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
'''


def _jsonl(path, codes, fence="cuda"):
    path.write_text("".join(json.dumps({"text": f"PLAN: x\n```{fence}\n{c}```"}) + "\n" for c in codes))
    return path


def test_refine_bundled_task_prints_table_and_report(tmp_path):
    good = (IMPLS / "warp_shuffle.cu").read_text()
    answers = _jsonl(tmp_path / "a.jsonl", [good.replace("+=", "-=", 1), good])
    args = ["refine", "c2cuda/sum_reduce", "--model", f"scripted:{answers}", "--turns", "2",
            "--out", str(tmp_path / "out"), "--store", str(tmp_path / "runs.sqlite")]
    res = runner.invoke(app, args, terminal_width=200)
    assert res.exit_code == 0, res.output
    assert "turn 1: wrong, reward -0.300" in res.output
    assert re.search(r"turn 2: correct, reward \+0\.\d+, [\d.]+x estimated", res.output)
    report = re.search(r"report: (\S+report\.html)", res.output).group(1)
    html = open(report).read()
    assert "sum_reduce" in html and "id='rewards'" in html
    run_id = re.search(r"run (\d{8}-\d{6}-[0-9a-f]{8})", res.output).group(1)
    # A finished run cannot be resumed: a clear error, exit code 2.
    again = runner.invoke(app, [*args, "--resume", run_id])
    assert again.exit_code == 2 and "already finished" in again.output


def test_refine_kernelbench_file(tmp_path):
    problem = tmp_path / "19_ReLU.py"
    problem.write_text(KB_PROBLEM)
    broken = "import torch\nfrom veriforge.cuda.torchbind import load_cuda\n" \
             "CUDA_SRC = r'''\n__global__ void k(float* y) { y[0] = 1.0f }\n" \
             "extern \"C\" void relu(const float* x, float* y, int n) { k<<<1, 1>>>(y); }\n'''\n" \
             "_ext = load_cuda('kb_relu', CUDA_SRC)\nclass ModelNew(torch.nn.Module):\n" \
             "    def forward(self, x):\n        y = torch.empty_like(x)\n        _ext.relu(x, y, x.numel())\n" \
             "        return y\n"
    answers = _jsonl(tmp_path / "kb.jsonl", [broken], fence="python")
    res = runner.invoke(app, ["refine", str(problem), "--model", f"scripted:{answers}", "--turns", "1",
                              "--out", str(tmp_path / "out"), "--store", str(tmp_path / "runs.sqlite")],
                        terminal_width=200)
    assert res.exit_code == 0, res.output
    assert "refining kb_19_relu" in res.output and "turn 1: compile_error" in res.output
    assert "no implementation" in res.output  # no baseline: speed is not scored, and it says so
    assert (tmp_path / "out" / "tasks" / "kb_19_relu" / "reference.py").read_text() == KB_PROBLEM
