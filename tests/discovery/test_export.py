"""SFT export of verified trajectories: TRL-style chat JSONL, both turn shapes, dedupe, stats."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from veriforge.discovery.export import ExportError, export_dir, export_sft, load_trajectories, to_messages
from veriforge.discovery.trajectories import run_tasks
from veriforge.llm import LLMClient
from veriforge.llm.backends.scripted import ScriptedBackend

_spec = importlib.util.spec_from_file_location(
    "_d3_task_loader", Path(__file__).with_name("test_env_task.py")
)
_loader = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_loader)  # type: ignore[union-attr]
T = _loader.load_helper()


def reply(program: str) -> str:
    return f"Plan: group and average.\n```python\n{program}```"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    """A real `d3gym run` folder: seed 0 debugs a crash into success, seed 1 never gets it right."""
    root = tmp_path_factory.mktemp("export")
    T.make_task(root / "tasks")

    def script(request, index):
        last = request.messages[-1].content
        if request.seed == 1:
            return reply(T.WRONG)
        return reply(T.GOOD if "KeyError" in last else T.BUGGY)

    client = LLMClient(ScriptedBackend(script), model="scripted-export")
    run_tasks(root / "tasks", out=root / "traj", client=client, n=2, max_debug_rounds=1)
    return root / "traj"


def test_export_all_turns_is_trl_chat_jsonl(run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "sft.jsonl"
    stats = export_dir(run_dir, out=out, fmt="sft")
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert stats.read == 2 and stats.exported == 1 and stats.unverified_skipped == 1 and len(lines) == 1
    msgs = lines[0]["messages"]
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user", "assistant"]
    assert "Compute the mean measured value" in msgs[1]["content"]
    assert 'row["val"]' in msgs[2]["content"] and "KeyError" in msgs[3]["content"]
    assert 'row["value"]' in msgs[4]["content"] and "accepted" not in msgs[-1]["content"]
    assert stats.assistant_turns_hist == {"2": 1} and stats.tasks == 1
    saved = json.loads((tmp_path / "sft.jsonl.stats.json").read_text())
    assert saved["exported"] == 1


def test_export_final_turn_only(run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "final.jsonl"
    export_dir(run_dir, out=out, turns="final", system_prompt="Be brief.")
    msgs = json.loads(out.read_text().splitlines()[0])["messages"]
    assert [m["role"] for m in msgs] == ["system", "user", "assistant"]
    assert msgs[0]["content"] == "Be brief." and 'row["value"]' in msgs[2]["content"]


def test_duplicates_written_once_and_unverified_on_request(run_dir: Path, tmp_path: Path) -> None:
    trajs = load_trajectories(run_dir / "trajectories.jsonl")
    stats = export_sft([*trajs, *trajs], tmp_path / "d.jsonl")
    assert stats.exported == 1 and stats.duplicates_skipped == 1
    everything = export_sft(trajs, tmp_path / "all.jsonl", only_verified=False)
    assert everything.exported == 2  # the failed episode up to its last assistant turn
    failed = next(t for t in trajs if t.reward == 0.0)
    assert to_messages(failed) == []


def test_export_reads_the_store_when_the_jsonl_is_gone(run_dir: Path, tmp_path: Path) -> None:
    copy = tmp_path / "traj"
    copy.mkdir()
    (copy / "run.sqlite").write_bytes((run_dir / "run.sqlite").read_bytes())
    assert len(load_trajectories(copy)) == 2


def test_export_errors(tmp_path: Path) -> None:
    with pytest.raises(ExportError, match=r"no trajectories\.jsonl"):
        load_trajectories(tmp_path)
    with pytest.raises(ExportError, match="unknown export format"):
        export_dir(tmp_path, out=tmp_path / "x.jsonl", fmt="dpo")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"not": "a trajectory"}\n')
    with pytest.raises(ExportError, match=r"bad\.jsonl:1"):
        load_trajectories(bad)


def test_cli_run_then_export_end_to_end(tmp_path: Path) -> None:
    """`veriforge d3gym run` with a scripted model file, then `veriforge d3gym export`."""
    from typer.testing import CliRunner

    from veriforge.cli.d3gym_cmd import app  # the `veriforge d3gym` group

    T.make_task(tmp_path / "tasks")
    replies = tmp_path / "replies.jsonl"
    replies.write_text(
        json.dumps({"text": reply(T.BUGGY)})
        + "\n"
        + json.dumps({"text": reply(T.GOOD), "match": "KeyError"})
        + "\n"
    )
    runner = CliRunner()
    res = runner.invoke(
        app,
        [
            "run",
            str(tmp_path / "tasks"),
            "--model",
            f"scripted:{replies}",
            "--n",
            "1",
            "--out",
            str(tmp_path / "traj"),
        ],
    )
    assert res.exit_code == 0, res.output
    assert "1 verified" in res.output and "success rate 1.0" in res.output
    res = runner.invoke(app, ["export", str(tmp_path / "traj"), "--format", "sft"])
    assert res.exit_code == 0, res.output
    lines = (tmp_path / "traj" / "sft.jsonl").read_text().splitlines()
    assert len(lines) == 1 and len(json.loads(lines[0])["messages"]) == 5
