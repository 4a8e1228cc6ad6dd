"""`veriforge cudaperf rank pairs|train|eval|score` through typer's CliRunner."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from veriforge.cli.cudaperf_cmd import app
from veriforge.cudaperf.pairs import read_pairs

runner = CliRunner()


def _kernel(shuffles: int, atomics: int) -> str:
    body = "".join(f"  v += __shfl_down_sync(0xffffffff, v, {1 << k});\n" for k in range(shuffles))
    body += "".join("  atomicAdd(out, v);\n" for _ in range(atomics))
    return f"__global__ void k(float* out, const float* x) {{\n  float v = x[threadIdx.x];\n{body}}}\n"


def _rows(n_tasks: int, offset: int = 0) -> list[dict]:
    rows = []
    for t in range(n_tasks):
        impls = []
        for j, (sh, at) in enumerate([(0, 3), (1, 2), (3, 1), (5, 0)]):
            sh, at = (sh + t) % 6, (at + t) % 4
            impls.append({"name": f"p{j}", "source": _kernel(sh, at), "verified": True,
                          "times": {"c": 1e-5 * math.exp(-0.5 * sh + 0.6 * at)}})
        rows.append({"task_id": f"gen/t{t + offset}", "implementations": impls})
    return rows


def _write_rows(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_pairs_train_eval_score_feature_ranker(tmp_path: Path) -> None:
    train_rows = _write_rows(tmp_path / "train_rows.jsonl", _rows(8))
    test_rows = _write_rows(tmp_path / "test_rows.jsonl", _rows(4, offset=100))
    r = runner.invoke(app, ["rank", "pairs", "--rows", str(train_rows), "--out", str(tmp_path / "train.jsonl")])
    assert r.exit_code == 0, r.output
    assert "pairs from 8 tasks (estimated)" in r.output
    runner.invoke(app, ["rank", "pairs", "--rows", str(test_rows), "--out", str(tmp_path / "test.jsonl")])
    model = tmp_path / "ranker.json"
    r = runner.invoke(app, ["rank", "train", "--pairs", str(tmp_path / "train.jsonl"), "--kind", "feature",
                            "--features", "text", "--out", str(model)])
    assert r.exit_code == 0, r.output
    assert json.loads(model.read_text())["model"] == "logistic"
    r = runner.invoke(app, ["rank", "eval", "--model", str(model), "--pairs", str(tmp_path / "test.jsonl"), "--json"])
    assert r.exit_code == 0, r.output
    summary = json.loads(r.stdout)
    assert summary["tasks"] == 4 and summary["groups"]["all"]["accuracy"] >= 0.9
    fast, slow = tmp_path / "fast.cu", tmp_path / "slow.cu"
    fast.write_text(_kernel(5, 0))
    slow.write_text(_kernel(0, 3))
    r = runner.invoke(app, ["rank", "score", "--model", str(model), str(slow), str(fast), "--json"])
    assert r.exit_code == 0, r.output
    ranked = json.loads(r.stdout)
    assert [Path(x["file"]).name for x in ranked] == ["fast.cu", "slow.cu"]
    r = runner.invoke(app, ["rank", "score", "--model", str(model), str(slow), str(fast), "--top", "1"])
    assert r.exit_code == 0 and "fast.cu" in r.output and "slow.cu" not in r.output


def test_bad_arguments_exit_2(tmp_path: Path) -> None:
    rows = _write_rows(tmp_path / "rows.jsonl", _rows(2))
    r = runner.invoke(app, ["rank", "pairs", "--rows", str(rows), "--tasks", "x", "--out", str(tmp_path / "p")])
    assert r.exit_code == 2 and "exactly one" in r.output
    r = runner.invoke(app, ["rank", "train", "--pairs", str(tmp_path / "nope.jsonl"), "--out", str(tmp_path / "m")])
    assert r.exit_code == 2 and "no such file" in r.output
    runner.invoke(app, ["rank", "pairs", "--rows", str(rows), "--out", str(tmp_path / "p.jsonl")])
    r = runner.invoke(app, ["rank", "train", "--pairs", str(tmp_path / "p.jsonl"), "--kind", "svm", "--out",
                            str(tmp_path / "m")])
    assert r.exit_code == 2 and "unknown --kind" in r.output
    runner.invoke(app, ["rank", "train", "--pairs", str(tmp_path / "p.jsonl"), "--out", str(tmp_path / "m.json")])
    (tmp_path / "a.cu").write_text(_kernel(1, 1))
    r = runner.invoke(app, ["rank", "score", "--model", str(tmp_path / "m.json"), str(tmp_path / "a.cu")])
    assert r.exit_code == 2 and "pass the task" in r.output  # text+analysis features need --task


def test_pairs_from_a_bundled_task(tmp_path: Path) -> None:
    out = tmp_path / "pairs.jsonl"
    r = runner.invoke(app, ["rank", "pairs", "--tasks", "c2cuda/sum_reduce", "--configs", "small,odd",
                            "--store", str(tmp_path / "runs.sqlite"), "--out", str(out)])
    assert r.exit_code == 0, r.output
    pairs = read_pairs(out)
    assert pairs and all(p.task == "c2cuda/sum_reduce" and p.provenance == "estimated" for p in pairs)
    assert all(p.faster.time_s * 1.1 <= p.slower.time_s for p in pairs)


def test_lm_ranker_through_the_cli(tmp_path: Path) -> None:
    pytest.importorskip("trl")
    rows = _write_rows(tmp_path / "rows.jsonl", _rows(2))
    runner.invoke(app, ["rank", "pairs", "--rows", str(rows), "--out", str(tmp_path / "p.jsonl")])
    model = tmp_path / "lm"
    r = runner.invoke(app, ["rank", "train", "--pairs", str(tmp_path / "p.jsonl"), "--kind", "lm", "--steps", "1",
                            "--batch-size", "2", "--max-length", "64", "--out", str(model)])
    assert r.exit_code == 0, r.output
    assert "1 steps" in r.output and (model / "ranker.json").is_file()
    (tmp_path / "a.cu").write_text(_kernel(1, 1))
    r = runner.invoke(app, ["rank", "score", "--model", str(model), str(tmp_path / "a.cu"), "--json"])
    assert r.exit_code == 0, r.output
    assert math.isfinite(json.loads(r.stdout)[0]["score"])
    r = runner.invoke(app, ["rank", "eval", "--model", str(model), "--pairs", str(tmp_path / "p.jsonl")])
    assert r.exit_code == 0 and "accuracy" in r.output
