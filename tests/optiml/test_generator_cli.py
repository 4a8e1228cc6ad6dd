"""``veriforge generate`` through typer's runner with a scripted model file: generation then
OptiML-X (built-in operators + the model proposer), the --no-optimize path and the errors."""

from __future__ import annotations

import json

import pytest
import typer
from typer.testing import CliRunner

from veriforge.cli.generate_cmd import generate_cmd

FAST = """#include <cuda_runtime.h>
__global__ void add_kernel(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
extern "C" void solve(const float* a, const float* b, float* c, int n) {
    add_kernel<<<(n + 255) / 256, 256>>>(a, b, c, n);
}
"""
EDITED = FAST.replace("const float* a, const float* b, float* c, int n) {\n    int",
                      "const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,\n"
                      "                           int n) {\n    int", 1)


def app() -> typer.Typer:
    a = typer.Typer()
    a.command()(generate_cmd)
    return a


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "replies.jsonl"
    lines = [
        {"text": f"PLAN: one thread per element.\n```cuda\n{FAST}```", "match": "Strategy to use"},
        {"text": f"### Edit 1: mark the pointers __restrict__\n```cuda\n{EDITED}```", "match": "Propose"},
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return path


def test_generate_then_optimize(script, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    res = CliRunner().invoke(app(), ["add two vectors", "--task", "vector_add",
                                     "--model", f"scripted:{script}", "--thoughts", "straightforward",
                                     "--rounds", "1", "--budget", "3",
                                     "--out", str(out), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["generation"]["winner"] == "straightforward"
    assert (out / "generated.cu").read_text() == FAST
    opt = data["optimization"]
    assert opt["provenance"] == "estimated" and opt["evaluations"] >= 2
    tree = json.loads((out / "tree.json").read_text())
    model_edits = [n for n in tree["nodes"] if (n.get("edit") or {}).get("proposer") == "model"]
    assert model_edits and model_edits[0]["edit"]["description"] == "mark the pointers __restrict__"
    assert model_edits[0]["edit"]["evidence"]["features"]  # the profile evidence the model was shown
    assert (out / "best.cu").is_file() and (out / "report.html").is_file()


def test_no_optimize_prints_winner(script, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(app(), ["vector_add", "--model", f"scripted:{script}", "--thoughts",
                                     "straightforward,vectorized", "--rounds", "1", "--no-optimize"])
    assert res.exit_code == 0, res.output
    assert "winning thought: straightforward" in res.output  # a tie: the first thought keeps it
    assert (tmp_path / "optiml-vector_add" / "generated.cu").read_text() == FAST
    assert not (tmp_path / "optiml-vector_add" / "best.cu").exists()


def test_words_without_task_exit_2(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(app(), ["add two vectors", "--model", "scripted:x.jsonl"])
    assert res.exit_code == 2
    assert "cannot be verified" in res.output and "--task" in res.output


def test_no_model_exit_2(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("VERIFORGE_LLM__MODEL", raising=False)
    monkeypatch.delenv("VERIFORGE_CONFIG", raising=False)
    res = CliRunner().invoke(app(), ["vector_add", "--no-optimize"])
    assert res.exit_code == 2
    assert "no language model configured" in res.output and "docs/llm.md" in res.output


def test_unknown_thought_exit_2(script, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(app(), ["vector_add", "--model", f"scripted:{script}", "--thoughts", "magic"])
    assert res.exit_code == 2 and "unknown thought(s) magic" in res.output
