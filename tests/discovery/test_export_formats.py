"""Training exports beyond plain SFT: failed turns masked or dropped, DPO pairs, per-step RL records.

The trajectories come from a real `d3gym run` with a scripted model, so the step records (rewards,
``valid_execution``) are the environment's own. Each format is loaded with ``datasets`` to check the
column shape TRL's trainers expect (conversational ``messages``; ``prompt``/``chosen``/``rejected``).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from veriforge.discovery.export import ExportError, export_dir
from veriforge.discovery.trajectories import run_tasks
from veriforge.llm import LLMClient
from veriforge.llm.backends.scripted import ScriptedBackend

datasets = pytest.importorskip("datasets")

_spec = importlib.util.spec_from_file_location("_d3_task_loader2", Path(__file__).with_name("test_env_task.py"))
_loader = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_loader)  # type: ignore[union-attr]
T = _loader.load_helper()


def reply(program: str) -> str:
    return f"Plan: group and average.\n```python\n{program}```"


# seed 0: crash -> wrong numbers -> accepted; seed 1: wrong numbers three times;
# seed 2: no code block -> accepted
PLANS = {
    0: [reply(T.BUGGY), reply(T.WRONG), reply(T.GOOD)],
    1: [reply(T.WRONG)] * 3,
    2: ["I would group the rows and average them.", reply(T.GOOD)],
}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("export_formats")
    T.make_task(root / "tasks")

    def script(request, index):
        turn = sum(1 for m in request.messages if m.role == "assistant")
        plan = PLANS[request.seed]
        return plan[min(turn, len(plan) - 1)]

    client = LLMClient(ScriptedBackend(script), model="scripted-export-formats")
    run_tasks(root / "tasks", out=root / "traj", client=client, n=3, max_debug_rounds=2)
    return root / "traj"


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def _by_len(lines: list[dict]) -> dict[int, list[dict]]:
    return {len(x["messages"]): x["messages"] for x in lines}


def test_mask_failed_keeps_context_and_weights_only_the_accepted_reply(run_dir, tmp_path):
    stats = export_dir(run_dir, out=tmp_path / "m.jsonl", turns="mask-failed")
    lines = _lines(tmp_path / "m.jsonl")
    assert stats.exported == 2 and stats.masked_turns == 3
    convs = _by_len(lines)
    three = convs[7]  # system, task, crash, feedback, wrong, feedback, accepted
    assert [(m["role"], m.get("weight")) for m in three] == [
        ("system", None),
        ("user", None),
        ("assistant", 0),
        ("user", None),
        ("assistant", 0),
        ("user", None),
        ("assistant", 1),
    ]
    assert "KeyError" in three[3]["content"] and 'row["value"]' in three[6]["content"]
    two = convs[5]  # the reply without a code block is masked, not dropped
    assert [m.get("weight") for m in two if m["role"] == "assistant"] == [0, 1]
    ds = datasets.Dataset.from_list(lines)
    assert ds.column_names == ["messages"]
    assert {m["role"] for row in ds for m in row["messages"]} == {"system", "user", "assistant"}


def test_drop_failed_removes_turns_that_did_not_run_with_their_feedback(run_dir, tmp_path):
    stats = export_dir(run_dir, out=tmp_path / "d.jsonl", turns="drop-failed")
    lines = _lines(tmp_path / "d.jsonl")
    assert stats.exported == 2 and stats.dropped_turns == 2 and stats.masked_turns == 1
    convs = _by_len(lines)
    # seed 0: the crash and its KeyError feedback are gone; the wrong-but-ran attempt stays masked
    five = convs[5]
    assert [(m["role"], m.get("weight")) for m in five] == [
        ("system", None),
        ("user", None),
        ("assistant", 0),
        ("user", None),
        ("assistant", 1),
    ]
    assert "KeyError" not in json.dumps(five) and "(len(groups[g]) + 1)" in five[2]["content"]
    # seed 2: the reply without code is dropped, leaving task -> accepted reply
    assert [m["role"] for m in convs[3]] == ["system", "user", "assistant"]
    # plain `all` still has every turn and no weights
    export_dir(run_dir, out=tmp_path / "a.jsonl", turns="all")
    assert all("weight" not in m for x in _lines(tmp_path / "a.jsonl") for m in x["messages"])


def test_preference_pairs_are_trl_dpo_conversational(run_dir, tmp_path):
    stats = export_dir(run_dir, out=tmp_path / "p.jsonl", fmt="preference")
    lines = _lines(tmp_path / "p.jsonl")
    # 2 verified x 1 failed episode -> 2 "episodes" pairs, but both verified episodes end in the same
    # reply, so the pairs are identical and written once; both verified episodes needed debugging ->
    # 2 distinct "self-debug" pairs (crash vs fix, no code vs fix)
    assert stats.pairs_by_source == {"episodes": 1, "self-debug": 2} and stats.exported == 3
    assert stats.duplicates_skipped == 1
    ds = datasets.Dataset.from_list(lines)
    assert {"prompt", "chosen", "rejected"} <= set(ds.column_names)
    for row in ds:
        assert [m["role"] for m in row["prompt"]] == ["system", "user"]
        assert [m["role"] for m in row["chosen"]] == ["assistant"] == [m["role"] for m in row["rejected"]]
        assert 'row["value"]' in row["chosen"][0]["content"] and "/ len(groups[g])" in row["chosen"][0]["content"]
        assert row["chosen"][0]["content"] != row["rejected"][0]["content"]
    rejected = {row["source"]: [] for row in ds}
    for row in ds:
        rejected[row["source"]].append(row["rejected"][0]["content"])
    assert all("(len(groups[g]) + 1)" in r for r in rejected["episodes"])  # the failed episode's reply
    assert any('row["val"]' in r for r in rejected["self-debug"])  # seed 0's first (crashing) try


def test_rl_records_carry_per_step_rewards(run_dir, tmp_path):
    stats = export_dir(run_dir, out=tmp_path / "r.jsonl", fmt="rl")
    lines = _lines(tmp_path / "r.jsonl")
    assert stats.exported == 3 and stats.steps == 3 + 3 + 2
    by_steps = {
        tuple((s["executed"], s["accepted"], s["reward"]) for s in x["steps"]): x for x in lines
    }
    assert set(by_steps) == {
        ((False, False, 0.0), (True, False, 0.0), (True, True, 1.0)),  # crash, wrong, accepted
        ((True, False, 0.0),) * 3,  # wrong every time
        ((False, False, 0.0), (True, True, 1.0)),  # no code block, accepted
    }
    won = by_steps[((False, False, 0.0), (True, True, 1.0))]
    assert won["return"] == 1.0 and won["success"] and won["steps"][0]["program"] is None
    assert [s["done"] for s in won["steps"]] == [False, True]
    ds = datasets.Dataset.from_list(lines)
    assert {"prompt", "steps", "return"} <= set(ds.column_names)
    assert [len(r) for r in ds["steps"]] == [len(x["steps"]) for x in lines]


def test_export_option_errors(run_dir, tmp_path):
    with pytest.raises(ExportError, match="turns must be one of"):
        export_dir(run_dir, out=tmp_path / "x.jsonl", turns="masked")
    with pytest.raises(ExportError, match="sft format only"):
        export_dir(run_dir, out=tmp_path / "x.jsonl", fmt="rl", turns="mask-failed")


def test_cli_formats_and_turns(run_dir, tmp_path):
    from typer.testing import CliRunner

    from veriforge.cli.d3gym_cmd import app

    runner = CliRunner()
    res = runner.invoke(
        app, ["export", str(run_dir), "--format", "sft", "--turns", "mask-failed", "--out", str(tmp_path / "s.jsonl")]
    )
    assert res.exit_code == 0 and "3 turn(s) weight 0" in res.output, res.output
    res = runner.invoke(app, ["export", str(run_dir), "--format", "preference", "--out", str(tmp_path / "p.jsonl")])
    assert res.exit_code == 0 and "3 preference pair(s)" in res.output, res.output
    res = runner.invoke(app, ["export", str(run_dir), "--format", "rl", "--out", str(tmp_path / "r.jsonl")])
    assert res.exit_code == 0 and "8 rewarded step(s)" in res.output, res.output
