"""Measured, not hoped: how accuracy evolves with depth for vanilla MoA vs ReM-MoA, with scripted agents.

Run: python benchmarks/moa_depth_sim.py [--questions 200] [--p 0.4] [--q 0.6] [--r 0.8] [--width 3]
Output recorded in benchmarks/results/moa_depth_sim.txt.

Every participant is a scripted model of known behaviour (veriforge.moa.simulate.SimWorld), driven
through the real engine, LLM client, pairwise judge (both orders), tournament and routing code:

* proposer: adopts the answer of a random reference it is shown (not one marked FAILED) with
  probability q, else answers alone: right with probability p, else one of 3 distractors;
* aggregator: adopts the plurality of what it is shown with probability q_agg, else answers alone;
* reviewer: when exactly one of two responses is right, prefers it with probability r (each order
  independently; disagreements become ties).

Methods: vanilla MoA (each layer sees the previous layer), ReM-MoA (ranked memory + diversified
routing, top-k reviewer budget), and the ablation ReM-MoA with diversity="none" (same ranked memory,
every agent gets the same top references). For each depth: accuracy (± one standard error) and
billed tokens per question; for the deepest run: reference diversity per layer — mean pairwise
Jaccard distance between agents' reference sets (0 = all agents saw the same traces) and the mean
number of distinct answers each agent was shown.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import time
from collections import defaultdict

from veriforge.moa.engine import MoAEngine
from veriforge.moa.simulate import SimWorld, sim_config

VARIANTS = {
    "moa": ("moa", {}),
    "rem_moa": ("rem_moa", {}),
    "rem_moa(no-div)": ("rem_moa", {"routing": {"diversity": "none"}}),
}


async def run(args: argparse.Namespace) -> None:
    world = SimWorld(p=args.p, q=args.q, r=args.r, q_agg=args.q_agg, seed=args.seed)
    clients = world.clients()
    questions = [world.question(i) for i in range(args.questions)]
    acc: dict[str, dict[int, float]] = defaultdict(dict)
    tokens: dict[str, dict[int, float]] = defaultdict(dict)
    diversity: dict[str, list[dict[str, float]]] = {}
    started = time.monotonic()
    for name, (method, extra) in VARIANTS.items():
        for depth in range(1, args.max_depth + 1):
            engine = MoAEngine(sim_config(method, depth, args.width, **extra), clients=clients)
            results = await asyncio.gather(*(engine.run(q) for q in questions))
            acc[name][depth] = sum(world.correct(q, r.answer) for q, r in zip(questions, results, strict=True)) / len(
                questions)
            tokens[name][depth] = sum(r.total_tokens for r in results) / len(questions)
            if depth == args.max_depth:
                per_layer = []
                for layer in range(1, depth):
                    stats = [r.layers[layer].diversity for r in results if r.layers[layer].diversity]
                    per_layer.append({k: sum(s[k] for s in stats) / len(stats) for k in stats[0]} if stats else {})
                diversity[name] = per_layer

    n = len(questions)
    print(f"ReM-MoA depth simulation: {n} questions, width {args.width}, p={args.p}, q={args.q}, "
          f"r={args.r}, q_agg={args.q_agg}, seed={args.seed}")
    print(f"single agent accuracy (expected): {args.p:.3f}\n")
    header = f"{'depth':>5} | " + " | ".join(f"{name:>22}" for name in VARIANTS)
    print("accuracy (± 1 s.e.) by depth")
    print(header)
    print("-" * len(header))
    for depth in range(1, args.max_depth + 1):
        cells = []
        for name in VARIANTS:
            a = acc[name][depth]
            cells.append(f"{a:.3f} ± {math.sqrt(a * (1 - a) / n):.3f}".rjust(22))
        print(f"{depth:>5} | " + " | ".join(cells))
    print("\nbilled tokens per question by depth")
    print(header)
    print("-" * len(header))
    for depth in range(1, args.max_depth + 1):
        print(f"{depth:>5} | " + " | ".join(f"{tokens[name][depth]:>22.0f}" for name in VARIANTS))
    print(f"\nreference diversity per layer at depth {args.max_depth} "
          "(mean pairwise Jaccard distance of agents' reference sets / distinct answers shown per agent)")
    print(f"{'layer':>5} | " + " | ".join(f"{name:>22}" for name in VARIANTS))
    for layer in range(1, args.max_depth):
        cells = []
        for name in VARIANTS:
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
    parser.add_argument("--seed", type=int, default=0)
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
