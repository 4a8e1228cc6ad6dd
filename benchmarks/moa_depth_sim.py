"""Measured, not hoped: how accuracy evolves with depth for vanilla MoA vs ReM-MoA, with scripted agents.

Run: python benchmarks/moa_depth_sim.py [--questions 200] [--p 0.4] [--q 0.6] [--r 0.8] [--width 3]
     [--shared-wrong 0.0] [--variants moa,rem_moa,rem_moa(no-div),self_consistency] [--sc-samples 3,9,27,81]
Output recorded in benchmarks/results/moa_depth_sim.txt.

Every participant is a scripted model of known behaviour (veriforge.moa.simulate.SimWorld), driven
through the real engine, LLM client, pairwise judge (both orders), tournament and routing code:

* proposer: adopts the answer of a random reference it is shown (not one marked FAILED) with
  probability q, else answers alone: right with probability p, else one of 3 distractors;
* aggregator: adopts the plurality of what it is shown with probability q_agg, else answers alone;
* reviewer: when exactly one of two responses is right, prefers it with probability r (each order
  independently; disagreements become ties);
* shared_wrong: the probability that an agent's wrong own answer is the question's one popular
  wrong answer (correlated errors, as when models share a misconception); 0 = independent errors.

Methods: vanilla MoA (each layer sees the previous layer), ReM-MoA (ranked memory + diversified
routing, top-k reviewer budget), and the ablation ReM-MoA with diversity="none" (same ranked memory,
every agent gets the same top references), and self-consistency (depth × width samples of one
agent in one request, majority vote) — the cheap baseline every method must beat at equal cost; a
single agent is one line. For each depth: accuracy (± one standard error), requests (LLM calls) and
billed tokens per question, and self-consistency along a ladder of sample counts (to compare at equal
tokens); for the deepest run: reference diversity per layer — mean pairwise
Jaccard distance between agents' reference sets (0 = all agents saw the same traces) and the mean
number of distinct answers each agent was shown.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import time
from collections import defaultdict
from collections.abc import Callable

from veriforge.moa.engine import MoAEngine
from veriforge.moa.simulate import SimWorld, sim_config

VARIANTS = {
    "moa": ("moa", {}),
    "rem_moa": ("rem_moa", {}),
    "rem_moa(no-div)": ("rem_moa", {"routing": {"diversity": "none"}}),
    "self_consistency": ("self_consistency", {}),
}


def _table(title: str, names: list[str], depths: range, cell: Callable[[str, int], str]) -> None:
    header = f"{'depth':>5} | " + " | ".join(f"{name:>22}" for name in names)
    print(title)
    print(header)
    print("-" * len(header))
    for depth in depths:
        print(f"{depth:>5} | " + " | ".join(cell(name, depth).rjust(22) for name in names))
    print()


async def run(args: argparse.Namespace) -> None:
    world = SimWorld(p=args.p, q=args.q, r=args.r, q_agg=args.q_agg, shared_wrong=args.shared_wrong, seed=args.seed)
    clients = world.clients()
    questions = [world.question(i) for i in range(args.questions)]
    names = [v for v in args.variants.split(",") if v]
    unknown = [v for v in names if v not in VARIANTS]
    if unknown:
        raise SystemExit(f"unknown variants {unknown}; choose from {', '.join(VARIANTS)}")
    acc: dict[str, dict[int, float]] = defaultdict(dict)
    tokens: dict[str, dict[int, float]] = defaultdict(dict)
    requests: dict[str, dict[int, float]] = defaultdict(dict)
    diversity: dict[str, list[dict[str, float]]] = {}
    started = time.monotonic()
    depths = range(1, args.max_depth + 1)

    async def measure(method: str, depth: int, extra: dict) -> list:
        engine = MoAEngine(sim_config(method, depth, args.width, **extra), clients=clients)
        return list(await asyncio.gather(*(engine.run(q) for q in questions)))

    def book(name: str, depth: int, results: list) -> None:
        acc[name][depth] = sum(world.correct(q, r.answer) for q, r in zip(questions, results, strict=True)) / len(
            questions)
        tokens[name][depth] = sum(r.total_tokens for r in results) / len(questions)
        requests[name][depth] = sum(r.account["calls"] for r in results) / len(questions)

    book("single", 1, await measure("single", 1, {}))
    ladder = [int(k) for k in args.sc_samples.split(",") if k.strip()]
    for k in ladder:
        engine = MoAEngine(sim_config("self_consistency", 1, k), clients=clients)
        book("sc-ladder", k, list(await asyncio.gather(*(engine.run(q) for q in questions))))
    for name in names:
        method, extra = VARIANTS[name]
        for depth in depths:
            results = await measure(method, depth, extra)
            book(name, depth, results)
            if depth == args.max_depth and method != "self_consistency":
                per_layer = []
                for layer in range(1, depth):
                    stats = [r.layers[layer].diversity for r in results if r.layers[layer].diversity]
                    per_layer.append({k: sum(s[k] for s in stats) / len(stats) for k in stats[0]} if stats else {})
                diversity[name] = per_layer

    n = len(questions)
    print(f"ReM-MoA depth simulation: {n} questions, width {args.width}, p={args.p}, q={args.q}, "
          f"r={args.r}, q_agg={args.q_agg}, shared_wrong={args.shared_wrong}, seed={args.seed}")
    single = acc["single"][1]
    print(f"single agent: accuracy {single:.3f} ± {math.sqrt(single * (1 - single) / n):.3f}, "
          f"{requests['single'][1]:.0f} request, {tokens['single'][1]:.0f} tokens per question")
    print("self_consistency at depth d samples d × width answers in one request; ReM-MoA's final policy is "
          "the config default\n")
    _table("accuracy (± 1 s.e.) by depth", names, depths,
           lambda name, d: f"{acc[name][d]:.3f} ± {math.sqrt(acc[name][d] * (1 - acc[name][d]) / n):.3f}")
    _table("requests (LLM calls) per question by depth", names, depths, lambda name, d: f"{requests[name][d]:.1f}")
    _table("billed tokens per question by depth", names, depths, lambda name, d: f"{tokens[name][d]:.0f}")
    if ladder:
        print("self_consistency by samples (one request each; majority vote) — to compare at equal tokens "
              "with the rows above")
        print(f"{'samples':>7} | {'accuracy':>14} | {'requests':>8} | {'tokens':>7}")
        for k in ladder:
            a = acc["sc-ladder"][k]
            print(f"{k:>7} | {a:.3f} ± {math.sqrt(a * (1 - a) / n):.3f} | {requests['sc-ladder'][k]:>8.1f} | "
                  f"{tokens['sc-ladder'][k]:>7.0f}")
        print()
    layered = [name for name in names if name in diversity]
    if layered and args.max_depth > 1:
        print(f"reference diversity per layer at depth {args.max_depth} "
              "(mean pairwise Jaccard distance of agents' reference sets / distinct answers shown per agent)")
        print(f"{'layer':>5} | " + " | ".join(f"{name:>22}" for name in layered))
        for layer in range(1, args.max_depth):
            cells = []
            for name in layered:
                d = diversity[name][layer - 1]
                cells.append(f"{d.get('jaccard_distance', 0):.2f} / {d.get('answers_per_agent', 0):.2f}".rjust(22))
            print(f"{layer:>5} | " + " | ".join(cells))
    print(f"\n({time.monotonic() - started:.1f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--width", type=int, default=3)
    parser.add_argument("--max-depth", type=int, default=6)
    parser.add_argument("--p", type=float, default=0.4)
    parser.add_argument("--q", type=float, default=0.6)
    parser.add_argument("--r", type=float, default=0.8)
    parser.add_argument("--q-agg", type=float, default=0.9)
    parser.add_argument("--shared-wrong", type=float, default=0.0,
                        help="probability that a wrong own answer is the question's one popular wrong answer "
                             "(correlated errors; 0 = independent)")
    parser.add_argument("--sc-samples", default="3,9,27,81",
                        help="also run self-consistency with these sample counts (comma-separated; '' for none)")
    parser.add_argument("--variants", default=",".join(VARIANTS), help=f"comma-separated: {', '.join(VARIANTS)}")
    parser.add_argument("--seed", type=int, default=0)
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
