"""`veriforge eval` as a typer command, and the PyTorch→CUDA path when the CPU binding can run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from veriforge.cli.eval_cmd import eval_cmd

DATA = Path(__file__).parents[1] / "tasks" / "data"
CHEATS = Path(__file__).parent / "cheats"


def _app() -> typer.Typer:
    app = typer.Typer()
    app.command("eval")(eval_cmd)
    app.command("noop")(lambda: None)
    return app


def test_eval_cli_correct_rejected_and_cached() -> None:
    runner = CliRunner()
    task = str(DATA / "c2cuda" / "vec_scale_add")
    res = runner.invoke(_app(), ["eval", task, str(Path(task) / "impls" / "naive.cu")])
    assert res.exit_code == 0, res.output
    assert "CORRECT" in res.output and "estimated" in res.output
    res = runner.invoke(_app(), ["eval", task, str(Path(task) / "impls" / "naive.cu"), "--json"])
    assert res.exit_code == 0 and json.loads(res.output)["cached"] is True
    res = runner.invoke(_app(), ["eval", task, str(CHEATS / "c2cuda" / "timer_patch.cu")])
    assert res.exit_code == 1 and "REJECTED" in res.output and "cudaEventElapsedTime" in res.output
    res = runner.invoke(_app(), ["eval", task, "missing.cu"])
    assert res.exit_code == 2


def _cpu_call_available() -> bool:
    from veriforge.cuda.cpu.module import Module

    return hasattr(Module, "call")


@pytest.mark.skipif(not _cpu_call_available(), reason="cpu.Module.call (needed by torchbind on CPU) not available")
def test_torch_task_end_to_end() -> None:
    pytest.importorskip("torch")
    from veriforge.cuda.evaluate.harness import evaluate

    task = DATA / "torch2cuda" / "relu_rows"
    res = evaluate(task, task / "impls" / "row_block.py")
    assert res.verdict.correct, res.verdict.reason + res.log
    wrong = (task / "impls" / "naive.py").read_text().replace("(v > 0.f ? v : 0.f)", "v")
    res = evaluate(task, wrong)
    assert not res.verdict.correct and "wrong" in res.verdict.reason
