"""SimWorld's ``shared_wrong`` knob (correlated errors) and the regime it exists to show: majority
voting converges to the truth when errors are independent and to the shared wrong answer when they
are correlated (docs/moa.md, "Scaling honesty")."""

from __future__ import annotations

import asyncio
from collections import Counter

from veriforge.moa.engine import MoAEngine
from veriforge.moa.simulate import SimWorld, sim_config


async def _answers(world: SimWorld, samples: int, questions: int) -> list[list[str | None]]:
    engine = MoAEngine(sim_config("self_consistency", 1, samples), clients=world.clients())
    results = await asyncio.gather(*(engine.run(world.question(i)) for i in range(questions)))
    return [[t.answer for t in r.memory.layer(0)] for r in results]


async def test_shared_wrong_concentrates_errors_on_one_popular_answer():
    independent = SimWorld(p=0.4, shared_wrong=0.0, seed=1)
    correlated = SimWorld(p=0.4, shared_wrong=1.0, seed=1)
    for world, popular_share in ((independent, (0.2, 0.5)), (correlated, (0.99, 1.0))):
        wrong = Counter()
        for i, answers in enumerate(await _answers(world, 30, 20)):
            for a in answers:
                if a != world.gold(i):
                    wrong[a == world.popular_wrong(i)] += 1
        share = wrong[True] / (wrong[True] + wrong[False])
        assert popular_share[0] <= share <= popular_share[1], (world.shared_wrong, share)


async def test_majority_vote_gains_from_samples_only_when_errors_are_independent():
    def accuracy(world: SimWorld, runs: list[list[str | None]]) -> float:
        votes = [Counter(a for a in answers if a).most_common(1)[0][0] for answers in runs]
        return sum(v == world.gold(i) for i, v in enumerate(votes)) / len(votes)

    independent = SimWorld(p=0.4, shared_wrong=0.0, seed=2)
    correlated = SimWorld(p=0.4, shared_wrong=0.8, seed=2)  # popular wrong: 0.6·0.8 + 0.6·0.2/3 = 0.52 > 0.4
    ind = [accuracy(independent, await _answers(independent, k, 60)) for k in (1, 81)]
    cor = [accuracy(correlated, await _answers(correlated, k, 60)) for k in (1, 81)]
    assert ind[1] > 0.85 and ind[1] > ind[0] + 0.3
    assert cor[1] < 0.2 and cor[1] < cor[0]
