"""Reviewer back-ends compared on the simulation: agreement with the teacher and end accuracy by depth.

Run: python benchmarks/moa_reviewers.py [--questions 100] [--train-questions 60] [--max-depth 4]
     [--width 3] [--r 0.8] [--steps 60] [--learning-rate 3e-3] [--out DIR] [--timings]
Output recorded in benchmarks/results/moa_reviewers.txt.

Everything runs offline through the real engine, tournament, judge, TRL trainer and reward model:

1. **Known-outcome skipping** (issue 17 part 4): ReM-MoA with the scripted LLM reviewer (the
   *teacher*: prefers the right one of a (right, wrong) pair with probability r, ties otherwise),
   ``skip_known`` on and off — reviewer requests per question, the share of comparisons skipped,
   and accuracy.
2. **Distillation**: ReM-MoA (teacher reviewer) on separate training questions produces traces;
   ``veriforge.moa.distill.distill`` collects the teacher's judgements in both orders, trains a tiny
   random 2-layer Qwen2 reward model (byte-level BPE trained on the traces in milliseconds; nothing
   downloaded) with TRL's RewardTrainer and reports held-out agreement before and after.
3. **Reviewer kinds** on the evaluation questions at depth 1..max_depth, each selected by one config
   line: ``llm`` (the teacher), ``reward`` (the distilled student, ``reward_model = DIR``) and
   ``judge`` (``veriforge.moa.reviewers:LongerResponseJudge``, a content-blind floor). For every run
   the teacher re-judges exactly the pairs the kind judged (skipped pairs excluded) and
   ``rank.judgement_agreement`` compares the two: ``agree`` (same verdict, ties included) and
   ``decisive`` (same winner where the teacher picked one). ``gold pick`` is how often the kind
   picked the right trace of a (right, wrong) pair (a tie is not a pick: the both-orders teacher at
   r=0.8 picks right in about r² = 0.64 of them), and ``accuracy`` the end accuracy.

The tiny student is near chance by design (a 2-layer random model, a few dozen steps): the point is
that the pluggable reviewer works end to end and that the measurement exists, not the number.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from veriforge.moa.config import ReviewerConfig
from veriforge.moa.engine import MoAEngine, MoAResult
from veriforge.moa.simulate import REVIEWER_MODEL, SimWorld, sim_config
from veriforge.rank import Outcome, PairwiseJudge, judgement_agreement

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
warnings.filterwarnings("ignore", category=FutureWarning)  # transformers' deprecation notes, not results

LENGTH_JUDGE = "veriforge.moa.reviewers:LongerResponseJudge"


def _world(args: argparse.Namespace) -> SimWorld:
    return SimWorld(p=args.p, q=args.q, r=args.r, seed=args.seed)


async def _runs(world: SimWorld, questions: list[str], depth: int, width: int,
                reviewer: ReviewerConfig) -> list[MoAResult]:
    engine = MoAEngine(sim_config("rem_moa", depth, width, reviewer=reviewer), clients=world.clients())
    return list(await asyncio.gather(*(engine.run(q) for q in questions)))


def _accuracy(world: SimWorld, questions: list[str], results: list[MoAResult]) -> float:
    return sum(world.correct(q, r.answer) for q, r in zip(questions, results, strict=True)) / len(questions)


def _se(a: float, n: int) -> float:
    return math.sqrt(a * (1 - a) / n)


# ------------------------------------------------------------------------------------ skipping
async def skipping(args: argparse.Namespace, questions: list[str]) -> None:
    n = len(questions)
    print(f"1. known-outcome skipping (teacher LLM reviewer, budget topk, {n} questions, width {args.width})")
    print(f"{'depth':>5} | {'skip_known':>10} | {'accuracy':>13} | {'reviewer req/q':>14} | "
          f"{'skipped/compared':>16} | {'tokens/q':>8}")
    for depth in range(1, args.max_depth + 1):
        for skip in (False, True):
            world = _world(args)
            results = await _runs(world, questions, depth, args.width,
                                  ReviewerConfig(model=REVIEWER_MODEL, skip_known=skip))
            acc = _accuracy(world, questions, results)
            compared = sum(s.comparisons for r in results for s in r.layers)
            skipped = sum(s.skipped_comparisons for r in results for s in r.layers)
            tokens = sum(r.total_tokens for r in results) / n
            print(f"{depth:>5} | {skip!s:>10} | {acc:.3f} ± {_se(acc, n):.3f} | "
                  f"{world.calls['reviewer'] / n:>14.1f} | {skipped:>6}/{compared:<6} {skipped / compared:>3.0%} | "
                  f"{tokens:>8.0f}")
    print()


# -------------------------------------------------------------------------------- distillation
@contextlib.contextmanager
def _quiet_stdout_fd() -> Iterator[None]:
    sys.stdout.flush()
    saved = os.dup(1)
    with open(os.devnull, "w") as null:
        os.dup2(null.fileno(), 1)
        try:
            yield
        finally:
            os.dup2(saved, 1)
            os.close(saved)


def _tiny_student(texts: list[str], seed: int) -> Any:
    import torch
    from transformers import Qwen2ForSequenceClassification

    from veriforge.llm.testing import tiny_qwen2_config, tiny_tokenizer
    from veriforge.moa.distill import RewardReviewer

    tok = tiny_tokenizer(texts, vocab_size=400, full_byte_alphabet=True)
    torch.manual_seed(seed)
    model = Qwen2ForSequenceClassification(tiny_qwen2_config(tok, num_labels=1))
    return RewardReviewer(model, tok, max_length=256)


async def distill_student(args: argparse.Namespace, out: Path) -> Path:
    from veriforge.moa.distill import distill, format_for_reward

    world = _world(args)
    train_q = [world.question(1000 + i) for i in range(args.train_questions)]
    results = await _runs(world, train_q, 2, args.width, ReviewerConfig(model=REVIEWER_MODEL))
    lines = [{"question_id": str(k), "question": q, "id": t.id, "response": t.reasoning}
             for k, (q, r) in enumerate(zip(train_q, results, strict=True)) for t in r.memory.proposals()]
    traces = out / "traces.jsonl"
    traces.write_text("".join(json.dumps(x) + "\n" for x in lines))
    with _quiet_stdout_fd():  # the Rust BPE trainer writes progress lines straight to fd 1
        student = _tiny_student([format_for_reward(x["question"], x["response"]) for x in lines], args.seed)
    teacher = PairwiseJudge(world.clients()[REVIEWER_MODEL])
    started = time.monotonic()
    report = await distill(teacher, traces, student, out, teacher_name=f"sim reviewer r={args.r}",
                           steps=args.steps, learning_rate=args.learning_rate, batch_size=16, seed=args.seed,
                           use_cpu=True)
    losses = report.train["losses"]
    print(f"2. distillation: {len(lines)} traces from {len(train_q)} training questions (rem_moa depth 2), "
          f"{report.n_pairs} pairs judged by the teacher ({report.n_train} train / {report.n_test} held-out), "
          f"{report.train['n_pairs']} decisive pairs trained on, {report.train['steps']} steps "
          f"({time.monotonic() - started:.1f} s)")
    print(f"   loss {losses[0]:.3f} -> {sum(losses[-5:]) / len(losses[-5:]):.3f} (mean of the last 5 steps)")
    for line in report.summary().splitlines()[1:]:
        print("   " + line)
    print()
    return out / "reviewer"


# ------------------------------------------------------------------------------------- kinds
def _qualified(results: list[MoAResult]) -> list[tuple[int, Outcome]]:
    return [(k, o) for k, r in enumerate(results) for o in (r.memory.outcomes if r.memory else [])
            if not o.meta.get("skipped")]


async def _teacher_on(world: SimWorld, questions: list[str], results: list[MoAResult],
                      judged: list[tuple[int, Outcome]]) -> list[Outcome]:
    """The teacher's verdicts on exactly the pairs a reviewer kind judged (ids qualified by question)."""
    teacher = PairwiseJudge(world.clients()[REVIEWER_MODEL])
    gate = asyncio.Semaphore(32)

    async def one(k: int, o: Outcome) -> Outcome:
        memory = results[k].memory
        assert memory is not None
        async with gate:
            t = await teacher.judge(questions[k], memory[o.a].reasoning, memory[o.b].reasoning, a=o.a, b=o.b)
        return t.model_copy(update={"a": f"{k}::{o.a}", "b": f"{k}::{o.b}"})

    return list(await asyncio.gather(*(one(k, o) for k, o in judged)))


def _gold_pick(world: SimWorld, questions: list[str], results: list[MoAResult],
               judged: list[tuple[int, Outcome]]) -> tuple[int, int]:
    """(right picks, pairs with exactly one right trace) among the judged pairs."""
    right = total = 0
    for k, o in judged:
        memory = results[k].memory
        assert memory is not None
        ok_a, ok_b = (world.correct(questions[k], memory[x].answer) for x in (o.a, o.b))
        if ok_a != ok_b:
            total += 1
            right += o.winner == ("a" if ok_a else "b")
    return right, total


async def kinds(args: argparse.Namespace, questions: list[str], student_dir: Path) -> None:
    n = len(questions)
    configs = {
        "llm (teacher)": ReviewerConfig(model=REVIEWER_MODEL),
        "reward (distilled)": ReviewerConfig(reward_model=str(student_dir)),
        "judge (longer wins)": ReviewerConfig(judge=LENGTH_JUDGE),
    }
    print(f"3. reviewer kinds (budget topk, skip_known on, {n} questions, width {args.width}); "
          "agreement with the teacher on the pairs each kind judged")
    print(f"{'depth':>5} | {'reviewer':>19} | {'accuracy':>13} | {'agree':>12} | {'decisive':>12} | "
          f"{'gold pick':>12} | {'reviewer req/q':>14}")
    for depth in range(1, args.max_depth + 1):
        for name, cfg in configs.items():
            world = _world(args)
            started = time.monotonic()
            results = await _runs(world, questions, depth, args.width, cfg)
            elapsed = time.monotonic() - started
            requests = world.calls["reviewer"] / n
            judged = _qualified(results)
            ours = [o.model_copy(update={"a": f"{k}::{o.a}", "b": f"{k}::{o.b}"}) for k, o in judged]
            agreement = judgement_agreement(ours, await _teacher_on(_world(args), questions, results, judged))
            right, total = _gold_pick(world, questions, results, judged)
            acc = _accuracy(world, questions, results)
            print(f"{depth:>5} | {name:>19} | {acc:.3f} ± {_se(acc, n):.3f} | "
                  f"{agreement.value:.3f} n={agreement.n:<4} | "
                  f"{agreement.decisive_value:.3f} n={agreement.decisive_n:<4} | "
                  f"{right / total if total else math.nan:.3f} n={total:<4} | {requests:>14.1f}"
                  + (f"   ({elapsed:.1f} s)" if args.timings else ""))
    print()


async def run(args: argparse.Namespace) -> None:
    world = _world(args)
    questions = [world.question(i) for i in range(args.questions)]
    started = time.monotonic()
    policy = sim_config("rem_moa", 1, args.width).final.policy
    print(f"Reviewer back-ends on the simulation: p={args.p}, q={args.q}, r={args.r}, seed={args.seed}, "
          f"final policy {policy} (the config default)\n")
    await skipping(args, questions)
    with tempfile.TemporaryDirectory(prefix="moa-reviewers-") as tmp:
        out = Path(args.out) if args.out else Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        student_dir = await distill_student(args, out)
        await kinds(args, questions, student_dir)
    print(f"({time.monotonic() - started:.1f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--train-questions", type=int, default=60)
    parser.add_argument("--max-depth", type=int, default=4)
    parser.add_argument("--width", type=int, default=3)
    parser.add_argument("--p", type=float, default=0.4)
    parser.add_argument("--q", type=float, default=0.6)
    parser.add_argument("--r", type=float, default=0.8)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--learning-rate", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="keep the traces, judgements and student here")
    parser.add_argument("--timings", action="store_true", help="print seconds per run")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
