"""Depth × width scaling grid for ReM-MoA and every baseline, offline, on the scripted simulation.

Run: python benchmarks/moa_scaling.py [--questions 40] [--depth 1..4] [--width 1,3,5] [--shared-wrong 0]
     [--out DIR]
Writes results.{csv,json,md}, progress.jsonl and accuracy_vs_{depth,width,tokens,requests}.png to
benchmarks/results/moa_scaling_sim/ (by default). Every row has requests, tokens and seconds next to
accuracy; ReM-MoA rows score every final-answer policy from the same runs (``final.evaluate_all``:
the aggregator runs too, and ``noagg_*`` columns give the request-free policies' cost).

The items are SimWorld questions (scripted agents of known behaviour, see
veriforge.moa.simulate and benchmarks/moa_depth_sim.py) so the grid runs anywhere in about a
minute. For a real benchmark and real models use the same runner through the CLI:
``veriforge moa bench --suite gsm8k --data test.jsonl --depth 1..6 --width 3 --model vllm:... --out DIR``.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from veriforge.moa.config import METHODS
from veriforge.moa.scaling import BenchWriter, parse_int_range, run_grid
from veriforge.moa.simulate import SimWorld, sim_config


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=40)
    parser.add_argument("--depth", default="1..4")
    parser.add_argument("--width", default="1,3,5")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--p", type=float, default=0.4)
    parser.add_argument("--q", type=float, default=0.6)
    parser.add_argument("--r", type=float, default=0.8)
    parser.add_argument("--shared-wrong", type=float, default=0.0,
                        help="correlated errors: P(a wrong own answer is the question's popular wrong answer)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "moa_scaling_sim")
    args = parser.parse_args()

    world = SimWorld(p=args.p, q=args.q, r=args.r, shared_wrong=args.shared_wrong)
    items = world.items(args.questions)
    score = world.score

    title = f"SimWorld p={args.p} q={args.q} r={args.r} shared_wrong={args.shared_wrong}"
    meta = {"questions": args.questions, "p": args.p, "q": args.q, "r": args.r, "shared_wrong": args.shared_wrong}

    def log(line: str) -> None:  # one line per cell (items are too many to print)
        if line.startswith("cell "):
            print(line, flush=True)

    (args.out / "progress.jsonl").unlink(missing_ok=True)  # no store: every run starts afresh
    writer = BenchWriter(args.out, title=title, meta=meta, log=log)
    base = sim_config("rem_moa", 1, 3, final={"evaluate_all": True})
    cells = asyncio.run(run_grid(items, base, methods=args.methods.split(","),
                                 depths=parse_int_range(args.depth), widths=parse_int_range(args.width),
                                 score=score, engine_options={"clients": world.clients()}, concurrency=16,
                                 on_cell=writer.cell))
    for name, path in writer.finish(cells).items():
        print(f"{name}: {path}")


if __name__ == "__main__":
    main()
