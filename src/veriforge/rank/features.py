"""Feature-based pairwise rankers for programs (CudaPerf's offline ranker), numpy only.

CudaPerf learns which of two candidate kernels for the same task is faster from static and
profile features. Absolute run times do not transfer across tasks and GPUs, but "this one is
faster than that one" does, so the data are *pairs* and the model scores a program such that
``P(a faster than b) = σ(s(a) − s(b))`` — the Bradley–Terry/RankNet loss on feature differences.

* :func:`make_pairs` turns measured run times into (strong, weak) pairs **only within one task and
  input configuration**, and only when the slower one takes at least ``min_speedup`` (1.1×) as
  long: smaller gaps are timing noise, and labelling noise as preference teaches the model noise.
  Times of different provenance (measured on a GPU, emulated, estimated) are never paired.
* :class:`LogisticPairwiseRanker` — linear ``s(x) = w·x`` fitted by Newton's method with an L2
  penalty (convex, deterministic, seconds on CPU; the published 0.89 held-out pairwise accuracy).
* :class:`RankNetRanker` — ``s(x)`` a one-hidden-layer tanh network trained with Adam on the same
  loss, for feature interactions a linear score cannot express.

Both take optional per-pair weights (e.g. ``log(speedup)`` from :func:`pair_arrays`) so clear wins
count more than marginal ones.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from veriforge.core.types import Provenance
from veriforge.rank.errors import InsufficientDataError, MixedProvenanceError, RankError
from veriforge.rank.outcomes import Outcome

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "LogisticPairwiseRanker",
    "ProgramPair",
    "RankNetRanker",
    "TimedItem",
    "make_pairs",
    "pair_arrays",
    "pairs_to_outcomes",
    "split_pairs_by_task",
]


@dataclass(frozen=True)
class TimedItem:
    """One implementation of a task, timed on one input configuration, with its feature vector."""

    id: str
    task: str
    time_s: float
    features: Sequence[float]
    config: str | None = None
    provenance: Provenance = "measured"


@dataclass(frozen=True)
class ProgramPair:
    """``strong`` ran ``speedup``× faster than ``weak`` on the same task and configuration."""

    strong: TimedItem
    weak: TimedItem
    speedup: float

    @property
    def task(self) -> str:
        return self.strong.task

    @property
    def config(self) -> str | None:
        return self.strong.config


def make_pairs(
    items: Iterable[TimedItem], *, min_speedup: float = 1.1, by_config: bool = True
) -> list[ProgramPair]:
    """All (strong, weak) pairs within a task (and input configuration) whose speedup ≥ ``min_speedup``.

    ``by_config=False`` pools a task's configurations (only sensible when each item's time is
    already an aggregate over the same configurations). Raises on non-positive or non-finite
    times and on a group that mixes provenances. Deterministic order: groups as first seen, then
    pairs by the strong item's time.
    """
    if min_speedup < 1.0:
        raise RankError("min_speedup must be at least 1 (a pair needs a faster and a slower program)")
    groups: dict[tuple[str, str | None], list[TimedItem]] = {}
    for item in items:
        if not (math.isfinite(item.time_s) and item.time_s > 0):
            raise RankError(f"{item.id}: run time must be a positive finite number, got {item.time_s!r}")
        key = (item.task, item.config if by_config else None)
        groups.setdefault(key, []).append(item)
    pairs: list[ProgramPair] = []
    for (task, config), members in groups.items():
        kinds = sorted({m.provenance for m in members})
        if len(kinds) > 1:
            where = task + (f" / {config}" if config is not None else "")
            raise MixedProvenanceError(f"{where}: times of different provenance ({', '.join(kinds)}) "
                                       "cannot be compared; filter to one provenance first")
        members = sorted(members, key=lambda m: (m.time_s, m.id))
        for p, fast in enumerate(members):
            for slow in members[p + 1:]:
                speedup = slow.time_s / fast.time_s
                if speedup >= min_speedup:
                    pairs.append(ProgramPair(strong=fast, weak=slow, speedup=speedup))
    return pairs


def pairs_to_outcomes(pairs: Iterable[ProgramPair]) -> list[Outcome]:
    """Pairs as ``verifier`` outcomes (strong beats weak) for the rating fits: timings are facts."""
    return [
        Outcome(a=p.strong.id, b=p.weak.id, winner="a", source="verifier",
                reason=f"{p.speedup:.3g}x faster", meta={"task": p.task, "config": p.config})
        for p in pairs
    ]


def pair_arrays(
    pairs: Sequence[ProgramPair], margin_weighting: Literal["none", "log"] = "none"
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(X_strong, X_weak, weights)`` for :meth:`~LogisticPairwiseRanker.fit`.

    ``margin_weighting="log"`` weighs each pair by ``log(speedup)``, rescaled to mean 1, so a 3×
    win counts more than a 1.1× one; ``"none"`` gives every pair weight 1.
    """
    import numpy as np

    if not pairs:
        raise InsufficientDataError("no pairs (were all speedups below min_speedup?)")
    xs = np.array([list(p.strong.features) for p in pairs], dtype=np.float64)
    xw = np.array([list(p.weak.features) for p in pairs], dtype=np.float64)
    if xs.shape != xw.shape:
        raise RankError("every item needs a feature vector of the same length")
    if margin_weighting == "log":
        w = np.log(np.array([p.speedup for p in pairs]))
        w = w / w.mean() if w.mean() > 0 else np.ones(len(pairs))
    elif margin_weighting == "none":
        w = np.ones(len(pairs))
    else:
        raise RankError(f"unknown margin weighting {margin_weighting!r}")
    return xs, xw, w


def split_pairs_by_task(
    pairs: Sequence[ProgramPair], test_fraction: float = 0.25, seed: int = 0
) -> tuple[list[ProgramPair], list[ProgramPair]]:
    """Split pairs into train/test by *task*, so held-out accuracy measures transfer to new tasks
    (a random split of pairs leaks each task's programs into both halves)."""
    tasks = sorted({p.task for p in pairs})
    if len(tasks) < 2:
        raise InsufficientDataError("a split by task needs pairs from at least two tasks")
    random.Random(seed).shuffle(tasks)
    n_test = min(len(tasks) - 1, max(1, round(test_fraction * len(tasks))))
    test_tasks = set(tasks[:n_test])
    return [p for p in pairs if p.task not in test_tasks], [p for p in pairs if p.task in test_tasks]


# ------------------------------------------------------------------------------ models


def _sigmoid(z: np.ndarray) -> np.ndarray:
    import numpy as np

    return 0.5 * (1.0 + np.tanh(0.5 * z))  # overflow-free logistic


class _PairwiseModel:
    """Shared scaffolding: feature standardisation, probabilities, pairwise accuracy."""

    mean_: np.ndarray | None = None
    scale_: np.ndarray | None = None

    def _prepare(
        self, x_a: np.ndarray, x_b: np.ndarray, y: np.ndarray | None, weights: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        import numpy as np

        xa = np.asarray(x_a, dtype=np.float64)
        xb = np.asarray(x_b, dtype=np.float64)
        if xa.ndim != 2 or xa.shape != xb.shape or len(xa) == 0:
            raise InsufficientDataError("fit needs two equally shaped, non-empty 2-D feature arrays")
        labels = np.ones(len(xa)) if y is None else np.asarray(y, dtype=np.float64)
        w = np.ones(len(xa)) if weights is None else np.asarray(weights, dtype=np.float64)
        if labels.shape != (len(xa),) or w.shape != (len(xa),):
            raise RankError("labels and weights need one value per pair")
        if np.any((labels < 0) | (labels > 1)) or np.any(w < 0):
            raise RankError("labels must lie in [0, 1] and weights must be non-negative")
        both = np.vstack([xa, xb])
        self.mean_ = both.mean(axis=0)
        std = both.std(axis=0)
        self.scale_ = np.where(std > 0, std, 1.0)
        return (xa - self.mean_) / self.scale_, (xb - self.mean_) / self.scale_, labels, w

    def _standardized(self, x: np.ndarray) -> np.ndarray:
        import numpy as np

        if self.mean_ is None or self.scale_ is None:
            raise RankError("the ranker is not fitted yet")
        arr = np.asarray(x, dtype=np.float64)
        return (arr - self.mean_) / self.scale_

    def _raw_score(self, z: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def score(self, x: np.ndarray | Sequence[float]) -> np.ndarray:
        """Scores (higher = predicted faster) for one feature vector or a 2-D batch."""
        import numpy as np

        arr = np.asarray(x, dtype=np.float64)
        single = arr.ndim == 1
        out = self._raw_score(self._standardized(arr[None, :] if single else arr))
        return out[0] if single else out

    def predict_proba(
        self, x_a: np.ndarray | Sequence[float], x_b: np.ndarray | Sequence[float]
    ) -> np.ndarray:
        """``P(a better than b)`` for one pair or row-wise for batches."""
        return _sigmoid(self.score(x_a) - self.score(x_b))

    def rank(self, x: np.ndarray) -> list[int]:
        """Row indices of ``x`` best first (equal scores keep row order)."""
        import numpy as np

        scores = self.score(np.asarray(x, dtype=np.float64))
        return sorted(range(len(scores)), key=lambda k: (-float(scores[k]), k))

    def pairwise_accuracy(self, x_a: np.ndarray, x_b: np.ndarray, y: np.ndarray | None = None) -> float:
        """Fraction of pairs ordered correctly (``y`` defaults to "a is better"; exact ties count ½)."""
        import numpy as np

        diff = self.score(np.asarray(x_a, dtype=np.float64)) - self.score(np.asarray(x_b, dtype=np.float64))
        labels = np.ones(len(diff)) if y is None else np.asarray(y, dtype=np.float64) >= 0.5
        hits = np.where(diff == 0, 0.5, (diff > 0) == labels)
        return float(np.mean(hits)) if len(hits) else math.nan


class LogisticPairwiseRanker(_PairwiseModel):
    """Linear Bradley–Terry on feature differences: ``P(a ≻ b) = σ(w·(x_a − x_b))``.

    Features are standardised (mean/std over all rows seen in :meth:`fit`); ``l2`` is the ridge
    penalty on ``w`` (it also keeps the fit finite when the pairs are perfectly separable, which
    all-"strong first" data always are). Newton's method; deterministic.
    """

    def __init__(self, l2: float = 1e-2, max_iter: int = 100, tol: float = 1e-8) -> None:
        if l2 <= 0:
            raise RankError("l2 must be positive (separable pair data has no finite unpenalised fit)")
        self.l2 = l2
        self.max_iter = max_iter
        self.tol = tol
        self.coef_: np.ndarray | None = None
        self.n_iter_ = 0

    def fit(
        self, x_a: np.ndarray, x_b: np.ndarray, y: np.ndarray | None = None, weights: np.ndarray | None = None
    ) -> LogisticPairwiseRanker:
        """Fit on pairs; ``y[i] = 1`` when ``x_a[i]`` is the better one (the default), 0 when
        ``x_b[i]`` is, fractions allowed; ``weights`` per pair (e.g. margin weights)."""
        import numpy as np

        za, zb, labels, w = self._prepare(x_a, x_b, y, weights)
        d = za - zb
        n = len(d)
        coef = np.zeros(d.shape[1])
        for self.n_iter_ in range(1, self.max_iter + 1):  # noqa: B020
            p = _sigmoid(d @ coef)
            grad = d.T @ (w * (labels - p)) / n - self.l2 * coef
            hess = (d * (w * p * (1 - p))[:, None]).T @ d / n + self.l2 * np.eye(d.shape[1])
            step = np.linalg.solve(hess, grad)
            coef = coef + step
            if float(np.max(np.abs(step))) < self.tol:
                break
        self.coef_ = coef
        return self

    def _raw_score(self, z: np.ndarray) -> np.ndarray:
        if self.coef_ is None:
            raise RankError("the ranker is not fitted yet")
        return z @ self.coef_


class RankNetRanker(_PairwiseModel):
    """RankNet: ``s(x) = v·tanh(W x + c)``, trained with Adam on the pairwise logistic loss.

    Full-batch, seeded initialisation: the same data and seed give the same model. ``l2`` is weight
    decay on ``W`` and ``v``.
    """

    def __init__(self, hidden: int = 16, epochs: int = 300, lr: float = 0.02, l2: float = 1e-4,
                 seed: int = 0) -> None:
        if hidden < 1 or epochs < 1 or lr <= 0 or l2 < 0:
            raise RankError("RankNet needs hidden ≥ 1, epochs ≥ 1, lr > 0, l2 ≥ 0")
        self.hidden, self.epochs, self.lr, self.l2, self.seed = hidden, epochs, lr, l2, seed
        self.params_: dict[str, np.ndarray] | None = None
        self.loss_curve_: list[float] = []

    def _forward(self, z: np.ndarray, params: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        import numpy as np

        h = np.tanh(z @ params["W"] + params["c"])
        return h @ params["v"], h

    def fit(
        self, x_a: np.ndarray, x_b: np.ndarray, y: np.ndarray | None = None, weights: np.ndarray | None = None
    ) -> RankNetRanker:
        """Fit on pairs (same conventions as :meth:`LogisticPairwiseRanker.fit`)."""
        import numpy as np

        za, zb, labels, w = self._prepare(x_a, x_b, y, weights)
        rng = np.random.default_rng(self.seed)
        dim = za.shape[1]
        params = {
            "W": rng.normal(0.0, 1.0 / math.sqrt(dim), size=(dim, self.hidden)),
            "c": np.zeros(self.hidden),
            "v": rng.normal(0.0, 1.0 / math.sqrt(self.hidden), size=self.hidden),
        }
        m = {k: np.zeros_like(v) for k, v in params.items()}
        s = {k: np.zeros_like(v) for k, v in params.items()}
        beta1, beta2, eps = 0.9, 0.999, 1e-8
        n = len(za)
        self.loss_curve_ = []
        for t in range(1, self.epochs + 1):
            sa, ha = self._forward(za, params)
            sb, hb = self._forward(zb, params)
            diff = sa - sb
            p = _sigmoid(diff)
            per_pair = np.logaddexp(0, -diff) * labels + np.logaddexp(0, diff) * (1 - labels)
            loss = float(np.sum(w * per_pair) / n)
            self.loss_curve_.append(loss)
            g = w * (p - labels) / n  # dLoss/d(diff)
            # back-propagate through both towers (shared weights): d diff / d s_a = 1, d s_b = −1.
            grads = {k: np.zeros_like(v) for k, v in params.items()}
            for sign, z, h in ((1.0, za, ha), (-1.0, zb, hb)):
                gs = sign * g
                grads["v"] += h.T @ gs
                gh = np.outer(gs, params["v"]) * (1 - h * h)
                grads["W"] += z.T @ gh
                grads["c"] += gh.sum(axis=0)
            grads["W"] += self.l2 * params["W"]
            grads["v"] += self.l2 * params["v"]
            for k in params:
                m[k] = beta1 * m[k] + (1 - beta1) * grads[k]
                s[k] = beta2 * s[k] + (1 - beta2) * grads[k] ** 2
                m_hat = m[k] / (1 - beta1**t)
                s_hat = s[k] / (1 - beta2**t)
                params[k] = params[k] - self.lr * m_hat / (np.sqrt(s_hat) + eps)
        self.params_ = params
        return self

    def _raw_score(self, z: np.ndarray) -> np.ndarray:
        if self.params_ is None:
            raise RankError("the ranker is not fitted yet")
        return self._forward(z, self.params_)[0]
