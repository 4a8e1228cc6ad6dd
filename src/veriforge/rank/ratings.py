"""Ratings from pairwise outcomes: Bradley–Terry, Elo, win rate, and how to compare rankings.

* **Bradley–Terry** (the default): each item ``i`` has a log-strength ``θ_i`` and
  ``P(i beats j) = σ(θ_i − θ_j)``. We maximise the log-likelihood plus a small Gaussian prior
  ``−λ/2·Σθ²`` by Newton's method. The prior makes the fit defined when an item never lost (plain
  maximum likelihood would send it to +∞), pins the otherwise free additive constant, and leaves
  well-observed items almost untouched. Ties count as half a win for each side. Standard errors come
  from the inverse Hessian at the optimum (a Laplace approximation). Deterministic: no randomness,
  and the result does not depend on the order of the outcomes.
* **Elo**: sequential updates ``r_a += K·(s_a − E_a)`` with ``E_a = 1/(1+10^((r_b−r_a)/scale))``.
  Elo *depends on the order* of the outcomes — the same games in another order give other ratings,
  and recent games weigh more. That suits a stream (a live tournament), not a fixed set of
  judgements; ``shuffles=N`` averages the final ratings over N seeded random orders to damp it.
* **Win rate**: (wins + ½·ties) / games; ignores who was beaten, so only fair when every item
  meets the same opponents (all pairs).

Every fit takes ``source``: outcomes from a ``reviewer`` and from a ``verifier`` are never fitted
together by accident (:class:`~veriforge.rank.errors.MixedSourcesError`). Failed comparisons are
skipped unless ``include_failed=True`` (then they count as ties).

The agreement helpers (:func:`kendall_tau`, :func:`pairwise_agreement`, :func:`outcome_agreement`,
:func:`judgement_agreement`) measure how far two rankings or two judges agree — the figure
ReM-MoA reports for its Reviewer before and after distillation from a stronger teacher.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from veriforge.rank.errors import InsufficientDataError, MixedSourcesError, RankError
from veriforge.rank.outcomes import Outcome, Source

__all__ = [
    "Agreement",
    "Ratings",
    "bradley_terry",
    "elo",
    "elo_expected",
    "elo_update",
    "fit_ratings",
    "judgement_agreement",
    "kendall_tau",
    "outcome_agreement",
    "pairwise_agreement",
    "ranking",
    "select_outcomes",
    "win_rate",
]

Method = Literal["bradley_terry", "elo", "win_rate"]

#: A ranking (ids best first) or a score mapping (higher is better).
RankingLike = Sequence[str] | Mapping[str, float]

#: Default L2 prior (precision) on Bradley–Terry log-strengths: a N(0, 10²) prior.
DEFAULT_BT_PRIOR = 0.01


class Ratings(BaseModel):
    """Scores for a set of items from one kind of evidence.

    ``scores``: higher is better (BT: log-strength; Elo: rating points; win rate: fraction).
    ``stderr``: standard errors where the method gives them (Bradley–Terry). ``games``: how many
    outcomes each item took part in (0 = its score is only the prior/initial value).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    method: Method
    source: Source
    scores: dict[str, float]
    stderr: dict[str, float] | None = None
    games: dict[str, int] = Field(default_factory=dict)
    params: dict[str, Any] = Field(default_factory=dict)

    def ranking(self) -> list[str]:
        """Item ids best first (equal scores in id order, so the result is deterministic)."""
        return ranking(self.scores)

    def top(self, k: int) -> list[str]:
        """The ``k`` best item ids."""
        return self.ranking()[: max(k, 0)]

    def prob(self, a: str, b: str) -> float:
        """The model's probability that ``a`` beats ``b`` (Bradley–Terry and Elo only)."""
        ra, rb = self.scores[a], self.scores[b]
        if self.method == "bradley_terry":
            return _sigmoid(ra - rb)
        if self.method == "elo":
            return elo_expected(ra, rb, float(self.params.get("scale", 400.0)))
        raise RankError("win rates are not a pairwise model; fit Bradley–Terry or Elo for probabilities")


# ---------------------------------------------------------------------------- selection


def select_outcomes(
    outcomes: Iterable[Outcome], source: Source | None = None, include_failed: bool = False
) -> tuple[list[Outcome], Source]:
    """The outcomes a fit should use, and their source.

    ``source=None`` requires every outcome to have the same source (mixing reviewer opinions with
    verifier facts is an error, never a silent average); naming a source keeps only those.
    """
    outcomes = list(outcomes)
    if source is None:
        found = sorted({o.source for o in outcomes})
        if len(found) > 1:
            raise MixedSourcesError(
                f"outcomes come from several sources ({', '.join(found)}); pass source='reviewer' or "
                "source='verifier' to fit one of them — opinions and checked facts are rated separately"
            )
        source = found[0] if found else "reviewer"  # type: ignore[assignment]
    chosen = [o for o in outcomes if o.source == source and (include_failed or not o.failed)]
    return chosen, source  # type: ignore[return-value]


def _item_index(outcomes: Sequence[Outcome], items: Iterable[str] | None) -> list[str]:
    seen: dict[str, None] = {}
    if items is not None:
        for item in items:
            seen.setdefault(item, None)
        for o in outcomes:
            for x in (o.a, o.b):
                if x not in seen:
                    raise RankError(f"an outcome mentions item {x!r}, which is not among the items given")
    else:
        for o in outcomes:
            seen.setdefault(o.a, None)
            seen.setdefault(o.b, None)
    return list(seen)


def _games(ids: Sequence[str], outcomes: Sequence[Outcome]) -> dict[str, int]:
    games = dict.fromkeys(ids, 0)
    for o in outcomes:
        games[o.a] += 1
        games[o.b] += 1
    return games


# ------------------------------------------------------------------------ Bradley–Terry


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


def bradley_terry(
    outcomes: Iterable[Outcome],
    items: Iterable[str] | None = None,
    *,
    prior: float = DEFAULT_BT_PRIOR,
    max_iter: int = 100,
    tol: float = 1e-9,
    source: Source | None = None,
    include_failed: bool = False,
) -> Ratings:
    """Maximum a-posteriori Bradley–Terry log-strengths with standard errors (Newton's method).

    ``prior`` is the precision λ of the N(0, 1/λ) prior on each log-strength; it must be positive
    (it is what keeps undefeated items finite). ``items`` adds items without outcomes (they get 0
    ± 1/√λ) and fixes the output order; by default the items are those the outcomes mention.
    """
    import numpy as np

    if prior <= 0:
        raise RankError("the Bradley–Terry prior must be positive (it keeps undefeated items finite)")
    chosen, src = select_outcomes(outcomes, source, include_failed)
    ids = _item_index(chosen, items)
    n = len(ids)
    pos = {x: k for k, x in enumerate(ids)}
    i = np.array([pos[o.a] for o in chosen], dtype=np.int64)
    j = np.array([pos[o.b] for o in chosen], dtype=np.int64)
    s = np.array([o.score_a for o in chosen], dtype=np.float64)

    def log_post(theta: np.ndarray) -> float:
        d = theta[i] - theta[j]
        # log σ(d) = −log(1+e^{−d}); written with logaddexp to stay finite for large |d|.
        ll = -(s * np.logaddexp(0.0, -d) + (1.0 - s) * np.logaddexp(0.0, d)).sum()
        return float(ll - 0.5 * prior * theta @ theta)

    def grad_hess(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        d = theta[i] - theta[j]
        p = 1.0 / (1.0 + np.exp(-d))
        r = s - p
        g = -prior * theta
        np.add.at(g, i, r)
        np.add.at(g, j, -r)
        w = p * (1.0 - p)
        h = prior * np.eye(n)  # the negative Hessian: positive definite thanks to the prior
        np.add.at(h, (i, i), w)
        np.add.at(h, (j, j), w)
        np.add.at(h, (i, j), -w)
        np.add.at(h, (j, i), -w)
        return g, h

    theta = np.zeros(n)
    iterations = 0
    if n:
        current = log_post(theta)
        for iterations in range(1, max_iter + 1):  # noqa: B007 - reported in params
            g, h = grad_hess(theta)
            step = np.linalg.solve(h, g)
            t = 1.0
            while True:  # the objective is concave, but damp the rare overshoot from far away
                candidate = theta + t * step
                value = log_post(candidate)
                if value >= current - 1e-12 or t < 1e-6:
                    break
                t *= 0.5
            theta, current = candidate, value
            if float(np.max(np.abs(t * step))) < tol:
                break
        _, h = grad_hess(theta)
        se = np.sqrt(np.diag(np.linalg.inv(h)))
    else:
        se = np.zeros(0)
    return Ratings(
        method="bradley_terry",
        source=src,
        scores={x: float(theta[k]) for k, x in enumerate(ids)},
        stderr={x: float(se[k]) for k, x in enumerate(ids)},
        games=_games(ids, chosen),
        params={"prior": prior, "iterations": iterations, "outcomes": len(chosen)},
    )


# ---------------------------------------------------------------------------------- Elo


def elo_expected(ra: float, rb: float, scale: float = 400.0) -> float:
    """Elo's expected score of a player rated ``ra`` against one rated ``rb``."""
    return 1.0 / (1.0 + 10.0 ** ((rb - ra) / scale))


def elo_update(
    ra: float, rb: float, score_a: float, k: float = 32.0, scale: float = 400.0
) -> tuple[float, float]:
    """Ratings after one game in which ``a`` scored ``score_a`` (1, ½ or 0). Zero-sum."""
    delta = k * (score_a - elo_expected(ra, rb, scale))
    return ra + delta, rb - delta


def elo(
    outcomes: Iterable[Outcome],
    items: Iterable[str] | None = None,
    *,
    k: float = 32.0,
    initial: float = 1500.0,
    scale: float = 400.0,
    shuffles: int = 0,
    seed: int = 0,
    source: Source | None = None,
    include_failed: bool = False,
) -> Ratings:
    """Elo ratings after playing ``outcomes`` in the order given.

    The order matters (see the module docstring). ``shuffles=N`` (N ≥ 1) instead plays the games
    in N random orders drawn from ``seed`` and averages the final ratings, which is deterministic
    for a given seed and much less sensitive to which judgement happened to come last.
    """
    if k <= 0 or scale <= 0:
        raise RankError("Elo needs a positive K factor and scale")
    chosen, src = select_outcomes(outcomes, source, include_failed)
    ids = _item_index(chosen, items)

    def play(order: Sequence[Outcome]) -> dict[str, float]:
        r = dict.fromkeys(ids, initial)
        for o in order:
            r[o.a], r[o.b] = elo_update(r[o.a], r[o.b], o.score_a, k, scale)
        return r

    if shuffles <= 0:
        scores = play(chosen)
    else:
        rng = random.Random(seed)
        total = dict.fromkeys(ids, 0.0)
        for _ in range(shuffles):
            order = list(chosen)
            rng.shuffle(order)
            for x, v in play(order).items():
                total[x] += v
        scores = {x: v / shuffles for x, v in total.items()}
    return Ratings(
        method="elo", source=src, scores=scores, games=_games(ids, chosen),
        params={"k": k, "initial": initial, "scale": scale, "shuffles": shuffles, "seed": seed,
                "outcomes": len(chosen)},
    )


# ---------------------------------------------------------------------------- win rate


def win_rate(
    outcomes: Iterable[Outcome],
    items: Iterable[str] | None = None,
    *,
    source: Source | None = None,
    include_failed: bool = False,
) -> Ratings:
    """(wins + ½·ties) / games per item; an item with no games gets 0.5 and ``games == 0``."""
    chosen, src = select_outcomes(outcomes, source, include_failed)
    ids = _item_index(chosen, items)
    points = dict.fromkeys(ids, 0.0)
    for o in chosen:
        points[o.a] += o.score_a
        points[o.b] += 1.0 - o.score_a
    games = _games(ids, chosen)
    scores = {x: (points[x] / games[x] if games[x] else 0.5) for x in ids}
    return Ratings(method="win_rate", source=src, scores=scores, games=games,
                   params={"outcomes": len(chosen)})


def fit_ratings(
    outcomes: Iterable[Outcome], items: Iterable[str] | None = None, method: Method = "bradley_terry",
    **options: Any,
) -> Ratings:
    """Dispatch to :func:`bradley_terry`, :func:`elo` or :func:`win_rate` by name (for configs)."""
    fits = {"bradley_terry": bradley_terry, "elo": elo, "win_rate": win_rate}
    if method not in fits:
        raise RankError(f"unknown rating method {method!r}; choose one of {', '.join(fits)}")
    return fits[method](outcomes, items, **options)


# ------------------------------------------------------------------------- agreement


def ranking(scores: Mapping[str, float]) -> list[str]:
    """Ids sorted best first; equal scores in id order (deterministic)."""
    return sorted(scores, key=lambda x: (-scores[x], x))


def _as_scores(x: RankingLike) -> dict[str, float]:
    if isinstance(x, Mapping):
        return {k: float(v) for k, v in x.items()}
    if isinstance(x, str):
        raise TypeError("a ranking is a sequence of ids, not one string")
    if len(set(x)) != len(x):
        raise RankError("a ranking lists each item once")
    return {item: -float(pos) for pos, item in enumerate(x)}  # best first → highest score


def _pair_signs(x: RankingLike, y: RankingLike):
    sx, sy = _as_scores(x), _as_scores(y)
    common = [k for k in sx if k in sy]
    if len(common) < 2:
        raise InsufficientDataError("comparing two rankings needs at least two items they share")
    for p in range(len(common)):
        for q in range(p + 1, len(common)):
            u, v = common[p], common[q]
            dx, dy = sx[u] - sx[v], sy[u] - sy[v]
            yield (dx > 0) - (dx < 0), (dy > 0) - (dy < 0)


def kendall_tau(x: RankingLike, y: RankingLike) -> float:
    """Kendall's τ-b between two rankings over the items they share.

    Each argument is a ranking (ids best first) or a score mapping (higher is better; equal scores
    are ties). 1 = same order, −1 = reversed, ~0 = unrelated; ``nan`` when either side ties every
    pair (τ is undefined then — reported, not guessed).
    """
    concordant = discordant = ties_x = ties_y = total = 0
    for a, b in _pair_signs(x, y):
        total += 1
        if a == 0:
            ties_x += 1
        if b == 0:
            ties_y += 1
        if a and b:
            if a == b:
                concordant += 1
            else:
                discordant += 1
    denom = math.sqrt((total - ties_x) * (total - ties_y))
    return (concordant - discordant) / denom if denom else math.nan


def pairwise_agreement(x: RankingLike, y: RankingLike) -> float:
    """Fraction of item pairs that both rankings order strictly and order the same way.

    For rankings without ties this is ``(1 + τ) / 2``. ``nan`` when no pair is strictly ordered by both.
    """
    same = strict = 0
    for a, b in _pair_signs(x, y):
        if a and b:
            strict += 1
            same += a == b
    return same / strict if strict else math.nan


def outcome_agreement(outcomes: Iterable[Outcome], scores: Mapping[str, float]) -> float:
    """Fraction of decisive outcomes whose winner has the higher score (equal scores count half).

    This is the pairwise accuracy of a rating on comparisons (e.g. held-out judgements).
    Outcomes that mention unscored items are skipped; ``nan`` when none is left.
    """
    hits = 0.0
    n = 0
    for o in outcomes:
        if not o.decisive or o.a not in scores or o.b not in scores:
            continue
        d = scores[o.a] - scores[o.b]
        n += 1
        if d == 0:
            hits += 0.5
        elif (d > 0) == (o.winner == "a"):
            hits += 1
    return hits / n if n else math.nan


@dataclass(frozen=True)
class Agreement:
    """How often two judges gave the same verdict on the pairs both judged (``n`` of them)."""

    value: float
    n: int
    decisive_value: float
    decisive_n: int


def judgement_agreement(ours: Iterable[Outcome], reference: Iterable[Outcome]) -> Agreement:
    """Agreement of one judge's outcomes with a reference judge's on the same pairs.

    Pairs are matched regardless of which side was ``a`` (outcomes are flipped to line up); a pair
    judged several times uses its last outcome. ``value`` counts ties as a verdict of their own;
    ``decisive_value`` only looks at pairs the reference decided (how often we picked the same
    winner). Failed comparisons are skipped on both sides. ``nan`` values when nothing overlaps.
    """

    def index(outs: Iterable[Outcome]) -> dict[tuple[str, str], Outcome]:
        table: dict[tuple[str, str], Outcome] = {}
        for o in outs:
            if o.failed:
                continue
            key = (o.a, o.b) if o.a < o.b else (o.b, o.a)
            table[key] = o if o.a == key[0] else o.flipped()
        return table

    mine, ref = index(ours), index(reference)
    shared = [k for k in ref if k in mine]
    same = sum(mine[k].winner == ref[k].winner for k in shared)
    decided = [k for k in shared if ref[k].winner != "tie"]
    same_decided = sum(mine[k].winner == ref[k].winner for k in decided)
    return Agreement(
        value=same / len(shared) if shared else math.nan,
        n=len(shared),
        decisive_value=same_decided / len(decided) if decided else math.nan,
        decisive_n=len(decided),
    )
