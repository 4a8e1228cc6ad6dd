"""D3Env on a hand-made task folder: real sandbox runs of real programs and of the real evaluator."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from veriforge.discovery.env import D3Env, D3EnvError, find_tasks, load_task, resolve_python

_spec = importlib.util.spec_from_file_location(
    "_d3_task_loader", Path(__file__).with_name("test_env_task.py")
)
_loader = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_loader)  # type: ignore[union-attr]
T = _loader.load_helper()


@pytest.fixture
def task_dir(tmp_path: Path) -> Path:
    return T.make_task(tmp_path / "tasks")


def test_reset_shows_the_task_and_hides_gold_program_results_and_evaluator(task_dir: Path) -> None:
    obs = D3Env(task_dir).reset()
    assert obs["instance_id"] == "demo_means"
    assert obs["outputs"] == ["pred_results/out.csv"]
    text = obs["text"]
    assert "Compute the mean measured value" in text and "[START Preview of data.csv]" in text
    assert "tables/" in text and "pred_results/out.csv" in text and "biomass" in text
    assert "numpy" in obs["packages"]
    blob = json.dumps(obs)
    for secret in ("GOLD_PROGRAM_MARKER", "EVAL-SECRET", "10.0", "compute_means.py", "scripts/", "gold_"):
        assert secret not in blob, secret
    assert set(obs) >= {"task_inst", "dataset_preview", "dataset_folder_tree", "outputs", "text"}
    assert "src_file_or_path" not in obs and "gold_program_name" not in obs


def test_correct_program_gets_reward_one_and_ends_the_episode(task_dir: Path) -> None:
    env = D3Env(task_dir)
    env.reset()
    obs, reward, done, info = env.step(T.GOOD)
    assert (reward, done) == (1.0, True)
    assert info["valid_execution"] and info["eval_passed"] and info["success"]
    assert info["failure"] is None and not info["infrastructure_failure"]
    assert info["produced"] == ["out.csv"] and info["round"] == 1
    assert "accepted" in obs["text"]
    assert not (task_dir / "pred_results").exists()  # ran in a fresh copy, not in the task folder
    assert env.evaluate().passed  # the hidden evaluator can be re-run on the last outputs
    with pytest.raises(D3EnvError, match="episode is over"):
        env.step(T.GOOD)


def test_crash_feeds_the_error_back_then_the_fixed_program_succeeds(task_dir: Path) -> None:
    env = D3Env(task_dir, max_debug_rounds=2)
    env.reset()
    obs, reward, done, info = env.step(T.BUGGY)
    assert (reward, done) == (0.0, False)
    assert info["failure"] == "program" and info["exit_code"] == 1 and not info["valid_execution"]
    assert "KeyError: 'val'" in obs["text"] and "2 attempt(s) left" in obs["text"]
    assert 'File "compute_means.py"' in obs["text"]  # paths relative to the run folder, not /tmp/...
    assert info["eval_ran"] is False
    obs, reward, done, info = env.step(T.GOOD)
    assert (reward, done, info["round"]) == (1.0, True, 2)


def test_program_writing_nothing_is_not_a_valid_execution(task_dir: Path) -> None:
    env = D3Env(task_dir, max_debug_rounds=0)
    env.reset()
    obs, reward, done, info = env.step(T.NOTHING)
    assert info["status"] == "ok" and info["exit_code"] == 0
    assert info["valid_execution"] is False and info["missing_outputs"] == ["out.csv"]
    assert (reward, done) == (0.0, True)  # no debug rounds allowed
    assert "Required outputs not written: pred_results/out.csv" in obs["text"]
    assert "thinking about it" in obs["text"]  # stdout shown when outputs are missing


def test_wrong_answer_is_rejected_without_leaking_the_evaluator_message(task_dir: Path) -> None:
    env = D3Env(task_dir, max_debug_rounds=1)
    env.reset()
    obs, reward, done, info = env.step(T.WRONG)
    assert info["valid_execution"] and info["eval_passed"] is False and reward == 0.0 and not done
    assert "EVAL-SECRET: wrong means" in info["eval_message"]  # harness side
    assert "EVAL-SECRET" not in obs["text"] and "not accepted" in obs["text"]  # agent side
    _, reward, done, info = env.step(T.WRONG)
    assert (reward, done, info["rounds_left"]) == (0.0, True, 0)


def test_program_cannot_read_the_gold_results_or_the_evaluator(task_dir: Path) -> None:
    env = D3Env(task_dir, max_debug_rounds=0)
    env.reset()
    cheat = (
        "import os, shutil\nprint(sorted(os.listdir('.')))\nos.makedirs('pred_results', exist_ok=True)\n"
        "shutil.copy('gold_results/out.csv', 'pred_results/out.csv')\n"
    )
    obs, reward, _, info = env.step(cheat)
    assert reward == 0.0 and info["failure"] == "program"
    assert "FileNotFoundError" in obs["text"]
    listing = info["stdout_tail"]
    assert "datasets" in listing and "eval" not in listing and "gold_results" not in listing


def test_timeout_is_a_program_failure_with_feedback(task_dir: Path) -> None:
    from veriforge.sandbox import Limits

    env = D3Env(task_dir, limits=Limits(timeout_s=1, cpu_s=5), max_debug_rounds=1)
    env.reset()
    obs, _, done, info = env.step("import time\ntime.sleep(30)\n")
    assert info["status"] == "timeout" and info["failure"] == "program" and not done
    assert "time limit" in obs["text"]


def test_locked_dependency_that_does_not_import_is_an_infrastructure_failure(tmp_path: Path) -> None:
    d = T.make_task(tmp_path, lock="numpy==1.26.4\nghostlib-xyz==2.0\n")
    env = D3Env(d, max_debug_rounds=3)
    env.reset()
    obs, reward, done, info = env.step("import ghostlib_xyz\n")
    assert info["failure"] == "infrastructure" and info["infrastructure_failure"]
    assert done and reward == 0.0  # retrying cannot help the agent
    assert "not the program's fault" in obs["text"]
    # ... whereas importing something the task never installed is the program's own fault
    env.reset()
    _, _, done, info = env.step("import otherghost_abc\n")
    assert info["failure"] == "program" and not done


def test_interpreter_falls_back_with_a_note_and_honours_a_venv(tmp_path: Path) -> None:
    import sys

    d = T.make_task(tmp_path, venv_hint="/nonexistent/venv")
    py, note = resolve_python(load_task(d))
    assert py == sys.executable and "fell back" in note and "/nonexistent/venv" in note
    venv = tmp_path / "venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "python").symlink_to(sys.executable)
    d2 = T.make_task(tmp_path / "other", venv_hint=str(tmp_path / "venv"))
    env = D3Env(d2)
    assert env.python == str(venv / "python") and "task environment" in env.python_note
    env.reset()
    assert env.step(T.GOOD)[1] == 1.0  # programs and evaluator run with that interpreter


def test_bad_task_folders_are_refused_and_hidden_folders_skipped(tmp_path: Path) -> None:
    d = T.make_task(tmp_path / "tasks")
    T.make_task(tmp_path / "tasks" / ".rejected")
    assert find_tasks(tmp_path / "tasks") == [d.resolve()]
    assert find_tasks(d) == [d.resolve()]
    (d / "eval" / "eval_compute_means.py").unlink()
    with pytest.raises(D3EnvError, match="evaluator"):
        D3Env(d)
    with pytest.raises(D3EnvError, match=r"no task\.json"):
        load_task(tmp_path)
    env_dir = T.make_task(tmp_path / "x")
    assert D3Env(env_dir).evaluate().ran is False  # nothing run yet: nothing to evaluate
