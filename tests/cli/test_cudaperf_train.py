"""``veriforge cudaperf train``: a tiny config trains and writes its log; bad configs fail cleanly."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from veriforge.cli.main import app

runner = CliRunner()
EXAMPLES = Path(__file__).parents[2] / "examples" / "cudaperf"


def test_train_with_the_tiny_example_writes_the_log(tmp_path: Path) -> None:
    out = tmp_path / "run"
    res = runner.invoke(app, ["cudaperf", "train", "--config", str(EXAMPLES / "tiny.toml"),
                              "--set", f'output_dir="{out}"', "--set", "train.steps=1",
                              "--set", 'tasks.ids=["c2cuda/vector_add"]', "--set", "rollout.max_completion_tokens=8",
                              "--json"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout[res.stdout.index("{"):])
    assert summary["steps"] == 1 and summary["tasks"] == ["c2cuda/vector_add"]
    rows = [json.loads(line) for line in (out / "train_log.jsonl").read_text().splitlines()]
    step = next(r for r in rows if "loss" in r)
    assert step["step"] == 1 and step["reward"] < 0  # garbage from a random model: a failure penalty
    assert {"turn_1/reward", "turn_2/reward", "correct_rate"} <= set(step)
    rollouts = [json.loads(line) for line in (out / "rollouts.jsonl").read_text().splitlines()]
    assert len(rollouts) == 2 and all(len(r["turns"]) == 2 for r in rollouts)  # group of 2, 2 turns each
    assert json.loads((out / "config.json").read_text())["rollout"]["gamma"] == 0.4


def test_bad_config_is_one_clear_error(tmp_path: Path) -> None:
    res = runner.invoke(app, ["cudaperf", "train", "--config", str(EXAMPLES / "tiny.toml"),
                              "--set", "rollout.gamma=1.5", "--set", "train.num_generations=1"])
    assert res.exit_code == 2
    assert "rollout.gamma" in res.output and "train.num_generations" in res.output
    assert "Traceback" not in res.output
    res = runner.invoke(app, ["cudaperf", "train", "--config", str(tmp_path / "nope.toml")])
    assert res.exit_code == 2 and "no such config file" in res.output


def test_dry_run_and_verl_export(tmp_path: Path) -> None:
    res = runner.invoke(app, ["cudaperf", "train", "--config", str(EXAMPLES / "tiny.toml"), "--dry-run", "--json"])
    assert res.exit_code == 0, res.output
    plan = json.loads(res.stdout)
    assert plan["tasks"] == ["c2cuda/vector_add", "c2cuda/saxpy"] and plan["turns"] == 2
    parquet = tmp_path / "verl" / "train.parquet"
    res = runner.invoke(app, ["cudaperf", "train", "--config", str(EXAMPLES / "tiny.toml"),
                              "--export-verl", str(parquet)])
    assert res.exit_code == 0, res.output
    from datasets import Dataset

    ds = Dataset.from_parquet(str(parquet))
    assert set(ds.column_names) == {"data_source", "prompt", "ability", "reward_model", "extra_info"}
    row = ds[0]
    assert row["reward_model"]["ground_truth"] == "c2cuda/vector_add" and row["prompt"][-1]["role"] == "user"
    from veriforge.cudaperf.reward import compute_score

    score = compute_score(row["data_source"], "no kernel here", row["reward_model"]["ground_truth"],
                          row["extra_info"])
    assert score["score"] < 0  # verl's reward function reads this layout as is
