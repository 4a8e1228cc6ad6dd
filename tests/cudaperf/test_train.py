"""A real GRPO optimisation step with multi-turn rollouts on the tiny random Qwen2 (CPU, nothing
downloaded): the model's own attempts are scored by the unified reward, one attempt of the group is a
correct kernel (so the group has a signal), the weights move, and loss and per-turn rewards are logged."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from veriforge.cuda.evaluate.harness import resolve_task
from veriforge.cudaperf.config import from_dict
from veriforge.cudaperf.feedback import extract_candidate
from veriforge.cudaperf.train import TrainError, evaluate_attempt, evaluate_baseline, resolve_tasks, train

TASK = "c2cuda/vector_add"


def _config(tmp_path: Path, **train: object) -> dict:
    return {"output_dir": str(tmp_path / "run"), "seed": 0,
            "tasks": {"ids": [TASK]},
            "rollout": {"turns": 2, "gamma": 0.4, "max_prompt_tokens": 4096, "max_completion_tokens": 12,
                        "max_feedback_tokens": 200},
            "train": {"num_generations": 2, "steps": 1, "learning_rate": 1e-2, "save_model": False, **train},
            "reward": {"jobs": 2}}


def test_one_real_grpo_step_with_multi_turn_feedback(tmp_path: Path) -> None:
    import torch

    spec = resolve_task(TASK)
    kernel = "```cuda\n" + (Path(spec.folder) / "impls" / "naive.cu").read_text() + "```"
    seen: dict = {}

    def factory(trainer):
        """The trainer's own generation, except rollout 0's first attempt is a correct kernel."""
        from veriforge.cudaperf.rollout import trl_generate

        real = trl_generate(trainer)
        seen.setdefault("before", {k: v.detach().clone() for k, v in trainer.model.named_parameters()})
        seen["trainer"] = trainer
        turn = {"n": 0}

        def generate(contexts):
            ids, lps = real(contexts)
            seen.setdefault("contexts", []).append(contexts)
            if turn["n"] == 0:
                tok = trainer.processing_class
                ids[0] = tok(kernel, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
            turn["n"] += 1
            return ids, lps

        return generate

    cfg = from_dict(_config(tmp_path))
    result = train(cfg, generate_factory=factory)

    # the weights moved: a real optimisation step on a non-zero advantage
    model = seen["trainer"].model
    changed = [k for k, v in model.named_parameters() if not torch.equal(v.detach(), seen["before"][k])]
    assert changed and result.steps == 1

    # per-turn advantages reached the loss: turn 1 differs in the group (a correct kernel vs garbage),
    # turn 2 does not (garbage twice), feedback tokens carry nothing (TRL keeps the batch it trained on)
    batch = seen["trainer"]._buffered_inputs[0]
    adv, mask = batch["advantages"], batch["tool_mask"] * batch["completion_mask"]
    assert adv.dim() == 2
    firsts = []
    for row_adv, row_mask in zip(adv.tolist(), mask.tolist(), strict=True):
        first_end = row_mask.index(0)  # turn 1 ends where the first feedback token starts
        second_start = first_end + row_mask[first_end:].index(1)
        assert len(set(row_adv[:first_end])) == 1 and set(row_adv[first_end:second_start]) == {0.0}
        assert all(a == 0.0 for a, m in zip(row_adv[second_start:], row_mask[second_start:], strict=True) if m)
        firsts.append(row_adv[0])
    assert sorted(firsts) == pytest.approx([-1 / math.sqrt(2), 1 / math.sqrt(2)], rel=1e-3)

    # TRL's metrics, per step, in the JSONL log
    logs = [json.loads(line) for line in Path(result.log_path).read_text().splitlines()]
    step = next(row for row in logs if "loss" in row)
    assert math.isfinite(step["loss"]) and step["grad_norm"] > 0
    for key in ("reward", "turn_1/reward", "turn_2/reward", "turn_1/correct_rate", "correct_rate"):
        assert key in step, key
    assert step["turn_1/correct_rate"] == 0.5 and step["turn_2/correct_rate"] == 0.0

    # every reward is the unified reward of that attempt (recomputed here), never a placeholder zero
    rollouts = [json.loads(line) for line in Path(result.rollouts_path).read_text().splitlines()]
    assert len(rollouts) == 2 and all(len(r["turns"]) == 2 for r in rollouts)
    base = evaluate_baseline(TASK, "cpu", None)
    own = []
    for r in rollouts:
        for t in r["turns"]:
            _, expected = evaluate_attempt(TASK, extract_candidate(t["text"], "c2cuda"), "cuda", "cpu",
                                           "veriforge", "H100-SXM", base, None)
            assert t["reward"] == pytest.approx(expected.value) and t["outcome"] == expected.outcome
            if not t["correct"]:
                own.append(t)
    assert len(own) == 3  # the tiny model's own attempts: garbage, scored as a failure
    from veriforge.cudaperf.reward import PRESETS

    failures = {PRESETS["veriforge"].compile_error, PRESETS["veriforge"].cheat}
    assert all(t["reward"] in failures and t["reward"] != 0 for t in own)
    correct = next(r for r in rollouts if r["turns"][0]["correct"])
    assert correct["turns"][0]["reward"] > 0 and "Attempt 1 of 2: correct" in correct["turns"][0]["feedback"]
    # the logged reward is the mean of G_1 = r_1 + 0.4 r_2 over the group
    g1 = [r["turns"][0]["reward"] + 0.4 * r["turns"][1]["reward"] for r in rollouts]
    assert step["reward"] == pytest.approx(sum(g1) / 2, abs=1e-5)
    assert [t["return_"] for t in correct["turns"]] == pytest.approx([g1[rollouts.index(correct)],
                                                                       correct["turns"][1]["reward"]])

    # the second turn was generated after the feedback, by the model being trained
    tok = seen["trainer"].processing_class
    assert "Attempt 1 of 2" in tok.decode(seen["contexts"][1][1])
    summary = json.loads((Path(result.output_dir) / "summary.json").read_text())
    assert summary["tasks"] == [TASK] and summary["farm"]["evaluations"] >= 3


def test_task_selection_errors(tmp_path: Path) -> None:
    from veriforge.cudaperf.config import CudaPerfConfigError

    cfg = from_dict({"tasks": {"ids": ["no_such_task_anywhere"]}})
    with pytest.raises(CudaPerfConfigError, match="no_such_task_anywhere"):
        resolve_tasks(cfg.tasks)
    cfg = from_dict({"tasks": {"ids": ["vector_add", "saxpy"], "match": "sax*"}})
    assert [s.id for s in resolve_tasks(cfg.tasks)] == ["saxpy"]
    split = tmp_path / "ds" / "train"
    split.mkdir(parents=True)
    import shutil

    shutil.copytree(resolve_task("saxpy").folder, split / "saxpy")
    cfg = from_dict({"tasks": {"dataset": str(tmp_path / "ds"), "split": "train"}})
    assert [s.id for s in resolve_tasks(cfg.tasks)] == ["saxpy"]
    with pytest.raises(CudaPerfConfigError, match="no split"):
        resolve_tasks(from_dict({"tasks": {"dataset": str(tmp_path / "ds"), "split": "test"}}).tasks)
    too_small = from_dict({**_config(tmp_path), "rollout": {"max_prompt_tokens": 16}})
    with pytest.raises(TrainError, match="max_prompt_tokens"):
        train(too_small)


def test_verl_interaction_feeds_back_and_scores_kevins_return() -> None:
    import asyncio

    from veriforge.cudaperf.train import VerlInteraction, verl_compute_score

    spec = resolve_task(TASK)
    kernel = "```cuda\n" + (Path(spec.folder) / "impls" / "naive.cu").read_text() + "```"
    inter = VerlInteraction({"jobs": 1})

    async def episode():
        iid = await inter.start_interaction(None, task_id=TASK, turns=2)
        chat = [{"role": "user", "content": "write it"}, {"role": "assistant", "content": "no kernel, sorry"}]
        first = await inter.generate_response(iid, chat)
        chat += [{"role": "user", "content": first[1]}, {"role": "assistant", "content": kernel}]
        second = await inter.generate_response(iid, chat)
        await inter.finalize_interaction(iid)
        return first, second

    try:
        (done1, msg1, s1, meta1), (done2, _msg2, s2, meta2) = asyncio.run(episode())
    finally:
        inter.farm.close()
    assert not done1 and done2
    assert s1 == -1.0 and meta1["outcome"] == "cheat" and "Attempt 1 of 2" in msg1
    assert meta2["correct"] and s2 > 0
    out = verl_compute_score("cudaperf/c2cuda", kernel, TASK, {"turn_scores": [s1, s2], "gamma": 0.4})
    assert out["score"] == pytest.approx(s1 + 0.4 * s2)


def test_tasks_from_a_built_dataset_split() -> None:
    """`[tasks] dataset = DIR` reads what `veriforge cudaperf dataset build` exports (data/<split>.jsonl)."""
    sample = Path(__file__).resolve().parents[2] / "src" / "veriforge" / "data" / "cudaperf" / "sample"
    rows = [json.loads(line) for line in (sample / "data" / "train.jsonl").read_text().splitlines() if line.strip()]
    specs = resolve_tasks(from_dict({"tasks": {"dataset": str(sample), "split": "train"}}).tasks)
    assert sorted(s.id for s in specs) == sorted(r["id"] for r in rows) and len(specs) >= 10
