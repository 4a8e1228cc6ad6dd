"""Long commands say what they are doing: `tasks validate` per task with a heartbeat, and `d3gym run`
names the cause of every episode that did not verify (real CPU runtime, real sandbox runs)."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

from veriforge.cli.main import main
from veriforge.cuda.tasks import bundled_tasks


def _bundled(name: str) -> Path:
    return next(Path(p) for p in bundled_tasks("c2cuda") if Path(p).name == name)


def test_tasks_validate_prints_a_line_per_task_and_a_heartbeat(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("VERIFORGE_HEARTBEAT_S", "1")
    for name in ("vector_add", "relu_inplace"):
        shutil.copytree(_bundled(name), tmp_path / name)
        # fresh text, so every implementation is compiled here (seconds) whatever earlier tests of
        # the run left in the shared build cache: cache hits made a task take ~1 s, with no heartbeat
        for impl in (tmp_path / name / "impls").glob("*.cu"):
            impl.write_text(impl.read_text() + f"\n// {tmp_path.name}\n")
    code = main(["tasks", "validate", str(tmp_path), "-j", "1"])
    cap = capsys.readouterr()
    assert code == 0, cap.out + cap.err
    lines = cap.err.splitlines()
    assert lines[0] == "tasks validate: started (2 steps)"
    steps = [ln for ln in lines if ln.startswith(("tasks validate: 1/2 · ", "tasks validate: 2/2 · "))]
    assert len(steps) == 2 and all(" ok (" in ln and " impls, " in ln for ln in steps), lines
    # evaluating a task's implementations takes seconds: the heartbeat names what is running
    assert any("tasks validate: still running " in ln and ln.endswith(" s") for ln in lines), lines
    assert "tasks validate:" not in cap.out  # stdout keeps only the result table


def _d3_helper():
    path = Path(__file__).resolve().parents[1] / "discovery" / "test_env_task.py"
    spec = importlib.util.spec_from_file_location("_d3_task_loader_cli", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module.load_helper()


def test_d3gym_run_prints_the_cause_of_a_failed_episode(tmp_path, capsys) -> None:
    T = _d3_helper()
    T.make_task(tmp_path / "tasks")
    replies = tmp_path / "replies.jsonl"
    replies.write_text(json.dumps({"text": "```python\n" + T.BUGGY + "```"}) + "\n")
    code = main(["d3gym", "run", str(tmp_path / "tasks"), "--model", f"scripted:{replies}", "--out",
                 str(tmp_path / "traj")])
    out = capsys.readouterr().out
    assert code == 0, out
    [line] = [ln for ln in out.splitlines() if "demo_means #0:" in ln]
    assert line.strip().startswith("demo_means #0: failed after") and line.endswith(": KeyError: 'val'"), line
    assert "run d3gym-run-" in out
