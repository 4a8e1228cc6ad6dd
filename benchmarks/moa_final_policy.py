"""Which final answer should ReM-MoA give? Every policy measured on the same runs.

Run: python benchmarks/moa_final_policy.py [--questions 150] [--max-depth 4] [--r 0.65,0.8,0.9]
Output recorded in benchmarks/results/moa_final_policy.txt.

The scripted SimWorld (veriforge.moa.simulate; real engine, client, judge, tournament, routing)
runs ReM-MoA with ``final.evaluate_all = true``, so one run yields the answers of all four
policies — ``aggregate`` (the aggregator model over the top k), ``top`` (top-ranked trace),
``vote`` (majority of the top k) and ``weighted_vote`` (1/rank-weighted votes of the top k) —
scored against the known answers. The reviewer's accuracy ``r`` is varied because the free
policies trust the ranking and the aggregator does not; ``--position-bias`` adds a reviewer that
sometimes just answers "[[A]]". Cost: ``aggregate`` costs one more request per question (its
tokens are printed); the others cost nothing beyond the layers.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import time

from veriforge.moa.config import FINAL_POLICIES, ReviewerConfig
from veriforge.moa.engine import MoAEngine
from veriforge.moa.simulate import REVIEWER_MODEL, SimWorld, sim_config


async def measure(args: argparse.Namespace, r: float) -> None:
    world = SimWorld(p=args.p, q=args.q, r=r, q_agg=args.q_agg, position_bias=args.position_bias, seed=args.seed)
    clients = world.clients()
    questions = [world.question(i) for i in range(args.questions)]
    n = len(questions)
    print(f"\nreviewer r={r}, position_bias={args.position_bias}  ({n} questions, width {args.width}, "
          f"p={args.p}, q={args.q}, q_agg={args.q_agg}, k={args.k})")
    header = f"{'depth':>5} | " + " | ".join(f"{name:>15}" for name in FINAL_POLICIES) + " | aggregator tokens/q"
    print(header)
    print("-" * len(header))
    for depth in range(1, args.max_depth + 1):
        config = sim_config("rem_moa", depth, args.width, seed=args.seed,
                            reviewer=ReviewerConfig(model=REVIEWER_MODEL),
                            final={"policy": "aggregate", "k": args.k, "evaluate_all": True})
        engine = MoAEngine(config, clients=clients)
        results = await asyncio.gather(*(engine.run(q) for q in questions))
        cells = []
        for policy in FINAL_POLICIES:
            acc = sum(world.correct(q, res.policy_answers.get(policy)) for q, res in
                      zip(questions, results, strict=True)) / n
            cells.append(f"{acc:.3f} ± {math.sqrt(acc * (1 - acc) / n):.3f}".rjust(15))
        agg_tokens = sum(res.account["roles"].get("aggregator", {}).get("total_tokens", 0) for res in results) / n
        print(f"{depth:>5} | " + " | ".join(cells) + f" | {agg_tokens:.0f}")


async def run(args: argparse.Namespace) -> None:
    started = time.monotonic()
    for r in [float(x) for x in args.r.split(",")]:
        await measure(args, r)
    print(f"\n({time.monotonic() - started:.1f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=150)
    parser.add_argument("--width", type=int, default=3)
    parser.add_argument("--max-depth", type=int, default=4)
    parser.add_argument("--k", type=int, default=4)
    parser.add_argument("--p", type=float, default=0.4)
    parser.add_argument("--q", type=float, default=0.6)
    parser.add_argument("--r", default="0.65,0.8,0.9")
    parser.add_argument("--q-agg", type=float, default=0.9)
    parser.add_argument("--position-bias", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=0)
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
