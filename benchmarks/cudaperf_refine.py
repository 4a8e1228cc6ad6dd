"""Refinement benchmark: reward per turn with a scripted policy, and proof that feedback reaches it.

For each task, a policy replays recorded attempts in turn order: turn 1 is the task's best bundled
implementation with one operator flipped (wrong), turn 2 its lowest-``quality`` implementation
(correct but slow), turn 3 its highest-``quality`` implementation (fast); turns beyond the recorded
ones repeat the last answer (the loop recognises repeated code and does not evaluate it again).
Everything else is real: :func:`veriforge.cudaperf.refine.refine_task` builds the prompt, the
harness evaluates each attempt on the CPU back-end (speed = the cost model's *estimated* time),
the unified reward scores it against the task's first implementation, and the feedback is
appended to the conversation.

The policy checks, at every turn t+1, that the last message it receives is exactly turn t's
feedback (as recorded by ``on_attempt``) and that the conversation holds every earlier answer and
feedback in order; a miss fails the benchmark. It prints reward per turn per task and the mean.

    python benchmarks/cudaperf_refine.py [--turns K] [--tasks c2cuda/sum_reduce,...] [--store PATH]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

TASKS = ("c2cuda/sum_reduce", "c2cuda/dot_product", "c2cuda/gemv", "c2cuda/softmax_rows")


def perturb(source: str) -> tuple[str, str]:
    """``source`` with its first accumulation ``+=`` (not a loop header's step, which would hang or
    crash instead of being wrong) turned into ``-=``; and a description."""
    offset = 0
    for number, line in enumerate(source.splitlines(keepends=True), 1):
        start = 0
        head = line.find("for (")
        if head >= 0:  # skip the loop header: find its closing parenthesis
            depth = 0
            for i in range(head + 4, len(line)):
                depth += {"(": 1, ")": -1}.get(line[i], 0)
                if depth == 0:
                    start = i + 1
                    break
            else:
                start = len(line)
        hit = line.find("+=", start)
        if hit >= 0:
            at = offset + hit
            return source[:at] + "-=" + source[at + 2:], f"line {number}: '+=' -> '-='"
        offset += len(line)
    return source.replace("0.0f", "1.0f", 1), "first '0.0f' -> '1.0f'"


def recorded_attempts(task: str) -> tuple[list[str], list[str]]:
    """[wrong, slow, fast] answers for ``task`` and their labels."""
    from veriforge.cuda.tasks.load import find_task, load_task

    spec = load_task(find_task(task))
    impls = sorted(spec.implementations, key=lambda i: (i.quality or 0))
    slow, fast = impls[0], impls[-1]
    fast_src = (spec.folder / fast.file).read_text()
    wrong_src, how = perturb(fast_src)
    how = f"{fast.name}, {how}"
    answers = [wrong_src, (spec.folder / slow.file).read_text(), fast_src]
    labels = [how, f"{slow.name} (quality {slow.quality})", f"{fast.name} (quality {fast.quality})"]
    return [f"PLAN: recorded attempt.\n```cuda\n{a}```\n" for a in answers], labels


def run_task(task: str, turns: int, store: object, out: Path) -> tuple[list[float], list[str], list[str], int]:
    from veriforge.cudaperf.refine import ReplayPolicy, refine_task

    answers, labels = recorded_attempts(task)
    feedback: dict[int, str] = {}
    checked = [0]

    def check(messages: list[dict[str, str]], turn: int) -> None:
        if turn == 1:
            assert [m["role"] for m in messages] == ["system", "user"], "turn 1 must be the bare prompt"
            return
        last = messages[-1]
        assert last["role"] == "user" and last["content"] == feedback[turn - 1], \
            f"{task}: turn {turn} did not receive turn {turn - 1}'s feedback"
        pairs = messages[2:]
        assert len(pairs) == 2 * (turn - 1), f"{task}: turn {turn} got {len(pairs)} history messages"
        for t in range(1, turn):
            assert pairs[2 * t - 1]["content"] == feedback[t], f"{task}: feedback of turn {t} missing at {turn}"
        checked[0] += 1

    policy = ReplayPolicy(answers, check=check)
    res = refine_task(task, policy, turns=turns, store=store, out_dir=out,
                      on_attempt=lambda a: feedback.__setitem__(a.turn, a.feedback))
    return res.rewards, [a.outcome for a in res.attempts], labels, checked[0]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--turns", type=int, default=3)
    ap.add_argument("--tasks", default=",".join(TASKS))
    ap.add_argument("--store", default=None, help="run store file (default: a fresh temporary one)")
    args = ap.parse_args(argv)
    from veriforge.core.store import RunStore

    tmp = Path(tempfile.mkdtemp(prefix="cudaperf-refine-bench-"))
    store = RunStore(args.store or tmp / "runs.sqlite")
    tasks = [t for t in args.tasks.split(",") if t]
    print(f"CudaPerf refinement, scripted policy, {args.turns} turns, preset veriforge, CPU back-end "
          "(estimated times, H100-SXM cost model); baseline = each task's first implementation")
    per_turn: list[list[float]] = [[] for _ in range(args.turns)]
    ok = True
    started = time.perf_counter()
    for task in tasks:
        t0 = time.perf_counter()
        rewards, outcomes, labels, checked = run_task(task, args.turns, store, tmp / "out")
        for i, r in enumerate(rewards):
            per_turn[i].append(r)
        cells = "  ".join(f"t{i + 1}={r:+.3f} {o}" for i, (r, o) in enumerate(zip(rewards, outcomes, strict=True)))
        delivered = f"feedback delivered {checked}/{args.turns - 1}"
        print(f"{task:24s} {cells}  [{delivered}; {time.perf_counter() - t0:.1f}s]")
        print(f"{'':24s} attempts: " + " | ".join(labels[: args.turns]))
        expected = ["wrong", "correct", "correct"][: args.turns]
        if outcomes[: len(expected)] != expected or checked != args.turns - 1:
            ok = False
        if args.turns >= 3 and not rewards[0] < rewards[1] <= rewards[2]:
            print(f"{'':24s} NOTE: reward did not increase turn over turn")
    means = "  ".join(f"t{i + 1}={sum(v) / len(v):+.3f}" for i, v in enumerate(per_turn) if v)
    print(f"{'mean reward per turn':24s} {means}")
    print(f"{len(tasks)} tasks in {time.perf_counter() - started:.1f}s; outcomes as recorded and every feedback "
          f"delivered: {'yes' if ok else 'NO'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
