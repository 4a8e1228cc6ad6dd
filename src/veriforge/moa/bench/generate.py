"""Generated arithmetic word problems in GSM8K format, with computed answers.

For demos, smoke runs and the scaling simulation: any number of items, offline, deterministic per
seed, and every gold answer computed (not written by hand), so it is right by construction. Each
problem is a short chain of 2–4 operations over a story template; the worked solution lists the steps
and ends with ``#### N`` exactly like GSM8K.
"""

from __future__ import annotations

import random

from veriforge.moa.bench.convert import gsm8k
from veriforge.moa.bench.types import Item

__all__ = ["generate_gsm8k", "generate_records"]

_NAMES = ["Ada", "Bo", "Chen", "Dara", "Eli", "Fatima", "Goran", "Hana", "Ivo", "Jun", "Kira", "Lars"]
_THINGS = ["marbles", "stickers", "apples", "coins", "stamps", "pencils", "shells", "cards"]


def _problem(rng: random.Random) -> dict[str, str]:
    name, friend = rng.sample(_NAMES, 2)
    thing = rng.choice(_THINGS)
    start = rng.randint(5, 60)
    value, steps, sentences = start, [], [f"{name} has {start} {thing}."]
    for _ in range(rng.randint(2, 4)):
        op = rng.choice(["buy", "give", "double", "boxes"] if value < 400 else ["give"])
        if op == "buy":
            k = rng.randint(2, 30)
            sentences.append(f"{name} buys {k} more {thing}.")
            steps.append(f"{value} + {k} = {value + k}")
            value += k
        elif op == "give" and value > 1:
            k = rng.randint(1, value - 1)
            sentences.append(f"{name} gives {k} {thing} to {friend}.")
            steps.append(f"{value} - {k} = {value - k}")
            value -= k
        elif op == "double":
            sentences.append(f"Then {name}'s collection doubles.")
            steps.append(f"{value} * 2 = {value * 2}")
            value *= 2
        else:
            boxes, per = rng.randint(2, 6), rng.randint(2, 12)
            sentences.append(f"{name} finds {boxes} boxes with {per} {thing} in each.")
            steps.append(f"{value} + {boxes} * {per} = {value + boxes * per}")
            value += boxes * per
    question = " ".join(sentences) + f" How many {thing} does {name} have now?"
    answer = "\n".join(steps) + f"\n#### {value}"
    return {"question": question, "answer": answer}


def generate_records(n: int, seed: int = 0) -> list[dict[str, str]]:
    """``n`` GSM8K-format records (``question``, ``answer`` ending ``#### N``), deterministic per ``seed``."""
    rng = random.Random(seed)
    return [_problem(rng) for _ in range(n)]


def generate_gsm8k(n: int, seed: int = 0) -> list[Item]:
    """``n`` generated GSM8K items (ids ``gen-<seed>-<i>``)."""
    return [
        gsm8k({**rec, "id": f"gen-{seed}-{i}"}, i, f"generated[{i}]")
        for i, rec in enumerate(generate_records(n, seed))
    ]
